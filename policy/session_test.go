package policy

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSessionAsks: on a recorded afternoon of an agent's work (212
// commands, testdata/session.txt), the embedded default policy asks a
// person about fewer commands with allow_with_checkpoint than it would if
// those commands asked, as they did before; nothing it denied or asked
// for another reason passes. The figures go to BENCHMARKS.md.
func TestSessionAsks(t *testing.T) {
	f, err := os.Open("testdata/session.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 200 {
		t.Fatalf("the session has %d commands, want at least 200", len(lines))
	}
	home := t.TempDir()
	project := filepath.Join(home, "src", "api")
	mkdirs(t, filepath.Join(project, ".git"), filepath.Join(project, "web"), filepath.Join(project, "internal/server"))
	p := loadIn(t, home, "", "")
	count := map[Action]int{}
	before := 0 // asks without allow_with_checkpoint: it asked then
	for _, l := range lines {
		v := p.Check(l, Env{Cwd: project, Roots: Roots(project), Home: home})
		count[v.Action]++
		if v.Action == Ask || v.Action == AllowWithCheckpoint {
			before++
		}
		if v.Action == AllowWithCheckpoint {
			for _, c := range v.Commands {
				// Builds, tests and generators run the project's code
				// (unknown); nothing networked or destructive passes.
				if c.Action == AllowWithCheckpoint && c.Category != Mutating && c.Category != Unknown {
					t.Errorf("%q: a %s part passes with a checkpoint", l, c.Category)
				}
			}
		}
	}
	after := count[Ask]
	t.Logf("%d commands: before %d ask a person, after %d (%d allowed with a checkpoint, %d allowed, %d denied)",
		len(lines), before, after, count[AllowWithCheckpoint], count[Allow], count[Deny])
	if after >= before {
		t.Errorf("allow_with_checkpoint spared no ask: before %d, after %d", before, after)
	}
}
