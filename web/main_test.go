package web

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestMainArguments(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	run := func(args ...string) (int, string, string) {
		var out, errs bytes.Buffer
		code := Main(args, &out, &errs, nil)
		return code, out.String(), errs.String()
	}
	// As 'sluice web' execs it: its name, global flags, then the command.
	code, out, errs := run("web", "--state", state, "--url", "https://box.example.ts.net", "pair", "phone")
	if code != 0 || !strings.Contains(out, `Pairing code for "phone": `) || !strings.Contains(out, "https://box.example.ts.net") || !strings.Contains(out, "▀") {
		t.Fatalf("pair: %d\n%s\n%s", code, out, errs)
	}
	// Serving flags before the command (config.toml's, from the stub)
	// are taken and ignored by the other commands.
	if code, out, errs := run("--notify-url", "https://ntfy.sh/x", "devices", "--state", state); code != 0 || out != "" {
		t.Fatalf("devices with a serving flag first: %d %q %q", code, out, errs)
	}
	if code, out, _ := run("devices", "--state", state); code != 0 || out != "" {
		t.Fatalf("devices before the code is used: %d %q", code, out)
	}
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"pair", "--state", state}, 2, "give the device a name"},
		{[]string{"pair", "--state", state, "Phone!"}, 1, "device name"},
		{[]string{"devices", "--state", state, "--listen", "127.0.0.1:1"}, 2, "only when serving"},
		{[]string{"revoke", "--state", state, "laptop"}, 1, "no such device"},
		{[]string{"--listen", "0.0.0.0:8787", "--state", state}, 2, "ssh -L"},
		{[]string{"--tls-cert", "c.pem", "--state", state}, 2, "go together"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"--hub-creds", "x.creds", "--state", state}, 2, "goes with --hub"},
		{[]string{"--hub", "nats://127.0.0.1:1", "--hub-creds", filepath.Join(dir, "none.creds"), "--state", state}, 1, "add-console"},
	} {
		code, _, errs := run(c.args...)
		if code != c.code || !strings.Contains(errs, c.says) {
			t.Errorf("%v: exit %d, %q; want %d and %q", c.args, code, errs, c.code, c.says)
		}
	}
}
