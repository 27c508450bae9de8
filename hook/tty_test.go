package hook

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestGeminiInteractive: the hook finds the Gemini CLI that started it
// among its ancestors and reads how it was started: -p means headless
// (deny on no decision), -i interactive; a stdin that is not a terminal
// headless.
func TestGeminiInteractive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	if os.Getenv("SLUICE_TEST_GEMINI_CHILD") == "1" {
		if geminiInteractive() {
			os.Stdout.WriteString("interactive")
		} else {
			os.Stdout.WriteString("headless")
		}
		return
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gemini := filepath.Join(dir, "gemini")
	// A stand-in for Gemini CLI: a shell script named gemini that runs
	// its hook (this test binary) through sh -c, as Gemini CLI does.
	script := "#!/bin/sh\n/bin/sh -c '" + self + " -test.run=TestGeminiInteractive$'\n"
	if err := os.WriteFile(gemini, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-p", "fix the tests"}, "headless"},
		{[]string{"--prompt=fix the tests"}, "headless"},
		{[]string{"-i", "fix the tests"}, "interactive"},
		{nil, "headless"}, // stdin is not a terminal here
	} {
		cmd := exec.Command(gemini, tt.args...)
		cmd.Env = append(os.Environ(), "SLUICE_TEST_GEMINI_CHILD=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(strings.Split(string(out), "\n")[0]); !strings.HasPrefix(got, tt.want) {
			t.Errorf("gemini %q: got %q, want %s", tt.args, out, tt.want)
		}
	}
}

// TestIsGemini: the command lines Gemini CLI 0.61.0 runs under, read from
// /proc of a real run: the launcher and its relaunched child, whose script
// comes after node's own options.
func TestIsGemini(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{[]string{"node", "/home/u/.npm/node_modules/.bin/gemini", "-p", "hi"}, true},
		{[]string{"/usr/bin/node", "--max-old-space-size=12052", "/home/u/node_modules/.bin/gemini", "-p", "hi", "--yolo"}, true},
		{[]string{"/usr/bin/node", "--no-warnings=DEP0040", "/usr/lib/node_modules/@google/gemini-cli/dist/index.js"}, true},
		{[]string{"/usr/local/bin/gemini", "-i", "go"}, true},
		{[]string{"/usr/bin/node", "--max-old-space-size=12052", "/srv/app/server.js", "gemini"}, false},
		{[]string{"bash", "-c", "gemini -p x"}, false},
		{[]string{"/usr/bin/node"}, false},
		{nil, false},
	} {
		if got := isGemini(tt.args); got != tt.want {
			t.Errorf("isGemini(%q) = %v, want %v", tt.args, got, tt.want)
		}
	}
}
