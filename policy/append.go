package policy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NewRule is a command rule for AppendRule to add to a policy file.
type NewRule struct {
	Action  string // "allow", "ask" or "deny"
	Command string // a command pattern, as in a [[rule]] table: "go test *"
	Reason  string // optional; shown in verdicts
	Comment string // optional; one comment line above the rule, controls shown as Go escapes
	Project string // optional; the rule applies in this directory and below
	// Match are example lines the rule must match (the approved command):
	// checked when the file loads.
	Match []string
}

// Text is the rule as AppendRule writes it, for a person to read first.
func (r NewRule) Text() (string, error) { return r.block() }

// AppendRule adds r at the end of a policy file as a [[rule]] table, with
// its Comment as a comment line above it. The file's own bytes, comments
// and formatting included, are kept as they are. A missing file is
// created (0600, its directory 0700); an existing one keeps its mode.
//
// The file is replaced atomically (a temporary file in the same
// directory, synced, then renamed), and only after the whole new file has
// loaded as Load would load it, with r as its last rule. On any error the
// file is left untouched: a *LoadError if the file would not load (the
// existing content may be what is wrong), an error if it is a symbolic
// link or not a regular file, or if it changed while the rule was added.
func AppendRule(file string, r NewRule) error {
	block, err := r.block()
	if err != nil {
		return fmt.Errorf("policy: read %s: %w", file, err)
	}
	old, info, err := readRegular(file)
	if err != nil {
		return err
	}
	return replaceFile(file, info, appendBlock(old, block), "append a rule to", func(tmp string) error {
		return checkAppended(tmp, file, strings.Count(old, "\n")+1, r)
	})
}

// checkHook, set by a test, runs where a person's own edit of the file
// could land: after it was read and the new one checked, before the
// rename.
var checkHook func()

// replaceFile puts content in file's place atomically, as AppendRule and
// AppendNetworkAllow do: it writes a temporary file beside it (with
// file's mode, or 0600 and its directory made where file did not exist:
// info is nil), which check vets, and renames it over file only if file
// is still as it was read (info). Its own errors say "policy: <what>
// <file>: ...".
func replaceFile(file string, info fs.FileInfo, content, what string, check func(tmp string) error) error {
	dir := filepath.Dir(file)
	mode := fs.FileMode(0o600)
	if info != nil {
		mode = info.Mode().Perm()
	} else if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("policy: %s %s: %w", what, file, err)
	}
	tmp, err := writeTemp(dir, filepath.Base(file), content, mode)
	if err != nil {
		return fmt.Errorf("policy: %s %s: %w", what, file, err)
	}
	defer os.Remove(tmp) // fails harmlessly once renamed
	if err := check(tmp); err != nil {
		return err
	}
	if checkHook != nil {
		checkHook()
	}
	if err := unchanged(file, info); err != nil {
		return err
	}
	if err := os.Rename(tmp, file); err != nil {
		return fmt.Errorf("policy: %s %s: %w", what, file, err)
	}
	// The rename is done; syncing the directory only makes it durable
	// sooner, so its failure is not the caller's concern.
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// block renders the rule as the lines to append.
func (r NewRule) block() (string, error) {
	if _, err := ParseAction(r.Action); err != nil {
		return "", err
	}
	if r.Command == "" {
		return "", errors.New("the rule has no command")
	}
	if !utf8.ValidString(r.Command) || !utf8.ValidString(r.Reason) {
		return "", errors.New("the rule's command or reason is not valid UTF-8, which a TOML file cannot hold")
	}
	var b strings.Builder
	if r.Comment != "" {
		b.WriteString("# " + commentText(r.Comment) + "\n")
	}
	b.WriteString("[[rule]]\n")
	b.WriteString("action = " + tomlString(r.Action) + "\n")
	b.WriteString("command = " + tomlString(r.Command) + "\n")
	if r.Reason != "" {
		b.WriteString("reason = " + tomlString(r.Reason) + "\n")
	}
	if r.Project != "" {
		b.WriteString("project = " + tomlString(r.Project) + "\n")
	}
	if len(r.Match) > 0 {
		b.WriteString("match = [")
		for i, m := range r.Match {
			if !utf8.ValidString(m) {
				return "", errors.New("an example is not valid UTF-8, which a TOML file cannot hold")
			}
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(tomlString(m))
		}
		b.WriteString("]\n")
	}
	return b.String(), nil
}

// appendBlock joins a file's content and a block, a blank line between,
// in the file's line endings.
func appendBlock(old, block string) string {
	nl := "\n"
	if strings.Contains(old, "\r\n") {
		nl = "\r\n"
		block = strings.ReplaceAll(block, "\n", nl)
	}
	switch {
	case old == "":
		return block
	case !strings.HasSuffix(old, "\n"):
		return old + nl + nl + block
	}
	return old + nl + block
}

// readRegular reads a policy file that must be a regular file, not a
// symbolic link. A missing file reads as "" with a nil FileInfo.
func readRegular(file string) (string, fs.FileInfo, error) {
	info, err := os.Lstat(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil, nil
	case err != nil:
		return "", nil, fmt.Errorf("policy: read %s: %w", file, err)
	case info.Mode()&fs.ModeSymlink != 0:
		target, _ := os.Readlink(file)
		return "", nil, fmt.Errorf("policy: %s is a symbolic link to %s: sluice will not replace a link with a file; change the file it points to yourself", file, target)
	case info.IsDir():
		return "", nil, fmt.Errorf("policy: %s is a directory, not a policy file", file)
	case !info.Mode().IsRegular():
		return "", nil, fmt.Errorf("policy: %s is not a regular file (mode %v)", file, info.Mode())
	}
	f, err := os.Open(file)
	if err != nil {
		return "", nil, fmt.Errorf("policy: read %s: %w", file, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, fmt.Errorf("policy: read %s: %w", file, err)
	}
	if !os.SameFile(info, fi) {
		return "", nil, fmt.Errorf("policy: %s changed while it was read; try again", file)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return "", nil, fmt.Errorf("policy: read %s: %w", file, err)
	}
	return string(b), fi, nil
}

// writeTemp writes content to a new file in dir and syncs it.
func writeTemp(dir, base, content string, mode fs.FileMode) (string, error) {
	f, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(content)
	if err == nil {
		err = f.Chmod(mode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// checkAppended loads tmp as Load would load file and checks its last
// rule is r: a file whose end swallows the block (an unclosed string, say)
// must not pass for one that holds the rule. Errors name file, and a line
// of it only when it is one of its lines (the first oldLines).
func checkAppended(tmp, file string, oldLines int, r NewRule) error {
	p, err := Load(Options{User: tmp, UserRequired: true})
	if err != nil {
		var le *LoadError
		if errors.As(err, &le) && le.File == tmp {
			if le.Line > oldLines {
				return &LoadError{File: file, Msg: "the new rule: " + le.Msg + " (it was not added)"}
			}
			return &LoadError{File: file, Line: le.Line, Msg: le.Msg + " (the rule was not added)"}
		}
		return fmt.Errorf("policy: read %s: %w", file, err)
	}
	var last *Rule
	for _, rule := range p.Rules() {
		if strings.HasPrefix(rule.Origin, tmp+":") {
			last = rule
		}
	}
	if last == nil || last.Action.String() != r.Action || last.Command != r.Command || last.Reason != r.Reason || last.Path != "" {
		return &LoadError{File: file, Msg: "the end of the file would not read as the new rule (the rule was not added)"}
	}
	return nil
}

// unchanged checks file is still what readRegular read (or still
// missing), so a concurrent edit is not lost.
func unchanged(file string, before fs.FileInfo) error {
	now, err := os.Lstat(file)
	switch {
	case before == nil && errors.Is(err, fs.ErrNotExist):
		return nil
	case before != nil && err == nil && os.SameFile(before, now) && before.Size() == now.Size() && before.ModTime().Equal(now.ModTime()):
		return nil
	}
	return fmt.Errorf("policy: %s changed while sluice was changing it; nothing was written: try again", file)
}

// tomlString quotes s as a TOML basic string. Quotes, backslashes and
// every character that is not graphic (controls, bidi and other format
// characters, line separators) are escaped, so the value can neither end
// early nor read differently from what it holds.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		if r == '"' || r == '\\' {
			b.WriteByte('\\')
		}
		writeEscaped(&b, r, false)
	}
	b.WriteByte('"')
	return b.String()
}

// commentText makes s safe as the text of one comment line: newlines,
// other controls, format characters and invalid bytes are written as Go
// escapes (\n, \x1b, \u202e, \xff), so nothing in s can end the comment
// or hide in it.
func commentText(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 {
			fmt.Fprintf(&b, `\x%02x`, s[i])
		} else {
			writeEscaped(&b, r, true)
		}
		i += n
	}
	return b.String()
}

// writeEscaped writes r to b as itself when it is graphic, and otherwise
// as an escape: \n, \t and \r by name, the rest by number. goSyntax
// spells numbers as Go does (\x1b, \u202e: lower case, \x for ASCII);
// without it as TOML does (\u001B, \u202E).
func writeEscaped(b *strings.Builder, r rune, goSyntax bool) {
	switch {
	case r == '\n':
		b.WriteString(`\n`)
	case r == '\t':
		b.WriteString(`\t`)
	case r == '\r':
		b.WriteString(`\r`)
	case unicode.IsGraphic(r):
		b.WriteRune(r)
	case goSyntax && r < 0x80:
		fmt.Fprintf(b, `\x%02x`, r)
	case goSyntax && r <= 0xFFFF:
		fmt.Fprintf(b, `\u%04x`, r)
	case goSyntax:
		fmt.Fprintf(b, `\U%08x`, r)
	case r <= 0xFFFF:
		fmt.Fprintf(b, `\u%04X`, r)
	default:
		fmt.Fprintf(b, `\U%08X`, r)
	}
}

// RemoveRule takes the [[rule]] table that starts at line (1-based) out of
// a policy file, and the "# approved ..." comment the console wrote above
// it; every other line, comments included, is kept as it is. It returns
// the lines removed. The file is replaced atomically, only after the new
// content loads with one rule fewer.
func RemoveRule(file string, line int) (string, error) {
	old, info, err := readRegular(file)
	if err != nil {
		return "", err
	}
	if info == nil {
		return "", fmt.Errorf("policy: %s does not exist", file)
	}
	lines := strings.SplitAfter(old, "\n")
	i := line - 1
	if i < 0 || i >= len(lines) || !isTableHeader(lines[i], "[[rule]]") {
		return "", fmt.Errorf("policy: %s:%d is not the start of a [[rule]] table (see 'sluice policy rules')", file, line)
	}
	// The table runs to the next table header (or the end): comments
	// and blank lines inside it are part of it. Trailing comments and
	// blank lines just before the next header stay with that one.
	end := i + 1
	for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), "[") {
		end++
	}
	for end > i+1 {
		t := strings.TrimSpace(lines[end-1])
		if t != "" && !strings.HasPrefix(t, "#") {
			break
		}
		end--
	}
	start := i
	if i > 0 && strings.HasPrefix(strings.TrimSpace(lines[i-1]), "# approved ") {
		start = i - 1
	}
	removed := strings.Join(lines[start:end], "")
	// One blank line that separated the table from the one before goes too.
	if start > 0 && strings.TrimSpace(lines[start-1]) == "" && (end == len(lines) || strings.TrimSpace(lines[end]) == "") {
		start--
	}
	content := strings.Join(lines[:start], "") + strings.Join(lines[end:], "")
	before, err := Load(Options{User: file, UserRequired: true})
	if err != nil {
		return "", err
	}
	dir := filepath.Dir(file)
	tmp, err := writeTemp(dir, filepath.Base(file), content, info.Mode().Perm())
	if err != nil {
		return "", fmt.Errorf("policy: %w", err)
	}
	defer os.Remove(tmp)
	after, err := Load(Options{User: tmp, UserRequired: true})
	if err != nil {
		return "", err
	}
	// Exactly that rule goes, and every other rule stays as it was (a
	// key left behind would join another table and change it).
	if !sameRulesBut(before.rules, after.rules, fmt.Sprintf("%s:%d", file, line)) {
		return "", fmt.Errorf("policy: removing %s:%d would change other rules too; edit the file by hand", file, line)
	}
	if err := unchanged(file, info); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, file); err != nil {
		return "", fmt.Errorf("policy: %w", err)
	}
	return removed, nil
}

// sameRulesBut reports whether after holds exactly the rules of before
// but the one whose origin is gone (origins' line numbers aside).
func sameRulesBut(before, after []*Rule, gone string) bool {
	key := ruleKey
	want := map[string]int{}
	found := false
	for _, r := range before {
		if r.Origin == gone {
			found = true
			continue
		}
		want[key(r)]++
	}
	if !found || len(after) != len(before)-1 {
		return false
	}
	for _, r := range after {
		want[key(r)]--
	}
	for _, n := range want {
		if n != 0 {
			return false
		}
	}
	return true
}

// ruleKey is what makes rule r the rule it is, its origin aside.
func ruleKey(r *Rule) string {
	return fmt.Sprintf("%v|%q|%q|%q|%q|%q|%q|%q", r.Action, r.Command, r.Path, r.Access, r.Reason, r.Project, r.Match, r.NotMatch)
}
