package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sluice-dev/sluice/audit"
	"github.com/sluice-dev/sluice/queue"
)

// cmdAuditLog implements the script command "auditlog", which writes to
// the script's audit log ($SLUICE_AUDIT, else the default under
// $XDG_STATE_HOME or $HOME) the way sluice will, or damages it:
//
//	auditlog append [-id ID] [-agent A] [-actor A] [-kind K] [-path P]
//	                [-status S] [-exit N] EVENT [COMMAND]
//	    append one event through audit.Log; COMMAND takes Go escapes
//	auditlog gen N
//	    append N events: queued, approved, started, finished, ...
//	auditlog raw TEXT
//	    append TEXT (Go escapes) as it is, as a crash or an editor would
//	auditlog edit LINE OLD NEW
//	    replace the first OLD in line LINE with NEW, hash untouched
//	auditlog delete LINE
//	auditlog swap LINE LINE
//	auditlog cut N
//	    remove the last N bytes
//	auditlog forge LINE COMMAND
//	    insert before line LINE a forged event chained to the line before,
//	    its hash computed as the README says (the documented canonical form)
func cmdAuditLog(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! auditlog")
	}
	if len(args) == 0 {
		ts.Fatalf("usage: auditlog append|gen|raw|edit|delete|swap|cut ...")
	}
	path := scriptAuditPath(ts)
	switch verb, args := args[0], args[1:]; verb {
	case "append":
		ev, err := parseAuditEvent(args)
		if err != nil {
			ts.Fatalf("auditlog append: %v", err)
		}
		appendEvents(ts, path, ev)
	case "gen":
		n, err := strconv.Atoi(argAt(ts, args, 0))
		ts.Check(err)
		evs := make([]queue.Event, n)
		for i := range evs {
			evs[i] = genEvent(i)
		}
		appendEvents(ts, path, evs...)
	case "raw":
		text, err := unescape(argAt(ts, args, 0))
		ts.Check(err)
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		ts.Check(err)
		_, err = f.WriteString(text)
		ts.Check(err)
		ts.Check(f.Close())
	case "edit", "delete", "swap", "cut", "forge":
		data, err := os.ReadFile(path)
		ts.Check(err)
		data, err = damage(verb, args, data)
		if err != nil {
			ts.Fatalf("auditlog %s: %v", verb, err)
		}
		ts.Check(os.WriteFile(path, data, 0o600))
	default:
		ts.Fatalf("auditlog: unknown verb %q", verb)
	}
}

func argAt(ts *testscript.TestScript, args []string, i int) string {
	if i >= len(args) {
		ts.Fatalf("auditlog: missing argument")
	}
	return args[i]
}

// scriptAuditPath resolves the log path as sluice does, from the script's
// environment.
func scriptAuditPath(ts *testscript.TestScript) string {
	if p := ts.Getenv("SLUICE_AUDIT"); p != "" {
		return ts.MkAbs(p)
	}
	if d := ts.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "sluice", "audit.jsonl")
	}
	return filepath.Join(ts.Getenv("HOME"), ".local", "state", "sluice", "audit.jsonl")
}

func parseAuditEvent(args []string) (queue.Event, error) {
	fs := flag.NewFlagSet("auditlog append", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	id := fs.String("id", "01JD3T6Q6Z8W9X0Y1Z2A3B4C5D", "")
	agent := fs.String("agent", "claude-code", "")
	actor := fs.String("actor", "", "")
	kind := fs.String("kind", "exec", "")
	path := fs.String("path", "", "")
	status := fs.String("status", "", "")
	exit := fs.Int("exit", -1, "")
	if err := fs.Parse(args); err != nil {
		return queue.Event{}, err
	}
	rest := fs.Args()
	if len(rest) < 1 || len(rest) > 2 {
		return queue.Event{}, fmt.Errorf("want EVENT [COMMAND]")
	}
	ev := queue.Event{Event: queue.EventName(rest[0]), ID: *id, Agent: *agent, Actor: *actor,
		Kind: queue.Kind(*kind), Path: *path, Status: queue.Status(*status), Cwd: "/home/me/src/app"}
	if len(rest) == 2 {
		cmd, err := unescape(rest[1])
		if err != nil {
			return ev, err
		}
		ev.Command = cmd
	}
	if *exit >= 0 {
		ev.ExitCode = exit
	}
	return ev, nil
}

// genEvent is the i-th event of a run of typical request lives.
func genEvent(i int) queue.Event {
	cmds := []string{"go test ./...", "git status --short", "make build", "rm -rf ./build"}
	req := &queue.Request{ID: fmt.Sprintf("01JD3T6Q6Z8W9X0Y1Z2A%06d", i/4), Kind: queue.KindExec,
		Command: cmds[(i/4)%len(cmds)], Cwd: "/home/me/src/app", Agent: "claude-code"}
	ev := queue.NewEvent([]queue.EventName{queue.EventQueued, queue.EventApproved, queue.EventStarted, queue.EventFinished}[i%4], req)
	switch ev.Event {
	case queue.EventApproved:
		ev.Actor = "me"
	case queue.EventFinished:
		code := 0
		ev.Status, ev.ExitCode, ev.DurationMS = queue.StatusDone, &code, 1200
	}
	return ev
}

func appendEvents(ts *testscript.TestScript, path string, evs ...queue.Event) {
	l, err := audit.Open(path)
	ts.Check(err)
	defer l.Close()
	for _, ev := range evs {
		ts.Check(l.Record(ev))
	}
}

// damage changes a log as the auditlog verbs edit, delete, swap and cut do.
func damage(verb string, args []string, data []byte) ([]byte, error) {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	line := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		last := len(lines)
		if verb == "forge" {
			last++ // after the last line
		}
		if err != nil || n < 1 || n > last {
			return 0, fmt.Errorf("no line %q in %d lines", s, len(lines))
		}
		return n - 1, nil
	}
	switch {
	case verb == "edit" && len(args) == 3:
		i, err := line(args[0])
		if err != nil {
			return nil, err
		}
		if !bytes.Contains(lines[i], []byte(args[1])) {
			return nil, fmt.Errorf("line %s does not hold %q", args[0], args[1])
		}
		lines[i] = bytes.Replace(lines[i], []byte(args[1]), []byte(args[2]), 1)
	case verb == "delete" && len(args) == 1:
		i, err := line(args[0])
		if err != nil {
			return nil, err
		}
		lines = append(lines[:i], lines[i+1:]...)
	case verb == "swap" && len(args) == 2:
		i, err := line(args[0])
		if err != nil {
			return nil, err
		}
		j, err := line(args[1])
		if err != nil {
			return nil, err
		}
		lines[i], lines[j] = lines[j], lines[i]
	case verb == "forge" && len(args) == 2:
		i, err := line(args[0])
		if err != nil {
			return nil, err
		}
		ev := queue.Event{Seq: 1, TS: time.Now().UTC(), ID: "01JD3TF0RGED00000000000000", Event: queue.EventApproved,
			Actor: "me", Kind: queue.KindExec, Command: args[1], Cwd: "/home/me/src/app"}
		if i > 0 {
			prev, err := audit.DecodeLine(lines[i-1])
			if err != nil {
				return nil, err
			}
			ev.Seq, ev.Prev = prev.Seq+1, prev.Hash
		}
		forged, err := forgeLine(ev)
		if err != nil {
			return nil, err
		}
		lines = append(lines[:i], append([][]byte{forged}, lines[i:]...)...)
	case verb == "cut" && len(args) == 1:
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 0 || n > len(data) {
			return nil, fmt.Errorf("cannot cut %q bytes of %d", args[0], len(data))
		}
		return data[:len(data)-n], nil
	default:
		return nil, fmt.Errorf("wrong arguments %q", args)
	}
	return bytes.Join(lines, nil), nil
}

// forgeLine encodes ev as a log line with a hash of its own, following the
// README's definition, not the audit package's code: the JSON encoding of
// the event without hash (no HTML escaping), hashed with SHA-256, and the
// hash member spliced in before the closing brace.
func forgeLine(ev queue.Event) ([]byte, error) {
	ev.Hash = ""
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		return nil, err
	}
	body := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	sum := sha256.Sum256(body)
	line := fmt.Sprintf(`%s,"hash":"%s"}`+"\n", body[:len(body)-1], hex.EncodeToString(sum[:]))
	return []byte(line), nil
}

// TestAuditTailFollow runs 'sluice audit tail -f' as its own process and
// appends events from this one: each shows up, escaped, as it lands.
func TestAuditTailFollow(t *testing.T) {
	t.Parallel()
	sluice, err := exec.LookPath("sluice") // testscript.Main put it on $PATH
	if err != nil {
		t.Skip(err)
	}
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	l, err := audit.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	record := func(ev queue.Event) {
		t.Helper()
		if err := l.Record(ev); err != nil {
			t.Fatal(err)
		}
	}
	record(genEvent(0))

	cmd := exec.Command(sluice, "audit", "tail", "-f", "-n", "1", "--audit", log)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0", "COLUMNS=")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	expect := func(want string) {
		t.Helper()
		guard := time.After(time.Minute) // a guard against a hang, not a speed requirement
		for {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("sluice audit tail -f exited before showing %q; stderr:\n%s", want, stderr.String())
				}
				if strings.Contains(line, "\x1b") {
					t.Fatalf("raw ESC on the screen: %q", line)
				}
				if strings.Contains(line, want) {
					return
				}
			case <-guard:
				t.Fatalf("sluice audit tail -f did not show %q", want)
			}
		}
	}
	expect("TIME")
	expect("go test ./...")

	// Appended by this process while tail -f runs in its own.
	ev := genEvent(4)
	ev.Command = "printf '\x1b[2J\x1b[H' # clears the screen"
	record(ev)
	expect(`printf '\x1b[2J\x1b[H' # clears the screen`)
	for i := 5; i < 8; i++ {
		record(genEvent(i))
	}
	expect("exit 0")
}
