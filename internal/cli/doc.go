// Package cli builds kboost's cobra command tree. NewRoot constructs it; there is
// no init() registration. Every RunE returns wrapped errors; Main prints the one
// message and chooses the exit status.
package cli
