package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// agentLines is a realistic mix of what coding agents run.
var agentLines = []string{
	"git status",
	"git diff --stat HEAD~1",
	"go test ./... 2>&1 | tail -50",
	"cd pkg && go vet ./...",
	"rg -n 'func Check' --type go",
	"npm test -- --watch=false",
	"ls -la src/components",
	"cat package.json | jq '.dependencies'",
	"find . -name '*.go' -not -path './vendor/*' | xargs wc -l",
	"git add -A && git commit -m 'fix: handle nil config'",
	"python3 -m pytest tests/ -x -q",
	"sed -n '120,180p' internal/server/handler.go",
	"grep -rn \"TODO\" --include='*.ts' src | head -20",
	"make build && ./bin/app --version",
	"cargo build --release 2>&1 | tail -20",
	"docker compose ps",
	"curl -s http://localhost:8080/healthz | jq .",
	"rm -rf node_modules/.cache",
	"mkdir -p internal/store && touch internal/store/store.go",
	"cat <<'EOF' > internal/store/store_test.go\npackage store\n\nimport \"testing\"\n\nfunc TestOpen(t *testing.T) {}\nEOF",
	"for f in $(git diff --name-only); do gofmt -l \"$f\"; done",
	"kubectl get pods -n staging -o wide",
	"head -n 40 README.md",
	"git log --oneline -n 20 --graph",
	"npx prettier --check 'src/**/*.{ts,tsx}'",
}

// userRules writes a user policy of n rules, the size of a policy grown by
// a year of pressing 'A'.
func userRules(b *testing.B, n int) string {
	b.Helper()
	tools := []string{"git", "go", "npm", "cargo", "make", "docker", "kubectl", "python3", "pytest", "rg", "jq", "sed", "awk", "curl", "terraform", "helm", "gh", "yarn", "pnpm", "bun"}
	var sb strings.Builder
	for i := 0; i < n; i++ {
		act := []string{"allow", "ask", "deny"}[i%3]
		fmt.Fprintf(&sb, "[[rule]]\naction = %q\ncommand = \"%s sub%d *\"\n\n", act, tools[i%len(tools)], i)
	}
	p := filepath.Join(b.TempDir(), "policy.toml")
	if err := os.WriteFile(p, []byte(sb.String()), 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkCheck is one verdict per op over agentLines, with the embedded
// policy plus 200 user rules. p50 and p99 are per line.
func BenchmarkCheck(b *testing.B) {
	p, err := Load(Options{User: userRules(b, 200), UserRequired: true, Home: "/home/me"})
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		start := time.Now()
		p.Check(agentLines[i%len(agentLines)], tableEnv)
		lat = append(lat, time.Since(start))
		i++
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkLoad is the one-time cost of compiling the policy.
func BenchmarkLoad(b *testing.B) {
	f := userRules(b, 200)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Load(Options{User: f, UserRequired: true}); err != nil {
			b.Fatal(err)
		}
	}
}
