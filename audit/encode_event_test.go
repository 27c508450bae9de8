package audit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// eventJSON is encoding/json's encoding of ev as the log writes it (HTML
// escaping off), without the newline.
func eventJSON(t *testing.T, ev *queue.Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(ev); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// FuzzEventEncoding: the hand encoder writes exactly encoding/json's
// bytes for every event it takes, hostile strings included (an agent's
// command, path and name go into the log).
func FuzzEventEncoding(f *testing.F) {
	f.Add(int64(1), int64(1764000000123456789), "01KAB5Y6SR7ZQ9M2F0K1W3X4YZ", "queued", "policy", "claude-code", "exec",
		"go test ./... 2>&1 | tail -n 20", "/home/dev/proj", "ask", "mutating;writes files", 0, int64(0), "", uint8(1))
	f.Add(int64(42), int64(0), "A1", "finished", "alice", "codex", "exec", "printf '\\x1b]0;pwned\\x07' <in >out && echo \u2028\u2029\t\r\n\x00\x7f",
		"/tmp", "allow", "", 3, int64(1234), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", uint8(6))
	f.Add(int64(-7), int64(-1<<62), "\xff\xfe", "denied", "<script>&amp;", "\xc3", "write", "\"quoted\" \\ back", "/\xe2\x80", "deny",
		"a;b;;c", -1, int64(-5), "\u2028", uint8(255))
	f.Fuzz(func(t *testing.T, seq, ts int64, id, event, actor, agent, kind, command, cwd, action, reasons string,
		exit int, dur int64, prev string, flags uint8) {
		ev := &queue.Event{Seq: seq, TS: time.Unix(0, ts).UTC(), ID: id, Event: queue.EventName(event), Actor: actor,
			Agent: agent, Kind: queue.Kind(kind), Command: command, Cwd: cwd, Reason: reasons, DurationMS: dur, Prev: prev}
		if flags&1 != 0 {
			ev.Verdict = &queue.Verdict{Action: queue.Action(action), Category: kind, Risk: actor, Profile: agent}
			if reasons != "" {
				ev.Verdict.Reasons = strings.Split(reasons, ";")
			}
		}
		if flags&2 != 0 {
			ev.ExitCode = &exit
		}
		if flags&4 != 0 {
			ev.EditedFrom, ev.Path, ev.Tool = cwd, command, id
		}
		if flags&8 != 0 {
			ev.Status, ev.OutputSHA256, ev.Sandbox = queue.Status(action), prev, reasons
		}
		if flags&16 != 0 {
			ev.TS = time.Unix(0, ts).In(time.FixedZone("x", int(ts%100000)))
		}
		if flags&32 != 0 {
			ev.Hash = prev
		}
		got, ok := appendEvent(nil, ev)
		if !ok {
			if queue.EncodableTime(ev.TS) {
				t.Fatal("the encoder declined an event it should encode")
			}
			return
		}
		if want := eventJSON(t, ev); !bytes.Equal(got, want) {
			t.Fatalf("hand-encoded event differs from encoding/json:\n got %q\nwant %q", got, want)
		}
	})
}

// Events with changed files, a checkpoint or a torn span go through
// encoding/json, and the log writes them the same.
func TestEventEncodingFallsBack(t *testing.T) {
	code := 0
	for _, ev := range []*queue.Event{
		{Seq: 3, TS: time.Now().UTC(), ID: "A1", Event: queue.EventFinished, ExitCode: &code,
			ChangedFiles: []queue.FileChange{{Path: "/p/a.go", Change: "changed"}}, Prev: strings.Repeat("a", 64)},
		{Seq: 4, TS: time.Now().UTC(), ID: "A1", Event: queue.EventFinished, Checkpoint: &queue.Checkpoint{Roots: []string{"/p"}}, Prev: ""},
	} {
		if _, ok := appendEvent(nil, ev); ok {
			t.Fatalf("%+v hand-encoded", ev)
		}
		e := newEncoder()
		line, err := e.appendLine(nil, ev)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeLine(line)
		if err != nil {
			t.Fatalf("the log's line for %+v does not decode: %v", ev, err)
		}
		if back.Hash != ev.Hash || len(back.ChangedFiles) != len(ev.ChangedFiles) || (back.Checkpoint == nil) != (ev.Checkpoint == nil) {
			t.Fatalf("line %s decodes to %+v", line, back)
		}
	}
}
