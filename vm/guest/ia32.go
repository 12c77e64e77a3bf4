package guest

// IA32Args are the "ia32-refused" step's arguments: programs in the
// initramfs to run on a kernel booted with ia32_emulation=0.
type IA32Args struct {
	// Static386 is a static i386 executable (exit status 0 where it runs).
	Static386 string `json:"static386"`
	// FuzzN is the -n of `kboost fuzz --arch i386`.
	FuzzN int `json:"fuzz_n"`
	// TestBinary is a compiled kernelsim test binary (go test -c), run with
	// -test.run TestRun and -test.v; empty: not run.
	TestBinary string   `json:"test_binary,omitempty"`
	TestRun    string   `json:"test_run,omitempty"`
	TestEnv    []string `json:"test_env,omitempty"` // added to its environment
}

// IA32Report is the "ia32-refused" step's result (ia32-refused.json).
type IA32Report struct {
	// Static386Errno is what execve of Args.Static386 returned ("" when it
	// ran; then Static386Exit is its exit status).
	Static386Errno string `json:"static386_errno"`
	Static386Exit  int    `json:"static386_exit"`
	// Sim and Fuzz are `kboost sim --arch i386 --exec auto --json 89 c8` and
	// `kboost fuzz --arch i386 --exec auto -n N --json`, run in-process.
	Sim  CLIRun `json:"sim"`
	Fuzz CLIRun `json:"fuzz"`
	// Test is the kernelsim test binary's run.
	Test *ProgramRun `json:"test,omitempty"`
}

// ProgramRun is a program's exit status and combined output.
type ProgramRun struct {
	Args   []string `json:"args"`
	Exit   int      `json:"exit"`
	Output string   `json:"output"`
}
