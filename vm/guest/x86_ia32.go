package guest

// IA32Args are the "ia32-refused" step's arguments: programs in the
// initramfs to run on a kernel booted with ia32_emulation=0.
type IA32Args struct {
	// Static386 is a static i386 executable (exit status 0 where it runs).
	Static386 string `json:"static386"`
	// FuzzN is the -n of `kboost fuzz --arch i386`.
	FuzzN int `json:"fuzz_n"`
	// Tests are compiled test binaries (go test -c) to run, in order.
	Tests []IA32Test `json:"tests,omitempty"`
}

// IA32Test is one test binary's run: Binary -test.run Run -test.v in Dir,
// with Env added to the step's environment.
type IA32Test struct {
	Binary string   `json:"binary"`
	Dir    string   `json:"dir"`
	Run    string   `json:"run"`
	Env    []string `json:"env,omitempty"`
}

// IA32Report is the "ia32-refused" step's result (ia32-refused.json).
type IA32Report struct {
	// Static386Errno is what execve of Args.Static386 returned ("" when it
	// ran; then Static386Exit is its exit status).
	Static386Errno string `json:"static386_errno"`
	Static386Exit  int    `json:"static386_exit"`
	// Sim and Fuzz are `kboost sim --arch i386 --exec auto --json 89 c8` and
	// `kboost fuzz --arch i386 --exec auto -n N --json`, run as the
	// kboost binary at KboostPath.
	Sim  CLIRun `json:"sim"`
	Fuzz CLIRun `json:"fuzz"`
	// Tests are the test binaries' runs, one per Args.Tests entry.
	Tests []ProgramRun `json:"tests,omitempty"`
}

// ProgramRun is a program's exit status, combined output and wall-clock
// time.
type ProgramRun struct {
	Args    []string `json:"args"`
	Exit    int      `json:"exit"`
	Output  string   `json:"output"`
	Seconds float64  `json:"seconds"`
}
