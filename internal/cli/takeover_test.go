package cli

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
)

// TestTakeOver: a program beside sluice reads the global flags Handover
// passes it, then the command and its own flags untouched; a bad global
// flag is said with what it was, --help is left to the program.
func TestTakeOver(t *testing.T) {
	var errOut bytes.Buffer
	std := Stdio{Err: &errOut}
	g, rest, err := TakeOver([]string{"--spool", "/s", "--config", "/c.toml", "serve", "--max-auto", "2"}, std)
	if err != nil || g.Spool != "/s" || g.Config != "/c.toml" || !slices.Equal(rest, []string{"serve", "--max-auto", "2"}) {
		t.Fatalf("TakeOver: %+v %q %v", g, rest, err)
	}
	if _, _, err := TakeOver([]string{"--help"}, std); !errors.Is(err, flag.ErrHelp) || errOut.Len() != 0 {
		t.Fatalf("--help: %v, said %q", err, errOut.String())
	}
	if _, _, err := TakeOver([]string{"--spol", "/s", "serve"}, std); err == nil || !strings.Contains(errOut.String(), "spol") {
		t.Fatalf("a bad flag: %v, said %q", err, errOut.String())
	}
}
