package policy

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/sluice-dev/sluice/netproxy/netrule"
)

// HostRule is one network_allow or network_deny entry in force.
type HostRule struct {
	Key  string // "network_allow" or "network_deny"
	Host string // as the proxy reads it: host, *.domain, host:port, IP, CIDR
	// Origin is where it comes from: "FILE:LINE" for a policy file,
	// "config.toml" for the configuration, "default" for the embedded
	// default policy.
	Origin string
}

// HostRules is p's network_allow entries, then its network_deny ones, in
// the order they were read.
func (p *Policy) HostRules() []HostRule {
	if p.net == nil {
		return nil
	}
	var out []HostRule
	for _, l := range []struct {
		key string
		gs  []hostGrant
	}{{"network_allow", p.net.allow}, {"network_deny", p.net.deny}} {
		for _, g := range l.gs {
			origin := g.by
			switch {
			case strings.HasPrefix(g.by, "rule: "+l.key+" in the default policy"):
				origin = "default"
			case strings.HasPrefix(g.by, "rule: "+l.key+" in "):
				origin = strings.TrimPrefix(g.by, "rule: "+l.key+" in ")
			case strings.HasPrefix(g.by, "config: "):
				origin = "config.toml"
			}
			out = append(out, HostRule{Key: l.key, Host: g.host, Origin: origin})
		}
	}
	return out
}

// RemoveNetworkAllow takes entry out of a policy file's top-level
// network_allow, as 'A' in the console put it there, and gives the text
// removed. The entry is matched as the proxy reads it ("Example.COM" is
// "example.com"). An array left empty goes whole, with the comment the
// console wrote above it; every other byte of the file is kept. As
// AppendNetworkAllow: the file is replaced atomically, only after the new
// content loads with exactly that entry fewer and everything else as it
// was; on any error it is left untouched.
func RemoveNetworkAllow(file, entry string) (string, error) {
	r, err := netrule.ParseRule(entry)
	if err != nil {
		return "", fmt.Errorf("policy: network_allow %q: %s", entry, strings.TrimPrefix(err.Error(), "netproxy: "))
	}
	entry = r.String()
	old, info, err := readRegular(file)
	if err != nil {
		return "", err
	}
	if info == nil {
		return "", fmt.Errorf("policy: %s does not exist", file)
	}
	before, err := Load(Options{User: file, UserSource: []byte(old)})
	if err != nil {
		return "", err
	}
	had := fileAllows(before, file)
	if !slices.Contains(had, entry) {
		if len(had) == 0 {
			return "", fmt.Errorf("policy: %s has no network_allow entries (config.toml's network_allow is edited by hand)", file)
		}
		return "", fmt.Errorf("policy: %s's network_allow has no %q; it holds %s", file, entry, strings.Join(had, ", "))
	}
	// Every time the file names it: a host listed twice would still be
	// allowed with one of the two gone.
	content, removed := old, ""
	times := 0
	for _, h := range had {
		if h == entry {
			times++
		}
	}
	for range times {
		var r string
		if content, r, err = removeAllow(content, entry); err != nil {
			return "", fmt.Errorf("policy: remove %s from network_allow in %s: %w; edit the file by hand", entry, file, err)
		}
		if removed != "" && !strings.HasSuffix(removed, "\n") {
			removed += "\n"
		}
		removed += r
	}
	want := slices.DeleteFunc(slices.Clone(had), func(h string) bool { return h == entry })
	err = replaceFile(file, info, content, "remove from network_allow in", func(tmp string) error {
		after, err := Load(Options{User: tmp, UserRequired: true})
		if err != nil {
			return &LoadError{File: file, Msg: fmt.Sprintf("without %s the file would not load (%v); nothing was removed", entry, err)}
		}
		if !sameSet(fileAllows(after, tmp), want) || !sameRules(before.rules, after.rules) || before.defaults != after.defaults ||
			!slices.Equal(hostsOf(before.net.deny), hostsOf(after.net.deny)) {
			return &LoadError{File: file, Msg: fmt.Sprintf("removing %s would change more than network_allow; nothing was removed: edit the file by hand", entry)}
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return removed, nil
}

// allowValue is one value of a network_allow array: its text spans
// s[start:end].
type allowValue struct{ start, end int }

// removeAllow is src without entry in its network_allow, and the text
// taken out.
func removeAllow(src, entry string) (string, string, error) {
	spot, err := findAllow(src)
	if err != nil {
		return "", "", err
	}
	if !spot.found {
		return "", "", errors.New("no network_allow array before the first table")
	}
	vals, err := arrayValues(src, spot.open)
	if err != nil {
		return "", "", err
	}
	at := -1
	for i, v := range vals {
		var s struct{ V string }
		if _, err := toml.Decode("V = "+src[v.start:v.end], &s); err != nil {
			continue // not a string: Load would have refused it
		}
		if r, err := netrule.ParseRule(s.V); err == nil && r.String() == entry {
			at = i
			break
		}
	}
	if at < 0 {
		return "", "", fmt.Errorf("%q is not written as one value of the array", entry)
	}
	v := vals[at]
	lineStart := func(i int) int { return strings.LastIndexByte(src[:i], '\n') + 1 }
	lineEnd := func(i int) int { // past the newline
		if n := strings.IndexByte(src[i:], '\n'); n >= 0 {
			return i + n + 1
		}
		return len(src)
	}
	var start, end int
	switch {
	case len(vals) == 1:
		// The statement goes whole, with the comment 'A' wrote above it.
		start, end = spot.lineStart, lineEnd(spot.close)
		if start > 0 {
			prev := lineStart(start - 1)
			if strings.HasPrefix(strings.TrimSpace(src[prev:start]), "# allowed in the console") {
				start = prev
			}
		}
		removed := src[start:end]
		// One blank line that set the statement apart goes too.
		blankBefore := start > 0 && strings.TrimSpace(src[lineStart(start-1):start]) == ""
		blankAfter := end < len(src) && strings.TrimSpace(src[end:lineEnd(end)]) == ""
		switch {
		case blankAfter && (start == 0 || blankBefore):
			end = lineEnd(end)
		case blankBefore && (end == len(src) || blankAfter):
			start = lineStart(start - 1)
		}
		return src[:start] + src[end:], removed, nil
	case ownLine(src, v, lineStart(v.start), lineEnd(v.end)) && lineEnd(v.end) <= spot.close:
		// A value on a line of its own: the line goes, its comma and
		// its comment with it.
		start, end = lineStart(v.start), lineEnd(v.end)
		return src[:start] + src[end:], strings.TrimSpace(src[start:end]), nil
	case at < len(vals)-1:
		// Others share its line: the value and the comma after it.
		start, end = v.start, vals[at+1].start
	default:
		// The last of a line: the comma before it and the value.
		start, end = vals[at-1].end, v.end
	}
	if strings.ContainsAny(src[start:end], "\n#") {
		return "", "", errors.New("the array's layout is unusual")
	}
	return src[:start] + src[end:], src[v.start:v.end], nil
}

// ownLine reports whether value v is alone on its line (ls..le): blanks
// before it, at most a comma and a comment after it.
func ownLine(src string, v allowValue, ls, le int) bool {
	if strings.TrimSpace(src[ls:v.start]) != "" {
		return false
	}
	rest := strings.TrimSpace(src[v.end:le])
	rest = strings.TrimSpace(strings.TrimPrefix(rest, ","))
	return rest == "" || strings.HasPrefix(rest, "#")
}

// arrayValues gives the spans of the values of the array that opens at
// src[open].
func arrayValues(src string, open int) ([]allowValue, error) {
	t := &tomlScan{s: src, i: open + 1}
	var vals []allowValue
	for {
		t.blankInArray()
		if t.i >= len(src) {
			return nil, fmt.Errorf("line %d: an array is not closed", t.line())
		}
		if src[t.i] == ']' {
			return vals, nil
		}
		start := t.i
		if err := t.value(); err != nil {
			return nil, err
		}
		vals = append(vals, allowValue{start, t.i})
		t.blankInArray()
		if t.i < len(src) && src[t.i] == ',' {
			t.i++
		}
	}
}
