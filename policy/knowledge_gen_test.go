package policy

import (
	"go/format"
	"os"
	"reflect"
	"testing"
)

// generatedKnowledge is the whole generated table, every entry built.
func generatedKnowledge() map[string]*Tool {
	m := make(map[string]*Tool, len(knowledgeNames))
	for _, name := range knowledgeNames {
		m[name] = generatedTool(name)
	}
	return m
}

// TestKnowledgeGenerated: knowledge_gen.go holds knowledge.toml as it is;
// after an edit to the table, 'go generate ./policy' brings it up to date.
func TestKnowledgeGenerated(t *testing.T) {
	want := embeddedTools(t)
	if got := generatedKnowledge(); !reflect.DeepEqual(got, want) {
		t.Fatal("knowledge_gen.go is not knowledge.toml: run 'go generate ./policy'")
	}
	raw, err := RenderKnowledgeGo(knowledgeTOML)
	if err != nil {
		t.Fatal(err)
	}
	src, err := format.Source([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("knowledge_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(file) != string(src) {
		t.Error("knowledge_gen.go differs from what go generate writes: run 'go generate ./policy'")
	}
}

// TestToolTable: an entry is built once and then shared (the judge may
// hold it), a name the table lacks is not kept (names come from agents),
// and the table counts what the TOML holds.
func TestToolTable(t *testing.T) {
	t.Parallel()
	tab := &toolTable{built: map[string]*Tool{}}
	if a, b := tab.get("git"), tab.get("git"); a == nil || a != b {
		t.Errorf("git: %p then %p, want one entry", a, b)
	}
	if tab.get("7za") == tab.get("7z") || !reflect.DeepEqual(tab.get("7za"), tab.get("7z")) {
		t.Error("aliases 7z and 7za: want equal entries, each its own")
	}
	if tab.get("no-such-program\x00") != nil || len(tab.built) != 3 {
		t.Errorf("unknown name: %d entries kept, want 3", len(tab.built))
	}
	want := embeddedTools(t)
	if tab.len() != len(want) {
		t.Errorf("len %d, want %d", tab.len(), len(want))
	}
}
