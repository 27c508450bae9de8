package hook

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// hasTTY reports whether this process has a controlling terminal.
func hasTTY() bool {
	f, err := os.OpenFile("/dev/tty", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// geminiInteractive reports whether the Gemini CLI that runs this hook
// can ask a person: it is interactive when its stdin is a terminal and
// it was not given a prompt to run headless (-p, --prompt), or when it
// was started with -i (--prompt-interactive). The hook's own stdin and
// stdout are pipes either way, so it finds Gemini CLI among its
// ancestors (on Linux, in /proc); elsewhere, or when it cannot, a
// controlling terminal stands in.
func geminiInteractive() bool {
	pid := os.Getppid()
	for range 8 {
		if pid <= 1 {
			break
		}
		args := procArgs(pid)
		if isGemini(args) {
			for _, a := range args[1:] {
				switch {
				case a == "-i" || a == "--prompt-interactive" || strings.HasPrefix(a, "--prompt-interactive="):
					return true
				case a == "-p" || a == "--prompt" || strings.HasPrefix(a, "--prompt=") || strings.HasPrefix(a, "-p="):
					return false
				}
			}
			tty, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/0")
			return err == nil && (strings.HasPrefix(tty, "/dev/pts/") || strings.HasPrefix(tty, "/dev/tty"))
		}
		pid = procParent(pid)
	}
	return hasTTY()
}

// isGemini reports whether a command line is Gemini CLI's: the program, or
// the script an interpreter runs, is named gemini (or lives in gemini-cli).
// The CLI relaunches itself as "node --max-old-space-size=N .../gemini ...",
// so the interpreter's own options before the script are skipped.
func isGemini(args []string) bool {
	if len(args) == 0 {
		return false
	}
	gemini := func(a string) bool {
		return filepath.Base(a) == "gemini" || strings.Contains(a, "/@google/gemini-cli/")
	}
	if gemini(args[0]) {
		return true
	}
	for _, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			return gemini(a)
		}
	}
	return false
}

// procArgs is a process's command line; nil when it cannot be read.
func procArgs(pid int) []string {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil || len(data) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

// procParent is a process's parent; 0 when it cannot be read.
func procParent(pid int) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(data[i+1:]))
	if len(f) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
