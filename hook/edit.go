package hook

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/queue"
)

// fileEdit is one replacement as Claude Code's Edit and MultiEdit tools
// take it.
type fileEdit struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

// claudeEdit returns the content Claude Code writes when it applies edits
// (one for Edit, several for MultiEdit) to a file whose content is content
// (exists false: no such file), or the error Claude Code reports instead.
//
// It follows Claude Code's FileEditTool (validateInput, getPatchForEdits,
// applyEditToFile, findActualString, preserveQuoteStyle):
//   - the file is read with CRLF as LF and written back with CRLF when
//     that is the file's line-ending style;
//   - old_string == new_string is refused; an empty old_string creates a
//     file (refused if the file has content), and only as the first edit;
//   - the edits apply in order, each to the result of the ones before;
//     an old_string found inside an earlier edit's new_string is refused;
//   - old_string must occur, exactly or with curly quotes read as straight
//     ones (new_string then gets the file's curly quotes), and exactly
//     once unless replace_all;
//   - deleting text (new_string "") also deletes the newline right after
//     it, when old_string does not end in one and is followed by one.
//
// Not reproduced: Claude Code's undoing of API-sanitized tags in
// old_string and its stripping of trailing spaces from new_string in some
// versions; whether the file was read first is Claude Code's to check.
func claudeEdit(content string, exists bool, edits []fileEdit) (string, error) {
	if len(edits) == 0 {
		return "", editRefusal("no edits")
	}
	crlf := exists && isCRLF(content)
	content = strings.ReplaceAll(content, "\r\n", "\n")
	for _, e := range edits {
		if e.OldString == e.NewString {
			return "", editRefusal("No changes to make: old_string and new_string are exactly the same.")
		}
	}
	switch first := edits[0]; {
	case !exists && first.OldString != "":
		return "", editRefusal("File does not exist.")
	case exists && first.OldString == "" && strings.TrimSpace(content) != "":
		return "", editRefusal("Cannot create new file - file already exists.")
	}
	updated := content
	var applied []string
	for i, e := range edits {
		if e.OldString == "" {
			if i > 0 {
				return "", refusef("edit %d has an empty old_string; only the first edit may create the file", i+1)
			}
			updated = e.NewString
			applied = append(applied, e.NewString)
			continue
		}
		if check := strings.TrimRight(e.OldString, "\n"); check != "" {
			for _, prev := range applied {
				if strings.Contains(prev, check) {
					return "", editRefusal("Cannot edit file: old_string is a substring of a new_string from a previous edit.")
				}
			}
		}
		actual, ok := findActualString(updated, e.OldString)
		if !ok {
			return "", refusef("String to replace not found in file.\nString: %s", queue.Clip(e.OldString, 200))
		}
		if n := strings.Count(updated, actual); n > 1 && !e.ReplaceAll {
			return "", refusef("Found %d matches of the string to replace, but replace_all is false. "+
				"To replace all occurrences, set replace_all to true. To replace only one occurrence, "+
				"please provide more context to uniquely identify the instance.\nString: %s", n, queue.Clip(e.OldString, 200))
		}
		nw := preserveQuoteStyle(e.OldString, actual, e.NewString)
		prev := updated
		updated = applyEditToFile(updated, actual, nw, e.ReplaceAll)
		if updated == prev {
			return "", editRefusal("String not found in file. Failed to apply edit.")
		}
		applied = append(applied, nw)
	}
	if exists && updated == content {
		return "", editRefusal("Original and edited file match exactly. Failed to apply edit.")
	}
	if crlf {
		updated = strings.ReplaceAll(updated, "\n", "\r\n")
	}
	return updated, nil
}

// editRefusal is the message an agent's edit tool gives when it refuses
// an edit, worded as the tool words it.
type editRefusal string

func (r editRefusal) Error() string { return string(r) }

func refusef(format string, args ...any) error { return editRefusal(fmt.Sprintf(format, args...)) }

// isCRLF reports whether CRLF is the file's line ending: more CRLF than
// bare LF line ends.
func isCRLF(s string) bool {
	crlf := strings.Count(s, "\r\n")
	return crlf > 0 && crlf > strings.Count(s, "\n")-crlf
}

// applyEditToFile replaces the first (or every) old with nw. A deletion
// takes the newline after old with it, as Claude Code's does.
func applyEditToFile(content, old, nw string, all bool) string {
	replace := func(s, search string) string {
		if all {
			return strings.ReplaceAll(s, search, nw)
		}
		return strings.Replace(s, search, nw, 1)
	}
	if nw == "" && !strings.HasSuffix(old, "\n") && strings.Contains(content, old+"\n") {
		return replace(content, old+"\n")
	}
	return replace(content, old)
}

// The curly quotes Claude Code reads as straight ones.
const (
	leftSingleCurly  = '\u2018'
	rightSingleCurly = '\u2019'
	leftDoubleCurly  = '\u201c'
	rightDoubleCurly = '\u201d'
)

func normalizeQuotes(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case leftSingleCurly, rightSingleCurly:
			return '\''
		case leftDoubleCurly, rightDoubleCurly:
			return '"'
		}
		return r
	}, s)
}

// findActualString returns the text in content that search matches:
// search itself, or the same characters with the file's curly quotes.
func findActualString(content, search string) (string, bool) {
	if strings.Contains(content, search) {
		return search, true
	}
	nc := normalizeQuotes(content)
	i := strings.Index(nc, normalizeQuotes(search))
	if i < 0 {
		return "", false
	}
	// Quotes map rune for rune, so rune offsets carry over to content.
	start := utf8.RuneCountInString(nc[:i])
	runes := []rune(content)
	return string(runes[start : start+utf8.RuneCountInString(search)]), true
}

// preserveQuoteStyle gives nw the file's curly quotes when old matched
// through them.
func preserveQuoteStyle(old, actual, nw string) string {
	if old == actual {
		return nw
	}
	if strings.ContainsRune(actual, leftDoubleCurly) || strings.ContainsRune(actual, rightDoubleCurly) {
		nw = curlyQuotes(nw, '"', leftDoubleCurly, rightDoubleCurly)
	}
	if strings.ContainsRune(actual, leftSingleCurly) || strings.ContainsRune(actual, rightSingleCurly) {
		nw = curlyQuotes(nw, '\'', leftSingleCurly, rightSingleCurly)
	}
	return nw
}

// curlyQuotes turns each straight quote q into left or right: left where
// a quote opens (start, after space or an opening bracket or dash). An
// apostrophe between two letters stays a right quote.
func curlyQuotes(s string, q, left, right rune) string {
	chars := []rune(s)
	out := make([]rune, len(chars))
	for i, c := range chars {
		out[i] = c
		if c != q {
			continue
		}
		if q == '\'' && i > 0 && i < len(chars)-1 && unicode.IsLetter(chars[i-1]) && unicode.IsLetter(chars[i+1]) {
			out[i] = right
			continue
		}
		out[i] = right
		if i == 0 || strings.ContainsRune(" \t\n\r([{\u2014\u2013", chars[i-1]) {
			out[i] = left
		}
	}
	return string(out)
}
