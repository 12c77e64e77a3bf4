package vm

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kboost/kboost/vm/guest"
)

// Config describes one guest boot.
type Config struct {
	Arch   *Arch  // guest architecture; nil means AMD64
	Kernel string // path of the kernel image QEMU boots (-kernel)
	// Append adds words to the kernel command line, after vm's own
	// ("console=<dev> panic=-1 nokaslr quiet").
	Append   []string
	MemoryMB int           // guest memory; 0 means 512
	Timeout  time.Duration // whole run, boot included; 0 means DefaultTimeout
	// Console, if set, receives a live copy of the console, protocol data lines
	// excepted.
	Console io.Writer
	// QEMU overrides the emulator (default Arch.QEMU looked up in PATH).
	QEMU string
	// QEMUArgs are appended to QEMU's command line.
	QEMUArgs []string
	// GuestBinary is a prebuilt static guest /init for Arch; if empty, the file
	// named by $KBOOST_GUEST, else GuestPackage (default DefaultGuestPackage) built
	// with BuildGuest.
	GuestBinary  string
	GuestPackage string
	// KboostBinary is a prebuilt static kboost for Arch, packed at
	// guest.KboostPath when a step runs kboost commands (guest.NeedsKboost);
	// if empty, the file named by $KBOOST_GUEST_KBOOST, else
	// DefaultKboostPackage built with BuildGuest.
	KboostBinary string
	// Files are extra initramfs files (kernel modules, inputs for steps).
	Files []File
	// Verbose keeps kernel messages on the console (no "quiet", no printk lowering
	// in the guest).
	Verbose bool
	// HostMemory lets the guest's steps read guest kernel memory through the
	// host (guest.Scenario.HostMemory): QEMU gets a QMP socket and its serial
	// input, and Run answers each KBOOST-MEM request from QEMU's memory view
	// (memsave, through the guest CPU's page tables) while the guest waits.
	HostMemory bool
}

// DefaultTimeout bounds a run when Config.Timeout is zero.
const DefaultTimeout = 3 * time.Minute

// ConsoleTail is how many console lines errors and Result keep.
const ConsoleTail = 40

// Result is what a guest sent back.
type Result struct {
	Files map[string][]byte  // result entries by name (see package guest's steps)
	Names []string           // entry names in the order the guest stored them
	Steps []guest.StepReport // one per scenario step
	Guest guest.GuestReport
	// Console holds the last console lines before the result (data lines excepted).
	Console []string
	Timing  Timing
	// HostMem counts the guest's memory requests the host answered
	// (Config.HostMemory).
	HostMem HostMemStats
}

// HostMemStats counts host-memory requests: answered, failed, bytes read
// and the host's time reading.
type HostMemStats struct {
	Requests, Errors, Bytes int
	Time                    time.Duration
}

// Timing splits a run's wall-clock time.
type Timing struct {
	Prepare  time.Duration // guest build (or cache hit) and initramfs
	Boot     time.Duration // QEMU start to the begin marker: boot plus the steps
	Transfer time.Duration // begin marker to verified end marker
	Total    time.Duration // Run's whole duration
}

// Err returns a *StepError for the first failed step, or nil.
func (r *Result) Err() error {
	for _, s := range r.Steps {
		if s.Error != "" {
			return &StepError{Step: s.Name, Message: s.Error}
		}
	}
	return nil
}

func (c *Config) arch() *Arch {
	if c.Arch == nil {
		return AMD64
	}
	return c.Arch
}

func (c *Config) cmdline() string {
	words := []string{"console=" + c.arch().Console, "panic=-1", "nokaslr"}
	if !c.Verbose {
		words = append(words, "quiet")
	}
	return strings.Join(append(words, c.Append...), " ")
}

// qemuArgs is QEMU's command line; qmp is the path of the QMP socket for
// HostMemory.
func (c *Config) qemuArgs(qemu, initrd, qmp string) []string {
	mem := c.MemoryMB
	if mem == 0 {
		mem = 512
	}
	args := append([]string{}, c.arch().Machine...)
	args = append(args,
		"-m", fmt.Sprint(mem),
		"-kernel", c.Kernel,
		"-initrd", initrd,
		"-append", c.cmdline(),
		"-nographic", "-no-reboot",
		"-nic", "none", // no network: spares the boot ROM and the driver probe
	)
	if c.HostMemory {
		args = append(args, "-qmp", "unix:"+qmp+",server=on,wait=off")
	}
	return append(args, c.QEMUArgs...)
}

func newNonce() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Sprintf("%016x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
}

// initramfsFiles assembles /init, /scenario.json and the extra files.
func initramfsFiles(initBin []byte, sc *guest.Scenario, extra []File) ([]File, error) {
	scJSON, err := json.Marshal(sc)
	if err != nil {
		return nil, err
	}
	files := []File{
		{Name: "/init", Mode: 0o755, Data: initBin},
		{Name: guest.ScenarioPath, Mode: 0o644, Data: scJSON},
	}
	return append(files, extra...), nil
}

// decodeResult unpacks a verified payload into a Result.
func decodeResult(payload []byte) (*Result, error) {
	files, names, err := guest.Unpack(payload, MaxPayload)
	if err != nil {
		return nil, &ProtocolError{Reason: err.Error()}
	}
	r := &Result{Files: files, Names: names}
	if b, ok := files[guest.StepsFile]; ok {
		if err := json.Unmarshal(b, &r.Steps); err != nil {
			return nil, &ProtocolError{Reason: fmt.Sprintf("%s: %v", guest.StepsFile, err)}
		}
	} else {
		return nil, &ProtocolError{Reason: "result has no " + guest.StepsFile}
	}
	if b, ok := files[guest.GuestFile]; ok {
		if err := json.Unmarshal(b, &r.Guest); err != nil {
			return nil, &ProtocolError{Reason: fmt.Sprintf("%s: %v", guest.GuestFile, err)}
		}
	}
	return r, nil
}
