package e2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// pids lists the processes in /proc.
func pids() []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid > 0 {
			out = append(out, pid)
		}
	}
	return out
}

// RunProcs lists the live processes of request id's run: those whose
// environment holds SLUICE_REQUEST_ID=id (the runner sets it; what the
// run starts inherits it). Zombies are not counted: they run nothing.
func RunProcs(id string) []int {
	want := []byte("\x00SLUICE_REQUEST_ID=" + id + "\x00")
	var out []int
	for _, pid := range pids() {
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil || !bytes.Contains(append([]byte{0}, env...), want) {
			continue
		}
		if state(pid) == 'Z' {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// Describe is a line per process: pid, state and command line.
func Describe(ps []int) string {
	var b strings.Builder
	for _, pid := range ps {
		cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		fmt.Fprintf(&b, "\n  %d %c %s", pid, state(pid), strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " "))
	}
	return b.String()
}

// stat is a process's /proc/PID/stat after its command name (state,
// ppid, ...), or nil.
func stat(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	// pid (comm) STATE ppid ...: comm may hold anything, so from the last ')'.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(data[i+1:]))
}

// state is a process's state letter (R, S, Z, ...), or 0.
func state(pid int) byte {
	if f := stat(pid); len(f) > 0 {
		return f[0][0]
	}
	return 0
}

// parent is a process's parent pid, or 0.
func parent(pid int) int {
	f := stat(pid)
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// Children lists the live children of pid whose executable's name is
// program ("" for any).
func Children(pid int, program string) []int {
	var out []int
	for _, p := range pids() {
		if parent(p) != pid || state(p) == 'Z' {
			continue
		}
		if program != "" {
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", p))
			if err != nil || filepath.Base(exe) != program {
				continue
			}
		}
		out = append(out, p)
	}
	return out
}

// under lists the processes whose working directory is dir or below it.
func under(dir string) []int {
	var out []int
	for _, pid := range pids() {
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err == nil && (cwd == dir || strings.HasPrefix(cwd, dir+"/")) {
			out = append(out, pid)
		}
	}
	return out
}
