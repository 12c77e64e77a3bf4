// Package spec parses kboost's x86 opcode spec file (opcodes/spec/x86.spec) and
// renders the Go tables generated from it. It is shared by the generator command
// and by the test that fails when the generated file is stale.
package spec
