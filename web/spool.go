package web

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/sluice-dev/sluice/change"
	"github.com/sluice-dev/sluice/queue"
)

// Spool is the Source of one box: its spool, listed (never acted on), the
// audit log it is served with (verdicts, History, who decided), and the
// box's own sluice for decisions.
type Spool struct {
	sp    *queue.Spool
	audit string   // the audit log the page reads and decisions are recorded in
	argv  []string // sluice and the global flags every decision passes
	roots func(cwd string) []string
	logf  func(format string, args ...any)

	mu      sync.Mutex
	items   []Item
	hist    *history
	changed chan struct{}
}

var _ Source = (*Spool)(nil)

// SpoolOptions configure NewSpool.
type SpoolOptions struct {
	// Sluice is the sluice program that carries decisions out.
	Sluice string
	// Audit is the audit log; "" for the one the serving engine
	// published in the spool (serving.lock), else sluice's default.
	Audit string
	// Roots gives the directories a file request may change
	// (policy.Roots): the diff a person is shown is made within them.
	Roots func(cwd string) []string
	// Logf reports what goes wrong in the background; default: nothing.
	Logf func(format string, args ...any)
	// History is how many past requests History keeps (default 200).
	History int
}

// NewSpool returns the Source for spool sp. Run must be running for its
// queue and History to follow the box.
func NewSpool(sp *queue.Spool, opt SpoolOptions) *Spool {
	if opt.Roots == nil {
		opt.Roots = func(cwd string) []string { return []string{cwd} }
	}
	if opt.Logf == nil {
		opt.Logf = func(string, ...any) {}
	}
	if opt.History <= 0 {
		opt.History = 200
	}
	s := &Spool{sp: sp, audit: opt.Audit, roots: opt.Roots, logf: opt.Logf,
		hist: newHistory(opt.History, sp.Dir()), changed: make(chan struct{})}
	s.argv = []string{opt.Sluice, "--spool", sp.Dir()}
	return s
}

// AuditPath is the audit log the source reads: the one given, else the
// one the spool's engine published, else "" (sluice's default applies).
func (s *Spool) AuditPath() string {
	if s.audit != "" {
		return s.audit
	}
	return s.sp.AuditPath()
}

// Run follows the spool and the audit log until ctx ends.
func (s *Spool) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Go(func() { s.followAudit(ctx) })
	s.watch(ctx)
	wg.Wait()
}

// watch lists the spool again whenever new/, cur/ or out/ change, and
// every second (ages, and the safety net for lost events).
func (s *Spool) watch(ctx context.Context) {
	fw, err := fsnotify.NewWatcher()
	var events <-chan fsnotify.Event
	if err == nil {
		defer fw.Close()
		for _, d := range []string{"new", "cur", "out"} {
			if err := fw.Add(filepath.Join(s.sp.Dir(), d)); err != nil {
				s.logf("watch %s: %v (listing every second instead)", d, err)
			}
		}
		events = fw.Events
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	s.refresh()
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			// A burst (a claim is a link and an unlink) is listed once.
			drain(events, 20*time.Millisecond)
			s.refresh()
		case <-tick.C:
			s.refresh()
		}
	}
}

func drain(ch <-chan fsnotify.Event, quiet time.Duration) {
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
			t.Reset(quiet)
		case <-t.C:
			return
		}
	}
}

// refresh lists the spool and tells the page when anything changed.
func (s *Spool) refresh() {
	list, err := s.sp.List()
	if err != nil {
		s.logf("%v", err)
		return
	}
	items := make([]Item, 0, len(list))
	for _, e := range list {
		it := Item{ID: e.ID, State: e.State, Since: e.Since, Request: e.Request}
		if e.Request != nil {
			it.Digest = e.Request.Digest()
		}
		if e.Err != nil {
			it.Err = e.Err.Error()
			if it.ID == "" {
				it.ID = e.Name
			}
		}
		items = append(items, it)
	}
	s.mu.Lock()
	for i := range items {
		items[i].Verdict = s.hist.verdict(items[i].ID)
	}
	same := slices.EqualFunc(items, s.items, func(a, b Item) bool {
		return a.ID == b.ID && a.State == b.State && a.Digest == b.Digest && a.Verdict == b.Verdict
	})
	s.items = items
	if !same {
		s.notifyLocked()
	}
	s.mu.Unlock()
}

func (s *Spool) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Changed implements Source.
func (s *Spool) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.changed
}

// Queue implements Source.
func (s *Spool) Queue() []Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.items)
}

// History implements Source.
func (s *Spool) History() []Past {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hist.list()
}

// Winner implements Source.
func (s *Spool) Winner(id string) (string, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hist.winner(id)
}

// Item implements Source: the request read again from its file now.
func (s *Spool) Item(id string) (*Item, error) {
	if !queue.ValidID(id) {
		return nil, ErrGone
	}
	list, err := s.sp.List()
	if err != nil {
		return nil, err
	}
	for _, e := range list {
		if e.ID != id || e.Request == nil {
			continue
		}
		it := &Item{ID: id, State: e.State, Since: e.Since, Request: e.Request, Digest: e.Request.Digest()}
		s.mu.Lock()
		it.Verdict = s.hist.verdict(id)
		s.mu.Unlock()
		switch e.Request.Kind {
		case queue.KindWrite, queue.KindEdit, queue.KindPatch:
			if d, err := change.Preview(e.Request, s.roots(e.Request.Cwd)); err != nil {
				it.DiffErr = err.Error()
			} else {
				it.Diff = d
			}
		}
		return it, nil
	}
	return nil, ErrGone
}

// Result implements Source.
func (s *Spool) Result(id string) (*queue.Result, error) { return s.sp.ReadResult(id) }

// Output implements Source.
func (s *Spool) Output(id string, offset int64, max int) ([]byte, int64, bool, error) {
	if !queue.ValidID(id) {
		return nil, offset, true, ErrGone
	}
	// The result first: a log read after it holds everything.
	_, rerr := os.Lstat(s.sp.ResultPath(id))
	ended := rerr == nil
	f, err := os.OpenFile(s.sp.LogPath(id), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, offset, ended, nil
	}
	if err != nil {
		return nil, offset, ended, err
	}
	defer f.Close()
	buf := make([]byte, max)
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, offset, ended, err
	}
	next := offset + int64(n)
	done := ended && n < max
	return buf[:n], next, done, nil
}

// Approve implements Source: 'sluice approve --yes --as BY --digest D
// [--run] ID', left running (in a process group of its own, so that a ^C meant for the
// server does not kill the run) once it has claimed the request.
func (s *Spool) Approve(ctx context.Context, id, digest, _, by string, scope queue.Scope) error {
	if !queue.ValidID(id) {
		return ErrGone
	}
	args := append(s.flags(), "approve", "--yes", "--as="+by, "--digest="+digest)
	if scope == queue.ScopeRun {
		args = append(args, "--run") // a connect request's; other kinds ignore it
	}
	args = append(append(args, s.auditFlag()...), "--", id)
	cmd := osexec.Command(s.argv[0], args...)
	cmd.Stdin, cmd.Stdout = nil, io.Discard // the output reaches out/<id>.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("web: run %s: %w", s.argv[0], err)
	}
	claimed := make(chan struct{})
	ended := make(chan string, 1)
	go func() {
		// approve says "sluice approve: ID (kind) in CWD: ..." once it
		// holds the claim, before anything runs.
		var last string
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 64<<10)
		mark := "sluice approve: " + id + " ("
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, mark) {
				close(claimed)
				mark = "\x00" // once
				continue
			}
			last = line
		}
		_, _ = io.Copy(io.Discard, stderr)
		err := cmd.Wait()
		if err != nil && last == "" {
			last = err.Error()
		}
		ended <- last
	}()
	select {
	case <-claimed:
		return nil
	case last := <-ended:
		select {
		case <-claimed:
			return nil
		default:
		}
		if strings.Contains(last, "changed since it was shown") {
			return ErrChanged
		}
		return fmt.Errorf("%s", strings.TrimPrefix(last, "sluice approve: "))
	case <-ctx.Done():
		return ctx.Err() // it goes on; the queue will say how it ended
	}
}

// Deny implements Source: 'sluice deny --as BY --reason R ID'.
func (s *Spool) Deny(ctx context.Context, id, by, reason string) error {
	if !queue.ValidID(id) {
		return ErrGone
	}
	if reason == "" {
		reason = "denied by " + by
	}
	args := append(s.flags(), "deny", "--as="+by, "--reason="+reason)
	args = append(append(args, s.auditFlag()...), "--", id)
	cmd := osexec.CommandContext(ctx, s.argv[0], args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		msg := strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		if msg == "" {
			msg = err.Error()
		}
		return fmt.Errorf("%s", strings.TrimPrefix(msg, "sluice deny: "))
	}
	return nil
}

// flags are the global flags every decision passes (--spool DIR).
func (s *Spool) flags() []string { return slices.Clone(s.argv[1:]) }

// auditFlag is --audit=PATH for approve and deny when the source reads a
// log other than sluice's default.
func (s *Spool) auditFlag() []string {
	if p := s.AuditPath(); p != "" {
		return []string{"--audit=" + p}
	}
	return nil
}
