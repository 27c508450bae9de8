package queue

import (
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// The request a writer submits is encoded by hand: the first use of
// encoding/json in a process builds its field cache by reflection
// (~0.14 ms for a Request), and every 'sluice run' and hook is a fresh
// process. The bytes are exactly what encoding/json writes without HTML
// escaping (FuzzRequestEncoding compares them).

// appendRequestLine appends r as one JSON line, or reports false when r
// holds something this encoder leaves to encoding/json (raw input JSON,
// a time outside years 0-9999).
func appendRequestLine(b []byte, r *Request) ([]byte, bool) {
	if len(r.Input) > 0 || !plainTime(r.CreatedAt) || !plainTime(r.ExpiresAt) {
		return b, false
	}
	b = append(b, `{"version":`...)
	b = strconv.AppendInt(b, int64(r.Version), 10)
	b = append(b, `,"id":`...)
	b = appendJSONString(b, r.ID)
	b = append(b, `,"kind":`...)
	b = appendJSONString(b, string(r.Kind))
	b = appendField(b, "mode", string(r.Mode))
	b = appendField(b, "command", r.Command)
	b = appendField(b, "path", r.Path)
	b = appendField(b, "content", r.Content)
	b = appendField(b, "old_string", r.OldString)
	b = appendField(b, "new_string", r.NewString)
	if r.ReplaceAll {
		b = append(b, `,"replace_all":true`...)
	}
	b = appendField(b, "diff", r.Diff)
	b = appendField(b, "tool", r.Tool)
	b = appendField(b, "host", r.Host)
	if r.Port != 0 {
		b = append(b, `,"port":`...)
		b = strconv.AppendInt(b, int64(r.Port), 10)
	}
	b = appendField(b, "run_id", r.RunID)
	b = appendField(b, "cwd", r.Cwd)
	if r.TimeoutS != 0 {
		b = append(b, `,"timeout_s":`...)
		b = strconv.AppendInt(b, int64(r.TimeoutS), 10)
	}
	if len(r.Env) > 0 {
		b = append(b, `,"env":{`...)
		keys := make([]string, 0, len(r.Env))
		for k := range r.Env {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			b = appendJSONString(b, r.Env[k])
		}
		b = append(b, '}')
	}
	if r.TTY != nil {
		b = append(b, `,"tty":`...)
		b = strconv.AppendBool(b, *r.TTY)
	}
	b = appendField(b, "agent", r.Agent)
	b = appendField(b, "session", r.Session)
	b = appendField(b, "note", r.Note)
	b = appendTime(b, "created_at", r.CreatedAt)
	b = appendTime(b, "expires_at", r.ExpiresAt)
	return append(b, "}\n"...), true
}

// plainTime: encoding/json refuses years past 9999 and before 0, and zone
// offsets of a day or more; those are left to it, to fail the same way.
func plainTime(t time.Time) bool {
	if t.IsZero() {
		return true
	}
	y := t.Year()
	_, off := t.Zone()
	return y >= 0 && y <= 9999 && off > -24*3600 && off < 24*3600
}

// appendField appends ,"name":"s" unless s is empty (omitempty).
func appendField(b []byte, name, s string) []byte {
	if s == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendJSONString(b, s)
}

// appendTime appends ,"name":"RFC 3339" unless t is zero (omitzero).
func appendTime(b []byte, name string, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':', '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// AppendJSONMember appends ,"name":"s" unless s is empty, as encoding/json
// writes a string field with omitempty (for the audit log's hand encoder).
func AppendJSONMember(b []byte, name, s string) []byte { return appendField(b, name, s) }

// EncodableTime reports whether encoding/json encodes t (years 0-9999,
// zone offsets under a day); hand encoders leave other times to it.
func EncodableTime(t time.Time) bool { return plainTime(t) }

// AppendJSONString appends s quoted as encoding/json quotes it with HTML
// escaping off (for writers that must not pay for encoding/json's first
// use: the hooks' answers).
func AppendJSONString(b []byte, s string) []byte { return appendJSONString(b, s) }

// appendJSONString appends s quoted as encoding/json quotes it with HTML
// escaping off: ", \ and control characters escaped, invalid UTF-8 as
// U+FFFD, U+2028 and U+2029 as \u escapes.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
