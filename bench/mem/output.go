//go:build linux

package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// flatSlack is how much serve's peak RSS may differ between the output
// sizes (and above its peak after `true`) and still count as flat: the
// run's fixed buffers (64 KiB reads, the 64 KiB tail, the hash) and the
// noise of a garbage-collected heap, nothing that grows with the output.
const (
	flatSlackSizes = 1024 // KiB, largest vs smallest size
	flatSlackTrue  = 4096 // KiB, largest size vs `true`
)

// outputCommand writes exactly size bytes (plus a pty's \r per line).
func outputCommand(size int64) string {
	return fmt.Sprintf("base64 /dev/zero | head -c %d", size)
}

// measureOutput is measurement 1 on one filesystem.
func measureOutput(o *options, fsName, parent string, rep *report) error {
	for _, tty := range []bool{true, false} {
		mode := "pty"
		if !tty {
			mode = `"tty": false`
		}
		base, err := oneRun(o, parent, "true", "true", tty)
		if err != nil {
			return fmt.Errorf("%s true: %w", mode, err)
		}
		rep.add("output", fmt.Sprintf("%-5s %-13s %-8s  VmHWM %10s", fsName, mode, "true", mib(base.hwm)))
		var first, last int64
		for i, size := range o.sizes {
			r, err := oneRun(o, parent, fmt.Sprintf("out%d", size), outputCommand(size), tty)
			if err != nil {
				return fmt.Errorf("%s %d bytes: %w", mode, size, err)
			}
			if r.res.OutputBytes < size {
				return fmt.Errorf("%s: the command wrote %d bytes, want %d", mode, r.res.OutputBytes, size)
			}
			mbps := float64(r.res.OutputBytes) / 1e6 / (float64(r.res.DurationMS) / 1000)
			rep.add("output", fmt.Sprintf("%-5s %-13s %-8s  VmHWM %10s  (%+.1f MiB vs true; %d bytes out at %.0f MB/s, sandbox %s)",
				fsName, mode, human(size), mib(r.hwm), float64(r.hwm-base.hwm)/1024, r.res.OutputBytes, mbps, r.res.Sandbox))
			if i == 0 {
				first = r.hwm
			}
			last = r.hwm
		}
		growth, overTrue := last-first, last-base.hwm
		ok := growth <= flatSlackSizes && overTrue <= flatSlackTrue
		line := fmt.Sprintf("%-5s %-13s target flat (largest-smallest ≤ %d KiB, largest-true ≤ %d KiB): %+d KiB, %+d KiB: %s",
			fsName, mode, flatSlackSizes, flatSlackTrue, growth, overTrue, verdict(ok))
		rep.add("output", line)
		if !ok {
			rep.missed++
		}
	}
	return nil
}

type runResult struct {
	hwm int64 // serve's VmHWM after the run, KiB
	res *queue.Result
}

// oneRun starts a fresh serve, has it run command, and reads its peak RSS
// once the result is written.
func oneRun(o *options, parent, name, command string, tty bool) (runResult, error) {
	e, err := newTestEnv(parent, name, o.keep, o.serveEnv)
	if err != nil {
		return runResult{}, err
	}
	defer e.close()
	sp, err := queue.Open(e.spool)
	if err != nil {
		return runResult{}, err
	}
	srv, err := startServe(o.sluice, e, -1)
	if err != nil {
		return runResult{}, err
	}
	req := &queue.Request{Kind: queue.KindExec, Command: command, Cwd: e.cwd, TimeoutS: 900, Agent: "bench-mem"}
	if !tty {
		req.TTY = new(bool)
	}
	req.ID = queue.NewID()
	w, err := sp.NewWaiter(req.ID)
	if err != nil {
		srv.stop()
		return runResult{}, err
	}
	defer w.Close()
	if err := sp.Submit(req); err != nil {
		srv.stop()
		return runResult{}, err
	}
	deadline := time.Now().Add(15 * time.Minute)
	var res *queue.Result
	for res == nil {
		r, err := w.Wait(200 * time.Millisecond)
		switch {
		case err == nil:
			res = r
		case !errors.Is(err, queue.ErrNoResult):
			srv.stop()
			return runResult{}, err
		case srv.Exited():
			<-srv.exited
			return runResult{}, fmt.Errorf("serve exited before answering: %s", srv.ended())
		case time.Now().After(deadline):
			srv.stop()
			return runResult{}, errors.New("no result within 15 minutes")
		}
	}
	if res.Status != queue.StatusDone || res.ExitCode == nil || *res.ExitCode != 0 {
		srv.stop()
		return runResult{}, fmt.Errorf("%q: status %s, exit %v, reason %q", command, res.Status, res.ExitCode, res.Reason)
	}
	// The result is written last; let serve finish its log line.
	time.Sleep(100 * time.Millisecond)
	hwm, err := procStatus(srv.Pid(), "VmHWM")
	if err != nil {
		srv.stop()
		return runResult{}, err
	}
	if err := srv.stop(); err != nil {
		return runResult{}, err
	}
	return runResult{hwm: hwm, res: res}, nil
}

func human(n int64) string {
	switch {
	case n >= 1e9 && n%1e8 == 0:
		return fmt.Sprintf("%gGB", float64(n)/1e9)
	case n >= 1e6 && n%1e5 == 0:
		return fmt.Sprintf("%gMB", float64(n)/1e6)
	}
	return fmt.Sprintf("%dB", n)
}

func verdict(ok bool) string {
	if ok {
		return "MET"
	}
	return "MISSED"
}
