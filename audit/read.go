package audit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Line is one line of the log as Last and Follow read it.
type Line struct {
	Offset int64
	Raw    []byte       // the line without its newline; nil if over maxLine
	Event  *queue.Event // nil if the line is not an event
	Err    error        // why it is not
}

func decodeAt(off int64, raw []byte) Line {
	l := Line{Offset: off, Raw: raw}
	if raw == nil {
		l.Err = fmt.Errorf("audit: line at byte %d is over %d bytes", off, maxLine)
		return l
	}
	l.Event, l.Err = DecodeLine(raw)
	return l
}

// Filter selects events; its zero value selects every line, events or not.
type Filter struct {
	ID     string            // the request id, or a prefix of it
	Events []queue.EventName // any of these
	Agent  string
	Since  time.Time // at or after
}

func (f *Filter) all() bool {
	return f.ID == "" && len(f.Events) == 0 && f.Agent == "" && f.Since.IsZero()
}

// Match reports whether f selects l. A line that is not an event is
// selected only by the zero Filter.
func (f *Filter) Match(l Line) bool {
	if f.all() {
		return true
	}
	ev := l.Event
	return ev != nil &&
		(f.ID == "" || strings.HasPrefix(ev.ID, f.ID)) &&
		(len(f.Events) == 0 || slices.Contains(f.Events, ev.Event)) &&
		(f.Agent == "" || ev.Agent == f.Agent) &&
		(f.Since.IsZero() || !ev.TS.Before(f.Since))
}

// mayMatch is a quick look at a line's bytes before it is decoded: false
// means f cannot select it. It checks only members whose JSON encoding is
// the text itself.
func (f *Filter) mayMatch(raw []byte) bool {
	if raw == nil || f.all() {
		return true
	}
	if f.ID != "" && queue.ValidID(f.ID) && !bytes.Contains(raw, []byte(`"id":"`+f.ID)) {
		return false
	}
	if f.Agent != "" && plainJSON(f.Agent) && !bytes.Contains(raw, []byte(`"agent":"`+f.Agent+`"`)) {
		return false
	}
	if len(f.Events) > 0 {
		for _, e := range f.Events {
			if !plainJSON(string(e)) || bytes.Contains(raw, []byte(`"event":"`+string(e)+`"`)) {
				return true
			}
		}
		return false
	}
	return true
}

// plainJSON reports whether encoding/json writes s as it is.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// Last returns the last n lines of the log in r (of size bytes) that f
// selects, in log order, and the offset just past the last complete line:
// where a follower picks up. A last line without its newline is left out (it
// is being written, or torn). Last reads backwards from the end and stops
// at n lines, or, when f.Since is set, at the first event older than it, so
// that its cost follows what it shows, not the size of the log.
func Last(r io.ReaderAt, size int64, n int, f Filter) ([]Line, int64, error) {
	b := newBackLines(r, size, 64<<10)
	end := size
	var out []Line
	for len(out) < n {
		off, raw, ln, err := b.prev()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("audit: read log: %w", err)
		}
		terminated := raw != nil && raw[len(raw)-1] == '\n'
		if raw == nil { // over maxLine, so not held: look at its last byte
			var c [1]byte
			if _, err := r.ReadAt(c[:], off+ln-1); err != nil {
				return nil, 0, fmt.Errorf("audit: read log: %w", err)
			}
			terminated = c[0] == '\n'
		}
		if !terminated { // only the last line can be
			end = off
			continue
		}
		if raw != nil {
			if f.Since.IsZero() && !f.mayMatch(raw) {
				continue
			}
			raw = bytes.Clone(raw[:len(raw)-1])
		}
		l := decodeAt(off, raw)
		if !f.Since.IsZero() && l.Event != nil && l.Event.TS.Before(f.Since) {
			break
		}
		if f.Match(l) {
			out = append(out, l)
		}
	}
	slices.Reverse(out)
	return out, end, nil
}

// Follower reads the lines appended to a log as they land, polling its
// size: portable, and cheap at the interval a person reads at.
type Follower struct {
	Path   string
	Offset int64         // where to start: Last's end offset
	Every  time.Duration // how often to look; 200ms if zero
	// Notice, if set, is told in a sentence when the log is replaced,
	// truncated or missing.
	Notice func(string)
}

// Run calls fn for each complete line from fw.Offset on, until ctx is done
// (returning nil) or fn returns an error. If the file at Path is replaced
// (log rotation) or shrinks, it starts again at the beginning of the file
// there now.
func (fw *Follower) Run(ctx context.Context, fn func(Line) error) error {
	every := fw.Every
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	notice := fw.Notice
	if notice == nil {
		notice = func(string) {}
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	var (
		f       *os.File
		st      = lineSplitter{off: fw.Offset, lineOff: fw.Offset}
		missing bool
	)
	defer func() {
		if f != nil {
			f.Close()
		}
	}()
	buf := make([]byte, 64<<10)
	for {
		if f == nil {
			var err error
			f, err = os.Open(fw.Path)
			switch {
			case errors.Is(err, fs.ErrNotExist):
				if !missing {
					notice(fmt.Sprintf("waiting for %s to be created", fw.Path))
					missing = true
				}
				f = nil
			case err != nil:
				return fmt.Errorf("audit: follow: %w", err)
			case missing:
				st, missing = lineSplitter{}, false
			}
		}
		if f != nil {
			fi, err := f.Stat()
			if err != nil {
				return fmt.Errorf("audit: follow: %w", err)
			}
			if !queue.SameFile(f, fw.Path) {
				// Replaced: finish what the old file holds, then switch.
				if err := st.read(f, buf, fi.Size(), fn); err != nil {
					return err
				}
				notice(fmt.Sprintf("%s was replaced; following the new file from its start", fw.Path))
				f.Close()
				f, st = nil, lineSplitter{}
				continue
			}
			if fi.Size() < st.off {
				notice(fmt.Sprintf("%s shrank from %d to %d bytes; following it from its start", fw.Path, st.off, fi.Size()))
				st = lineSplitter{}
			}
			if err := st.read(f, buf, fi.Size(), fn); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// lineSplitter cuts what a follower reads into lines.
type lineSplitter struct {
	off      int64  // read up to here
	lineOff  int64  // where the line being read starts
	pending  []byte // its bytes so far
	overlong bool   // it is over maxLine; its bytes are dropped
}

// read passes the complete lines between s.off and size to fn.
func (s *lineSplitter) read(f *os.File, buf []byte, size int64, fn func(Line) error) error {
	for s.off < size {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-s.off)], s.off)
		if n == 0 && err != nil {
			return fmt.Errorf("audit: follow: %w", err)
		}
		chunk := buf[:n]
		s.off += int64(n)
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			part := chunk
			if i >= 0 {
				part = chunk[:i]
			}
			if !s.overlong && int64(len(s.pending)+len(part)) >= maxLine {
				s.overlong, s.pending = true, nil
			}
			if !s.overlong {
				s.pending = append(s.pending, part...)
			}
			if i < 0 {
				break
			}
			raw := s.pending
			if s.overlong {
				raw = nil
			}
			l := decodeAt(s.lineOff, raw)
			s.lineOff = s.off - int64(len(chunk)) + int64(i) + 1
			s.pending, s.overlong = nil, false
			if err := fn(l); err != nil {
				return err
			}
			chunk = chunk[i+1:]
		}
	}
	return nil
}
