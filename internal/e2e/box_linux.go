package e2e

import (
	"bytes"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// A Box is one machine's sluice as a user has it: a home, a
// configuration, a state directory, a spool, an audit log and a project,
// and the programs run with them.
type Box struct {
	T       testing.TB
	Bin     string // the programs
	Dir     string // home, config, state below it
	Spool   string
	Audit   string
	Project string
	Env     []string

	started started
}

// BoxOptions place a box's files and set its policy.
type BoxOptions struct {
	Spool  string // default DIR/spool
	Audit  string // default DIR/audit.jsonl
	Policy string // the policy file's text
}

// Policies the cases use: every command allowed (sluice serve runs it),
// or every command asks a person.
const (
	AllowAll = "[[rule]]\naction = \"allow\"\ncommand = \"*\"\n"
	AskAll   = "[[rule]]\naction = \"ask\"\ncommand = \"*\"\n"
)

// NewBox makes a box in a temporary directory of the test. At the test's
// end every program it started is stopped, and any process left in its
// directories or of its runs is killed.
func NewBox(t testing.TB, o BoxOptions) *Box {
	t.Helper()
	dir := t.TempDir()
	b := &Box{T: t, Bin: Bin(t), Dir: dir, Spool: o.Spool, Audit: o.Audit, Project: filepath.Join(dir, "project")}
	if b.Spool == "" {
		b.Spool = filepath.Join(dir, "spool")
	}
	if b.Audit == "" {
		b.Audit = filepath.Join(dir, "audit.jsonl")
	}
	for _, d := range []string{"home", "config/sluice", "state", "project"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	policy := filepath.Join(dir, "config", "sluice", "policy.toml")
	if err := os.WriteFile(policy, []byte(o.Policy), 0o600); err != nil {
		t.Fatal(err)
	}
	b.Env = append(homeEnv(dir), "SLUICE_CONFIG=", "SLUICE_SPOOL="+b.Spool, "SLUICE_AUDIT="+b.Audit,
		"SLUICE_POLICY="+policy, "TMPDIR="+os.TempDir())
	t.Cleanup(b.cleanup)
	return b
}

// Command is the box's program name (sluice, sluice-hub) with args, run
// in its project with its environment.
func (b *Box) Command(program string, args ...string) *osexec.Cmd {
	cmd := osexec.Command(filepath.Join(b.Bin, program), args...)
	cmd.Env, cmd.Dir = b.Env, b.Project
	return cmd
}

// Start starts sluice with args.
func (b *Box) Start(args ...string) *Proc {
	b.T.Helper()
	return b.started.start(b.T, "sluice "+strings.Join(args, " "), b.Command("sluice", args...))
}

// Sluice runs sluice with args to its end and returns its exit code and
// output.
func (b *Box) Sluice(args ...string) (code int, stdout, stderr string) {
	b.T.Helper()
	return b.Start(args...).Result(b.T)
}

// Serve starts 'sluice serve' (with args) and waits until it serves.
func (b *Box) Serve(args ...string) *Proc {
	b.T.Helper()
	p := b.Start(append([]string{"serve"}, args...)...)
	p.WaitOutput(b.T, "sluice serve: watching ")
	return p
}

// WaitServed waits until an engine marks itself present on the spool
// (its serving.lock, which hooks and the MCP server look for before they
// wait for a person).
func (b *Box) WaitServed() {
	b.T.Helper()
	sp, err := queue.Open(b.Spool)
	if err != nil {
		b.T.Fatal(err)
	}
	Until(b.T, "an engine serves "+b.Spool+" (holds its serving.lock)", sp.Serving)
}

// cleanup stops what the box started and kills what is left of it.
func (b *Box) cleanup() {
	b.started.stop()
	ids := map[string]bool{}
	for _, ev := range b.Events() {
		ids[ev.ID] = true
	}
	for i := 0; i < 3; i++ {
		left := under(b.Dir)
		for id := range ids {
			left = append(left, RunProcs(id)...)
		}
		if len(left) == 0 {
			return
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// AuditLines counts the audit log's lines.
func (b *Box) AuditLines() int {
	data, _ := os.ReadFile(b.Audit)
	return bytes.Count(data, []byte("\n"))
}

// Events reads the audit log (ReadAudit).
func (b *Box) Events() []Event {
	evs, _ := ReadAudit(b.Audit)
	return evs
}

// EventsOf is the audit log's lines about request id.
func (b *Box) EventsOf(id string) []Event {
	var out []Event
	for _, ev := range b.Events() {
		if ev.ID == id {
			out = append(out, ev)
		}
	}
	return out
}

// Log is the audit log's lines about id, one a line, for messages.
func (b *Box) Log(id string) string {
	var s strings.Builder
	for _, ev := range b.EventsOf(id) {
		fmt.Fprintf(&s, "\n  %d %s %s", ev.Seq, ev.Event, ev.Status)
		if ev.ExitCode != nil {
			fmt.Fprintf(&s, " exit %d", *ev.ExitCode)
		}
		if ev.Reason != "" {
			fmt.Fprintf(&s, " (%s)", ev.Reason)
		}
	}
	return s.String()
}

// IDOf waits for the audit log to name a request for command and returns
// its id (the newest such).
func (b *Box) IDOf(command string) string {
	b.T.Helper()
	id := ""
	Until(b.T, "the audit log names a request for "+command, func() bool {
		for _, ev := range b.Events() {
			if ev.Command == command && ev.ID != "" {
				id = ev.ID
			}
		}
		return id != ""
	})
	return id
}

// Verify checks the audit chain with 'sluice audit verify'.
func (b *Box) Verify() {
	b.T.Helper()
	if code, out, errs := b.Sluice("audit", "verify"); code != 0 || !strings.Contains(out, ": ok, ") {
		b.T.Errorf("sluice audit verify: exit %d\n%s%s", code, out, errs)
	}
}

// Marks counts the lines of the project's marker file that are id: each
// run of Loop appends its request id once, as its first step.
func (b *Box) Marks(id string) int {
	data, _ := os.ReadFile(filepath.Join(b.Project, "mark"))
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if line == id {
			n++
		}
	}
	return n
}

// WaitMarked waits until the run of id has marked itself (it started).
func (b *Box) WaitMarked(id string) {
	b.T.Helper()
	Until(b.T, "the run of "+id+" marks itself", func() bool { return b.Marks(id) > 0 })
}

// Loop is a command line for a run: it appends its request id to the
// project's marker file, then writes a line to the file beat every 50 ms
// until the file gate exists, then prints "end of the run" and exits 0.
// gate "" loops for ever.
func Loop(beat, gate string) string {
	cond := ":"
	if gate != "" {
		cond = "[ ! -e " + gate + " ]"
	}
	return `echo "$SLUICE_REQUEST_ID" >> mark; while ` + cond + `; do echo beat >> ` + beat + `; sleep 0.05; done; echo end of the run`
}

// Open creates the file name in the project (a Loop's gate).
func (b *Box) Open(name string) {
	b.T.Helper()
	if err := os.WriteFile(filepath.Join(b.Project, name), nil, 0o644); err != nil {
		b.T.Fatal(err)
	}
}

// NoOrphans checks that no process of id's run is left, and that its
// heartbeat file beat ("" for none) no longer grows. Called once the
// agent heard how its run ended: a run told "stopped" (or told anything)
// while its processes still run could be run again beside them, so what
// a run left running when its actor died is killed before the answer.
// Processes still there are reported, waited for (Guard: to say whether
// anything kills them at all), and killed.
func (b *Box) NoOrphans(id, beat string) {
	b.T.Helper()
	if left := RunProcs(id); len(left) > 0 {
		procs := Describe(left)
		start := time.Now()
		for time.Since(start) < Guard && len(RunProcs(id)) > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		late := "and were killed " + time.Since(start).Round(100*time.Millisecond).String() + " later"
		if rest := RunProcs(id); len(rest) > 0 {
			late = "and still ran " + Guard.String() + " later"
			for _, pid := range rest {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		b.T.Errorf("the run of %s still had processes when its agent was answered (%s):%s", id, late, procs)
		return
	}
	if beat == "" {
		return
	}
	size := func() int64 {
		fi, err := os.Stat(filepath.Join(b.Project, beat))
		if err != nil {
			return -1
		}
		return fi.Size()
	}
	// No process of the run is left to write it: it must not grow. (A
	// look over a few of its 50 ms beats, for a writer /proc did not
	// show.)
	before := size()
	time.Sleep(300 * time.Millisecond)
	if after := size(); after != before {
		b.T.Errorf("the heartbeat of %s's run still grows (%d -> %d bytes) with no process of it in /proc", id, before, after)
	}
}
