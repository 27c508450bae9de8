package queue

import (
	"errors"
	"fmt"
	"io/fs"
	"time"
)

// Submit fills in what a writer may leave out (version, a new id,
// created_at), validates req, and puts it in the spool: the bytes are
// written to tmp/, synced, then linked into new/, so that no reader ever
// sees a partial request and an existing request is never replaced. It
// returns ErrExists if the id is already used.
func (s *Spool) Submit(req *Request) error {
	if req.Version == 0 {
		req.Version = Version
	}
	if req.ID == "" {
		req.ID = NewID()
	}
	if req.CreatedAt.IsZero() {
		req.CreatedAt = time.Now().UTC()
	}
	if err := req.validate(); err != nil {
		return err
	}
	if exists(s.path(dirCur, req.ID+".json")) || exists(s.ResultPath(req.ID)) {
		return fmt.Errorf("%w: %s", ErrExists, req.ID)
	}
	data, err := marshalLine(req)
	if err != nil {
		return fmt.Errorf("queue: encode request: %w", err)
	}
	if len(data) > MaxRequestSize {
		return invalidf("request is %d bytes, over the %d byte limit", len(data), MaxRequestSize)
	}
	if err := s.linkNew(dirTmp, req.ID+".*.json", s.RequestPath(req.ID), data); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, req.ID)
		}
		return fmt.Errorf("queue: submit %s: %w", req.ID, err)
	}
	return nil
}
