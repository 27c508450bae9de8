package queue

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func sendRequest(t *testing.T, expires time.Duration) (*Spool, *Request) {
	t.Helper()
	sp, err := Open(filepath.Join(t.TempDir(), "spool"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	return sp, &Request{Version: Version, ID: NewID(), Kind: KindExec, Mode: ModeDecide,
		Command: "make deploy", Cwd: "/tmp", CreatedAt: now, ExpiresAt: now.Add(expires)}
}

// TestSendExpires: a request nobody answers is answered expired by the
// writer itself at its deadline, and nobody can claim it after.
func TestSendExpires(t *testing.T) {
	t.Parallel()
	sp, req := sendRequest(t, 100*time.Millisecond)
	res, err := sp.Send(context.Background(), req, SendOptions{AfterExpiry: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != StatusExpired {
		t.Errorf("status %s, want expired", res.Status)
	}
	if _, err := sp.Claim(req.ID, time.Now()); err == nil {
		t.Error("the request can still be claimed after the writer gave up")
	}
}

// TestSendWithdraws: a writer whose context ends takes its request back
// (nobody can approve it after), or, when an actor holds it, says so.
func TestSendWithdraws(t *testing.T) {
	t.Parallel()
	sp, req := sendRequest(t, time.Minute)
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(errors.New("agent gone")) })
	_, err := sp.Send(ctx, req, SendOptions{Actor: func() string { return "tester" }, Why: func(c error) string { return c.Error() }})
	if !errors.Is(err, ErrWithdrawn) || err.Error() != "agent gone: "+ErrWithdrawn.Error() {
		t.Fatalf("got %v, want withdrawn for the cause", err)
	}
	res, err := sp.ReadResult(req.ID)
	if err != nil || res.Status != StatusExpired || res.Reason != "withdrawn: agent gone" {
		t.Fatalf("result %+v, %v; want expired, withdrawn: agent gone", res, err)
	}

	sp, req = sendRequest(t, time.Minute)
	ctx, cancel = context.WithCancelCause(context.Background())
	go func() {
		for {
			if c, err := sp.Claim(req.ID, time.Now()); err == nil {
				defer c.Close()
				cancel(errors.New("agent gone"))
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	if _, err := sp.Send(ctx, req, SendOptions{}); !errors.Is(err, ErrAbandoned) {
		t.Fatalf("got %v, want abandoned while an actor holds the request", err)
	}
}

// TestSendUnserved: with Unserved set, a request on a spool nobody serves
// is withdrawn rather than waited on until it expires.
func TestSendUnserved(t *testing.T) {
	t.Parallel()
	sp, req := sendRequest(t, time.Minute)
	release, err := sp.Present("")
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, release)
	if _, err := sp.Send(context.Background(), req, SendOptions{Unserved: 300 * time.Millisecond}); !errors.Is(err, ErrUnserved) {
		t.Fatalf("got %v, want unserved", err)
	}
	if res, err := sp.ReadResult(req.ID); err != nil || res.Status != StatusExpired {
		t.Fatalf("result %+v, %v; want expired", res, err)
	}
}

// TestAuditPathPublished: the audit log an engine publishes is what
// writers read; junk in the lock file reads as none.
func TestAuditPathPublished(t *testing.T) {
	t.Parallel()
	sp, _ := sendRequest(t, time.Minute)
	if p := sp.AuditPath(); p != "" {
		t.Fatalf("AuditPath %q before any engine", p)
	}
	for _, step := range []struct{ present, want string }{
		{"/var/log/sluice/audit.jsonl", "/var/log/sluice/audit.jsonl"},
		{"relative/path", "/var/log/sluice/audit.jsonl"}, // a relative path does not replace the published one
	} {
		release, err := sp.Present(step.present)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		if p := sp.AuditPath(); p != step.want {
			t.Fatalf("after Present(%q): AuditPath %q, want %q", step.present, p, step.want)
		}
	}
}

// TestWriterGone: a writer that dies without withdrawing its request (a
// SIGKILL leaves no handler to run) leaves a wake FIFO nobody reads; the
// request is then neither pending to a watcher nor claimable by a
// person: it is answered expired, and says why.
func TestWriterGone(t *testing.T) {
	t.Parallel()
	sp, req := sendRequest(t, time.Minute)
	w, err := sp.NewWaiter(req.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := sp.Submit(req); err != nil {
		t.Fatal(err)
	}
	if !sp.localFIFOs() {
		t.Skipf("the test's spool %s is on a file system sluice takes for shared (FIFOs are not judged there)", sp.Dir())
	}
	if sp.WriterGone(req.ID) {
		t.Fatal("a writer holding its FIFO counts as gone")
	}
	if _, err := sp.settle(req.ID+".json", time.Now()); err != nil {
		t.Fatalf("a live writer's request is not pending: %v", err)
	}
	// What the kernel does when the writer's process dies: its ends of
	// the FIFO close, the FIFO stays.
	w.rf.Close()
	unix.Close(w.wr)
	if sp.WriterGone(req.ID) {
		t.Fatal("a FIFO made just now counts as a gone writer: a writer may open it after it submits")
	}
	old := time.Now().Add(-time.Minute) // past the writer's grace
	if err := os.Chtimes(sp.WakePath(req.ID), old, old); err != nil {
		t.Fatal(err)
	}
	// A child another test of this process forks at that moment holds a
	// copy of the read end until its exec closes it: wait that out (a
	// writer process of its own forks nothing).
	gone := sp.WriterGone(req.ID)
	for deadline := time.Now().Add(10 * time.Second); !gone && time.Now().Before(deadline); gone = sp.WriterGone(req.ID) {
		time.Sleep(10 * time.Millisecond)
	}
	if !gone {
		t.Fatal("a FIFO nobody reads does not count as a gone writer")
	}
	// On a spool shared with another machine the reader may be there.
	shared := *sp
	shared.localFIFOs = func() bool { return false }
	if shared.WriterGone(req.ID) {
		t.Fatal("on a shared file system, a FIFO without a reader here counts as a gone writer")
	}
	_, err = sp.Claim(req.ID, time.Now())
	if !errors.Is(err, ErrExpired) || !errors.Is(err, ErrWriterGone) {
		t.Fatalf("claiming a gone writer's request: %v, want ErrExpired and ErrWriterGone", err)
	}
	res, err := sp.ReadResult(req.ID)
	if err != nil || res.Status != StatusExpired || res.Reason != writerGoneReason {
		t.Fatalf("result %+v, %v; want expired: %s", res, err, writerGoneReason)
	}
}

// TestWriterGoneNotFooled: only a FIFO nobody reads means a gone writer;
// no FIFO (a writer that polls), a regular file or a socket in its place
// (something an agent put there) leave the request pending.
func TestWriterGoneNotFooled(t *testing.T) {
	t.Parallel()
	sp, req := sendRequest(t, time.Minute)
	if err := sp.Submit(req); err != nil {
		t.Fatal(err)
	}
	if sp.WriterGone(req.ID) {
		t.Error("no FIFO counts as a gone writer")
	}
	if err := os.WriteFile(sp.WakePath(req.ID), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if sp.WriterGone(req.ID) {
		t.Error("a regular file counts as a gone writer")
	}
	os.Remove(sp.WakePath(req.ID))
	l, err := net.Listen("unix", sp.WakePath(req.ID))
	if err != nil {
		t.Skipf("no unix socket in the spool: %v", err)
	}
	defer l.Close()
	if sp.WriterGone(req.ID) {
		t.Error("a socket (ENXIO on open, as a FIFO without reader) counts as a gone writer")
	}
	if _, err := sp.Claim(req.ID, time.Now()); err != nil {
		t.Errorf("the request cannot be claimed: %v", err)
	}
}

// TestLocalFS: the machine's own file systems (tmpfs, and the test's temp
// directory here) take FIFOs for local.
func TestLocalFS(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("Linux file system types")
	}
	if _, err := os.Stat("/dev/shm"); err == nil && !localFS("/dev/shm") {
		t.Error("tmpfs (/dev/shm) is not taken for local")
	}
	if localFS("/proc") {
		t.Error("procfs is taken for local: only known local file systems should be")
	}
}

// verifierFunc is a Verifier from a function.
type verifierFunc func(*Request, *Result) error

func (f verifierFunc) Verify(req *Request, res *Result) error { return f(req, res) }

// answer claims req on sp once it is pending and finishes it with res,
// as an actor that records nothing would (or a forger of out/).
func answer(sp *Spool, id string, res Result) {
	go func() {
		for {
			if c, err := sp.Claim(id, time.Now()); err == nil {
				_ = c.Finish(res)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
}

// TestSendVerifies: Send returns a result that says its request was
// allowed or ran only when the writer's Verifier backs it; without one,
// or when it says no, the writer gets an UnverifiedError naming the
// request, never the result. A denial needs no verifying.
func TestSendVerifies(t *testing.T) {
	t.Parallel()
	allow := Result{Status: StatusDecided, Decision: Allow, DecidedBy: ByPolicy}
	refuse := verifierFunc(func(*Request, *Result) error { return errors.New("the log holds no decision") })
	for _, tt := range []struct {
		name   string
		mode   Mode
		res    Result
		verify Verifier
		want   string // the error's text after the id; "" for the result
	}{
		{"refused", ModeDecide, allow, refuse, "could not be verified: the log holds no decision; not believed"},
		{"no verifier", ModeDecide, allow, nil, "could not be verified: the writer has nothing to check it against; not believed"},
		{"ran, refused", ModeExecute, Result{Status: StatusDone, Decision: Deny}, refuse,
			"could not be verified: the log holds no decision; not believed: it may or may not have been carried out"},
		{"backed", ModeDecide, allow, verifierFunc(func(*Request, *Result) error { return nil }), ""},
		{"denied", ModeExecute, Result{Status: StatusDenied, Decision: Deny}, nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sp, req := sendRequest(t, time.Minute)
			req.Mode = tt.mode
			var asked *Result
			verify := tt.verify
			if verify != nil {
				verify = verifierFunc(func(r *Request, res *Result) error {
					if r != req {
						t.Errorf("verifier asked about %+v, not the request sent", r)
					}
					asked = res
					return tt.verify.Verify(r, res)
				})
			}
			answer(sp, req.ID, tt.res)
			res, err := sp.Send(context.Background(), req, SendOptions{Verify: verify})
			if tt.want == "" {
				if err != nil || res.Status != tt.res.Status {
					t.Fatalf("got %+v, %v; want the %s result", res, err, tt.res.Status)
				}
				if verify != nil && asked != res {
					t.Errorf("the verifier was asked about %+v, not the result returned", asked)
				}
				return
			}
			var ue *UnverifiedError
			if res != nil || !errors.Is(err, ErrUnverified) || !errors.As(err, &ue) || ue.ID != req.ID {
				t.Fatalf("got %+v, %v; want an UnverifiedError for %s", res, err, req.ID)
			}
			if want := "the result of request " + req.ID + " " + tt.want; err.Error() != want {
				t.Errorf("error %q\nwant      %q", err, want)
			}
		})
	}
}
