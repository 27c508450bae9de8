package mcpserver

import (
	"slices"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
)

// TestFileToolSchemas: write_file and edit_file take cwd and note (their
// shared changeIn) as arguments of their own, optional, after the ones
// that say what to change.
func TestFileToolSchemas(t *testing.T) {
	t.Parallel()
	w, err := jsonschema.For[writeFileIn](nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := jsonschema.For[editFileIn](nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		s              *jsonschema.Schema
		props, require []string
	}{
		{"write_file", w, []string{"path", "content", "cwd", "note"}, []string{"path", "content"}},
		{"edit_file", e, []string{"path", "old_string", "new_string", "replace_all", "cwd", "note"}, []string{"path", "old_string", "new_string"}},
	} {
		if !slices.Equal(tc.s.PropertyOrder, tc.props) || len(tc.s.Properties) != len(tc.props) {
			t.Errorf("%s: properties %v (%d), want %v", tc.name, tc.s.PropertyOrder, len(tc.s.Properties), tc.props)
		}
		if !slices.Equal(tc.s.Required, tc.require) {
			t.Errorf("%s: required %v, want %v", tc.name, tc.s.Required, tc.require)
		}
		if d := tc.s.Properties["note"]; d == nil || d.Description == "" {
			t.Errorf("%s: note has no description", tc.name)
		}
	}
}
