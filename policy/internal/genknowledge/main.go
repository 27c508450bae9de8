// Command genknowledge writes policy/knowledge_gen.go from
// policy/knowledge.toml: run by go generate in package policy.
package main

import (
	"fmt"
	"go/format"
	"os"

	"github.com/sluice-dev/sluice/policy"
)

func main() {
	src, err := os.ReadFile("knowledge.toml")
	if err != nil {
		fmt.Fprintln(os.Stderr, "genknowledge:", err)
		os.Exit(1)
	}
	raw, err := policy.RenderKnowledgeGo(string(src))
	if err == nil {
		var out []byte
		out, err = format.Source([]byte(raw))
		raw = string(out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "genknowledge:", err)
		os.Exit(1)
	}
	out := raw
	if err := os.WriteFile("knowledge_gen.go", []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genknowledge:", err)
		os.Exit(1)
	}
}
