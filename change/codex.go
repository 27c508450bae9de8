package change

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"

	"github.com/sluice-dev/sluice/queue"
)

// Codex's apply_patch format (openai/codex codex-rs/apply-patch, and the
// tool's instructions to the model):
//
//	*** Begin Patch
//	*** Add File: path          then every line "+text"
//	*** Delete File: path
//	*** Update File: path
//	*** Move to: newpath        (optional, after Update)
//	@@ context line              (optional; "@@" alone)
//	 context / -removed / +added lines
//	*** End of File              (optional: the chunk ends the file)
//	*** End Patch
//
// Paths are relative to the call's cwd. An update applies its chunks in
// order: each @@ line is found from where the last chunk ended, then the
// chunk's old lines (context and removed) from there, matched exactly,
// else ignoring trailing white space, else ignoring white space at both
// ends, as Codex's seek_sequence does; a chunk with no old lines appends.

// codexPatchOp is one file operation of a patch.
type codexPatchOp struct {
	op     string // Add, Delete, Update
	path   string
	moveTo string
	add    []string // Add: the file's lines
	chunks []codexChunk
}

// codexChunk is one @@ section of an update.
type codexChunk struct {
	context  string // the @@ line's text, "" for none
	old, new []string
	eof      bool
}

// parseCodexPatch parses the patch text.
func parseCodexPatch(text string) ([]codexPatchOp, error) {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(text, "\r\n", "\n")), "\n")
	if len(lines) < 2 || strings.TrimSpace(lines[0]) != "*** Begin Patch" || strings.TrimSpace(lines[len(lines)-1]) != "*** End Patch" {
		return nil, errors.New("not a patch between *** Begin Patch and *** End Patch")
	}
	lines = lines[1 : len(lines)-1]
	var ops []codexPatchOp
	for i := 0; i < len(lines); {
		l := lines[i]
		var op codexPatchOp
		switch {
		case strings.HasPrefix(l, "*** Add File: "):
			op = codexPatchOp{op: "Add", path: strings.TrimSpace(strings.TrimPrefix(l, "*** Add File: "))}
			for i++; i < len(lines) && strings.HasPrefix(lines[i], "+"); i++ {
				op.add = append(op.add, lines[i][1:])
			}
		case strings.HasPrefix(l, "*** Delete File: "):
			op = codexPatchOp{op: "Delete", path: strings.TrimSpace(strings.TrimPrefix(l, "*** Delete File: "))}
			i++
		case strings.HasPrefix(l, "*** Update File: "):
			op = codexPatchOp{op: "Update", path: strings.TrimSpace(strings.TrimPrefix(l, "*** Update File: "))}
			i++
			if i < len(lines) && strings.HasPrefix(lines[i], "*** Move to: ") {
				op.moveTo = strings.TrimSpace(strings.TrimPrefix(lines[i], "*** Move to: "))
				i++
			}
			var err error
			if op.chunks, i, err = parseCodexChunks(lines, i); err != nil {
				return nil, fmt.Errorf("%s: %w", op.path, err)
			}
			if len(op.chunks) == 0 {
				return nil, fmt.Errorf("%s: an update with no changes", op.path)
			}
		case strings.TrimSpace(l) == "":
			i++
			continue
		default:
			return nil, fmt.Errorf("line %d: %q is not a file operation", i+2, queue.Clip(l, 80))
		}
		if op.path == "" {
			return nil, fmt.Errorf("line %d: no path", i+1)
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return nil, errors.New("the patch changes no file")
	}
	return ops, nil
}

// parseCodexChunks reads an update's chunks from lines[i:], up to the
// next file operation.
func parseCodexChunks(lines []string, i int) ([]codexChunk, int, error) {
	var chunks []codexChunk
	var cur *codexChunk
	for ; i < len(lines); i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "*** ") && l != "*** End of File":
			return chunks, i, nil
		case l == "*** End of File":
			if cur == nil {
				return nil, i, errors.New("*** End of File outside a chunk")
			}
			cur.eof = true
		case strings.HasPrefix(l, "@@"):
			chunks = append(chunks, codexChunk{context: strings.TrimSpace(strings.TrimPrefix(l, "@@"))})
			cur = &chunks[len(chunks)-1]
		default:
			if cur == nil { // the first chunk may leave out its @@
				chunks = append(chunks, codexChunk{})
				cur = &chunks[len(chunks)-1]
			}
			switch {
			case l == "":
				cur.old, cur.new = append(cur.old, ""), append(cur.new, "")
			case l[0] == ' ':
				cur.old, cur.new = append(cur.old, l[1:]), append(cur.new, l[1:])
			case l[0] == '-':
				cur.old = append(cur.old, l[1:])
			case l[0] == '+':
				cur.new = append(cur.new, l[1:])
			default:
				return nil, i, fmt.Errorf("%q is not a context, removed or added line", queue.Clip(l, 80))
			}
		}
	}
	return chunks, i, nil
}

// seekLines finds pattern in lines at or after start (from the end when
// eof), exactly, else ignoring trailing white space, else white space at
// both ends; -1 when it is not there.
func seekLines(lines, pattern []string, start int, eof bool) int {
	if len(pattern) == 0 {
		return start
	}
	if len(pattern) > len(lines) {
		return -1
	}
	from := start
	if eof {
		from = max(start, len(lines)-len(pattern))
	}
	for _, norm := range []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRight(s, " \t") },
		strings.TrimSpace,
	} {
		for i := from; i+len(pattern) <= len(lines); i++ {
			match := true
			for k, p := range pattern {
				if norm(lines[i+k]) != norm(p) {
					match = false
					break
				}
			}
			if match {
				return i
			}
		}
	}
	return -1
}

// applyCodexChunks is the new content of a file with content old.
func applyCodexChunks(old string, chunks []codexChunk) (string, error) {
	lines := strings.Split(old, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	type repl struct {
		at, n int
		with  []string
	}
	var repls []repl
	at := 0
	for _, c := range chunks {
		if c.context != "" {
			i := seekLines(lines, []string{c.context}, at, false)
			if i < 0 {
				return "", fmt.Errorf("the context line %q is not in the file", queue.Clip(c.context, 80))
			}
			at = i + 1
		}
		if len(c.old) == 0 {
			repls = append(repls, repl{len(lines), 0, c.new})
			continue
		}
		oldL, newL := c.old, c.new
		i := seekLines(lines, oldL, at, c.eof)
		if i < 0 && oldL[len(oldL)-1] == "" {
			oldL = oldL[:len(oldL)-1]
			if len(newL) > 0 && newL[len(newL)-1] == "" {
				newL = newL[:len(newL)-1]
			}
			i = seekLines(lines, oldL, at, c.eof)
		}
		if i < 0 {
			return "", fmt.Errorf("the lines to change are not in the file: %q", queue.Clip(strings.Join(c.old, "\n"), 120))
		}
		repls = append(repls, repl{i, len(oldL), newL})
		at = i + len(oldL)
	}
	for k := len(repls) - 1; k >= 0; k-- {
		r := repls[k]
		lines = append(lines[:r.at], append(append([]string(nil), r.with...), lines[r.at+r.n:]...)...)
	}
	if len(lines) == 0 {
		return "", nil
	}
	return strings.Join(lines, "\n") + "\n", nil
}

// PreviewCodexPatch is the diff (git-style, for the preview) that
// Codex's apply_patch text makes to the files under cwd as they are now,
// read as the agent reads them (ReadPreview), so that a person sees a
// diff preview of the call. It returns why not when the patch cannot be
// previewed: text that is not a patch, a move, a file not as the patch
// expects, a path outside cwd (by its name: Codex resolves it against
// cwd), or a patch that changes nothing.
func PreviewCodexPatch(cwd, patch string) (string, error) {
	ops, err := parseCodexPatch(patch)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, op := range ops {
		if op.moveTo != "" {
			return "", fmt.Errorf("%s is moved to %s", op.path, op.moveTo)
		}
		abs := op.path
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(cwd, abs)
		}
		abs = filepath.Clean(abs)
		rel, err := filepath.Rel(cwd, abs)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", fmt.Errorf("%s is outside %s", op.path, cwd)
		}
		old, exists, err := ReadPreview(abs)
		if err != nil {
			return "", err
		}
		var nw string
		switch op.op {
		case "Add":
			if exists {
				return "", fmt.Errorf("%s exists already", op.path)
			}
			if len(op.add) > 0 {
				nw = strings.Join(op.add, "\n") + "\n"
			}
		case "Delete":
			if !exists {
				return "", fmt.Errorf("%s does not exist", op.path)
			}
		case "Update":
			if !exists {
				return "", fmt.Errorf("%s does not exist", op.path)
			}
			if nw, err = applyCodexChunks(old, op.chunks); err != nil {
				return "", fmt.Errorf("%s: %w", op.path, err)
			}
		}
		from, to := "a/"+rel, "b/"+rel
		switch op.op {
		case "Add":
			from = "/dev/null"
		case "Delete":
			to = "/dev/null"
		}
		if op.op != "Update" || nw != old {
			fmt.Fprintf(&b, "diff --git a/%s b/%s\n", rel, rel)
			switch op.op {
			case "Add":
				b.WriteString("new file mode 100644\n")
			case "Delete":
				b.WriteString("deleted file mode 100644\n")
			}
			b.WriteString(udiff.Unified(from, to, old, nw))
		}
	}
	if b.Len() == 0 {
		return "", errors.New("the patch changes nothing")
	}
	return b.String(), nil
}
