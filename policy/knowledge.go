package policy

import (
	_ "embed"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/BurntSushi/toml"

	"github.com/sluice-dev/sluice/netproxy/netrule"
)

//go:embed knowledge.toml
var knowledgeTOML string

// Tool is what sluice knows about one program (or one subcommand of it):
// its category, and the flags and arguments that change it.
type Tool struct {
	// Category is the program's category when nothing below escalates it.
	Category Category `toml:"category"`
	// Reason explains the category in a verdict.
	Reason string `toml:"reason"`
	// Aliases are other names the same program answers to (egrep, fgrep).
	Aliases []string `toml:"aliases"`
	// ValueOptions are options that consume the next word as their value,
	// so that word is not taken for a subcommand or an operand
	// (git -C DIR, docker --context X). "--opt=value" needs no entry.
	ValueOptions []string `toml:"value_options"`
	// Sub holds subcommands (git push, docker run), judged by their own
	// entry. A program with subcommands whose subcommand is not listed
	// takes the program's own Category.
	Sub map[string]*Tool `toml:"sub"`
	// When lists conditions that escalate the category.
	When []Condition `toml:"when"`
	// Writes says which operands are paths the program writes: "args"
	// (every operand: rm, touch, mkdir), "last" (the last operand: uniq
	// IN OUT), "into" (the last operand, where the others land under
	// their own names when it is a directory: cp, install), "args_into"
	// (every operand, the last as with "into": mv, ln), or "" (none
	// known).
	Writes string `toml:"writes"`
	// WriteOptions are options whose value is a path the program writes
	// (curl -o FILE, sort -o FILE); an entry ending in '=' is an operand
	// prefix instead (dd of=FILE). For a program that writes "into" or
	// "args_into", they name the directory every operand lands in (cp
	// -t DIR).
	WriteOptions []string `toml:"write_options"`
	// CodeOptions are options whose value is code the program runs
	// (make --eval TEXT): a line with one brings its own code, and is at
	// least ask whatever rule matches it, never with a checkpoint.
	CodeOptions []string `toml:"code_options"`
	// ScriptOptions are options naming a file (or directory) of code the
	// program runs (make -f FILE, make -I DIR): outside the project the
	// line brings its own code, as with CodeOptions.
	ScriptOptions []string `toml:"script_options"`
	// Lists are the forms of the program that only show state (mount
	// with no operands, crontab -l): read_only whatever its category.
	// Conditions in When still apply.
	Lists []ListForm `toml:"lists"`
	// Text says the operands are text, not paths (echo, printf): they
	// are not read as files.
	Text bool `toml:"text"`
	// Hosts are the hosts the program reaches (netproxy rule syntax:
	// registry.npmjs.org, *.example.com, host:port): a networked run may
	// reach them without asking. Set on a program, they apply to its
	// forms that are networked or worse and to its subcommands that set
	// Fetches; a subcommand's own Hosts replace its program's.
	Hosts []string `toml:"hosts"`
	// Fetches says a form that is not networked by itself fetches with
	// its program's hosts when its run has the network (go build
	// downloads missing modules, cargo build the index).
	Fetches bool `toml:"fetches"`
}

// ListForm is an argv that only shows state.
type ListForm struct {
	// Names are the program names the form is for, when the entry is
	// shared by aliases that differ (swapon --show, not zfs --show);
	// empty for all.
	Names []string `toml:"names"`
	// Args are the operands, exactly and in order; none when empty. An
	// entry "a|b" is either word, "*" any one operand (nmcli device
	// show IFNAME).
	Args []string `toml:"args"`
	// Flags are the only options the form may have; Require those it
	// must have (crontab alone installs a table, crontab -l lists it).
	Flags   []string `toml:"flags"`
	Require []string `toml:"require"`
}

// listing reports whether ops (a command's words after its program and
// subcommands) are a form in lists for program prog.
func listing(lists []ListForm, prog string, ops []opword) bool {
	for _, f := range lists {
		if len(f.Names) > 0 && !slices.Contains(f.Names, prog) {
			continue
		}
		ok, n := true, 0
		have := map[string]bool{}
		for _, o := range ops {
			if o.w.dyn {
				ok = false
				break
			}
			if o.option {
				name, _, _ := strings.Cut(o.w.val, "=")
				if !slices.Contains(f.Flags, name) {
					ok = false
					break
				}
				have[name] = true
				continue
			}
			if n >= len(f.Args) || !listArg(f.Args[n], o.w.val) {
				ok = false
				break
			}
			n++
		}
		for _, r := range f.Require {
			ok = ok && have[r]
		}
		if ok && n == len(f.Args) {
			return true
		}
	}
	return false
}

// listArg reports whether operand v fits a list form's entry pat: "*"
// (any operand but a bare --), or one of the words pat holds,
// separated by '|'.
func listArg(pat, v string) bool {
	if pat == "*" {
		return v != "--"
	}
	for _, w := range strings.Split(pat, "|") {
		if w == v {
			return true
		}
	}
	return false
}

// Condition escalates a Tool's category when any of its Flags or Args
// appears in the command.
type Condition struct {
	// Flags match options: "-r" also matches inside a bundle ("-rf",
	// "-fr"); "--force" matches "--force" and "--force=x"; an entry ending
	// in '*' matches by prefix ("-i*" matches "-i.bak").
	Flags []string `toml:"flags"`
	// Args match operands (words that are not options) by glob: "of=*",
	// "1", "--" (the bare separator counts as an operand here), "*" (any
	// operand at all).
	Args     []string `toml:"args"`
	Category Category `toml:"category"`
	Reason   string   `toml:"reason"`
	// Names restricts the condition to some of the entry's program
	// names (ps, not pgrep, which shares its entry); empty for all.
	Names []string `toml:"names"`
	// First matches Args against the first operand only (tar's
	// old-style key: "tar tIf CMD a.tar").
	First bool `toml:"first"`
	// Writes, when the condition matches, names the operands written,
	// as Tool.Writes does ("xxd -r IN OUT" writes OUT).
	Writes string `toml:"writes"`
	// WriteOptions, when the condition matches, are options whose value
	// is a path written, as Tool.WriteOptions (tar -c -f FILE).
	WriteOptions []string `toml:"write_options"`
}

// toolTable is the knowledge table as the judge reads it. Its entries
// are built from knowledge_gen.go, which go generate writes from
// knowledge.toml at build time, on first use, and kept: decoding the
// TOML took about 20 ms of every 'sluice check', and building all 1,668
// entries up front another 2 ms, of which a check uses a handful.
// TestKnowledgeGenerated keeps the generated code equal to the TOML.
// Entries are read-only once built; the table is safe for concurrent use.
type toolTable struct {
	mu    sync.RWMutex
	built map[string]*Tool
}

// embeddedKnowledge is the process's one table.
var embeddedKnowledge = sync.OnceValue(func() *toolTable {
	return &toolTable{built: map[string]*Tool{}}
})

// get returns the entry for program name, nil if the table has none.
func (t *toolTable) get(name string) *Tool {
	t.mu.RLock()
	tool, ok := t.built[name]
	t.mu.RUnlock()
	if ok {
		return tool
	}
	tool = generatedTool(name)
	if tool == nil {
		return nil // not kept: names come from agents
	}
	t.mu.Lock()
	if prev, ok := t.built[name]; ok {
		tool = prev
	} else {
		t.built[name] = tool
	}
	t.mu.Unlock()
	return tool
}

// len is how many programs the table knows.
func (t *toolTable) len() int { return len(knowledgeNames) }

//go:generate go run ./internal/genknowledge

// knowledge is the decoded knowledge table.
type knowledge struct {
	Command map[string]*Tool `toml:"command"`
}

// loadKnowledge decodes and checks a knowledge table, returning tools by
// every name and alias.
func loadKnowledge(src, name string) (map[string]*Tool, error) {
	var k knowledge
	md, err := toml.Decode(src, &k)
	if err != nil {
		return nil, fmt.Errorf("policy: %s: %w", name, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		keys := make([]string, len(und))
		for i, u := range und {
			keys[i] = u.String()
		}
		return nil, fmt.Errorf("policy: %s: unknown keys %s", name, strings.Join(keys, ", "))
	}
	tools := make(map[string]*Tool, len(k.Command))
	names := make([]string, 0, len(k.Command))
	for n := range k.Command {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t := k.Command[n]
		if err := t.check(n, nil); err != nil {
			return nil, fmt.Errorf("policy: %s: %w", name, err)
		}
		for _, alias := range append([]string{n}, t.Aliases...) {
			if _, dup := tools[alias]; dup {
				return nil, fmt.Errorf("policy: %s: command %q described twice", name, alias)
			}
			tools[alias] = t
		}
	}
	return tools, nil
}

// check checks the entry at path; hosts are those its program (or
// parent subcommand) names, which a form that fetches needs.
func (t *Tool) check(path string, hosts []string) error {
	if t.Category == 0 {
		return fmt.Errorf("command %s: no category", path)
	}
	if _, err := netrule.ParseRules("", t.Hosts...); err != nil {
		return fmt.Errorf("command %s: hosts: %s", path, strings.TrimPrefix(err.Error(), "netproxy: "))
	}
	if len(t.Hosts) > 0 {
		hosts = t.Hosts
	}
	if t.Fetches && len(hosts) == 0 {
		return fmt.Errorf("command %s: fetches, but neither it nor its program names hosts", path)
	}
	switch t.Writes {
	case "", "args", "last", "into", "args_into":
	default:
		return fmt.Errorf("command %s: writes = %q, want \"args\", \"last\", \"into\", \"args_into\" or nothing", path, t.Writes)
	}
	for i, c := range t.When {
		if c.Category == 0 {
			return fmt.Errorf("command %s: when #%d has no category", path, i+1)
		}
		if len(c.Flags) == 0 && len(c.Args) == 0 {
			return fmt.Errorf("command %s: when #%d has neither flags nor args", path, i+1)
		}
		if c.Category < t.Category {
			return fmt.Errorf("command %s: when #%d lowers the category (%s below %s); conditions only escalate", path, i+1, c.Category, t.Category)
		}
	}
	for n, s := range t.Sub {
		if err := s.check(path+" "+n, hosts); err != nil {
			return err
		}
	}
	return nil
}
