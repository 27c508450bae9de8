//go:build linux

// Command fleet measures the first frame of a fleet's console: 'sluice
// console --hub' started under a pty against an embedded hub that holds
// -boxes boxes × -per pending requests (100 × 10 by default), timed from
// its start to the first screen that shows every one of them waiting (the
// header's count). In the same run, interleaved, 'sluice console' on an
// empty local spool is timed to its first frame: the same program's start
// and first draw, without a hub. The screen is read with the console's own
// terminal emulator (tui/screen), as a terminal would draw it.
//
//	go run ./bench/fleet [-sluice bin/sluice] [-runs 10] [-boxes 100] [-per 10]
//
// It needs bin/sluice-hub beside -sluice ('make build'). It exits 1 when
// the median misses the target (200 ms), 2 when it could not measure.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/creack/pty"

	"github.com/sluice-dev/sluice/hub"
	"github.com/sluice-dev/sluice/queue"
	"github.com/sluice-dev/sluice/tui/screen"
)

const target = 200 * time.Millisecond

func main() {
	sluice := flag.String("sluice", "bin/sluice", "the sluice binary (sluice-hub beside it)")
	runs := flag.Int("runs", 10, "starts of each console")
	boxes := flag.Int("boxes", 100, "boxes on the hub")
	per := flag.Int("per", 10, "requests waiting on each box")
	flag.Parse()
	bin, err := filepath.Abs(*sluice)
	if err != nil {
		fail(err)
	}
	dir, err := os.MkdirTemp("", "sluice-bench-fleet-")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	url, creds, stop, err := fleet(dir, *boxes, *per)
	if err != nil {
		fail(err)
	}
	defer stop()
	env := []string{"HOME=" + dir, "XDG_CONFIG_HOME=" + filepath.Join(dir, "config"), "XDG_STATE_HOME=" + filepath.Join(dir, "state"),
		"XDG_RUNTIME_DIR=", "SLUICE_SPOOL=" + filepath.Join(dir, "spool"), "SLUICE_AUDIT=" + filepath.Join(dir, "audit.jsonl"),
		"SLUICE_CONFIG=", "NO_COLOR=1", "TERM=xterm-256color", "PATH=" + os.Getenv("PATH")}
	want := fmt.Sprintf("%d pending", *boxes**per)
	var hubT, localT []time.Duration
	for range *runs {
		d, err := firstFrame(env, want, bin, "console", "--hub", url, "--hub-creds", creds)
		if err != nil {
			fail(fmt.Errorf("console --hub: %w", err))
		}
		hubT = append(hubT, d)
		d, err = firstFrame(env, "0 pending", bin, "console")
		if err != nil {
			fail(fmt.Errorf("console: %w", err))
		}
		localT = append(localT, d)
	}
	slices.Sort(hubT)
	slices.Sort(localT)
	med := func(ds []time.Duration) time.Duration { return ds[len(ds)/2] }
	ms := func(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/1e6) }
	fmt.Printf("first frame, %d boxes × %d pending, %d runs (median, min–max):\n", *boxes, *per, *runs)
	fmt.Printf("  sluice console --hub          %s (%s–%s)  target ≤ %s\n", ms(med(hubT)), ms(hubT[0]), ms(hubT[len(hubT)-1]), ms(target))
	fmt.Printf("  sluice console (local, empty) %s (%s–%s)\n", ms(med(localT)), ms(localT[0]), ms(localT[len(localT)-1]))
	fmt.Printf("  ratio %.2fx\n", float64(med(hubT))/float64(med(localT)))
	if med(hubT) > target {
		fmt.Println("  MISSED")
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintf(os.Stderr, "fleet: %v\n", err)
	os.Exit(2)
}

// fleet starts an embedded hub in dir holding boxes × per pending
// requests, each published by its own box, and returns its URL and a
// console's credentials file.
func fleet(dir string, boxes, per int) (url, credsPath string, stop func(), err error) {
	st, err := hub.Open(filepath.Join(dir, "hub"))
	if err != nil {
		return "", "", nil, err
	}
	var boxCreds []*hub.Creds
	for i := range boxes {
		c, _, err := st.Add(fmt.Sprintf("box-%03d", i), hub.RoleBox, "")
		if err != nil {
			return "", "", nil, err
		}
		boxCreds = append(boxCreds, c)
	}
	con, _, err := st.Add("bench", hub.RoleConsole, "")
	if err != nil {
		return "", "", nil, err
	}
	h, err := hub.StartHub(hub.HubOptions{Listen: "127.0.0.1:0", Store: st})
	if err != nil {
		return "", "", nil, err
	}
	url = h.URL()
	credsPath = filepath.Join(dir, "console.creds")
	con.Hub = url
	if err := con.Write(credsPath); err != nil {
		h.Shutdown()
		return "", "", nil, err
	}
	ctx := context.Background()
	for _, c := range boxCreds {
		cl, err := hub.Connect(ctx, url, c)
		if err != nil {
			h.Shutdown()
			return "", "", nil, err
		}
		for range per {
			req := &queue.Request{Version: queue.Version, ID: queue.NewID(), Kind: queue.KindExec, Command: "npm install left-pad",
				Cwd: "/home/dev/app", Agent: "claude-code", CreatedAt: time.Now()}
			raw, _ := json.Marshal(req)
			p, _ := json.Marshal(hub.Pending{Box: c.Name, ID: req.ID, Request: raw, Digest: strings.Repeat("0", 64), QueuedAt: time.Now(),
				Verdict: &queue.Verdict{Action: queue.ActionAsk, Category: "networked", Risk: "medium"}})
			if _, err := cl.Pending.Put(ctx, hub.Key(c.Name, req.ID), p); err != nil {
				cl.Close()
				h.Shutdown()
				return "", "", nil, err
			}
		}
		cl.Close()
	}
	return url, credsPath, h.Shutdown, nil
}

// firstFrame starts argv under a 120×40 pty and returns how long it took
// until the screen showed want; then it quits the console with q.
func firstFrame(env []string, want string, argv ...string) (time.Duration, error) {
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	t0 := time.Now()
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		return 0, err
	}
	defer f.Close()
	scr := screen.New(120, 40, func(p []byte) { _, _ = f.Write(p) })
	defer scr.Close()
	found := make(chan time.Duration, 1)
	go func() {
		buf := make([]byte, 64<<10)
		seen := false
		for {
			n, err := f.Read(buf)
			if n > 0 {
				_, _ = scr.Write(buf[:n])
				if !seen && strings.Contains(ansi.Strip(scr.Render(40)), want) {
					seen = true
					found <- time.Since(t0)
				}
			}
			if err != nil {
				if !seen {
					close(found)
				}
				return
			}
		}
	}()
	var d time.Duration
	var ok bool
	select {
	case d, ok = <-found:
	case <-time.After(15 * time.Second):
	}
	_, _ = io.WriteString(f, "q")
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-done
	}
	if !ok {
		return 0, errors.New("the screen never showed " + want + ": " + ansi.Strip(scr.Render(40)))
	}
	return d, nil
}
