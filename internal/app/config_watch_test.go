package app

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestConfigWatch: an edit to config.toml is applied without a restart; a
// broken edit is reported and the last good configuration stays; fixing
// it clears the report.
func TestConfigWatch(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "config.toml")
	write := func(s string) {
		t.Helper()
		// A rename, as editors save: a new inode even if size and
		// mtime happened to match.
		tmp := path + ".tmp"
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("default_timeout = \"10m\"\n")
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	applied := make(chan *Config, 4)
	problems := make(chan error, 4)
	w := &ConfigWatch{FlagValue: path, every: 20 * time.Millisecond,
		Apply:   func(_, nw *Config) { applied <- nw },
		Problem: func(err error) { problems <- err }}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w.Start(ctx, cfg)

	wait := func() any {
		t.Helper()
		select {
		case c := <-applied:
			return c
		case err := <-problems:
			return err
		case <-time.After(10 * time.Second):
			t.Fatal("the watcher did not react to the edit")
		}
		return nil
	}
	write("default_timeout = \"1m\"\n[console]\nbell = false\n")
	if c, ok := wait().(*Config); !ok || c.DefaultTimeout != time.Minute || c.Console.Bell == nil || *c.Console.Bell {
		t.Fatalf("after the edit: %#v", c)
	}
	write("default_timeout = \"1m\"\nmax_autoo = 3\n")
	if err, ok := wait().(error); !ok || !strings.Contains(err.Error(), "unknown key max_autoo") {
		t.Fatalf("a broken edit was not reported: %v", err)
	}
	write("default_timeout = \"2m\"\n")
	if err, ok := wait().(error); ok && err != nil {
		t.Fatalf("the fix was reported as %v", err)
	}
	if c, ok := wait().(*Config); !ok || c.DefaultTimeout != 2*time.Minute {
		t.Fatalf("after the fix: %#v", c)
	}
}

// TestReloadedText: the console says what a reload leaves for the next
// start.
func TestReloadedText(t *testing.T) {
	t.Parallel()
	old, nw := &Config{}, &Config{MaxAuto: 8}
	got := ReloadedText("/etc/sluice.toml", old, nw)
	if !strings.Contains(got, "reloaded from /etc/sluice.toml") || !strings.Contains(got, "max_auto: at the next start") {
		t.Errorf("reloadedText = %q", got)
	}
	if got := ReloadedText("", old, old); !strings.Contains(got, "defaults are in force") {
		t.Errorf("reloadedText of a removed file = %q", got)
	}
}
