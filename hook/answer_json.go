package hook

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/sluice-dev/sluice/queue"
)

// The answers are written by hand: a hook is a fresh process for every
// tool call, and encoding/json's first Encode of an answer type builds its
// cache by reflection (~40 us, against <1 us after). The bytes are what
// encoding/json (HTML escaping off) writes for the answer types:
// FuzzAnswerJSON compares them.

// jsonObject builds one JSON object, members in the order added.
type jsonObject struct {
	b   []byte
	err bool // a raw member was not JSON: encoding/json writes nothing then
}

func (o *jsonObject) key(k string) {
	if len(o.b) == 0 {
		o.b = append(o.b, '{')
	} else {
		o.b = append(o.b, ',')
	}
	o.b = queue.AppendJSONString(o.b, k)
	o.b = append(o.b, ':')
}

func (o *jsonObject) str(k, v string) {
	o.key(k)
	o.b = queue.AppendJSONString(o.b, v)
}

// raw adds v compacted, as encoding/json writes a json.RawMessage: null
// when it is nil, an error (nothing written) when it is empty or not JSON.
func (o *jsonObject) raw(k string, v json.RawMessage) {
	o.key(k)
	if v == nil {
		o.b = append(o.b, "null"...)
		return
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		o.err = true
		return
	}
	o.b = append(o.b, buf.Bytes()...)
}

func (o *jsonObject) object(k string, inner *jsonObject) {
	o.key(k)
	if inner.err {
		o.err = true
	}
	o.b = append(o.b, inner.bytes()...)
}

func (o *jsonObject) bytes() []byte {
	if len(o.b) == 0 {
		return []byte("{}")
	}
	return append(o.b, '}')
}

// write writes the object and a newline, or nothing when a member was
// not JSON (as encoding/json's Encode fails).
func (o *jsonObject) write(w io.Writer) {
	if o.err {
		return
	}
	_, _ = w.Write(append(o.bytes(), '\n'))
}
