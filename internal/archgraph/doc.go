// Package archgraph has no code: its test keeps the import graph in
// ARCHITECTURE.md the real one (generated from `go list`; `go test
// ./internal/archgraph -update` rewrites it) and checks the layering the
// graph shows: only cmd/ imports the CLI, nothing under vm links it, and vm
// reaches loader, boost and audit only through vm/guest, the verification
// package shared by the guest and the host.
package archgraph
