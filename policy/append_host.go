package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-dev/sluice/netproxy/netrule"
)

// AppendNetworkAllow adds entry (a host rule as network_allow takes it:
// a host, *.domain, host:port, an IP address or a CIDR range) to a policy
// file's network_allow: into its top-level network_allow array when it
// has one, else as a new network_allow line, with comment as a comment
// line above it, before the file's first table (TOML puts top-level keys
// there). It reports whether the file changed: an entry the file's
// network_allow already holds is not added again.
//
// As AppendRule: the file's own bytes are kept, a missing file is created
// (0600), and the file is replaced atomically only after the new content
// has loaded as Load would load it with exactly the one entry more in
// its network_allow and everything else as it was; on any error it is
// left untouched.
func AppendNetworkAllow(file, entry, comment string) (bool, error) {
	r, err := netrule.ParseRule(entry)
	if err != nil {
		return false, fmt.Errorf("policy: network_allow %q: %s", entry, strings.TrimPrefix(err.Error(), "netproxy: "))
	}
	entry = r.String()
	old, info, err := readRegular(file)
	if err != nil {
		return false, err
	}
	before, err := Load(Options{User: file, UserSource: []byte(old)})
	if err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			le.Msg += " (the host was not added)"
		}
		return false, err
	}
	had := fileAllows(before, file)
	if slices.Contains(had, entry) {
		return false, nil
	}
	content, err := insertAllow(old, entry, comment)
	if err != nil {
		return false, fmt.Errorf("policy: add %s to network_allow in %s: %w; add it by hand", entry, file, err)
	}
	err = replaceFile(file, info, content, "add to network_allow in", func(tmp string) error {
		after, err := Load(Options{User: tmp, UserRequired: true})
		if err != nil {
			return &LoadError{File: file, Msg: fmt.Sprintf("with %s added the file would not load (%v); the host was not added", entry, err)}
		}
		if got, want := fileAllows(after, tmp), append(slices.Clone(had), entry); !sameSet(got, want) ||
			!sameRules(before.rules, after.rules) || before.defaults != after.defaults ||
			!slices.Equal(hostsOf(before.net.deny), hostsOf(after.net.deny)) {
			return &LoadError{File: file, Msg: fmt.Sprintf("adding %s would change more than network_allow; the host was not added: add it by hand", entry)}
		}
		return nil
	})
	return err == nil, err
}

// NetworkAllowText is what AppendNetworkAllow would make of the file's
// network_allow with entry added, for a person to read first: the
// network_allow statement as it will read (with the comment line above a
// new one), or a sentence saying the entry is there already.
func NetworkAllowText(file, entry, comment string) (string, error) {
	r, err := netrule.ParseRule(entry)
	if err != nil {
		return "", fmt.Errorf("network_allow %q: %s", entry, strings.TrimPrefix(err.Error(), "netproxy: "))
	}
	entry = r.String()
	old, _, err := readRegular(file)
	if err != nil {
		return "", err
	}
	spot, err := findAllow(old)
	if err != nil {
		return "", err
	}
	existed := spot.found
	if spot.found {
		for _, e := range allowEntries(old[spot.open : spot.close+1]) {
			if e == entry {
				return fmt.Sprintf("network_allow already holds %q", entry), nil
			}
		}
	}
	content, err := insertAllow(old, entry, comment)
	if err != nil {
		return "", err
	}
	spot, err = findAllow(content)
	if err != nil || !spot.found {
		return "", errors.New("the new network_allow would not read back")
	}
	start := spot.lineStart
	if !existed && comment != "" && start > 0 {
		// The comment line written above a new statement.
		start = strings.LastIndexByte(content[:start-1], '\n') + 1
	}
	end := spot.close + 1
	return strings.TrimRight(content[start:end], "\r\n"), nil
}

// allowEntries reads the plain strings of a network_allow array's text
// (for NetworkAllowText; the load that follows a write is the check).
func allowEntries(arr string) []string {
	var out []string
	for _, part := range strings.Split(strings.Trim(arr, "[]"), ",") {
		part = strings.TrimSpace(part)
		if len(part) >= 2 && (part[0] == '"' || part[0] == '\'') && part[len(part)-1] == part[0] {
			out = append(out, part[1:len(part)-1])
		}
	}
	return out
}

// fileAllows is p's network_allow entries that file gave it, in order.
func fileAllows(p *Policy, file string) []string {
	var out []string
	for _, g := range p.net.allow {
		if strings.HasPrefix(g.by, "rule: network_allow in "+file+":") {
			out = append(out, g.host)
		}
	}
	return out
}

func hostsOf(gs []hostGrant) []string {
	out := make([]string, len(gs))
	for i, g := range gs {
		out[i] = g.host
	}
	return out
}

// sameRules reports whether a and b hold the same rules (origins' line
// numbers aside).
func sameRules(a, b []*Rule) bool {
	want := map[string]int{}
	for _, r := range a {
		want[ruleKey(r)]++
	}
	for _, r := range b {
		want[ruleKey(r)]--
	}
	for _, n := range want {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}

// sameSet reports whether a and b hold the same strings, as many times.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// allowSpot is where a network_allow entry goes in a policy file.
type allowSpot struct {
	found bool // the file has a top-level network_allow array
	// open and close are its brackets' offsets, last the offset of the
	// last byte of its last value or comma (open when it is empty),
	// lineStart the offset of the line its key is on.
	open, close, last, lineStart int
	// at is where a new network_allow statement goes: the start of the
	// first table's line (before comment lines right above it), or the
	// end of the file.
	at int
}

// findAllow reads src's top level, before its first table, for a
// network_allow key. It follows TOML's strings, arrays, inline tables
// and comments; what it cannot read is an error.
func findAllow(src string) (allowSpot, error) {
	sc := &tomlScan{s: src}
	spot := allowSpot{at: len(src)}
	for {
		sc.skipBlank(true)
		if sc.i >= len(src) {
			return spot, nil
		}
		lineStart := strings.LastIndexByte(src[:sc.i], '\n') + 1
		switch src[sc.i] {
		case '#':
			sc.skipComment()
			continue
		case '[':
			spot.at = commentsAbove(src, lineStart)
			return spot, nil
		}
		key, err := sc.key()
		if err != nil {
			return spot, err
		}
		sc.skipBlank(false)
		if sc.i >= len(src) || src[sc.i] != '=' {
			return spot, fmt.Errorf("line %d: a key without '='", sc.line())
		}
		sc.i++
		sc.skipBlank(false)
		if key == "network_allow" {
			if sc.i >= len(src) || src[sc.i] != '[' {
				return spot, fmt.Errorf("line %d: network_allow is not an array", sc.line())
			}
			spot.found, spot.open, spot.lineStart = true, sc.i, lineStart
		}
		open := sc.i
		if err := sc.value(); err != nil {
			return spot, err
		}
		if key == "network_allow" && spot.open == open {
			spot.close, spot.last = sc.i-1, sc.lastInArray
		}
		sc.skipBlank(false)
		if sc.i < len(src) && src[sc.i] == '#' {
			sc.skipComment()
		}
		if sc.i < len(src) && src[sc.i] != '\n' && src[sc.i] != '\r' {
			return spot, fmt.Errorf("line %d: text after a value", sc.line())
		}
	}
}

// commentsAbove moves a line start up over the comment lines right above
// it (a table's own comment stays with it).
func commentsAbove(src string, at int) int {
	for at > 0 {
		prev := strings.LastIndexByte(src[:at-1], '\n') + 1
		if !strings.HasPrefix(strings.TrimSpace(src[prev:at]), "#") {
			break
		}
		at = prev
	}
	return at
}

// insertAllow is src with entry added to its network_allow.
func insertAllow(src, entry, comment string) (string, error) {
	spot, err := findAllow(src)
	if err != nil {
		return "", err
	}
	nl := "\n"
	if strings.Contains(src, "\r\n") {
		nl = "\r\n"
	}
	quoted := tomlString(entry)
	if spot.found {
		at := spot.last + 1
		multi := strings.Contains(src[spot.last:spot.close], "\n")
		var add string
		switch {
		case spot.last == spot.open:
			add = quoted
		case multi:
			ls := strings.LastIndexByte(src[:spot.last], '\n') + 1
			indent := src[ls : ls+len(src[ls:])-len(strings.TrimLeft(src[ls:], " \t"))]
			if src[spot.last] != ',' {
				add = ","
			}
			add += nl + indent + quoted
			if src[spot.last] == ',' {
				add += ","
			}
		case src[spot.last] == ',':
			add = " " + quoted
		default:
			add = ", " + quoted
		}
		return src[:at] + add + src[at:], nil
	}
	block := ""
	if comment != "" {
		block = "# " + commentText(comment) + nl
	}
	block += "network_allow = [" + quoted + "]" + nl
	before, after := src[:spot.at], src[spot.at:]
	if before != "" && !strings.HasSuffix(before, "\n") {
		block = nl + nl + block // end the last line, then a blank one
	} else if before != "" && !strings.HasSuffix(before, "\n\n") && !strings.HasSuffix(before, "\n\r\n") {
		block = nl + block
	}
	if after != "" {
		block += nl
	}
	return before + block + after, nil
}

// tomlScan walks TOML text as far as findAllow needs.
type tomlScan struct {
	s           string
	i           int
	lastInArray int // the last byte of the last value or comma of the array just read
}

func (t *tomlScan) line() int { return strings.Count(t.s[:min(t.i, len(t.s))], "\n") + 1 }

// skipBlank skips spaces and tabs, and newlines too with lines.
func (t *tomlScan) skipBlank(lines bool) {
	for t.i < len(t.s) {
		switch t.s[t.i] {
		case ' ', '\t':
		case '\n', '\r':
			if !lines {
				return
			}
		default:
			return
		}
		t.i++
	}
}

func (t *tomlScan) skipComment() {
	for t.i < len(t.s) && t.s[t.i] != '\n' {
		t.i++
	}
}

// key reads a (possibly dotted, possibly quoted) key and gives it as
// written without quotes.
func (t *tomlScan) key() (string, error) {
	var b strings.Builder
	for t.i < len(t.s) {
		c := t.s[t.i]
		switch {
		case c == '=' || c == '\n':
			return strings.TrimSpace(b.String()), nil
		case c == '"' || c == '\'':
			start := t.i
			if err := t.str(); err != nil {
				return "", err
			}
			b.WriteString(t.s[start+1 : t.i-1])
			continue
		}
		b.WriteByte(c)
		t.i++
	}
	return "", fmt.Errorf("line %d: a key without a value", t.line())
}

// value reads one value: a string, an array, an inline table or a bare
// scalar.
func (t *tomlScan) value() error {
	if t.i >= len(t.s) {
		return fmt.Errorf("line %d: no value", t.line())
	}
	switch t.s[t.i] {
	case '"', '\'':
		return t.str()
	case '[':
		return t.array()
	case '{':
		return t.table()
	}
	start := t.i
	for t.i < len(t.s) && !strings.ContainsRune(" \t\r\n,]}#", rune(t.s[t.i])) {
		t.i++
	}
	if t.i == start {
		return fmt.Errorf("line %d: no value", t.line())
	}
	return nil
}

// array reads an array; lastInArray is left at its last value or comma.
func (t *tomlScan) array() error {
	last := t.i
	t.i++
	for {
		t.blankInArray()
		if t.i >= len(t.s) {
			return fmt.Errorf("line %d: an array is not closed", t.line())
		}
		if t.s[t.i] == ']' {
			t.i++
			t.lastInArray = last
			return nil
		}
		if err := t.value(); err != nil {
			return err
		}
		last = t.i - 1
		t.blankInArray()
		if t.i < len(t.s) && t.s[t.i] == ',' {
			last = t.i
			t.i++
		}
	}
}

// blankInArray skips blanks, newlines and comments inside an array.
func (t *tomlScan) blankInArray() {
	for {
		t.skipBlank(true)
		if t.i < len(t.s) && t.s[t.i] == '#' {
			t.skipComment()
			continue
		}
		return
	}
}

// table reads an inline table.
func (t *tomlScan) table() error {
	t.i++
	for {
		t.skipBlank(false)
		if t.i >= len(t.s) || t.s[t.i] == '\n' {
			return fmt.Errorf("line %d: an inline table is not closed", t.line())
		}
		switch t.s[t.i] {
		case '}':
			t.i++
			return nil
		case ',':
			t.i++
			continue
		}
		if _, err := t.key(); err != nil {
			return err
		}
		if t.i >= len(t.s) || t.s[t.i] != '=' {
			return fmt.Errorf("line %d: a key without '='", t.line())
		}
		t.i++
		t.skipBlank(false)
		if err := t.value(); err != nil {
			return err
		}
	}
}

// str reads a basic or literal string, single- or multi-line.
func (t *tomlScan) str() error {
	q := t.s[t.i]
	multi := strings.HasPrefix(t.s[t.i:], strings.Repeat(string(q), 3))
	if multi {
		t.i += 3
	} else {
		t.i++
	}
	for t.i < len(t.s) {
		c := t.s[t.i]
		switch {
		case c == '\\' && q == '"':
			t.i += 2
			continue
		case c == '\n' && !multi:
			return fmt.Errorf("line %d: a string is not closed", t.line())
		case c == q && !multi:
			t.i++
			return nil
		case c == q && strings.HasPrefix(t.s[t.i:], strings.Repeat(string(q), 3)):
			t.i += 3
			// Up to two more quotes belong to the string.
			for n := 0; n < 2 && t.i < len(t.s) && t.s[t.i] == q; n++ {
				t.i++
			}
			return nil
		}
		t.i++
	}
	return fmt.Errorf("line %d: a string is not closed", t.line())
}
