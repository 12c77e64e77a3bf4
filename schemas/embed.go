// Package schemas holds the JSON Schema (draft 2020-12) of every kind of
// record kboost writes with --json, one file per output kind, and defs.json
// with the vocabulary they share (README.md, "JSON output"). Each file's
// $id is its name under https://github.com/kboost/kboost/schemas/, so the
// files refer to each other by relative name ("defs.json#/$defs/addr").
package schemas

import "embed"

// FS holds the schema files (*.json).
//
//go:embed *.json
var FS embed.FS

// Base is the URL the files' $ids are relative to.
const Base = "https://github.com/kboost/kboost/schemas/"
