package queue

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// jsonLine is what encoding/json writes for v (HTML escaping off): the
// bytes the hand-written request encoder must match.
func jsonLine(t *testing.T, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// FuzzRequestEncoding: the request line a writer submits is byte for byte
// what encoding/json writes, whatever the strings hold (quotes,
// backslashes, control characters, invalid UTF-8, U+2028, '<' '&'), and
// what is left to encoding/json is only what the encoder says it leaves.
func FuzzRequestEncoding(f *testing.F) {
	f.Add(1, "01KAB5Y6SR7ZQ9M2F0K1W3X4YZ", "exec", "go test ./... 2>&1 | tail -n 20", "/home/dev/proj", "NODE_ENV", "test", 30, 1, "claude-code", "", int64(1764000000123456789), int64(600e9))
	f.Add(1, "A1", "exec", "printf '\\x1b]0;pwned\\x07' \"$HOME\" <in >out && echo \u2028\u2029\t\r\n\x00\x7f", "/tmp", "", "", 0, 0, "", "note \"quoted\" \\ back", int64(0), int64(0))
	f.Add(1, "A1", "write", "\xff\xfe bad utf-8 \xc3", "/\xe2\x80", "K\x01", "V\u2028", -5, 2, "cli", "<script>&amp;", int64(-1<<62), int64(1))
	f.Fuzz(func(t *testing.T, version int, id, kind, command, cwd, envKey, envVal string, timeout, tty int, agent, note string, created, expires int64) {
		r := &Request{Version: version, ID: id, Kind: Kind(kind), Command: command, Cwd: cwd,
			Path: command + cwd, Content: note, OldString: agent, NewString: cwd, ReplaceAll: tty%2 == 0,
			Diff: note, Tool: kind, TimeoutS: timeout, Agent: agent, Session: id, Note: note,
			Host: agent, Port: timeout * 7, RunID: id}
		if envKey != "" || envVal != "" {
			r.Env = map[string]string{envKey: envVal, envVal + "2": envKey}
		}
		switch tty % 3 {
		case 1:
			r.TTY = new(bool)
		case 2:
			r.TTY = new(true)
		}
		if created != 0 {
			r.CreatedAt = time.Unix(0, created).UTC()
		}
		if expires != 0 {
			r.ExpiresAt = time.Unix(0, expires).In(time.FixedZone("x", int(expires%50000)))
		}
		got, ok := appendRequestLine(nil, r)
		if !ok {
			if plainTime(r.CreatedAt) && plainTime(r.ExpiresAt) {
				t.Fatal("the encoder declined a request it should encode")
			}
			return
		}
		if want := jsonLine(t, r); !bytes.Equal(got, want) {
			t.Fatalf("hand-encoded request differs from encoding/json:\n got %q\nwant %q", got, want)
		}
	})
}

// TestRequestEncodingFallsBack: raw input JSON goes through encoding/json
// (which checks and compacts it), and the spool still writes it.
func TestRequestEncodingFallsBack(t *testing.T) {
	r := &Request{Version: 1, ID: "A1", Kind: KindTool, Tool: "mcp__x__y", Input: json.RawMessage(`{ "a" : [1, 2] }`)}
	if _, ok := appendRequestLine(nil, r); ok {
		t.Fatal("raw input was hand-encoded")
	}
	line, err := marshalLine(r)
	if err != nil {
		t.Fatal(err)
	}
	if want := jsonLine(t, r); !bytes.Equal(line, want) {
		t.Fatalf("got %q, want %q", line, want)
	}
}
