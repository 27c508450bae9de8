package cli

import (
	"slices"
	"testing"
)

// TestDidYouMean: the names offered for a misspelt command, flag or key.
func TestDidYouMean(t *testing.T) {
	t.Parallel()
	cmds := []string{"console", "run", "submit", "ls", "show", "approve", "deny", "undo", "version", "help"}
	for _, tc := range []struct {
		word string
		want []string
	}{
		{"consol", []string{"console"}},
		{"aprove", []string{"approve"}},
		{"apporve", []string{"approve"}}, // two neighbours swapped
		{"sl", []string{"ls"}},
		{"Console", []string{"console"}},
		{"vers", []string{"version"}}, // the start of one name
		{"frobnicate", nil},
		{"x", nil},
		{"s", nil},
		{"", nil},
	} {
		if got := DidYouMean(tc.word, cmds); !slices.Equal(got, tc.want) {
			t.Errorf("didYouMean(%q) = %q, want %q", tc.word, got, tc.want)
		}
	}
	if got := DidYouMean("thme", []string{"theme", "demo", "hub", "hub-creds"}); !slices.Equal(got, []string{"theme"}) {
		t.Errorf("--thme: %q", got)
	}
	if got := DidYouMean("default_timout", []string{"default_timeout", "kill_grace", "max_auto"}); !slices.Equal(got, []string{"default_timeout"}) {
		t.Errorf("default_timout: %q", got)
	}
	if got := DidYouMean("dny", []string{"deny", "dry"}); !slices.Equal(got, []string{"deny", "dry"}) {
		t.Errorf("two as near: %q", got)
	}
	if got := OrList([]string{"a", "b", "c"}, func(s string) string { return "--" + s }); got != "--a, --b or --c" {
		t.Errorf("orList: %q", got)
	}
}
