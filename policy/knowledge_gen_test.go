package policy

import (
	"os"
	"reflect"
	"testing"
)

// TestKnowledgeGenerated: knowledge_gen.go holds knowledge.toml as it is;
// after an edit to the table, 'go generate ./policy' brings it up to date.
func TestKnowledgeGenerated(t *testing.T) {
	want, err := loadKnowledge(knowledgeTOML, "knowledge.toml")
	if err != nil {
		t.Fatal(err)
	}
	if got := generatedKnowledge(); !reflect.DeepEqual(got, want) {
		t.Fatal("knowledge_gen.go is not knowledge.toml: run 'go generate ./policy'")
	}
	src, err := RenderKnowledgeGo(knowledgeTOML)
	if err != nil {
		t.Fatal(err)
	}
	file, err := os.ReadFile("knowledge_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if string(file) != src {
		t.Error("knowledge_gen.go differs from what go generate writes: run 'go generate ./policy'")
	}
}
