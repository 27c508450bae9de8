//go:build unix

package exec

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

func TestFilterEnv(t *testing.T) {
	t.Parallel()
	base := []string{
		"PATH=/bin", "FOO_TOKEN=a", "github_token=b", "MY_SECRET_X=c", "AWS_REGION=d",
		"KEEP=1", "OVER=base", "SLUICE_REQUEST_ID=stale", "malformed", "NPM_TOKEN=e",
	}
	extra := map[string]string{"OVER": "req", "B_EXTRA": "2", "ANTHROPIC_API_KEY": "f", "A_PASSWORD_FILE": "g"}
	got := FilterEnv(base, nil, extra, "id1")
	want := []string{"PATH=/bin", "KEEP=1", "B_EXTRA=2", "OVER=req", "SLUICE_REQUEST_ID=id1"}
	if !slices.Equal(got, want) {
		t.Errorf("default patterns:\n got %q\nwant %q", got, want)
	}

	got = FilterEnv(base, []string{}, nil, "id2")
	if !slices.Contains(got, "FOO_TOKEN=a") || slices.Contains(got, "malformed") || !slices.Contains(got, "SLUICE_REQUEST_ID=id2") {
		t.Errorf("empty patterns strip nothing but malformed and the stale id: %q", got)
	}

	got = FilterEnv([]string{"X[=1", "KEEP=1"}, []string{"X["}, nil, "id3")
	if want := []string{"KEEP=1", "SLUICE_REQUEST_ID=id3"}; !slices.Equal(got, want) {
		t.Errorf("malformed pattern as a literal: got %q, want %q", got, want)
	}
}

func TestCheckPatterns(t *testing.T) {
	t.Parallel()
	if err := CheckPatterns(DefaultSecretPatterns); err != nil {
		t.Error(err)
	}
	for _, bad := range []string{"", "X["} {
		if err := CheckPatterns([]string{bad}); err == nil || !strings.HasPrefix(err.Error(), "exec: ") {
			t.Errorf("CheckPatterns(%q) = %v", bad, err)
		}
	}
}

// TestRunSecretsNeverReachChild prints the child's environment and looks
// for every secret, by name and by value, in the log.
func TestRunSecretsNeverReachChild(t *testing.T) {
	t.Parallel()
	r := testRunner()
	r.BaseEnv = append(r.BaseEnv,
		"FOO_TOKEN=secret-base-1", "AWS_SECRET_ACCESS_KEY=secret-base-2", "ANTHROPIC_API_KEY=secret-base-3",
		"HARMLESS=visible-base", "PWD=/wrong/place")
	req := execReq(t, "env")
	req.Env = map[string]string{
		"FOO_TOKEN": "secret-req-1", "AWS_SECRET_ACCESS_KEY": "secret-req-2", "ANTHROPIC_API_KEY": "secret-req-3",
		"REQ_HARMLESS": "visible-req",
	}
	o := run(t.Context(), t, r, req, Options{}, 10*time.Second)
	checkRan(t, req, o)
	for _, s := range []string{"secret-", "FOO_TOKEN", "AWS_SECRET_ACCESS_KEY", "ANTHROPIC_API_KEY", "/wrong/place"} {
		if bytes.Contains(o.log, []byte(s)) {
			t.Errorf("%q reached the child:\n%s", s, o.log)
		}
	}
	lines := strings.Split(string(o.log), "\n")
	for _, s := range []string{"HARMLESS=visible-base", "REQ_HARMLESS=visible-req", "SLUICE_REQUEST_ID=" + req.ID, "TERM=xterm-256color"} {
		if !slices.Contains(lines, s) {
			t.Errorf("%q missing from the child's env:\n%s", s, o.log)
		}
	}
	if o.res.Status != queue.StatusDone {
		t.Errorf("status %s", o.res.Status)
	}
}
