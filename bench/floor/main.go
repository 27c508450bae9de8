//go:build linux

// Command floor is the physical floor of sluice's spool protocol
// (docs/protocol.md, section 3): a client and a server that do the
// protocol's steps and nothing else, so that what sluice costs on top of
// them can be measured (bench/compare).
//
//	floor server -spool DIR [-decide]
//	floor client -spool DIR [-cmd true] [-hook]
//
// The server watches DIR/new with inotify and, for each request, claims it
// (rename into cur/), reads it, appends one fsynced line to DIR/audit.log,
// runs `sh -c COMMAND` under a pty (not with -decide), writes
// out/<id>.json (tmp + rename) and wakes the writer's FIFO out/<id>.wake.
//
// The client makes the FIFO, writes tmp/<id>.json, fsyncs it, renames it
// into new/, polls the FIFO, reads the result and exits with the
// command's exit status. With -hook it reads a Claude Code PreToolUse JSON
// on stdin (its tool_input.command is the command) and prints the allow
// decision, as an agent hook does.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

type request struct {
	ID      string `json:"id"`
	Command string `json:"command"`
}

type result struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Decision string `json:"decision"`
	ExitCode int    `json:"exit_code"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: floor server -spool DIR [-decide] | floor client -spool DIR [-cmd CMD] [-hook]")
		os.Exit(2)
	}
	var err error
	code := 0
	switch os.Args[1] {
	case "server":
		err = server(os.Args[2:])
	case "client":
		code, err = client(os.Args[2:])
	default:
		err = fmt.Errorf("unknown subcommand %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

// args parses -spool DIR, -cmd CMD and the boolean flags, by hand: the
// client is a process per request and the flag package's setup is
// avoidable work.
func args(a []string) (spool, cmd string, bools map[string]bool, err error) {
	cmd = "true"
	bools = map[string]bool{}
	for i := 0; i < len(a); i++ {
		switch a[i] {
		case "-spool", "-cmd":
			if i+1 >= len(a) {
				return "", "", nil, fmt.Errorf("%s needs a value", a[i])
			}
			if a[i] == "-spool" {
				spool = a[i+1]
			} else {
				cmd = a[i+1]
			}
			i++
		case "-decide", "-hook":
			bools[a[i]] = true
		default:
			return "", "", nil, fmt.Errorf("unknown flag %q", a[i])
		}
	}
	if spool == "" {
		err = errors.New("-spool DIR is required")
	}
	return spool, cmd, bools, err
}

// ---- server

func server(a []string) error {
	spool, _, bools, err := args(a)
	if err != nil {
		return err
	}
	decide := bools["-decide"]
	for _, d := range []string{"tmp", "new", "cur", "out"} {
		if err := os.MkdirAll(filepath.Join(spool, d), 0o700); err != nil {
			return err
		}
	}
	audit, err := os.OpenFile(filepath.Join(spool, "audit.log"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	in, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	if _, err := unix.InotifyAddWatch(in, filepath.Join(spool, "new"), unix.IN_MOVED_TO); err != nil {
		return fmt.Errorf("inotify: %w", err)
	}
	// Ready: the watch is in place (bench/compare waits for this file).
	if err := os.WriteFile(filepath.Join(spool, "ready"), nil, 0o600); err != nil {
		return err
	}
	s := &srv{spool: spool, decide: decide, audit: audit}
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(in, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("inotify read: %w", err)
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			l := int(binary.NativeEndian.Uint32(buf[off+12:])) // InotifyEvent.Len
			name := strings.TrimRight(string(buf[off+unix.SizeofInotifyEvent:off+unix.SizeofInotifyEvent+l]), "\x00")
			off += unix.SizeofInotifyEvent + l
			if id, ok := strings.CutSuffix(name, ".json"); ok {
				go s.handle(id)
			}
		}
	}
}

type srv struct {
	spool  string
	decide bool
	mu     sync.Mutex // one audit append (write + fsync) at a time: a chained log
	audit  *os.File
}

func (s *srv) path(dir, name string) string { return filepath.Join(s.spool, dir, name) }

func (s *srv) handle(id string) {
	if err := s.act(id); err != nil {
		fmt.Fprintln(os.Stderr, "floor server:", id, err)
	}
}

func (s *srv) act(id string) error {
	// Claim.
	cur := s.path("cur", id+".json")
	if err := os.Rename(s.path("new", id+".json"), cur); err != nil {
		return err
	}
	// Read.
	data, err := os.ReadFile(cur)
	if err != nil {
		return err
	}
	var req request
	if err := json.Unmarshal(data, &req); err != nil {
		return err
	}
	// Audit: one line, fsynced.
	line := fmt.Sprintf("{\"ts\":%q,\"id\":%q,\"event\":\"auto_allowed\",\"command\":%s}\n",
		time.Now().UTC().Format(time.RFC3339Nano), req.ID, strconv.Quote(req.Command))
	s.mu.Lock()
	_, err = s.audit.WriteString(line)
	if err == nil {
		err = s.audit.Sync()
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	// Run, or only decide.
	res := result{ID: req.ID, Status: "decided", Decision: "allow"}
	if !s.decide {
		res.Status = "done"
		res.ExitCode, err = runPty(req.Command)
		if err != nil {
			res.Status, res.ExitCode = "failed", -1
		}
	}
	// Result: tmp + rename, no fsync.
	out, _ := json.Marshal(res)
	tmp := s.path("out", "."+id+".tmp")
	if err := os.WriteFile(tmp, out, 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.path("out", id+".json")); err != nil {
		return err
	}
	// Wake the writer, and remove the FIFO as the protocol says.
	wake := s.path("out", id+".wake")
	if fd, err := unix.Open(wake, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		_, _ = unix.Write(fd, []byte{1})
		unix.Close(fd)
	}
	os.Remove(wake)
	return nil
}

// runPty runs sh -c command under a pty: start, read until EIO, wait.
func runPty(command string) (int, error) {
	cmd := exec.Command("/bin/sh", "-c", command)
	f, err := pty.Start(cmd)
	if err != nil {
		return -1, err
	}
	_, _ = io.Copy(io.Discard, f) // ends with EIO once the last holder of the tty closes it
	f.Close()
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), nil
	}
	return 0, err
}

// ---- client

func client(a []string) (int, error) {
	spool, command, bools, err := args(a)
	if err != nil {
		return 0, err
	}
	hook := bools["-hook"]
	if hook {
		var in struct {
			ToolInput struct {
				Command string `json:"command"`
			} `json:"tool_input"`
		}
		data, err := io.ReadAll(os.Stdin)
		if err != nil {
			return 0, err
		}
		if err := json.Unmarshal(data, &in); err != nil {
			return 0, err
		}
		command = in.ToolInput.Command
	}
	id := strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(os.Getpid())

	// The wake FIFO: our read end, and our own write end so that poll
	// wakes only for the byte, not for a hang-up.
	wake := filepath.Join(spool, "out", id+".wake")
	if err := unix.Mkfifo(wake, 0o600); err != nil {
		return 0, fmt.Errorf("mkfifo: %w", err)
	}
	rd, err := unix.Open(wake, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}
	wr, err := unix.Open(wake, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, err
	}

	// Submit: tmp/<id>.json, fsync, rename into new/.
	data, _ := json.Marshal(request{ID: id, Command: command})
	tmp := filepath.Join(spool, "tmp", id+".json")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return 0, err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	if err := os.Rename(tmp, filepath.Join(spool, "new", id+".json")); err != nil {
		return 0, err
	}

	// Wait for the byte (or, every second, look for the result anyway).
	resPath := filepath.Join(spool, "out", id+".json")
	var out []byte
	for deadline := time.Now().Add(30 * time.Second); ; {
		fds := []unix.PollFd{{Fd: int32(rd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, 1000); err != nil && err != unix.EINTR {
			return 0, fmt.Errorf("poll: %w", err)
		}
		if out, err = os.ReadFile(resPath); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no result for %s", id)
		}
	}
	unix.Close(rd)
	unix.Close(wr)
	var res result
	if err := json.Unmarshal(out, &res); err != nil {
		return 0, fmt.Errorf("result %s: %w", id, err)
	}
	if hook {
		if res.Decision != "allow" {
			return 0, fmt.Errorf("result %s: %s", id, out)
		}
		_, err := os.Stdout.WriteString(`{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow"}}` + "\n")
		return 0, err
	}
	if res.Status != "done" {
		return 0, fmt.Errorf("result %s: %s", id, out)
	}
	return res.ExitCode, nil
}
