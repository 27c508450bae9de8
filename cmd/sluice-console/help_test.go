package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/internal/cli"
	"github.com/sluice-dev/sluice/tui"
)

// helpOf runs 'sluice-console ARGS...' (what 'sluice console' hands over)
// and returns its stdout, which must be all it printed, with exit status 0.
func helpOf(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(args, cli.Stdio{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 || errb.Len() > 0 {
		t.Fatalf("sluice-console %s: exit %d\n%s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

// TestConsoleHelpKeys: 'sluice console --help' lists every key the
// console answers to (tui.DefaultKeyMap: each key of what ? shows, and
// F), one a line under "Keys:".
func TestConsoleHelpKeys(t *testing.T) {
	t.Parallel()
	help := helpOf(t, "console", "--help")
	_, block, ok := strings.Cut(help, "\nKeys:\n")
	if !ok {
		t.Fatalf("no Keys: in the console's help:\n%s", help)
	}
	block, _, _ = strings.Cut(block, "\n\n")
	listed := map[string]bool{}
	for _, line := range strings.Split(block, "\n") {
		keys, _, ok := strings.Cut(strings.TrimPrefix(line, "  "), "  ")
		if !ok || !strings.HasPrefix(line, "  ") {
			continue
		}
		for _, k := range strings.Fields(keys) {
			for _, k := range splitKeys(k) {
				listed[k] = true
			}
		}
	}
	km := tui.DefaultKeyMap()
	bindings := slices.Concat(km.FullHelp()...)
	bindings = append(bindings, km.Force)
	for _, b := range bindings {
		h := b.Help()
		for _, k := range splitKeys(h.Key) {
			if !listed[k] {
				t.Errorf("the console's --help does not list %q (%s); it lists %v", k, h.Desc, slices.Sorted(mapKeys(listed)))
			}
		}
	}
}

// splitKeys splits "home/g" into its keys; "/" is a key of its own.
func splitKeys(s string) []string {
	if s == "/" {
		return []string{s}
	}
	return strings.Split(s, "/")
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestConsoleFlagTypo: a misspelt flag is said with the nearest one and
// where the usage is, exit 2, and no console starts.
func TestConsoleFlagTypo(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"console", "--thme", "dark"}, cli.Stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	if code != cli.ExitUsage {
		t.Fatalf("exit %d, want %d", code, cli.ExitUsage)
	}
	for _, want := range []string{"flag provided but not defined: -thme\n", "did you mean --theme?\n", "Run 'sluice console --help' for usage.\n"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q does not say %q", errb.String(), want)
		}
	}
}
