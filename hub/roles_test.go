package hub

import (
	"path/filepath"
	"testing"
)

// TestMainBoxCredsRefused: 'sluice hub ls', approve and deny with a box's
// credentials say that they are a box's, and what to use instead, before
// going to the hub at all.
func TestMainBoxCredsRefused(t *testing.T) {
	t.Parallel()
	_, creds := testStore(t, []string{"laptop"}, nil)
	file := filepath.Join(t.TempDir(), "hub.creds")
	if err := creds["laptop"].Write(file); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"ls"},
		{"approve", "laptop/01JD3T6Q6Z8W9X0Y1Z2A3B4C5D"},
		{"deny", "laptop/2A3B4C5D"},
	} {
		code, out, errs := runMain(append(args, "--hub-creds", file)...)
		want := "sluice hub " + args[0] + ": " + file + " holds a box's credentials (laptop), not a console's: issue a console's with 'sluice hub add-console NAME' on the hub and give its file with --hub-creds FILE\n"
		if code != exitUsage || out != "" || errs != want {
			t.Errorf("%v with a box's credentials: exit %d\n%s%s\nwant exit 2 and\n%s", args, code, out, errs, want)
		}
	}
}
