package setup

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tailscale/hujson"
)

// The agents' settings files are JSON a person edits, and the agents
// rewrite some of them (Claude Code its ~/.claude.json) between an
// install and an uninstall. sluice edits them as text: it adds and
// removes the members it owns, and every other byte stays as it was
// (order, indentation, comments where the format has them). hujson's
// syntax tree keeps each value's surrounding whitespace and comments,
// so that what sluice does not touch is written back byte for byte.

// dialect is what an agent accepts in a settings file.
type dialect int

const (
	// strictJSON: Claude Code (a file with a comment or a trailing comma
	// is "Invalid or malformed JSON" to it, and none of its settings
	// apply) and Codex (serde_json).
	strictJSON dialect = iota
	// jsonComments: Gemini CLI strips comments before JSON.parse; a
	// trailing comma is still an error.
	jsonComments
)

// doc is a settings file open for editing.
type doc struct {
	root hujson.Value
	// unit is one level of indentation in the file; pretty is whether
	// it spreads over lines (a new file does).
	unit   string
	pretty bool
	// colon and comma are what follows them in the file's one-line
	// containers: ": " and ", " or ":" and ",".
	colon, comma string
}

// syntaxError is a settings file that is not what its agent reads,
// with where.
type syntaxError struct {
	line, col int
	msg       string
}

func (e *syntaxError) Error() string {
	if e.line == 0 {
		return e.msg
	}
	return fmt.Sprintf("line %d, column %d: %s", e.line, e.col, e.msg)
}

// lineCol is the 1-based line and column of byte offset n in data.
func lineCol(data []byte, n int) (int, int) {
	n = max(0, min(n, len(data)))
	line := 1 + bytes.Count(data[:n], []byte("\n"))
	col := 1 + n - (bytes.LastIndexByte(data[:n], '\n') + 1)
	return line, col
}

// parseDoc reads a settings file; empty input is an empty object. A key
// twice is refused: which one the agent reads is not for sluice to guess.
func parseDoc(data []byte, d dialect) (*doc, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		// What sluice writes into an empty file is its own.
		root, _ := hujson.Parse([]byte("{}\n"))
		return &doc{root: root, unit: "  ", pretty: true, colon: ": ", comma: ", "}, nil
	}
	if d == strictJSON {
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) {
				off := int(se.Offset)
				if off > 0 && off < len(data) {
					off-- // the offending byte, not the one after it
				}
				l, c := lineCol(data, off)
				msg := se.Error()
				if msg == "unexpected end of JSON input" {
					msg = "the file ends before its JSON does"
				}
				return nil, &syntaxError{l, c, strings.TrimPrefix(msg, "json: ")}
			}
			return nil, &syntaxError{msg: err.Error()}
		}
	}
	root, err := hujson.Parse(data)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "hujson: ")
		var l, c int
		if _, err := fmt.Sscanf(msg, "line %d, column %d: ", &l, &c); err == nil {
			msg = msg[strings.Index(msg, ": ")+2:]
		}
		if strings.HasSuffix(msg, "unexpected EOF") {
			msg = "the file ends before its JSON does"
		}
		return nil, &syntaxError{l, c, msg}
	}
	if _, ok := root.Value.(*hujson.Object); !ok {
		l, c := lineCol(data, root.StartOffset)
		return nil, &syntaxError{l, c, "not a JSON object"}
	}
	if err := checkTree(data, &root); err != nil {
		return nil, err
	}
	dc := &doc{root: root, unit: "  ", colon: ": ", comma: ", "}
	dc.pretty = bytes.ContainsRune(data[root.StartOffset:root.EndOffset], '\n')
	dc.learnStyle()
	return dc, nil
}

// checkTree refuses a key given twice in one object, and a trailing
// comma (no agent's JSON has them).
func checkTree(data []byte, v *hujson.Value) error {
	switch t := v.Value.(type) {
	case *hujson.Object:
		seen := map[string]bool{}
		for i := range t.Members {
			m := &t.Members[i]
			k := m.Name.Value.(hujson.Literal).String()
			if seen[k] {
				l, c := lineCol(data, m.Name.StartOffset)
				return &syntaxError{l, c, fmt.Sprintf("the key %q is there twice", k)}
			}
			seen[k] = true
			if err := checkTree(data, &m.Value); err != nil {
				return err
			}
		}
		if n := len(t.Members); n > 0 && t.Members[n-1].Value.AfterExtra != nil {
			l, c := lineCol(data, t.Members[n-1].Value.EndOffset)
			return &syntaxError{l, c, "a comma after the last member"}
		}
	case *hujson.Array:
		for i := range t.Elements {
			if err := checkTree(data, &t.Elements[i]); err != nil {
				return err
			}
		}
		if n := len(t.Elements); n > 0 && t.Elements[n-1].AfterExtra != nil {
			l, c := lineCol(data, t.Elements[n-1].EndOffset)
			return &syntaxError{l, c, "a comma after the last element"}
		}
	}
	return nil
}

// learnStyle reads the file's indentation and spacing.
func (d *doc) learnStyle() {
	l := learn(&d.root, "")
	if l.unit != "" {
		d.unit = l.unit
	}
	if l.colon != "" {
		d.colon = l.colon
	}
	if l.comma != "" {
		d.comma = l.comma
	}
}

// layout is what learn found ("" for what it did not).
type layout struct{ unit, colon, comma string }

// learn reads the layout of v (starting on a line indented by indent):
// the first value on a line of its own gives the unit of indentation,
// the first member the space after a colon, the first value after a
// comma on the same line the space after a comma.
func learn(v *hujson.Value, indent string) layout {
	var l layout
	var walk func(v *hujson.Value, indent string)
	walk = func(v *hujson.Value, indent string) {
		visit := func(i int, before hujson.Extra) string {
			if nl := bytes.LastIndexByte(before, '\n'); nl >= 0 {
				if in := string(before[nl+1:]); l.unit == "" && strings.HasPrefix(in, indent) && len(in) > len(indent) && isBlank(in) {
					l.unit = in[len(indent):]
				}
			} else if i > 0 && l.comma == "" && isBlank(string(before)) {
				l.comma = "," + string(before)
			}
			return lineIndent(before, indent)
		}
		switch t := v.Value.(type) {
		case *hujson.Object:
			for i := range t.Members {
				m := &t.Members[i]
				in := visit(i, m.Name.BeforeExtra)
				if vb := string(m.Value.BeforeExtra); l.colon == "" && isBlank(vb) && m.Name.AfterExtra == nil {
					l.colon = ":" + vb
				}
				walk(&m.Value, in)
			}
		case *hujson.Array:
			for i := range t.Elements {
				walk(&t.Elements[i], visit(i, t.Elements[i].BeforeExtra))
			}
		}
	}
	walk(v, indent)
	return l
}

// local is style s with the spacing n itself uses, where it shows one.
func local(n node, s style) style {
	l := learn(n.v, n.indent)
	if l.colon != "" {
		s.colon = l.colon
	}
	if l.comma != "" {
		s.comma = l.comma
	}
	return s
}

func isBlank(s string) bool { return strings.Trim(s, " \t") == "" }

// lineIndent is the indentation of the line a value starts on, given
// the extra before it and its container's.
func lineIndent(before hujson.Extra, outer string) string {
	if nl := bytes.LastIndexByte(before, '\n'); nl >= 0 {
		if in := string(before[nl+1:]); isBlank(in) {
			return in
		}
	}
	return outer
}

// bytes is the file as it is now.
func (d *doc) bytes() []byte { return d.root.Pack() }

// node is a value in the file and the indentation of the line it
// starts on.
type node struct {
	v      *hujson.Value
	indent string
}

func (d *doc) top() node { return node{&d.root, lineIndent(d.root.BeforeExtra, "")} }

func (n node) object() *hujson.Object { o, _ := n.v.Value.(*hujson.Object); return o }
func (n node) array() *hujson.Array   { a, _ := n.v.Value.(*hujson.Array); return a }

// get is key's value in object n.
func (n node) get(key string) (node, bool) {
	o := n.object()
	if o == nil {
		return node{}, false
	}
	for i := range o.Members {
		m := &o.Members[i]
		if m.Name.Value.(hujson.Literal).String() == key {
			return node{&m.Value, lineIndent(m.Name.BeforeExtra, n.indent)}, true
		}
	}
	return node{}, false
}

// elems are the elements of array n.
func (n node) elems() []node {
	a := n.array()
	if a == nil {
		return nil
	}
	out := make([]node, len(a.Elements))
	for i := range a.Elements {
		out[i] = node{&a.Elements[i], lineIndent(a.Elements[i].BeforeExtra, n.indent)}
	}
	return out
}

// read is n as the plain values the checks read.
func (n node) read() any { return readValue(n.v) }

func readValue(v *hujson.Value) any {
	switch t := v.Value.(type) {
	case *hujson.Object:
		o := &object{}
		for i := range t.Members {
			o.members = append(o.members, member{t.Members[i].Name.Value.(hujson.Literal).String(), readValue(&t.Members[i].Value)})
		}
		return o
	case *hujson.Array:
		a := []any{}
		for i := range t.Elements {
			a = append(a, readValue(&t.Elements[i]))
		}
		return a
	case hujson.Literal:
		switch t.Kind() {
		case '"':
			return t.String()
		case '0':
			return json.Number(string(t))
		case 't', 'f':
			return t.Bool()
		}
	}
	return nil
}

// same reports whether n holds v (as JSON, whatever its layout).
func (n node) same(v any) bool {
	var a, b any
	if json.Unmarshal(standard(n.v), &a) != nil {
		return false
	}
	if json.Unmarshal(render(v, style{colon: ":", comma: ","}), &b) != nil {
		return false
	}
	return jsonEqual(a, b)
}

func standard(v *hujson.Value) []byte {
	c := v.Clone()
	c.BeforeExtra, c.AfterExtra = nil, nil
	c.Standardize()
	return c.Pack()
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// style is how a new value is written where it goes: spread over lines
// with indent (the line it starts on) and unit, or on one line.
type style struct {
	multiline    bool
	indent, unit string
	colon, comma string
}

// render writes v (nil, bool, int, string, []any, *object) in style s.
func render(v any, s style) []byte {
	var b bytes.Buffer
	renderTo(&b, v, s, s.indent)
	return b.Bytes()
}

func renderTo(b *bytes.Buffer, v any, s style, indent string) {
	open := func(c byte, n int) bool {
		b.WriteByte(c)
		return n > 0
	}
	switch v := v.(type) {
	case *object:
		if open('{', len(v.members)) {
			for i, m := range v.members {
				if i > 0 {
					b.WriteString(sep(s))
				}
				if s.multiline {
					b.WriteString("\n" + indent + s.unit)
				}
				b.Write(hujson.String(m.key))
				b.WriteString(s.colon)
				renderTo(b, m.value, s, indent+s.unit)
			}
			if s.multiline {
				b.WriteString("\n" + indent)
			}
		}
		b.WriteByte('}')
	case []any:
		if open('[', len(v)) {
			for i, e := range v {
				if i > 0 {
					b.WriteString(sep(s))
				}
				if s.multiline {
					b.WriteString("\n" + indent + s.unit)
				}
				renderTo(b, e, s, indent+s.unit)
			}
			if s.multiline {
				b.WriteString("\n" + indent)
			}
		}
		b.WriteByte(']')
	case string:
		writeString(b, v)
	case json.Number:
		b.WriteString(v.String())
	case int:
		fmt.Fprint(b, v)
	case bool:
		fmt.Fprint(b, v)
	case nil:
		b.WriteString("null")
	default:
		data, _ := json.Marshal(v)
		b.Write(data)
	}
}

func sep(s style) string {
	if s.multiline {
		return ","
	}
	return s.comma
}

// writeString writes s as JSON writes it: <, > and & as they are.
func writeString(b *bytes.Buffer, s string) {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.WriteString(strings.TrimSuffix(sb.String(), "\n"))
}

// newValue is v as a syntax tree in style s.
func newValue(v any, s style) hujson.Value {
	val, err := hujson.Parse(render(v, s))
	if err != nil {
		panic("setup: rendered JSON does not parse: " + err.Error())
	}
	return val
}

// spread reports whether container n spreads over lines: its members
// do, or (empty) its closing bracket is on a line of its own, or it is
// empty in a file that spreads.
func (d *doc) spread(n node) (bool, string) {
	var last *hujson.Extra
	var closing hujson.Extra
	switch t := n.v.Value.(type) {
	case *hujson.Object:
		if len(t.Members) > 0 {
			last = &t.Members[len(t.Members)-1].Name.BeforeExtra
		}
		closing = t.AfterExtra
	case *hujson.Array:
		if len(t.Elements) > 0 {
			last = &t.Elements[len(t.Elements)-1].BeforeExtra
		}
		closing = t.AfterExtra
	}
	if last != nil {
		return bytes.ContainsRune(*last, '\n'), lineIndent(*last, n.indent)
	}
	if bytes.ContainsRune(closing, '\n') || d.pretty && len(closing) == 0 {
		return true, n.indent + d.unit
	}
	return false, n.indent
}

// place returns the extra before a new last member or element of
// container n and the style of its value, and readies an empty
// container that spreads over lines for its first one.
func (d *doc) place(n node) (hujson.Extra, style) {
	multi, in := d.spread(n)
	s := local(n, style{multiline: multi, indent: in, unit: d.unit, colon: d.colon, comma: d.comma})
	var last *hujson.Value
	var closing *hujson.Extra
	switch t := n.v.Value.(type) {
	case *hujson.Object:
		if len(t.Members) > 0 {
			last = &t.Members[len(t.Members)-1].Name
		}
		closing = &t.AfterExtra
	case *hujson.Array:
		if len(t.Elements) > 0 {
			last = &t.Elements[len(t.Elements)-1]
		}
		closing = &t.AfterExtra
	}
	switch {
	case last != nil && multi:
		return hujson.Extra("\n" + in), s
	case last != nil:
		if isBlank(string(last.BeforeExtra)) {
			return append(hujson.Extra(nil), last.BeforeExtra...), s
		}
		return hujson.Extra(strings.TrimPrefix(s.comma, ",")), s
	case multi:
		if !bytes.ContainsRune(*closing, '\n') {
			*closing = hujson.Extra("\n" + n.indent)
		}
		return hujson.Extra("\n" + in), s
	}
	return nil, s
}

// set gives key the value v in object n: a new member goes last, an
// existing one keeps its place (and is left alone when it already holds
// v).
func (d *doc) set(n node, key string, v any) node {
	o := n.object()
	if old, ok := n.get(key); ok {
		d.replace(old, v)
		return old
	}
	before, s := d.place(n)
	nv := newValue(v, s)
	if len(s.colon) > 1 {
		nv.BeforeExtra = hujson.Extra(s.colon[1:])
	}
	name := hujson.Value{BeforeExtra: before, Value: hujson.String(key)}
	o.Members = append(o.Members, hujson.ObjectMember{Name: name, Value: nv})
	m := &o.Members[len(o.Members)-1]
	return node{&m.Value, s.indent}
}

// replace gives n the value v, laid out as n was (n is left alone when
// it already holds v).
func (d *doc) replace(n node, v any) {
	if !n.same(v) {
		n.v.Value = newValue(v, d.styleAt(n)).Value
	}
}

// styleAt is the style of a value that replaces old.
func (d *doc) styleAt(old node) style {
	multi := d.pretty
	switch t := old.v.Value.(type) {
	case *hujson.Object, *hujson.Array:
		multi = bytes.ContainsRune(standard(&hujson.Value{Value: t}), '\n')
	}
	return local(old, style{multiline: multi, indent: old.indent, unit: d.unit, colon: d.colon, comma: d.comma})
}

// add appends v to array n.
func (d *doc) add(n node, v any) {
	a := n.array()
	before, s := d.place(n)
	nv := newValue(v, s)
	nv.BeforeExtra = before
	a.Elements = append(a.Elements, nv)
}

// child is key's object in n, made (last) when missing; an error when
// key holds something else.
func (d *doc) child(n node, key string) (node, error) {
	if c, ok := n.get(key); ok {
		if c.object() == nil {
			return node{}, fmt.Errorf("%q is not an object", key)
		}
		return c, nil
	}
	return d.set(n, key, &object{}), nil
}

// list is key's array in n, made (last) when missing; an error when key
// holds something else.
func (d *doc) list(n node, key string) (node, error) {
	if c, ok := n.get(key); ok {
		if c.array() == nil {
			return node{}, fmt.Errorf("%q is not an array", key)
		}
		return c, nil
	}
	return d.set(n, key, []any{}), nil
}

// del takes key out of object n, keeping any comment written above it.
func (d *doc) del(n node, key string) bool {
	o := n.object()
	if o == nil {
		return false
	}
	for i := range o.Members {
		if o.Members[i].Name.Value.(hujson.Literal).String() != key {
			continue
		}
		removed := o.Members[i]
		if i+1 < len(o.Members) {
			inherit(i, removed.Name.BeforeExtra, &o.Members[i+1].Name.BeforeExtra)
		} else {
			keepComment(removed.Name.BeforeExtra, &o.AfterExtra)
		}
		o.Members = append(o.Members[:i], o.Members[i+1:]...)
		if i == len(o.Members) && i > 0 {
			lastTrailing(&o.Members[i-1].Value, removed.Value.AfterExtra, &o.AfterExtra)
		}
		if len(o.Members) == 0 && isBlank(strings.TrimLeft(string(o.AfterExtra), "\n")) {
			o.AfterExtra = nil
		}
		return true
	}
	return false
}

// drop takes the elements of array n for which gone is true out.
func (d *doc) drop(n node, gone func(node) bool) bool {
	a := n.array()
	if a == nil {
		return false
	}
	dropped := false
	for i := 0; i < len(a.Elements); {
		if !gone(node{&a.Elements[i], lineIndent(a.Elements[i].BeforeExtra, n.indent)}) {
			i++
			continue
		}
		dropped = true
		removed := a.Elements[i]
		if i+1 < len(a.Elements) {
			inherit(i, removed.BeforeExtra, &a.Elements[i+1].BeforeExtra)
		} else {
			keepComment(removed.BeforeExtra, &a.AfterExtra)
		}
		a.Elements = append(a.Elements[:i], a.Elements[i+1:]...)
		if i == len(a.Elements) && i > 0 {
			lastTrailing(&a.Elements[i-1], removed.AfterExtra, &a.AfterExtra)
		}
	}
	if len(a.Elements) == 0 && isBlank(strings.TrimLeft(string(a.AfterExtra), "\n")) {
		a.AfterExtra = nil
	}
	return dropped
}

// inherit readies the value after a removed one (at i): the first of
// its container takes the removed one's extra (on one line, `{"a": 1,
// "b": 2}` loses "a" as `{"b": 2}`), unless a comment of its own is in
// its extra; a comment above the removed one stays.
func inherit(i int, removed hujson.Extra, next *hujson.Extra) {
	if i == 0 && !bytes.Contains(*next, []byte("/")) {
		*next = append(hujson.Extra(nil), removed...)
		return
	}
	keepComment(removed, next)
}

// keepComment moves a comment in the extra before a removed value to
// the extra after it.
func keepComment(before hujson.Extra, next *hujson.Extra) {
	if !bytes.Contains(before, []byte("/")) {
		return
	}
	nl := bytes.LastIndexByte(before, '\n')
	if nl < 0 {
		nl = len(before)
	}
	*next = append(append(hujson.Extra(nil), before[:nl]...), *next...)
}

// lastTrailing: the value now last gets the trailing comma the removed
// one had, or loses one it had not.
func lastTrailing(last *hujson.Value, removedAfter hujson.Extra, closing *hujson.Extra) {
	switch {
	case removedAfter != nil && last.AfterExtra == nil:
		last.AfterExtra = hujson.Extra{}
	case removedAfter == nil && last.AfterExtra != nil:
		*closing = append(last.AfterExtra, *closing...)
		last.AfterExtra = nil
	}
}

// empty reports whether object n has no members.
func (n node) empty() bool {
	switch t := n.v.Value.(type) {
	case *hujson.Object:
		return len(t.Members) == 0
	case *hujson.Array:
		return len(t.Elements) == 0
	}
	return false
}

// object is a JSON object with its members in order: what the checks
// read of a settings file, and the values sluice writes.
type object struct{ members []member }

type member struct {
	key   string
	value any // nil, bool, json.Number, string, []any, *object (int written)
}

func (o *object) get(key string) (any, bool) {
	for _, m := range o.members {
		if m.key == key {
			return m.value, true
		}
	}
	return nil, false
}

// obj is key's object, nil when missing or not an object.
func (o *object) obj(key string) *object {
	v, _ := o.get(key)
	c, _ := v.(*object)
	return c
}

// array is key's array (nil when missing); an error when key holds
// something else.
func (o *object) array(key string) ([]any, error) {
	v, ok := o.get(key)
	if !ok || v == nil {
		return nil, nil
	}
	a, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%q is not an array", key)
	}
	return a, nil
}

func (o *object) str(key string) string {
	v, _ := o.get(key)
	s, _ := v.(string)
	return s
}

// isTrue reports whether key is the JSON true.
func (o *object) isTrue(key string) bool {
	v, _ := o.get(key)
	return v == true
}

func (o *object) num(key string) (float64, bool) {
	v, _ := o.get(key)
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}
