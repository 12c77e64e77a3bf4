package guest

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sort"
	"time"
)

// StepFunc is one scenario step. It reads its arguments from args (nil when the
// scenario gave none) and stores results with Env.Put / Env.PutJSON. A returned
// error is reported to the host; the following steps still run.
type StepFunc func(e *Env, args json.RawMessage) error

var registry = map[string]StepFunc{}

// Register makes a step available to scenarios under name. It panics if the name is
// taken, like http.Handle; call it from init functions.
func Register(name string, f StepFunc) {
	if _, dup := registry[name]; dup {
		panic("guest: step " + name + " registered twice")
	}
	registry[name] = f
}

// Steps lists the registered step names, sorted.
func Steps() []string {
	names := make([]string, 0, len(registry))
	for k := range registry {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// Env is what a step sees: a place for its results and a log on the console.
type Env struct {
	log io.Writer
	// hostMem reads guest kernel memory through the host (nil: the host does
	// not serve KBOOST-MEM requests); see HostMemory.
	hostMem hostMemReader
	entries []Entry
	names   map[string]bool
	cur     *StepReport
}

// NewEnv returns an Env logging to log (the console in a guest; anything in tests).
func NewEnv(log io.Writer) *Env {
	return &Env{log: log, names: make(map[string]bool)}
}

// MemReader reads kernel virtual memory (/proc/kcore, or the host through
// QEMU).
type MemReader interface {
	Read(addr uint64, n int) ([]byte, error)
}

// HostMemory returns a reader that asks the host for guest kernel memory
// (Scenario.HostMemory), or nil when the host does not serve such requests.
// ttb, when not 0, is the physical address of the translation table the
// host walks (see hostmem.go); 0 leaves translation to the guest CPU's
// current page tables.
func (e *Env) HostMemory(ttb uint64) MemReader {
	if e.hostMem == nil {
		return nil
	}
	return hostMemTTB{h: e.hostMem, ttb: ttb}
}

// Put stores a result entry. Names are unique across the whole run; putting a name
// twice replaces the earlier data.
func (e *Env) Put(name string, data []byte) {
	if e.names[name] {
		for i := range e.entries {
			if e.entries[i].Name == name {
				e.entries[i].Data = data
			}
		}
		return
	}
	e.names[name] = true
	e.entries = append(e.entries, Entry{Name: name, Data: data})
	if e.cur != nil {
		e.cur.Outputs = append(e.cur.Outputs, name)
	}
}

// PutJSON stores v, encoded as indented JSON, under name.
func (e *Env) PutJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("guest: encoding %s: %w", name, err)
	}
	e.Put(name, append(b, '\n'))
	return nil
}

// Logf prints a progress line on the console (outside the protocol markers).
func (e *Env) Logf(format string, args ...any) {
	if e.log != nil {
		fmt.Fprintf(e.log, "kboost-guest: "+format+"\n", args...)
	}
}

// Run executes the scenario's steps in order and returns one report per step. A
// panicking step is reported as failed, with its stack on the console.
func (e *Env) Run(steps []Step) []StepReport {
	reports := make([]StepReport, 0, len(steps))
	for _, st := range steps {
		rep := StepReport{Name: st.Name}
		e.cur = &rep
		start := time.Now()
		if f, ok := registry[st.Name]; !ok {
			rep.Error = fmt.Sprintf("unknown step %q (this guest knows %v)", st.Name, Steps())
		} else if err := e.runOne(f, st.Args); err != nil {
			rep.Error = err.Error()
		}
		rep.Duration = time.Since(start)
		e.cur = nil
		if rep.Error != "" {
			e.Logf("step %s failed: %s", st.Name, rep.Error)
		} else {
			e.Logf("step %s done in %v", st.Name, rep.Duration.Round(time.Millisecond))
		}
		reports = append(reports, rep)
	}
	return reports
}

func (e *Env) runOne(f StepFunc, args json.RawMessage) (err error) {
	defer func() {
		if r := recover(); r != nil {
			e.Logf("panic: %v\n%s", r, debug.Stack())
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return f(e, args)
}

// Entries returns the stored results in the order they were put.
func (e *Env) Entries() []Entry { return e.entries }

// readFileOptional reads path, reporting whether it exists.
func readFileOptional(path string) ([]byte, bool, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	return b, err == nil, err
}
