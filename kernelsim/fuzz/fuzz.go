package fuzz

import (
	"github.com/kboost/kboost/boost"
	"github.com/kboost/kboost/kernelsim"
)

// FuzzConfig drives a Fuzzer.
type Config struct {
	Backend kernelsim.Backend
	Policy  *boost.Policy
	Env     *boost.Env // nil: SimEnv(Policy)
	Trials  int        // register states per case (default 3)
	Seed    uint64
	// Source generates the candidates.
	Source CaseSource
	// OnFinding receives every new finding (deduplicated by Finding.Key).
	OnFinding func(*Finding)
}

// FuzzStats are a fuzz run's counts.
type Stats struct {
	Cases         int `json:"cases"`
	DecodeInvalid int `json:"decode_invalid"` // the decoder refused (or truncated) the bytes
	// verdicts of the policy on the decoded cases
	Verdicts map[string]int `json:"verdicts"`
	// differential execution
	Checks            int `json:"checks"`
	UnsafeBoosts      int `json:"unsafe_boosts"`      // Boost verdict, boosted hit diverges
	PolicyDivergences int `json:"policy_divergences"` // emulated / single-stepped hit diverges (the kernel's own behaviour)
	// VendorDivergences are the policy divergences of 66-prefixed near
	// branches in 64-bit mode: AMD CPUs truncate the IP to 16 bits, the
	// kernel (like Intel CPUs) ignores the prefix. Included in
	// PolicyDivergences.
	VendorDivergences int `json:"policy_divergences_amd66"`
	// Unpredictable are the policy divergences (32-bit ARM) on encodings or
	// states the architecture calls UNPREDICTABLE, where the kernel's way
	// and the emulator's may both be right (included in PolicyDivergences).
	Unpredictable    int `json:"policy_divergences_unpredictable,omitempty"`
	MissedBoosts     int `json:"missed_boosts"` // not boosted, but a boosted hit agreed on every trial
	NotVerifiable    int `json:"not_verifiable"`
	Nondeterministic int `json:"nondeterministic"` // the in-place run differs from itself (rdtsc, rdrand...)
	// Unreproducible: a divergence that a rerun from the same state did not
	// show again (seen under qemu-user with undefined flags, whose lazy
	// evaluation depends on translation-block boundaries).
	Unreproducible int `json:"unreproducible"`
	// Uncontrolled: a divergence of an instruction whose memory operand
	// reads a mapped page the sandbox does not set per case (i386: 32-bit
	// address arithmetic wraps onto the runner's or qemu's pages).
	Uncontrolled int `json:"uncontrolled_memory"`
	// EmulatorArtifacts: divergences of i386 VEX/EVEX/XOP instructions with
	// vvvv >= 8 under qemu-i386, which reads a register i386 does not have
	// where the CPU ignores the bit (the in-place and slot runs then differ).
	EmulatorArtifacts int `json:"emulator_artifacts"`
	Inconclusive      int `json:"inconclusive"`
	SlotRefused       int `json:"slot_refused"` // RIP-relative rebase refused or layout problem
	SlotProblems      int `json:"slot_problems"`
	// decoder vs hardware length
	LengthChecked int `json:"length_checked"`
	LengthErrors  int `json:"length_errors"`       // CPU executed it with another length
	LengthVendor  int `json:"length_vendor_amd66"` // 66-prefixed near branch, rel16 on AMD (documented)
	CPURejected   int `json:"cpu_rejected_ud"`     // #UD on the CPU
	// CPUTooLong: the CPU raised #GP after 15 bytes (its decoding is longer
	// than 15) where the decoder found a shorter instruction; not executed,
	// counted apart from LengthErrors and reported as length-cpu-toolong.
	CPUTooLong         int     `json:"cpu_too_long_gp"`
	DecoderRejectsRun  int     `json:"decoder_rejects_cpu_runs"`
	LengthUnknown      int     `json:"length_unknown"`
	LengthOracle       string  `json:"length_oracle"`
	Elapsed            float64 `json:"elapsed_seconds"`
	ChecksPerSecond    float64 `json:"checks_per_second"`
	CasesPerSecond     float64 `json:"cases_per_second"`
	CPUSeconds         float64 `json:"cpu_seconds,omitempty"`           // tracer + sandbox
	ChecksPerCPUSecond float64 `json:"checks_per_cpu_second,omitempty"` // per core
	FindingKeys        int     `json:"distinct_findings"`
	// Unmodelled counts, by kernel action, the hits kboost has no model of
	// (32-bit ARM; included in Inconclusive).
	Unmodelled map[string]int `json:"unmodelled,omitempty"`
}

// Finding is one line of the findings file.
type Finding struct {
	Kind string `json:"kind"` // unsafe-boost, policy-divergence, missed-boost, length, length-vendor, decoder-rejects
	Note string `json:"note,omitempty"`
	Key  string `json:"key"`
	// ID is the finding's content hash (FindingID): the same finding from
	// two shards or runs has the same ID.
	ID string `json:"id"`
	// Block is the campaign block whose case found it (Seek).
	Block    uint64   `json:"block"`
	Bytes    string   `json:"bytes"` // hex bytes, spaced ("48 8b 05": report writes them so)
	Asm      string   `json:"asm,omitempty"`
	Arch     string   `json:"arch"`
	Policy   string   `json:"policy"`
	Verdict  string   `json:"verdict,omitempty"`
	Path     string   `json:"path,omitempty"`
	Reasons  []string `json:"reasons,omitempty"` // the verdict's rule ids
	Details  []string `json:"details,omitempty"` // their texts
	Diverged []string `json:"diverged,omitempty"`
	// Trials is how many states were checked, DivergedTrials how many of
	// them diverged (absent: none).
	Trials         int `json:"trials,omitempty"`
	DivergedTrials int `json:"diverged_trials,omitempty"`
	// DecoderLen and CPULen are the two lengths for length findings.
	DecoderLen int    `json:"decoder_len,omitempty"`
	CPULen     int    `json:"cpu_len,omitempty"`
	CPU        string `json:"cpu,omitempty"`
	// Reproducer: the minimized bytes and the initial state of a diverging
	// trial (registers not listed are irrelevant: zeroing them keeps the
	// divergence), with both outcomes.
	Reproducer *Reproducer `json:"reproducer,omitempty"`
}

// Reproducer is a minimized diverging check.
type Reproducer struct {
	Bytes   string            `json:"bytes"` // spaced, as Finding.Bytes
	Regs    map[string]string `json:"regs"`
	Flags   string            `json:"flags"`
	InPlace string            `json:"in_place"`
	Hit     string            `json:"hit"`
	Diff    string            `json:"diff"`
}
