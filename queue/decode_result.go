package queue

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// A writer decodes one result per process ('sluice run', a hook), and
// encoding/json's first decode of a Result builds its field cache by
// reflection: ~0.14 ms, against ~6 us for every decode after it. The
// result lines the engine writes are decoded here by hand instead;
// anything this decoder is not sure of (an unknown or repeated key, a
// null, a number that is not a plain integer, a \u escape of a
// surrogate, invalid UTF-8, trailing data) goes to encoding/json, which
// decides as before. FuzzDecodeResult checks that what it decodes is
// what encoding/json decodes.

// decodeResultFast decodes data as encoding/json would into a Result, or
// reports false.
func decodeResultFast(data []byte) (*Result, bool) {
	p := resultParser{data: data}
	var r Result
	if !p.object(func(key string) bool { return p.resultField(&r, key) }) {
		return nil, false
	}
	p.space()
	if p.i != len(p.data) {
		return nil, false
	}
	return &r, true
}

type resultParser struct {
	data []byte
	i    int
}

func (p *resultParser) space() { p.i = skipSpace(p.data, p.i) }

func (p *resultParser) next(c byte) bool {
	p.space()
	if p.i < len(p.data) && p.data[p.i] == c {
		p.i++
		return true
	}
	return false
}

// object parses {"key": value, ...}, calling field for each key with the
// parser at its value; a key seen twice is left to encoding/json.
func (p *resultParser) object(field func(key string) bool) bool {
	if !p.next('{') {
		return false
	}
	if p.next('}') {
		return true
	}
	var seen []string
	for {
		key, ok := p.str()
		if !ok || !p.next(':') {
			return false
		}
		for _, s := range seen {
			if s == key {
				return false
			}
		}
		seen = append(seen, key)
		if !field(key) {
			return false
		}
		if p.next(',') {
			continue
		}
		return p.next('}')
	}
}

// str parses a JSON string.
func (p *resultParser) str() (string, bool) {
	if !p.next('"') {
		return "", false
	}
	start := p.i
	plain := true
	for p.i < len(p.data) {
		c := p.data[p.i]
		switch {
		case c == '"':
			s := p.data[start:p.i]
			p.i++
			if plain {
				return string(s), true
			}
			return unescapeJSON(s)
		case c == '\\':
			plain = false
			p.i += 2
			continue
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			plain = false
		}
		p.i++
	}
	return "", false
}

// unescapeJSON decodes a string's body; false for what it leaves to
// encoding/json (a surrogate escape, invalid UTF-8, a bad escape).
func unescapeJSON(s []byte) (string, bool) {
	if !utf8.Valid(s) {
		return "", false
	}
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(s) {
			return "", false
		}
		switch s[i] {
		case '"', '\\', '/':
			out = append(out, s[i])
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			if i+4 >= len(s) {
				return "", false
			}
			v, err := strconv.ParseUint(string(s[i+1:i+5]), 16, 16)
			if err != nil || (v >= 0xd800 && v < 0xe000) {
				return "", false
			}
			out = utf8.AppendRune(out, rune(v))
			i += 4
		default:
			return "", false
		}
	}
	return string(out), true
}

// integer parses a plain integer (no fraction, no exponent).
func (p *resultParser) integer() (int64, bool) {
	p.space()
	start := p.i
	if p.i < len(p.data) && p.data[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.data) && p.data[p.i] >= '0' && p.data[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || (p.data[digits] == '0' && p.i-digits > 1) {
		return 0, false
	}
	if p.i < len(p.data) {
		switch p.data[p.i] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	v, err := strconv.ParseInt(string(p.data[start:p.i]), 10, 64)
	return v, err == nil
}

// array parses [elem, ...], calling elem with the parser at each one.
func (p *resultParser) array(elem func() bool) bool {
	if !p.next('[') {
		return false
	}
	if p.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if !p.next(',') {
			return p.next(']')
		}
	}
}

func (p *resultParser) strings() ([]string, bool) {
	out := []string{}
	ok := p.array(func() bool {
		s, ok := p.str()
		out = append(out, s)
		return ok
	})
	return out, ok
}

// timeValue parses a time as time.Time's UnmarshalJSON does: the string's
// bytes as they are (it does not unescape them), strict RFC 3339.
func (p *resultParser) timeValue(t *time.Time) bool {
	p.space()
	start := p.i
	s, ok := p.str()
	if !ok || p.i-start != len(s)+2 {
		return false // escaped: left to encoding/json
	}
	return t.UnmarshalText([]byte(s)) == nil
}

func (p *resultParser) resultField(r *Result, key string) bool {
	var ok bool
	var s string
	var n int64
	switch key {
	case "version":
		if n, ok = p.integer(); ok && int64(int(n)) == n {
			r.Version = int(n)
		}
		return ok
	case "id":
		r.ID, ok = p.str()
	case "status":
		s, ok = p.str()
		r.Status = Status(s)
	case "decision":
		s, ok = p.str()
		r.Decision = Decision(s)
	case "decided_by":
		s, ok = p.str()
		r.DecidedBy = Decider(s)
	case "reason":
		r.Reason, ok = p.str()
	case "command":
		r.Command, ok = p.str()
	case "output_tail":
		r.OutputTail, ok = p.str()
	case "log":
		r.Log, ok = p.str()
	case "sandbox":
		r.Sandbox, ok = p.str()
	case "scope":
		s, ok = p.str()
		r.Scope = Scope(s)
	case "exit_code":
		if n, ok = p.integer(); ok && int64(int(n)) == n {
			code := int(n)
			r.ExitCode = &code
		}
		return ok
	case "duration_ms":
		r.DurationMS, ok = p.integer()
	case "output_bytes":
		r.OutputBytes, ok = p.integer()
	case "started_at":
		ok = p.timeValue(&r.StartedAt)
	case "finished_at":
		ok = p.timeValue(&r.FinishedAt)
	case "verdict":
		v := &Verdict{}
		ok = p.object(func(key string) bool { return p.verdictField(v, key) })
		r.Verdict = v
	case "changed_files":
		ok = p.fileChanges(r)
	case "checkpoint":
		c := &Checkpoint{}
		ok = p.object(func(key string) bool {
			switch key {
			case "roots":
				roots, ok := p.strings()
				c.Roots = roots
				return ok
			case "error":
				var ok bool
				c.Error, ok = p.str()
				return ok
			case "overlapped":
				ids, ok := p.strings()
				c.Overlapped = ids
				return ok
			}
			return false
		})
		r.Checkpoint = c
	}
	return ok
}

func (p *resultParser) verdictField(v *Verdict, key string) bool {
	var ok bool
	var s string
	switch key {
	case "action":
		s, ok = p.str()
		v.Action = Action(s)
	case "category":
		v.Category, ok = p.str()
	case "risk":
		v.Risk, ok = p.str()
	case "profile":
		v.Profile, ok = p.str()
	case "reasons":
		v.Reasons, ok = p.strings()
	case "hosts":
		v.Hosts, ok = p.strings()
	}
	return ok
}

func (p *resultParser) fileChanges(r *Result) bool {
	r.ChangedFiles = []FileChange{}
	return p.array(func() bool {
		var fc FileChange
		ok := p.object(func(key string) bool {
			var ok bool
			switch key {
			case "path":
				fc.Path, ok = p.str()
			case "change":
				fc.Change, ok = p.str()
			}
			return ok
		})
		r.ChangedFiles = append(r.ChangedFiles, fc)
		return ok
	})
}
