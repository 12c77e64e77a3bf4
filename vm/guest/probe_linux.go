//go:build linux

package guest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kboost/kboost/loader"
	"golang.org/x/sys/unix"
)

func init() {
	Register("probe-lifecycle", stepLifecycle)
}

// runChild is Main for a child started with ChildEnv.
func runChild(mode string) error {
	kind, sym, ok := strings.Cut(mode, ":")
	if !ok {
		return fmt.Errorf("bad %s %q", ChildEnv, mode)
	}
	opt := loader.WatchOptions{Interval: 200 * time.Millisecond, Target: loader.TargetPerf}
	if kind == "watch-tracefs" {
		opt.Target = loader.TargetTracefs
	}
	opt.OnReady = func(loader.Target) { fmt.Println(ChildReady) }
	opt.OnTick = func(c []loader.Count) {
		if len(c) > 0 {
			fmt.Printf("hits %d\n", c[0].Hits)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return loader.Watch(ctx, []loader.Spec{{Symbol: sym}}, opt)
}

func listCount() int {
	l, _ := loader.ReadKprobesList()
	return len(l)
}

func stepLifecycle(e *Env, raw json.RawMessage) error {
	var args LifecycleArgs
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &args); err != nil {
			return fmt.Errorf("probe-lifecycle arguments: %w", err)
		}
	}
	if args.Watch == "" {
		args.Watch = "vfs_read"
	}
	var lc Lifecycle
	t, err := loader.OpenTracefs()
	if err != nil {
		return err
	}

	// Predictions from the live kernel, then the kernel's answer.
	fromKcore, err := loader.OpenLive("", args.Config)
	if err != nil {
		return fmt.Errorf("live kernel from kcore: %w", err)
	}
	defer fromKcore.Close()
	lc.Notes = append(lc.Notes, fromKcore.Pred.Notes...)
	var fromVml *loader.Live
	if args.Vmlinux != "" {
		if fromVml, err = loader.OpenLive(args.Vmlinux, args.Config); err != nil {
			return fmt.Errorf("live kernel with %s: %w", args.Vmlinux, err)
		}
		defer fromVml.Close()
	}
	for i, p := range args.Points {
		lp := LivePoint{Point: p}
		sp, err := loader.ParseSpec(p)
		if err != nil {
			lp.PredictErrors = append(lp.PredictErrors, err.Error())
			lc.Points = append(lc.Points, lp)
			continue
		}
		if x, err := fromKcore.Expect(sp); err != nil {
			lp.PredictErrors = append(lp.PredictErrors, "kcore: "+err.Error())
		} else {
			lp.FromKcore = &x
		}
		if fromVml != nil {
			if x, err := fromVml.Expect(sp); err != nil {
				lp.PredictErrors = append(lp.PredictErrors, "vmlinux: "+err.Error())
			} else {
				lp.FromVmlinux = &x
			}
		}
		sp.Event = fmt.Sprintf("lc%d", i)
		// Place before any probe is in the function: kcore shows int3 or the
		// optprobe jmp under a probe (until the optimizer has undone it).
		moved, placement, placeErr := fromKcore.Place(sp)
		n, err := t.Add(sp)
		var ke *loader.KernelError
		switch {
		case errors.As(err, &ke):
			lp.KernelErrno, lp.KernelErrLog = errnoName(ke.Errno), ke.ErrorLog
		case err != nil:
			lp.KernelErrno = err.Error()
		default:
			if err := t.Enable(n.Group, n.Event, true); err != nil {
				lc.Notes = append(lc.Notes, err.Error())
			}
			time.Sleep(300 * time.Millisecond)
			if l, err := loader.ReadKprobesList(); err == nil && len(l) > 0 {
				lp.KernelList = &l[0]
			}
			if err := t.Remove(n.Group, n.Event); err != nil {
				lc.Notes = append(lc.Notes, err.Error())
			}
			if lp.FromKcore != nil && !waitRestored(fromKcore.Kcore, lp.FromKcore.Addr, lp.FromKcore.Bytes) {
				lc.Notes = append(lc.Notes, p+": original bytes not back in kcore 3 s after removing the probe")
			}
			switch {
			case lp.FromKcore != nil && lp.FromKcore.Errno != "":
				// Accepted against the prediction (an inert tracefs event):
				// there is nothing to place.
			case placeErr != nil:
				lp.PredictErrors = append(lp.PredictErrors, "place: "+placeErr.Error())
			default:
				placeOne(t, moved, placement, &lp)
			}
		}
		perfOne(fromKcore, sp, &lp)
		lc.Points = append(lc.Points, lp)
	}

	// The perf PMU: a probe that lives as long as its descriptors.
	if p, err := loader.OpenPerf(loader.Spec{Symbol: args.Watch}); err != nil {
		lc.PerfError = err.Error()
	} else {
		lc.PerfTarget = "perf"
		lc.PerfListed = listCount()
		for i := 0; i < 20; i++ {
			_, _ = os.ReadFile("/proc/version")
		}
		lc.PerfHits, _ = p.Hits()
		if err := p.Close(); err != nil {
			lc.PerfError = err.Error()
		}
		lc.PerfAfter = listCount()
	}

	// Kill a watcher: perf with SIGINT and SIGKILL, tracefs with SIGKILL (then Sweep).
	for _, kc := range []KillCheck{{Target: "perf", Signal: "SIGINT"}, {Target: "perf", Signal: "SIGKILL"}, {Target: "tracefs", Signal: "SIGINT"}, {Target: "tracefs", Signal: "SIGKILL"}} {
		lc.Kills = append(lc.Kills, killOne(t, kc, args.Watch))
	}
	return e.PutJSON("probe-lifecycle.json", lc)
}

func errnoName(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

func killOne(t *loader.Tracefs, kc KillCheck, sym string) KillCheck {
	self, err := os.Executable()
	if err != nil {
		self = "/init"
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), ChildEnv+"=watch-"+kc.Target+":"+sym)
	out, err := cmd.StdoutPipe()
	if err != nil {
		kc.Error = err.Error()
		return kc
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		kc.Error = err.Error()
		return kc
	}
	ready := make(chan bool, 1)
	var lines []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == ChildReady {
				ready <- true
			}
			if len(lines) < 20 {
				lines = append(lines, sc.Text())
			}
		}
	}()
	select {
	case <-ready:
		kc.Ready = true
	case <-time.After(30 * time.Second):
	}
	kc.ListBefore = listCount()
	_, _ = os.ReadFile("/proc/version")
	time.Sleep(300 * time.Millisecond)
	sig := syscall.SIGINT
	if kc.Signal == "SIGKILL" {
		sig = syscall.SIGKILL
	}
	_ = cmd.Process.Signal(sig)
	<-done
	werr := cmd.Wait()
	kc.ExitStatus = "exit 0"
	if werr != nil {
		kc.ExitStatus = werr.Error()
	}
	kc.Output = strings.Join(lines, "\n") + stderr.String()
	kc.ListAfter = listCount()
	evs, _ := t.Events()
	kc.EventsAfter = len(evs)
	swept, err := t.Sweep()
	if err != nil {
		kc.Error = err.Error()
	}
	kc.Swept = len(swept)
	kc.ListSwept = listCount()
	return kc
}

// perfOne asks the perf kprobe PMU about the point (config1 = symbol or 0,
// config2 = offset or raw address): its errno, or the probed address while
// the probe is open.
func perfOne(lv *loader.Live, sp loader.Spec, lp *LivePoint) {
	sp.Event = ""
	p, err := loader.OpenPerf(sp)
	if err != nil {
		lp.PerfErrno = errnoName(err)
		return
	}
	if l, err := loader.ReadKprobesList(); err == nil && len(l) > 0 {
		lp.PerfAddr = l[0].Addr
	}
	if err := p.Close(); err != nil {
		lp.PerfErrno = err.Error()
	}
	if lp.FromKcore != nil && lp.FromKcore.Errno == "" {
		_ = waitRestored(lv.Kcore, lp.FromKcore.Addr, lp.FromKcore.Bytes)
	}
}

// placeOne asks the kernel about a point moved by --place cheapest.
func placeOne(t *loader.Tracefs, moved loader.Spec, p loader.Placement, lp *LivePoint) {
	lp.Placed, lp.PlacedCost, lp.PlacedReason = moved.Point(), p.Cost.String(), p.Reason
	moved.Event += "_placed"
	n, err := t.Add(moved)
	if err != nil {
		lp.PlacedErrno = errnoName(err)
		return
	}
	_ = t.Enable(n.Group, n.Event, true)
	time.Sleep(300 * time.Millisecond)
	if l, err := loader.ReadKprobesList(); err == nil && len(l) > 0 {
		lp.PlacedList = &l[0]
	}
	_ = t.Remove(n.Group, n.Event)
	time.Sleep(300 * time.Millisecond) // let the optimizer restore the bytes
}

// waitRestored waits until kcore shows want at addr again: after an optimized
// probe is removed, the optimizer puts the original bytes back a little later.
func waitRestored(kc *loader.Kcore, addr uint64, want []byte) bool {
	if len(want) == 0 {
		return true
	}
	deadline := time.Now().Add(3 * time.Second)
	for {
		if b, err := kc.Read(addr, len(want)); err == nil && string(b) == string(want) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
