// Package schemacheck validates JSON documents against the schemas of the
// schemas package with a full JSON Schema 2020-12 validator
// (github.com/santhosh-tekuri/jsonschema/v6): the tests of every command's
// --json output use it, so the checked-in schemas are what the outputs are.
package schemacheck

import (
	"bytes"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"github.com/kboost/kboost/schemas"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	once     sync.Once
	compiled map[string]*jsonschema.Schema
	loadErr  error
)

func load() {
	c := jsonschema.NewCompiler()
	names, err := fs.Glob(schemas.FS, "*.json")
	if err != nil {
		loadErr = err
		return
	}
	for _, n := range names {
		b, _ := schemas.FS.ReadFile(n)
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			loadErr = fmt.Errorf("schemas/%s: %w", n, err)
			return
		}
		if err := c.AddResource(schemas.Base+n, doc); err != nil {
			loadErr = fmt.Errorf("schemas/%s: %w", n, err)
			return
		}
	}
	compiled = map[string]*jsonschema.Schema{}
	for _, n := range names {
		s, err := c.Compile(schemas.Base + n)
		if err != nil {
			loadErr = fmt.Errorf("schemas/%s: %w", n, err)
			return
		}
		compiled[strings.TrimSuffix(n, ".json")] = s
	}
}

// Names lists the schemas ("audit", "decode", ...).
func Names() ([]string, error) {
	once.Do(load)
	if loadErr != nil {
		return nil, loadErr
	}
	var n []string
	for k := range compiled {
		n = append(n, k)
	}
	return n, nil
}

// Validate checks every JSON value in doc (one, or one per line) against
// schema name ("audit" for schemas/audit.json).
func Validate(name string, doc []byte) error {
	once.Do(load)
	if loadErr != nil {
		return loadErr
	}
	s := compiled[name]
	if s == nil {
		return fmt.Errorf("no schema %q", name)
	}
	r := bytes.NewReader(doc)
	dec := jsonDecoder(r)
	n := 0
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("value %d: %w", n+1, err)
		}
		n++
		if err := s.Validate(v); err != nil {
			return fmt.Errorf("value %d against schemas/%s.json: %w", n, name, err)
		}
	}
	if n == 0 {
		return fmt.Errorf("no JSON value to check against schemas/%s.json", name)
	}
	return nil
}
