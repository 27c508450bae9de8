package queue

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
	"time"
)

// Claim is the right to act on one request: the request file has been
// renamed from new/ to cur/ by this process, which holds an exclusive lock
// on it until Finish or Close. Only the holder of a Claim writes the
// request's result.
type Claim struct {
	// Request is the request as read from the claimed file, after the claim:
	// what an agent may have swapped in before it is not what runs.
	Request *Request

	s    *Spool
	f    *os.File
	done bool
}

// take opens new/<name> and locks it, so that no other process claims,
// expires or quarantines it meanwhile. The lock lives on the file, not the
// name, so it survives the rename into cur/.
func (s *Spool) take(name string) (*os.File, error) {
	p := s.path(dirNew, name)
	f, err := openNoFollow(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrNotFound
		}
		return nil, err
	}
	if err := lockNB(f, true); err != nil {
		f.Close()
		return nil, err
	}
	// Between our open and our lock another process may have claimed the
	// file and finished with it; the name then no longer points at it.
	if !SameFile(f, p) {
		f.Close()
		return nil, ErrNotFound
	}
	return f, nil
}

// Claim claims pending request id. It returns ErrNotFound if there is no
// such request, ErrClaimed if another process claimed it, ErrResulted if it
// was already answered, ErrBusy if another process is claiming it right
// now, ErrExpired (after writing the expired result) if its expires_at has
// passed at now, ErrExists (after moving it aside) if its id was already
// used, and an *InvalidError (after quarantining it) if the file is bad.
func (s *Spool) Claim(id string, now time.Time) (*Claim, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("%w: %q is not a request id", ErrNotFound, id)
	}
	c, _, err := s.act(id, now, true)
	return c, err
}

// ClaimRead is Claim for a request as read from new/ before (judged, say):
// the claimed file is read under the lock as ever, and decoded again only
// if its bytes are not the ones judged was read from. The claim's Request
// is what the file holds; Same(judged) says whether it is judged's.
func (s *Spool) ClaimRead(judged *Request, now time.Time) (*Claim, error) {
	if !ValidID(judged.ID) {
		return nil, fmt.Errorf("%w: %q is not a request id", ErrNotFound, judged.ID)
	}
	c, _, err := s.actKnown(judged.ID, now, true, judged)
	return c, err
}

// moveToCur renames the locked new/<id>.json to cur/<id>.json without ever
// replacing a file already there: link, then unlink. A link that fails
// because cur/ holds the very same file is a claim whose actor died between
// the two steps; anything else already in cur/ or out/ is a duplicate id.
func (s *Spool) moveToCur(f *os.File, id string) error {
	name := id + ".json"
	src, dst := s.path(dirNew, name), s.path(dirCur, name)
	if exists(s.ResultPath(id)) {
		return s.quarantineDup(name, f, "a result for this id already exists")
	}
	if err := os.Link(src, dst); err != nil {
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("queue: claim %s: %w", id, err)
		}
		if !SameFile(f, dst) {
			return s.quarantineDup(name, f, "a request with this id was already claimed")
		}
		// Our own half-done claim (or a dead actor's): the file is already
		// in cur/, so it is no longer pending.
		os.Remove(src)
		return ErrClaimed
	}
	if err := os.Remove(src); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("queue: claim %s: %w", id, err)
	}
	return nil
}

// whereIs explains why id is not pending.
func (s *Spool) whereIs(id string) error {
	switch {
	case exists(s.ResultPath(id)):
		return fmt.Errorf("%w: %s", ErrResulted, id)
	case exists(s.path(dirCur, id+".json")):
		return fmt.Errorf("%w: %s", ErrClaimed, id)
	}
	return fmt.Errorf("%w: %s", ErrNotFound, id)
}

// Finish writes the claim's result (once), wakes the waiting writer and
// releases the claim. The result's Version and ID are filled in. It returns
// ErrResulted if a result already exists; the claim is released either way.
func (c *Claim) Finish(res Result) error {
	if c.done {
		return fmt.Errorf("%w: %s", ErrResulted, c.Request.ID)
	}
	res.ID = c.Request.ID
	err := c.s.writeResult(res)
	c.done = true
	c.f.Close()
	return err
}

// FinishPatient is Finish for a result that must not be lost: where it
// cannot be written for now (a full disk, a read-only spool), the claim
// is kept and the write tried again, at growing intervals up to 2 s, until
// it succeeds or stop is closed; waiting is told why, once, before the
// first wait. The writer keeps waiting meanwhile; once the claim is let
// go, the next recovery answers from the audit log.
func (c *Claim) FinishPatient(res Result, stop <-chan struct{}, waiting func(error)) error {
	if c.done {
		return fmt.Errorf("%w: %s", ErrResulted, c.Request.ID)
	}
	res.ID = c.Request.ID
	err := c.s.writeResult(res)
	for delay := 100 * time.Millisecond; err != nil && transientWrite(err); delay = min(2*delay, 2*time.Second) {
		if delay == 100*time.Millisecond {
			why := fmt.Errorf("the result of %s (%s) cannot be written yet, and its writer keeps waiting: %w; %s", res.ID, res.Status, err, faultHint(err, c.s.dir))
			if waiting != nil {
				waiting(why)
			}
			c.s.TellWriter(res.ID, "the command ended; its result waits to be written: "+faultHint(err, c.s.dir))
		}
		select {
		case <-stop:
			c.done = true
			c.f.Close()
			return err
		case <-time.After(delay):
		}
		err = c.s.writeResult(res)
	}
	c.done = true
	c.f.Close()
	return err
}

// transientWrite reports whether a write failed for a reason a person
// can fix while sluice waits: no space, no quota, a read-only file system.
func transientWrite(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EROFS)
}

// Close releases the claim without a result. The request stays in cur/ and
// the next Recover answers it interrupted. Close after Finish does nothing.
func (c *Claim) Close() error {
	if c.done {
		return nil
	}
	c.done = true
	return c.f.Close()
}

// writeResult writes out/<id>.json exactly once: the bytes go to a temporary
// file and are linked into place, which fails rather than replace an
// existing result. Then the writer's FIFO, if any, is woken.
//
// With a Recorder the file is not synced: every result is written after
// the audit line of the same step is durable (a fsync of its own cost
// 0.2-1 ms of every request on a disk), and what a crash of the
// operating system can cost, a result file left empty, the writer that
// waited for it does not outlive. Readers take an empty result for none.
func (s *Spool) writeResult(res Result) error {
	res.Version = Version
	data, err := marshalLine(res)
	if err != nil {
		return fmt.Errorf("queue: encode result %s: %w", res.ID, err)
	}
	if err := s.link(dirOut, "."+res.ID+".*.tmp", s.ResultPath(res.ID), data, s.Recorder == nil); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrResulted, res.ID)
		}
		return fmt.Errorf("queue: write result %s: %w", res.ID, err)
	}
	s.notifyWake(res.ID)
	return nil
}

// linkNew writes data to a temporary file in tmpDir, syncs it and links it
// to dst, failing with fs.ErrExist if dst exists. The temporary is removed.
func (s *Spool) linkNew(tmpDir, pattern, dst string, data []byte) error {
	return s.link(tmpDir, pattern, dst, data, true)
}

// link is linkNew, syncing the file only when sync is set.
func (s *Spool) link(tmpDir, pattern, dst string, data []byte, sync bool) error {
	tmp, err := os.CreateTemp(s.path(tmpDir, ""), pattern)
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil && sync {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp.Name(), dst)
}

// ReadResult reads out/<id>.json. It returns ErrNoResult if there is none.
func (s *Spool) ReadResult(id string) (*Result, error) {
	if !ValidID(id) {
		return nil, fmt.Errorf("%w: %q is not a request id", ErrNotFound, id)
	}
	f, err := openNoFollow(s.ResultPath(id))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, ErrNoResult
		}
		return nil, fmt.Errorf("queue: read result %s: %w", id, err)
	}
	defer f.Close()
	data, err := readAllLimited(f, MaxRequestSize)
	if err != nil {
		return nil, fmt.Errorf("queue: read result %s: %w", id, err)
	}
	if len(data) == 0 {
		// Linked but never written out: an operating-system crash took
		// it (results are not synced; the audit log is the record).
		return nil, ErrEmptyResult
	}
	return DecodeResult(data)
}

// Recover answers interrupted every request whose actor died: a file in cur/
// with no result and no live lock. Such a request may have been partly run,
// so it is never run again. It returns the ids it answered.
func (s *Spool) Recover() ([]string, error) {
	claimed, err := s.claimedIDs()
	var ids []string
	for _, id := range claimed {
		if !exists(s.ResultPath(id)) {
			if ok, _ := s.recoverOne(id, true); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids, err
}

// claimedIDs lists the ids of the requests in cur/, answered or not.
func (s *Spool) claimedIDs() ([]string, error) {
	entries, err := os.ReadDir(s.path(dirCur, ""))
	if err != nil {
		return nil, fmt.Errorf("queue: scan cur: %w", err)
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		if id, ok := strings.CutSuffix(e.Name(), ".json"); ok && ValidID(id) {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// RecoverID answers request id interrupted if it was claimed and its actor
// died (no result, no live lock). A writer waiting on its own request uses
// it so that it is not left waiting for a console that may never start.
func (s *Spool) RecoverID(id string) bool {
	if !ValidID(id) || exists(s.ResultPath(id)) || !exists(s.path(dirCur, id+".json")) {
		return false
	}
	ok, _ := s.recoverOne(id, true)
	return ok
}

// RunLedger is a Recorder that can say what it recorded of a request's
// run: the last of its start, its end (finished, timeout, killed) and a
// recovery's answer (interrupted), or nil when there is none. Recover answers from it: the audit log is the
// truth, and an agent is never told "not run" of a run that started.
type RunLedger interface {
	LastRun(req *Request) (*Event, error)
}

// StoppedReason is what a stopped result says.
const StoppedReason = "it started and was stopped part way, when the sluice process running it stopped (crash or kill): check its effects before running it again"

// recoverOne answers id if its claim is orphaned: interrupted when the
// run never started, stopped when it started and did not end, and as it
// ended when the audit log holds its end (the result was lost, not the
// run). A lock can be
// held for a moment by something other than a live actor (List's probe, or
// a child forked elsewhere in the holder's process before its exec closed
// the descriptor), so a patient caller retries a busy lock for a few
// milliseconds; only a lock that stays means a live actor. The watcher is
// not patient: its next rescan is the retry.
//
// It reports whether it answered id, and why it could not where an answer
// was due (the audit log or the result could not be written: a full disk,
// a read-only spool); a later call tries again.
func (s *Spool) recoverOne(id string, patient bool) (bool, error) {
	p := s.path(dirCur, id+".json")
	f, err := openNoFollow(p)
	if err != nil {
		return false, nil
	}
	defer f.Close()
	err = lockNB(f, true)
	for wait := time.Millisecond; patient && errors.Is(err, ErrBusy) && wait <= 8*time.Millisecond; wait *= 2 {
		time.Sleep(wait)
		err = lockNB(f, true)
	}
	if err != nil || !SameFile(f, p) || exists(s.ResultPath(id)) {
		return false, nil
	}
	// A claim cut off between its link and its unlink leaves the same file
	// in new/; it must not look pending again.
	if np := s.RequestPath(id); SameFile(f, np) {
		os.Remove(np)
	}
	reason := "its actor stopped (crash or kill) while acting on it; it was not run again"
	req, rerr := readRequestFile(f, id)
	if rerr != nil {
		req = &Request{ID: id}
	}
	status := StatusInterrupted
	if l, ok := s.Recorder.(RunLedger); ok && req.Kind == KindExec {
		last, err := l.LastRun(req)
		switch {
		case err != nil:
			// Not knowing whether it started, the answer cannot be
			// "not run".
			status, reason = StatusStopped, StoppedReason+" (the audit log could not be read: "+err.Error()+")"
		case last != nil && last.Event == EventStarted:
			status, reason = StatusStopped, StoppedReason
		case last != nil && last.Event == EventInterrupted:
			// Answered already, its result not written (a full disk, a
			// read-only spool): write it now, with no second line.
			return s.answer(Result{ID: id, Status: last.Status, Reason: last.Reason})
		case last != nil:
			// It ended and was recorded; only its result was lost.
			return s.answer(endedResult(last))
		}
	}
	if status == StatusStopped && s.StopOrphans != nil {
		// Stopped is true only once what the run left running is gone.
		s.StopOrphans()
	}
	if err := s.note(EventInterrupted, req, status, reason); err != nil {
		return false, err // unrecorded: left for the next recovery to try again
	}
	return s.answer(Result{ID: id, Status: status, Reason: reason})
}

// answer writes a recovered claim's result, saying why it could not.
func (s *Spool) answer(res Result) (bool, error) {
	if err := s.writeResult(res); err != nil {
		return false, fmt.Errorf("the result of %s (%s) cannot be written, and its writer keeps waiting: %w; %s", res.ID, res.Status, err, faultHint(err, s.dir))
	}
	return true, nil
}

// CheckWritable says, with what a person can do about it, why the spool
// cannot be written (a read-only file system, a full one), or nil: a
// file made and removed in tmp/.
func (s *Spool) CheckWritable() error {
	f, err := os.CreateTemp(s.path(dirTmp, ""), ".probe-*")
	if err == nil {
		// A byte too: an empty file needs no block, a full disk has none.
		_, err = f.Write([]byte{'\n'})
		f.Close()
		os.Remove(f.Name())
	}
	if err != nil {
		return fmt.Errorf("queue: the spool cannot be written, so no request can be claimed nor answered: %w; %s", err, faultHint(err, s.dir))
	}
	return nil
}

// faultKind names err's kind: its errno where it has one (the same full
// disk at each try, whatever the temporary file was called).
func faultKind(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// faultHint says what a person can do about a write that failed in dir.
func faultHint(err error, dir string) string {
	switch {
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return "free space where the spool is (" + dir + "); sluice goes on as soon as it can"
	case errors.Is(err, syscall.EROFS):
		return "the spool's file system (" + dir + ") is read-only; remount it read-write and sluice goes on"
	}
	return "sluice tries again"
}

// endedResult is the result an ended run's audit line (finished,
// timeout, killed) records.
func endedResult(ev *Event) Result {
	status := ev.Status
	if status == "" {
		status = map[EventName]Status{EventFinished: StatusDone, EventTimeout: StatusTimeout, EventKilled: StatusKilled}[ev.Event]
	}
	return Result{ID: ev.ID, Status: status, Reason: ev.Reason, ExitCode: ev.ExitCode, DurationMS: ev.DurationMS,
		Sandbox: ev.Sandbox, ChangedFiles: ev.ChangedFiles, Checkpoint: ev.Checkpoint, Network: ev.Network, Log: LogRel(ev.ID),
		Decision: Allow, DecidedBy: decider(ev), Verdict: ev.Verdict}
}

// decider is who let an ended run run, from its audit line's actor.
func decider(ev *Event) Decider {
	if ev.Actor == "" || ev.Actor == string(ByPolicy) {
		return ByPolicy
	}
	return ByHuman
}
