//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// maxPendingRSS is measurement 2's target, KiB.
const maxPendingRSS = 32 << 10

// maxJudgeRatio is measurement 3's target: serve's time over the baseline's.
const maxJudgeRatio = 2.0

// askCommand is a command the default policy asks about (networked).
const askCommand = "npm install"

type pendingRun struct {
	submit   time.Duration // writing the requests (not measured against anything)
	baseline time.Duration // list + read + decode, median of the warm passes
	first    time.Duration // serve start → first queued line
	queued   time.Duration // serve start → the n-th queued line
	judged   time.Duration // serve start → the n-th "ask" on stderr
	hwm      int64         // KiB
	rss      int64         // KiB, after judging
	threads  int64
	idleCPU  time.Duration // serve's CPU over o.idle seconds after judging
}

// measurePending is measurements 2 and 3 on one filesystem.
func measurePending(o *options, fsName, parent string, rep *report) error {
	var runs []pendingRun
	for i := range o.runs {
		r, err := onePending(o, parent)
		if err != nil {
			return err
		}
		fmt.Printf("  %s pending run %d: submitted in %s; baseline %s, queued %s, judged %s, VmHWM %s\n", fsName, i+1,
			ms(r.submit), ms(r.baseline), ms(r.queued), ms(r.judged), mib(r.hwm))
		runs = append(runs, r)
	}
	med := func(f func(pendingRun) time.Duration) time.Duration {
		v := make([]time.Duration, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	var hwm, rss, threads int64
	var each []string
	for _, r := range runs {
		hwm, rss, threads = max(hwm, r.hwm), max(rss, r.rss), max(threads, r.threads)
		each = append(each, fmt.Sprintf("%.1f", float64(r.hwm)/1024))
	}
	base := med(func(r pendingRun) time.Duration { return r.baseline })
	queued := med(func(r pendingRun) time.Duration { return r.queued })
	first := med(func(r pendingRun) time.Duration { return r.first })
	judged := med(func(r pendingRun) time.Duration { return r.judged })
	idle := med(func(r pendingRun) time.Duration { return r.idleCPU })

	okRSS := hwm < maxPendingRSS
	rep.add("pending", fmt.Sprintf("%-5s %d pending %q: serve VmHWM %s, the most of %d runs (%s MiB; VmRSS after %s, %d threads); target < %s: %s",
		fsName, o.n, askCommand, mib(hwm), len(runs), strings.Join(each, ", "), mib(rss), threads, mib(maxPendingRSS), verdict(okRSS)))
	ratio := float64(queued) / float64(base)
	okTime := ratio <= maxJudgeRatio
	rep.add("judge", fmt.Sprintf("%-5s baseline (list+read+decode %d, warm, in-process) %9s", fsName, o.n, ms(base)))
	rep.add("judge", fmt.Sprintf("%-5s serve start → %d queued lines      %9s  ratio %6.1fx  target ≤ %.0fx: %s",
		fsName, o.n, ms(queued), ratio, maxJudgeRatio, verdict(okTime)))
	rep.add("judge", fmt.Sprintf("%-5s   of which start → first queued     %9s; first → last %s (%.0f µs a request)",
		fsName, ms(first), ms(queued-first), float64((queued-first).Microseconds())/float64(o.n)))
	rep.add("judge", fmt.Sprintf("%-5s serve start → %d judged (ask logged) %9s  ratio %6.1fx",
		fsName, o.n, ms(judged), float64(judged)/float64(base)))
	if o.idle > 0 {
		rep.add("judge", fmt.Sprintf("%-5s serve idle with %d pending: %s CPU in %d s (rescans)", fsName, o.n, ms(idle), o.idle))
	}
	if !okRSS {
		rep.missed++
	}
	if !okTime {
		rep.missed++
	}
	return nil
}

func onePending(o *options, parent string) (pendingRun, error) {
	var r pendingRun
	e, err := newTestEnv(parent, "pending", o.keep, o.serveEnv)
	if err != nil {
		return r, err
	}
	defer e.close()
	sp, err := queue.Open(e.spool)
	if err != nil {
		return r, err
	}
	t := time.Now()
	if err := submitAll(sp, e.cwd, o.n); err != nil {
		return r, err
	}
	r.submit = time.Since(t)

	newDir := filepath.Join(e.spool, "new")
	var passes []time.Duration
	for range 5 { // the first warms the cache; all count, the median is kept
		d, n, err := baseline(newDir)
		if err != nil {
			return r, err
		}
		if n != o.n {
			return r, fmt.Errorf("baseline read %d requests, want %d", n, o.n)
		}
		passes = append(passes, d)
	}
	slices.Sort(passes)
	r.baseline = passes[len(passes)/2]

	srv, err := startServe(o.sluice, e, o.n)
	if err != nil {
		return r, err
	}
	first, last, err := waitQueued(e.audit, o.n, srv, 10*time.Minute)
	if err != nil {
		srv.stop()
		return r, err
	}
	r.first, r.queued = first.Sub(srv.Started), last.Sub(srv.Started)
	select {
	case <-srv.allAsk:
		r.judged = srv.asksAt.Sub(srv.Started)
	case <-srv.exited:
		return r, fmt.Errorf("serve exited: %s", srv.ended())
	case <-time.After(10 * time.Minute):
		srv.stop()
		return r, errors.New("serve did not judge every request within 10 minutes")
	}
	pid := srv.Pid()
	if o.idle > 0 {
		c0, err := cpuTime(pid)
		if err != nil {
			srv.stop()
			return r, err
		}
		time.Sleep(time.Duration(o.idle) * time.Second)
		c1, err := cpuTime(pid)
		if err != nil {
			srv.stop()
			return r, err
		}
		r.idleCPU = c1 - c0
	}
	for _, f := range []struct {
		name string
		v    *int64
	}{{"VmHWM", &r.hwm}, {"VmRSS", &r.rss}, {"Threads", &r.threads}} {
		if *f.v, err = procStatus(pid, f.name); err != nil {
			srv.stop()
			return r, err
		}
	}
	if err := srv.stop(); err != nil {
		return r, err
	}
	// Nothing was decided: every request is still pending, queued once.
	left, err := os.ReadDir(newDir)
	if err != nil {
		return r, err
	}
	if len(left) != o.n {
		return r, fmt.Errorf("%d requests left in new/, want %d", len(left), o.n)
	}
	if n, err := countQueued(e.audit); err != nil || n != o.n {
		return r, fmt.Errorf("the audit log holds %d queued lines, want %d (%v)", n, o.n, err)
	}
	return r, nil
}

// submitAll writes n ask requests with queue.Spool.Submit, a few writers
// at once (each Submit syncs its file).
func submitAll(sp *queue.Spool, cwd string, n int) error {
	const writers = 8
	ids := make(chan int)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for i := range ids {
				req := &queue.Request{Kind: queue.KindExec, Command: askCommand, Cwd: cwd, Agent: "bench-mem",
					Session: "s1", Note: fmt.Sprintf("pending request %d", i)}
				if err := sp.Submit(req); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
loop:
	for i := range n {
		select {
		case ids <- i:
		case err = <-errs:
			break loop
		}
	}
	close(ids)
	wg.Wait()
	if err == nil && len(errs) > 0 {
		err = <-errs
	}
	return err
}

// baseline lists dir, reads every file and decodes it into a
// queue.Request: the least any judge of the spool does.
func baseline(dir string) (time.Duration, int, error) {
	t := time.Now()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	n := 0
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return 0, 0, err
		}
		var req queue.Request
		if err := json.Unmarshal(data, &req); err != nil {
			return 0, 0, fmt.Errorf("%s: %w", e.Name(), err)
		}
		if req.ID != "" {
			n++
		}
	}
	return time.Since(t), n, nil
}

var queuedMember = []byte(`"event":"queued"`)

// waitQueued follows the audit log until it holds n queued lines and
// returns when the first and the n-th were seen.
func waitQueued(path string, n int, srv *server, limit time.Duration) (first, last time.Time, err error) {
	deadline := time.Now().Add(limit)
	var f *os.File
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	buf := make([]byte, 1<<20)
	var partial []byte
	count := 0
	for {
		if f == nil {
			if f, err = os.Open(path); err != nil {
				f = nil
			}
		}
		if f != nil {
			for {
				k, rerr := f.Read(buf)
				if k > 0 {
					data := append(partial, buf[:k]...)
					end := bytes.LastIndexByte(data, '\n') + 1
					c := bytes.Count(data[:end], queuedMember)
					if c > 0 && count == 0 {
						first = time.Now()
					}
					count += c
					partial = append(partial[:0], data[end:]...)
				}
				if rerr == io.EOF || k == 0 {
					break
				}
				if rerr != nil {
					return first, last, rerr
				}
			}
		}
		if count >= n {
			return first, time.Now(), nil
		}
		if srv.Exited() {
			<-srv.exited
			return first, last, fmt.Errorf("serve exited after %d queued lines: %s", count, srv.ended())
		}
		if time.Now().After(deadline) {
			return first, last, fmt.Errorf("only %d of %d queued lines within %s", count, n, limit)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func countQueued(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return bytes.Count(data, queuedMember), nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }
