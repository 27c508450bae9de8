package change

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/sluice-dev/sluice/queue"
)

// filePatch is the part of a unified diff that changes one file.
type filePatch struct {
	oldName string // "" for /dev/null; a/ prefix stripped
	newName string // "" for /dev/null; b/ prefix stripped
	mode    os.FileMode
	hunks   []hunk
}

// name is the file the patch changes, as the patch spells it.
func (fp *filePatch) name() string {
	if fp.newName != "" {
		return fp.newName
	}
	return fp.oldName
}

// hunk is one @@ section. Lines keep their "\n" unless marked with
// "\ No newline at end of file".
type hunk struct {
	header             string
	oldStart, oldCount int
	newStart, newCount int
	lines              []hunkLine
}

type hunkLine struct {
	op   byte // ' ', '-' or '+'
	text string
}

func (h *hunk) side(drop byte) []string {
	var out []string
	for _, l := range h.lines {
		if l.op != drop {
			out = append(out, l.text)
		}
	}
	return out
}

// maxHunkNumber bounds line numbers and counts in a hunk header.
const maxHunkNumber = 1 << 30

// planPatch parses req.Diff and applies it, in memory, to the files now on
// disk.
func planPatch(j fileJail, req *queue.Request) ([]FileChange, error) {
	fps, err := parsePatch(req.Diff)
	if err != nil {
		return nil, err
	}
	var out []FileChange
	seen := map[string]bool{}
	for _, fp := range fps {
		name := fp.name()
		p, err := resolveTarget(j, req.Cwd, name)
		if err != nil {
			return nil, err
		}
		if seen[p] {
			return nil, fmt.Errorf("exec: patch: %s is changed twice in the patch", name)
		}
		seen[p] = true
		old, exists, mode, err := readCurrent(p)
		if err != nil {
			return nil, err
		}
		isNew, isDelete := fp.oldName == "", fp.newName == ""
		switch {
		case isNew && exists:
			return nil, fmt.Errorf("exec: patch: %s: the patch creates it but it already exists", name)
		case !isNew && !exists:
			return nil, fmt.Errorf("exec: patch: %s: the file does not exist", name)
		}
		nw, err := fp.apply(old)
		if err != nil {
			return nil, err
		}
		if isDelete && len(nw) != 0 {
			return nil, fmt.Errorf("exec: patch: %s: the patch deletes the file but leaves %d bytes of it unaccounted for", name, len(nw))
		}
		fc := FileChange{Path: p, Old: old, New: nw, Exists: exists, Mode: mode, Delete: isDelete}
		if isDelete {
			fc.New = nil
		}
		if isNew && fp.mode != 0 {
			fc.Mode = fp.mode
		}
		out = append(out, fc)
	}
	return out, nil
}

// apply applies the hunks to old with an exact check of context and removed
// lines. A hunk whose lines are not at the stated line but occur exactly
// once further on is applied there (an offset, never a fuzzy match).
func (fp *filePatch) apply(old []byte) ([]byte, error) {
	lines := splitLines(string(old))
	var out []string
	pos := 0
	for k, h := range fp.hunks {
		want, repl := h.side('+'), h.side('-')
		at := h.oldStart - 1
		if h.oldCount == 0 {
			at = h.oldStart // "-5,0" inserts after line 5
		}
		if at < pos || !linesAt(lines, at, want) {
			at = -1
			if len(want) > 0 {
				at = findUnique(lines, pos, want)
			}
		}
		if at < 0 {
			return nil, fp.mismatch(k, &h, lines, pos, want)
		}
		out = append(out, lines[pos:at]...)
		out = append(out, repl...)
		pos = at + len(want)
	}
	out = append(out, lines[pos:]...)
	for i, l := range out[:max(len(out)-1, 0)] {
		if !strings.HasSuffix(l, "\n") {
			return nil, fmt.Errorf("exec: patch: %s: line %d would lack its newline but is not the last line", fp.name(), i+1)
		}
	}
	return []byte(strings.Join(out, "")), nil
}

func (fp *filePatch) mismatch(k int, h *hunk, lines []string, pos int, want []string) error {
	prefix := fmt.Sprintf("exec: patch: %s: hunk %d (%s) does not apply", fp.name(), k+1, h.header)
	at := h.oldStart - 1
	if h.oldCount == 0 {
		at = h.oldStart
	}
	switch {
	case at < pos:
		return fmt.Errorf("%s: it starts before the end of the previous hunk", prefix)
	case len(want) == 0:
		return fmt.Errorf("%s: the file has %d lines, the hunk inserts after line %d", prefix, len(lines), h.oldStart)
	case findCount(lines, pos, want) > 1:
		return fmt.Errorf("%s: its lines do not match at line %d and occur more than once elsewhere", prefix, h.oldStart)
	}
	for i, w := range want {
		if at+i >= len(lines) {
			return fmt.Errorf("%s: the file has %d lines, the hunk expects %q at line %d", prefix, len(lines), w, at+i+1)
		}
		if lines[at+i] != w {
			return fmt.Errorf("%s: line %d is %q, the hunk expects %q", prefix, at+i+1, lines[at+i], w)
		}
	}
	return errors.New(prefix)
}

func linesAt(lines []string, at int, want []string) bool {
	if at < 0 || at+len(want) > len(lines) {
		return false
	}
	for i, w := range want {
		if lines[at+i] != w {
			return false
		}
	}
	return true
}

func findUnique(lines []string, from int, want []string) int {
	found := -1
	for at := from; at+len(want) <= len(lines); at++ {
		if linesAt(lines, at, want) {
			if found >= 0 {
				return -1
			}
			found = at
		}
	}
	return found
}

func findCount(lines []string, from int, want []string) int {
	n := 0
	for at := from; at+len(want) <= len(lines); at++ {
		if linesAt(lines, at, want) {
			n++
		}
	}
	return n
}

// splitLines splits s into lines that keep their "\n"; the last one lacks
// it if s does not end in a newline.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}
