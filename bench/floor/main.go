//go:build linux

// Command floor is the physical floor of sluice's spool protocol
// (docs/protocol.md, section 3): a client and a server that do the
// protocol's steps and nothing else, so that what sluice costs on top of
// them can be measured (bench/compare).
//
//	floor server -spool DIR [-decide | -confine BASESPEC.json]
//	floor client -spool DIR [-cmd true] [-hook]
//	floor wrap [-root DIR] -- PROGRAM ARGS...
//	floor churn -file PATH [-every 10ms]
//
// The server watches DIR/new with inotify and, for each request, claims it
// (rename into cur/), reads it, appends one fsynced line to DIR/audit.log,
// runs `sh -c COMMAND` under a pty in the request's cwd (not with
// -decide), writes out/<id>.json (tmp + rename) and wakes the writer's
// FIFO out/<id>.wake. With -confine it is the confined floor: it runs
// `/bin/bash -c COMMAND` instead, confined as sluice confines a run
// (confined.go).
//
// The client makes the FIFO, writes tmp/<id>.json, fsyncs it, renames it
// into new/, polls the FIFO, reads the result and exits with the
// command's exit status. With -hook it reads a Claude Code PreToolUse JSON
// on stdin (its tool_input.command is the command) and prints the allow
// decision, as an agent hook does.
//
// wrap is the floor of `sluice sandbox`: it confines a locked thread of
// its own, starts PROGRAM from it, waits and exits with its status.
// churn creates and removes PATH every period, until killed: the
// unrelated activity near a spool that bench/compare runs beside sluice.
package main

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

type request struct {
	ID      string `json:"id"`
	Command string `json:"command"`
	Cwd     string `json:"cwd"`
}

type result struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Decision string `json:"decision"`
	ExitCode int    `json:"exit_code"`
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: floor server -spool DIR [-decide | -confine FILE] | floor client -spool DIR [-cmd CMD] [-hook] | floor wrap [-root DIR] -- PROGRAM ARGS... | floor churn -file PATH [-every 10ms]")
		os.Exit(2)
	}
	o, err := args(os.Args[2:])
	code := 0
	if err == nil {
		switch os.Args[1] {
		case "server":
			err = server(o)
		case "client":
			code, err = client(o)
		case "wrap":
			code, err = wrap(o.root, o.rest)
		case "churn":
			err = churn(o.file, o.every)
		default:
			err = fmt.Errorf("unknown subcommand %q", os.Args[1])
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(2)
	}
	os.Exit(code)
}

type opts struct {
	spool, cmd, confine, root, file string
	every                           time.Duration
	decide, hook                    bool
	rest                            []string // after --
}

// args parses the flags by hand: the client is a process per request and
// the flag package's setup is avoidable work.
func args(a []string) (o opts, err error) {
	o.cmd, o.every = "true", 10*time.Millisecond
	for i := 0; i < len(a); i++ {
		switch a[i] {
		case "-decide":
			o.decide = true
		case "-hook":
			o.hook = true
		case "--":
			o.rest = a[i+1:]
			i = len(a)
		case "-spool", "-cmd", "-confine", "-root", "-file", "-every":
			if i+1 >= len(a) {
				return o, fmt.Errorf("%s needs a value", a[i])
			}
			v := a[i+1]
			i++
			switch a[i-1] {
			case "-spool":
				o.spool = v
			case "-cmd":
				o.cmd = v
			case "-confine":
				o.confine = v
			case "-root":
				o.root = v
			case "-file":
				o.file = v
			case "-every":
				if o.every, err = time.ParseDuration(v); err != nil {
					return o, err
				}
			}
		default:
			return o, fmt.Errorf("unknown flag %q", a[i])
		}
	}
	switch os.Args[1] {
	case "server", "client":
		if o.spool == "" {
			err = errors.New("-spool DIR is required")
		}
	case "churn":
		if o.file == "" {
			err = errors.New("-file PATH is required")
		}
	case "wrap":
		if o.root == "" {
			o.root, err = os.Getwd()
		}
	}
	return o, err
}

// ---- server

func server(o opts) error {
	spool, decide := o.spool, o.decide
	var conf *confined
	var describe string
	if o.confine != "" {
		var err error
		if conf, describe, err = newConfined(o.confine); err != nil {
			return err
		}
		// Stopped with SIGTERM: its cgroups go with it.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGTERM, os.Interrupt)
		go func() {
			<-sigs
			conf.cg.close()
			os.Exit(0)
		}()
	}
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
	// Ready: the watch is in place (bench/compare waits for this file,
	// and prints what it holds).
	if err := os.WriteFile(filepath.Join(spool, "ready"), []byte(describe), 0o600); err != nil {
		return err
	}
	s := &srv{spool: spool, decide: decide, audit: audit, confined: conf}
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
	spool    string
	decide   bool
	confined *confined  // nil: sh, unconfined
	mu       sync.Mutex // one audit append (write + fsync) at a time: a chained log
	audit    *os.File
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
		if s.confined != nil {
			res.ExitCode, err = s.confined.run(req.Command, req.Cwd)
		} else {
			res.ExitCode, err = runPty(req.Command, req.Cwd)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "floor server:", id, err)
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

// runPty runs sh -c command in dir under a pty: start, read until EIO,
// wait.
func runPty(command, dir string) (int, error) {
	cmd := exec.Command("/bin/sh", "-c", command)
	cmd.Dir = dir
	f, err := pty.Start(cmd)
	if err != nil {
		return -1, err
	}
	_, _ = io.Copy(io.Discard, f) // ends with EIO once the last holder of the tty closes it
	f.Close()
	return exitCode(cmd.Wait())
}

// ---- client

func client(o opts) (int, error) {
	spool, command, hook := o.spool, o.cmd, o.hook
	cwd, err := os.Getwd()
	if err != nil {
		return 0, err
	}
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
	data, _ := json.Marshal(request{ID: id, Command: command, Cwd: cwd})
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
