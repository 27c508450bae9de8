package queue

import "encoding/json"

// The shape check (checkJSONShape) walks a request with encoding/json's
// token API, which costs ~10 µs and ~5 KB of garbage for a typical
// request: most of the engine's work per request when 10,000 arrive at
// once. shapeOK is a byte scanner for the common case: valid JSON, an
// object at the top, keys without escapes or non-ASCII, no object with
// more than maxFastKeys members, nesting well under maxDepth. It answers
// true only when checkJSONShape would return nil (FuzzShape checks it);
// anything else goes to checkJSONShape, which says what is wrong.

// maxFastKeys bounds the members of an object the scanner checks for
// duplicates by comparing each with those before it.
const maxFastKeys = 32

// shapeOK reports whether data certainly passes checkJSONShape.
func shapeOK(data []byte) bool {
	if !json.Valid(data) {
		return false
	}
	s := shapeScanner{data: data}
	s.space()
	if s.i >= len(s.data) || s.data[s.i] != '{' {
		return false
	}
	if !s.object(1) {
		return false
	}
	s.space()
	return s.i == len(s.data) // json.Valid allows nothing else after it
}

type shapeScanner struct {
	data []byte
	i    int
	keys [][]byte // the keys of the objects being scanned, a stack
}

func (s *shapeScanner) space() { s.i = skipSpace(s.data, s.i) }

// skipSpace returns the index of the first byte at or after i in data
// that is not JSON whitespace.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// object scans the object at s.i (its '{') at depth.
func (s *shapeScanner) object(depth int) bool {
	if depth > maxDepth-4 {
		return false
	}
	s.i++ // '{'
	base := len(s.keys)
	defer func() { s.keys = s.keys[:base] }()
	for {
		s.space()
		if s.data[s.i] == '}' {
			s.i++
			return true
		}
		if s.data[s.i] == ',' {
			s.i++
			s.space()
		}
		key, ok := s.key()
		if !ok {
			return false
		}
		if len(s.keys)-base >= maxFastKeys {
			return false
		}
		for _, k := range s.keys[base:] {
			if string(k) == string(key) {
				return false
			}
		}
		if depth == 1 && !requestFields()[string(key)] {
			return false // misspelled in case, or unknown: the slow path says which
		}
		s.keys = append(s.keys, key)
		s.space()
		s.i++ // ':'
		s.space()
		if !s.value(depth) {
			return false
		}
	}
}

// key scans a member name: plain ASCII without escapes only.
func (s *shapeScanner) key() ([]byte, bool) {
	if s.data[s.i] != '"' {
		return nil, false
	}
	start := s.i + 1
	for j := start; j < len(s.data); j++ {
		c := s.data[j]
		switch {
		case c == '"':
			s.i = j + 1
			return s.data[start:j], true
		case c == '\\' || c >= 0x80:
			return nil, false
		}
	}
	return nil, false
}

// value scans the value at s.i, in an object or array at depth.
func (s *shapeScanner) value(depth int) bool {
	switch s.data[s.i] {
	case '{':
		return s.object(depth + 1)
	case '[':
		if depth+1 > maxDepth-4 {
			return false
		}
		s.i++
		for {
			s.space()
			switch s.data[s.i] {
			case ']':
				s.i++
				return true
			case ',':
				s.i++
				s.space()
			}
			if !s.value(depth + 1) {
				return false
			}
		}
	case '"':
		for j := s.i + 1; j < len(s.data); j++ {
			switch s.data[j] {
			case '\\':
				j++ // the escaped character (valid JSON: there is one)
			case '"':
				s.i = j + 1
				return true
			}
		}
		return false
	}
	// A number, true, false or null: up to the next delimiter.
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return true
		}
		s.i++
	}
	return true
}
