//go:build linux

package main

import (
	"bufio"
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

	"golang.org/x/sys/unix"

	"github.com/sluice-dev/sluice/internal/e2e"
)

// fsParent is the directory the test directories of fsName go under,
// checked to be what its name says.
func fsParent(fsName string) (string, error) {
	var dir string
	var want int64
	switch fsName {
	case "tmpfs":
		dir, want = "/dev/shm", unix.TMPFS_MAGIC
	case "disk":
		dir, want = "/tmp", unix.EXT4_SUPER_MAGIC
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "", fmt.Errorf("%s: %w", dir, err)
	}
	if int64(st.Type) != want {
		fmt.Printf("note: %s is not %s here (statfs type %#x); measuring it anyway\n", dir, fsName, st.Type)
	}
	return dir, nil
}

// testEnv is one fresh directory with everything serve reads or writes.
type testEnv struct {
	root    string
	spool   string
	audit   string
	cwd     string // the requests' working directory (not a git project)
	environ []string
	keep    bool
}

func newTestEnv(parent, name string, keep bool, extra []string) (*testEnv, error) {
	root, err := os.MkdirTemp(parent, "sluice-mem-"+name+"-")
	if err != nil {
		return nil, err
	}
	e := &testEnv{root: root, spool: filepath.Join(root, "spool"), audit: filepath.Join(root, "state", "sluice", "audit.jsonl"),
		cwd: filepath.Join(root, "work"), keep: keep}
	dirs := map[string]string{"HOME": "home", "XDG_CONFIG_HOME": "config", "XDG_STATE_HOME": "state",
		"XDG_CACHE_HOME": "cache", "XDG_DATA_HOME": "data", "XDG_RUNTIME_DIR": "run", "TMPDIR": "tmp"}
	e.environ = []string{"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"}
	for k, d := range dirs {
		p := filepath.Join(root, d)
		if err := os.MkdirAll(p, 0o700); err != nil {
			return nil, err
		}
		e.environ = append(e.environ, k+"="+p)
	}
	if err := os.MkdirAll(e.cwd, 0o700); err != nil {
		return nil, err
	}
	cfg := filepath.Join(root, "config.toml")
	if err := os.WriteFile(cfg, nil, 0o600); err != nil {
		return nil, err
	}
	e.environ = append(e.environ, "SLUICE_SPOOL="+e.spool, "SLUICE_AUDIT="+e.audit, "SLUICE_CONFIG="+cfg)
	e.environ = append(e.environ, extra...)
	return e, nil
}

func (e *testEnv) close() {
	if e.keep {
		fmt.Printf("  kept %s\n", e.root)
		return
	}
	os.RemoveAll(e.root)
}

// server is one running 'sluice serve' (an e2e.Proc), its stderr read
// line by line as it comes.
type server struct {
	*e2e.Proc
	exited chan struct{} // closed once it ended and its stderr is read

	mu     sync.Mutex
	asks   int      // "ask ID: ..." lines: requests judged and left for a person
	tail   []string // the last lines of stderr, for errors
	asksAt time.Time
	want   int
	allAsk chan struct{} // closed when asks reaches want
	log    *os.File      // serve's stderr, kept with -keep
}

// startServe starts bin serve in e; wantAsks is how many ask lines to
// wait for (allAsked).
func startServe(bin string, e *testEnv, wantAsks int) (*server, error) {
	s := &server{exited: make(chan struct{}), allAsk: make(chan struct{}), want: wantAsks}
	if e.keep {
		// Kept directories keep serve's log too.
		f, err := os.Create(filepath.Join(e.root, "serve.log"))
		if err != nil {
			return nil, err
		}
		s.log = f
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env, cmd.Dir = e.environ, e.root
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	stderr, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// stdout as before: nothing kept (Launch would keep it in memory).
	cmd.Stdout, cmd.Stderr = devnull, w
	s.Proc, err = e2e.Launch("sluice serve", cmd)
	w.Close()
	if err != nil {
		stderr.Close()
		return nil, err
	}
	go func() {
		s.scan(stderr)
		stderr.Close()
		if s.log != nil {
			s.log.Close()
		}
		<-s.Done()
		close(s.exited)
	}()
	return s, nil
}

func (s *server) scan(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if s.log != nil {
			fmt.Fprintln(s.log, line)
		}
		s.mu.Lock()
		if strings.Contains(line, "sluice serve: ask ") {
			s.asks++
			if s.asks == s.want {
				s.asksAt = time.Now()
				close(s.allAsk)
			}
		}
		s.tail = append(s.tail, line)
		if len(s.tail) > 20 {
			s.tail = s.tail[1:]
		}
		s.mu.Unlock()
	}
}

// ended says how serve ended and the last lines it said, once exited is
// closed.
func (s *server) ended() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.Cmd.ProcessState.String() + "\n" + strings.Join(s.tail, "\n")
}

// stop sends SIGTERM and waits for a clean exit (30 s, then its group is
// killed).
func (s *server) stop() error {
	if s.Exited() {
		<-s.exited
		return fmt.Errorf("serve had exited: %s", s.ended())
	}
	if err := s.StopWithin(30 * time.Second); err != nil {
		return err
	}
	<-s.exited
	if !s.Cmd.ProcessState.Success() {
		return fmt.Errorf("serve: %s", s.ended())
	}
	return nil
}

// procStatus is the value of field (e.g. "VmHWM") in /proc/PID/status, in
// KiB.
func procStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			v = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB"))
			return strconv.ParseInt(v, 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// cpuTime is the user+system CPU time process pid has used so far.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces: fields count from after its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, errors.New("malformed /proc/PID/stat")
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, errors.New("short /proc/PID/stat")
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64) // field 14, utime
	st, err2 := strconv.ParseInt(f[12], 10, 64) // field 15, stime
	if err1 != nil || err2 != nil {
		return 0, errors.New("malformed /proc/PID/stat times")
	}
	const hz = 100 // USER_HZ on Linux
	return time.Duration(ut+st) * time.Second / hz, nil
}

func mib(kb int64) string { return fmt.Sprintf("%.1f MiB", float64(kb)/1024) }
