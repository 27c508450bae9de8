package queue

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"
)

// peek reads new/<name> without locking it, to show it. Refusals are
// *InvalidError; a file that is gone is ErrNotFound.
func (s *Spool) peek(name string) (*Request, error) {
	stem := stemOf(name)
	if stem == "" {
		return nil, invalidf("file name is not <id>.json")
	}
	req, err := readRequestPath(s.path(dirNew, name), stem)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, ErrNotFound
	case errors.Is(err, syscall.ELOOP):
		return nil, invalidf("a symlink, not a regular file")
	case errors.Is(err, fs.ErrPermission):
		return nil, invalidf("cannot be read: permission denied")
	case errors.Is(err, syscall.ENXIO):
		return nil, invalidf("a socket, not a regular file")
	case err != nil:
		var inv *InvalidError
		if errors.As(err, &inv) {
			return nil, err
		}
		return nil, fmt.Errorf("queue: read %s: %w", name, err)
	}
	return req, nil
}

// settle deals with new/<name> the way every watcher must: a valid, live
// request is returned as pending; a bad file is quarantined (returning an
// *InvalidError); an expired request is answered expired (returning
// ErrExpired). It never claims a valid request.
func (s *Spool) settle(name string, now time.Time) (*Request, error) {
	req, err := s.peek(name)
	if err == nil && !req.Expired(now) && !s.WriterGone(req.ID) {
		return req, nil
	}
	var inv *InvalidError
	if err != nil && !errors.As(err, &inv) {
		return nil, err
	}
	stem := stemOf(name)
	if stem == "" {
		return nil, s.quarantine(name, nil, inv.Reason)
	}
	// Act under the lock, on what the file holds now.
	_, req, err = s.act(stem, now, false) // claim=false: never a Claim
	return req, err
}

// act takes the lock on new/<id>.json and reads it. A bad file is
// quarantined and an expired request answered; otherwise, if claim is set,
// the request is claimed, else it is left pending and returned.
func (s *Spool) act(id string, now time.Time, claim bool) (*Claim, *Request, error) {
	return s.actKnown(id, now, claim, nil)
}

// actKnown is act told the request as last read from new/<id>.json
// (nil: none), which is not decoded again if the file still holds it
// (readRequestKnown).
func (s *Spool) actKnown(id string, now time.Time, claim bool, known *Request) (*Claim, *Request, error) {
	name := id + ".json"
	f, err := s.take(name)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil, s.whereIs(id)
	case errors.Is(err, syscall.ELOOP):
		return nil, nil, s.quarantine(name, nil, "a symlink, not a regular file")
	case errors.Is(err, fs.ErrPermission):
		return nil, nil, s.quarantine(name, nil, "cannot be read: permission denied")
	case errors.Is(err, syscall.ENXIO): // open(2) of a socket
		return nil, nil, s.quarantine(name, nil, "a socket, not a regular file")
	case err != nil:
		return nil, nil, fmt.Errorf("queue: claim %s: %w", id, err)
	}
	req, err := readRequestKnown(f, id, known)
	if err != nil {
		var inv *InvalidError
		if errors.As(err, &inv) {
			err = s.quarantine(name, f, inv.Reason)
		}
		f.Close()
		return nil, nil, err
	}
	expired := req.Expired(now)
	reason := "not decided before expires_at " + req.ExpiresAt.UTC().Format(time.RFC3339)
	if !expired && s.WriterGone(id) {
		// Nobody would read its answer: withdrawn, as its writer would
		// have done had it been able to (killed with SIGKILL, say).
		expired, reason = true, writerGoneReason
	}
	if !claim && !expired {
		f.Close()
		return nil, req, nil
	}
	if expired {
		// Recorded before the request leaves new/: a failure leaves it
		// pending, to be expired by the next look.
		if err := s.note(EventExpired, req, StatusExpired, reason); err != nil {
			f.Close()
			return nil, nil, err
		}
	}
	if err := s.moveToCur(f, id); err != nil {
		f.Close()
		return nil, nil, err
	}
	c := &Claim{Request: req, s: s, f: f}
	if expired {
		err := c.Finish(Result{Status: StatusExpired, Decision: Deny, DecidedBy: ByPolicy, Reason: reason})
		if err != nil {
			return nil, nil, err
		}
		if reason == writerGoneReason {
			return nil, nil, fmt.Errorf("%w: %s: %w", ErrExpired, id, ErrWriterGone)
		}
		return nil, nil, fmt.Errorf("%w: %s", ErrExpired, id)
	}
	return c, req, nil
}
