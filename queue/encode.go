package queue

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
)

// marshalLine encodes v as one JSON line without HTML escaping: commands
// are full of '<', '>' and '&', and readers of the spool are people too.
func marshalLine(v any) ([]byte, error) {
	if r, ok := v.(*Request); ok {
		if line, ok := appendRequestLine(make([]byte, 0, 512), r); ok {
			return line, nil
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readAllLimited reads f up to limit bytes; more is an error.
func readAllLimited(f *os.File, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &InvalidError{Reason: "file over the size limit"}
	}
	return data, nil
}
