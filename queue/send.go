package queue

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// The writer's side of the protocol (protocol section 3): queue a
// request, wait for its result, and take it back when the writer gives
// up. 'sluice run', the agents' hooks and the MCP server all go through
// Send, so that a request is never left for someone to approve after its
// writer stopped waiting, and so that none of them believes an allow its
// Verifier did not back.

// Errors Send returns when it stops without a result.
var (
	// ErrWithdrawn: the writer gave up (its context ended) before anyone
	// claimed the request, which was answered expired.
	ErrWithdrawn = errors.New("the request was withdrawn before anyone acted on it")
	// ErrAbandoned: the writer gave up while an actor held the request;
	// its result will still be written.
	ErrAbandoned = errors.New("the request is being acted on; its result will still be written")
	// ErrUnserved: no console or serve watched the spool for
	// SendOptions.Unserved; the request was withdrawn.
	ErrUnserved = errors.New("the sluice console (or serve) quit before anyone decided, and nothing else watches the spool; the request was withdrawn")
	// ErrNoDecision: past its expires_at (and SendOptions.AfterExpiry) an
	// actor still held the request without answering it.
	ErrNoDecision = errors.New("no decision, and the request is still being acted on")
	// ErrUnverified: a result says its request was allowed or ran, and
	// the writer's Verifier does not back it (an UnverifiedError says
	// which request and why).
	ErrUnverified = errors.New("the result could not be verified")
)

// Verifier tells a writer whether to believe a result that says its
// request was allowed or ran (Result.ClaimsAllow): nil when the record
// the writer trusts (the audit log the engine writes before it answers)
// holds the decision, else why not. A result file is only a file: any
// process able to write the spool could have made it. audit.Verifier is
// the one sluice's writers use.
type Verifier interface {
	Verify(req *Request, res *Result) error
}

// UnverifiedError is Send's error for a result its Verifier refused. Its
// text is what every writer tells its agent (protocol section 3): which
// request, why, and, for a request sluice carries out itself, that it may
// or may not have been (the forger may have been first, or the log
// unreadable): never that it ran, nor that it did not.
type UnverifiedError struct {
	ID   string
	Mode Mode // the request's, with the default applied
	Err  error
}

func (e *UnverifiedError) Error() string {
	s := "the result of request " + e.ID + " could not be verified: " + e.Err.Error() + "; not believed"
	if e.Mode == ModeExecute {
		s += ": it may or may not have been carried out"
	}
	return s
}

// Unwrap is ErrUnverified and the Verifier's error.
func (e *UnverifiedError) Unwrap() []error { return []error{ErrUnverified, e.Err} }

// SendOptions tune how a writer waits.
type SendOptions struct {
	// Output, when set, receives the request's log as it grows (the
	// command's output while it runs).
	Output io.Writer
	// Unserved, when positive, withdraws a request that has waited that
	// long with no console or serve on the spool (ErrUnserved). Zero
	// waits for one to start, until expires_at.
	Unserved time.Duration
	// AfterExpiry bounds the wait past expires_at for a request an actor
	// holds (ErrNoDecision). Zero waits until the actor answers: a
	// command being run ends at its own timeout.
	AfterExpiry time.Duration
	// Actor is who the audit log names when the request is withdrawn;
	// called only then (looking the name up costs a file read).
	Actor func() string
	// Why says in the audit log why a request was withdrawn when ctx
	// ended; default "the waiting writer was interrupted".
	Why func(cause error) string
	// Notice, when set, is told what the actor says through the FIFO
	// about why the writer still waits (a result it cannot write yet).
	Notice func(text string)
	// Verify is asked before Send returns a result that says the request
	// was allowed or ran; when it says no, or is nil, Send returns an
	// UnverifiedError instead of the result: no writer believes an allow
	// it forgot to check.
	Verify Verifier
}

func (o SendOptions) actor() string {
	if o.Actor == nil {
		return ""
	}
	return o.Actor()
}

// errNoVerifier is why a writer that gave Send no Verifier believes no
// allow.
var errNoVerifier = errors.New("the writer has nothing to check it against")

// verify is nil when res claims no allow, or opt.Verify backs it; else an
// UnverifiedError.
func (o SendOptions) verify(req *Request, res *Result) error {
	if !res.ClaimsAllow() {
		return nil
	}
	err := errNoVerifier
	if o.Verify != nil {
		err = o.Verify.Verify(req, res)
	}
	if err == nil {
		return nil
	}
	return &UnverifiedError{ID: req.ID, Mode: req.EffectiveMode(), Err: err}
}

// How often a waiting writer looks at things besides the wake-up the
// result brings: its log fast while output flows, backing off to
// maxSendPoll; whether an actor died or the spool lost its engine every
// sendCheck.
const (
	minSendPoll = 5 * time.Millisecond
	maxSendPoll = 100 * time.Millisecond
	sendCheck   = 250 * time.Millisecond
)

// Send queues req and waits for its result. When ctx ends it withdraws
// the request if nobody has claimed it (ErrWithdrawn) or stops waiting
// for the actor that has (ErrAbandoned); both wrap context.Cause(ctx).
// Past req.ExpiresAt a request nobody claimed is answered expired (the
// result Send returns), and one whose actor died is answered
// interrupted. A result that says the request was allowed or ran is
// returned only when opt.Verify backs it, else an UnverifiedError.
func (s *Spool) Send(ctx context.Context, req *Request, opt SendOptions) (*Result, error) {
	w, err := s.NewWaiter(req.ID)
	if err != nil {
		return nil, err
	}
	defer w.Close()
	if err := s.Submit(req); err != nil {
		return nil, err
	}
	return s.await(ctx, w, req, opt)
}

func (s *Spool) await(ctx context.Context, w *Waiter, req *Request, opt SendOptions) (*Result, error) {
	lf := &logFollower{path: s.LogPath(req.ID), to: opt.Output}
	defer lf.close()
	poll := minSendPoll
	lastCheck := time.Now()
	var unserved time.Time // since when no engine serves the spool; zero while one does
	var expiredAt time.Time
	for {
		res, err := w.Wait(poll)
		if err == nil {
			lf.drain()
			if err := opt.verify(req, res); err != nil {
				return nil, err
			}
			lf.fill(res)
			return res, nil
		}
		if !errors.Is(err, ErrNoResult) {
			return nil, err
		}
		if n := w.Notice(); n != "" && opt.Notice != nil {
			opt.Notice(n)
		}
		if lf.drain() > 0 {
			poll = minSendPoll
		} else {
			poll = min(poll*2, maxSendPoll)
		}
		if ctx.Err() != nil {
			cause := context.Cause(ctx)
			why := "withdrawn: the waiting writer was interrupted"
			if opt.Why != nil {
				why = "withdrawn: " + opt.Why(cause)
			}
			if s.Withdraw(req.ID, opt.actor(), why) {
				return nil, fmt.Errorf("%w: %w", cause, ErrWithdrawn)
			}
			return nil, fmt.Errorf("%w: %w", cause, ErrAbandoned)
		}
		now := time.Now()
		if req.Expired(now) && errors.Is(err, ErrEmptyResult) {
			// Nothing will replace it (a result is written once).
			return nil, err
		}
		if req.Expired(now) {
			if expiredAt.IsZero() {
				expiredAt = now
				// Claim answers a request past its expires_at expired
				// (and records it); a request someone holds is theirs.
				if c, err := s.Claim(req.ID, now); err == nil {
					c.Close() // cannot happen past expires_at; release it
				}
				s.RecoverID(req.ID)
			}
			if opt.AfterExpiry > 0 && now.Sub(expiredAt) >= opt.AfterExpiry {
				return nil, ErrNoDecision
			}
		}
		if now.Sub(lastCheck) < sendCheck {
			continue
		}
		lastCheck = now
		// An actor that died mid-run leaves its claim orphaned; with no
		// engine running nobody else would answer it.
		s.RecoverID(req.ID)
		if opt.Unserved <= 0 {
			continue
		}
		switch {
		case s.Serving():
			unserved = time.Time{}
		case unserved.IsZero():
			unserved = now
		case now.Sub(unserved) >= opt.Unserved:
			if s.Withdraw(req.ID, opt.actor(), "withdrawn: no sluice console or serve watches the spool any more") {
				return nil, ErrUnserved
			}
			unserved = time.Time{} // an actor has it: its result will come
		}
	}
}

// Withdraw takes back request id if nobody has claimed it, answering it
// expired with reason (recorded first when the spool has a Recorder, as
// actor), and reports whether it was still unclaimed: false means an
// actor has it and its result will come. A request already past its
// expires_at is answered expired by the claim itself.
func (s *Spool) Withdraw(id, actor, reason string) bool {
	c, err := s.Claim(id, time.Now())
	if errors.Is(err, ErrExpired) {
		return true
	}
	if err != nil {
		return false
	}
	if s.Recorder != nil {
		ev := NewEvent(EventExpired, c.Request)
		ev.Actor, ev.Status, ev.Reason, ev.Spool = actor, StatusExpired, reason, s.dir
		if s.Recorder.Record(ev) != nil {
			// Unrecorded, it must not be answered: the claim is left to
			// be recovered (answered interrupted, and recorded) by the
			// next actor.
			c.Close()
			return true
		}
	}
	_ = c.Finish(Result{Status: StatusExpired, Decision: Deny, DecidedBy: ByHuman, Reason: reason})
	return true
}

// logFollower copies what is appended to a request's log.
type logFollower struct {
	path string
	to   io.Writer
	f    *os.File
	buf  []byte
	n    int64 // bytes copied so far
}

// fill writes what the log lacks of a run's output (its writes failed: a
// full disk) from the result's tail, which the engine kept: the missing
// end where the tail covers it, else a marked gap and the tail.
func (l *logFollower) fill(res *Result) {
	missing := res.OutputBytes - l.n
	if l.to == nil || !res.Ran() || missing <= 0 || res.OutputTail == "" {
		return
	}
	tail := res.OutputTail
	if missing <= int64(len(tail)) {
		l.to.Write([]byte(tail[int64(len(tail))-missing:]))
		return
	}
	fmt.Fprintf(l.to, "\n⟨%d bytes of output lost: the log could not be written⟩\n", missing-int64(len(tail)))
	l.to.Write([]byte(tail))
}

// drain copies everything new in the log and returns how many bytes.
func (l *logFollower) drain() int {
	if l.to == nil {
		return 0
	}
	if l.f == nil {
		f, err := os.OpenFile(l.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
		if err != nil {
			return 0
		}
		if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
			f.Close()
			return 0
		}
		l.f = f
		// Small at first (most runs print little, and a new process
		// pays for each page it touches); doubled while reads fill it.
		l.buf = make([]byte, 4<<10)
	}
	total := 0
	for {
		n, err := l.f.Read(l.buf)
		if n > 0 {
			l.to.Write(l.buf[:n])
			total += n
			l.n += int64(n)
			if n == len(l.buf) && len(l.buf) < 64<<10 {
				l.buf = make([]byte, 2*len(l.buf))
			}
		}
		if err != nil || n == 0 {
			return total
		}
	}
}

func (l *logFollower) close() {
	if l.f != nil {
		l.f.Close()
	}
}
