package web

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/queue"
)

// sse is one server-sent-events stream.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func startSSE(w http.ResponseWriter) (*sse, bool) {
	f, ok := w.(http.Flusher)
	if !ok {
		writeErr(w, http.StatusInternalServerError, "no streaming")
		return nil, false
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	return &sse{w: w, f: f}, true
}

// send writes one event; its data is JSON, one line.
func (e *sse) send(event string, v any) error { return e.sendID(event, "", v) }

// sendID is send with the event's id: what the browser sends back as
// Last-Event-ID when it reconnects.
func (e *sse) sendID(event, id string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if id != "" {
		if _, err := fmt.Fprintf(e.w, "id: %s\n", id); err != nil {
			return err
		}
	}
	if _, err := fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", event, data); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}

func (e *sse) ping() error {
	if _, err := fmt.Fprint(e.w, ": ping\n\n"); err != nil {
		return err
	}
	e.f.Flush()
	return nil
}

// stillPaired reports whether dev still holds a valid session: streams
// look every second, so a revocation closes them within one.
func (s *Server) stillPaired(r *http.Request) bool {
	c, err := r.Cookie(sessionCookie)
	if err != nil {
		return false
	}
	_, err = s.store.Session(c.Value, s.opt.Now())
	return err == nil
}

// events streams the queue and History: both at once, then again after
// each change.
func (s *Server) events(w http.ResponseWriter, r *http.Request, dev *Device) {
	st, ok := startSSE(w)
	if !ok {
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	pings := 0
	for {
		changed := s.src.Changed()
		if st.send("queue", s.queueView(dev)) != nil || st.send("history", s.historyView()) != nil {
			return
		}
		for waiting := true; waiting; {
			select {
			case <-r.Context().Done():
				return
			case <-changed:
				waiting = false
			case <-tick.C:
				if !s.stillPaired(r) {
					_ = st.send("revoked", map[string]string{"error": "this device's pairing was revoked or expired"})
					return
				}
				if pings++; pings%15 == 0 && st.ping() != nil {
					return
				}
			}
		}
	}
}

// outputChunk bounds one output event.
const outputChunk = 32 << 10

// output streams a run's output from ?from=OFFSET, as text: terminal
// escapes dropped, hidden characters escaped (outFilter).
func (s *Server) output(w http.ResponseWriter, r *http.Request, _ *Device) {
	id := r.PathValue("id")
	if !validRef(id) {
		writeErr(w, http.StatusNotFound, "no such request")
		return
	}
	// A reconnecting EventSource says where it was (the ids are offsets).
	off, _ := strconv.ParseInt(r.URL.Query().Get("from"), 10, 64)
	if last, err := strconv.ParseInt(r.Header.Get("Last-Event-ID"), 10, 64); err == nil {
		off = last
	}
	off = max(off, 0)
	st, ok := startSSE(w)
	if !ok {
		return
	}
	var flt outFilter
	poll := time.NewTicker(150 * time.Millisecond)
	defer poll.Stop()
	lastCheck := time.Now()
	for {
		data, next, done, err := s.src.Output(id, off, outputChunk)
		if err != nil {
			_ = st.send("end", map[string]string{"error": Plain(err.Error(), 200)})
			return
		}
		if len(data) > 0 || done {
			text := flt.write(data, done)
			if text != "" {
				if st.sendID("out", strconv.FormatInt(next, 10), map[string]any{"text": text, "next": next}) != nil {
					return
				}
			}
			off = next
		}
		if done {
			end := map[string]any{"next": off}
			if d, ok := s.winner(r.Context(), id); ok {
				end["decided"] = d
			}
			if res, err := s.src.Result(id); err == nil {
				end["status"], end["exit_code"] = queue.Status(Plain(string(res.Status), 20)), res.ExitCode
			}
			_ = st.send("end", end)
			return
		}
		if len(data) == outputChunk {
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-poll.C:
		}
		if time.Since(lastCheck) >= time.Second {
			lastCheck = time.Now()
			if !s.stillPaired(r) {
				_ = st.send("revoked", map[string]string{"error": "this device's pairing was revoked or expired"})
				return
			}
		}
	}
}

// winner is who decided request id, as the audit log says: waited for a
// moment, since a request leaves the spool before the log's follower has
// read the line that names who took it.
func (s *Server) winner(ctx context.Context, id string) (decided, bool) {
	limit := time.NewTimer(3 * time.Second)
	defer limit.Stop()
	for {
		changed := s.src.Changed()
		if ev, by, ok := s.src.Winner(id); ok {
			return decided{Event: ev, By: ShapeLine(by)}, true
		}
		select {
		case <-changed:
		case <-limit.C:
			return decided{}, false
		case <-ctx.Done():
			return decided{}, false
		}
	}
}

// outFilter turns a run's raw output into text for the page: terminal
// escape sequences and controls dropped (queue.TermSafe), \r\n made \n, a
// lone \r a new line, and every other hidden character (bidi overrides,
// zero-width, invalid UTF-8) shown as its escape. It keeps what a chunk
// ends in the middle of (a sequence, a character) for the next.
type outFilter struct {
	ts   queue.TermSafe
	safe bytes.Buffer
	tail []byte
}

func (f *outFilter) write(p []byte, final bool) string {
	f.ts.W = &f.safe
	_, _ = f.ts.Write(p)
	buf := append(f.tail, f.safe.Bytes()...)
	f.safe.Reset()
	f.tail = nil
	var b bytes.Buffer
	for i := 0; i < len(buf); {
		c := buf[i]
		if c == '\r' {
			if i+1 == len(buf) && !final {
				f.tail = []byte{'\r'}
				break
			}
			if i+1 < len(buf) && buf[i+1] == '\n' {
				i++
				continue
			}
			b.WriteByte('\n')
			i++
			continue
		}
		if c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f) {
			b.WriteByte(c)
			i++
			continue
		}
		if c == '\b' || c < 0x20 || c == 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRune(buf[i:])
		if r == utf8.RuneError && n <= 1 {
			if !final && !utf8.FullRune(buf[i:]) {
				f.tail = append([]byte(nil), buf[i:]...)
				break
			}
			fmt.Fprintf(&b, `\x%02x`, c)
			i++
			continue
		}
		if esc, ok := queue.Printable(string(buf[i : i+n])); !ok {
			b.WriteString(esc)
		} else {
			b.Write(buf[i : i+n])
		}
		i += n
	}
	return b.String()
}
