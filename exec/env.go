package exec

import (
	"fmt"
	"path"
	"sort"
	"strings"
)

// RequestIDVar is the environment variable that carries the request's id
// into the child.
const RequestIDVar = "SLUICE_REQUEST_ID"

// DefaultSecretPatterns are the environment names FilterEnv strips when no
// patterns are configured. They are path.Match globs, matched without
// regard to case.
var DefaultSecretPatterns = []string{
	"*_TOKEN", "*_TOKEN_*", "*_SECRET*", "*_PASSWORD*", "*_PASSWD*",
	"*_API_KEY", "*_APIKEY", "*_ACCESS_KEY*", "*_PRIVATE_KEY*", "*_CREDENTIALS*",
	"AWS_*", "GITHUB_TOKEN", "GH_TOKEN", "ANTHROPIC_*", "OPENAI_*",
	"GOOGLE_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "GEMINI_*",
	"NPM_TOKEN", "SSH_AUTH_SOCK",
}

// FilterEnv returns env minus the entries whose names match patterns, plus
// extra (the request's env, filtered the same way), plus
// SLUICE_REQUEST_ID=id.
//
// Patterns are path.Match globs matched case-insensitively; a malformed
// pattern matches only the identical name. A nil patterns means
// DefaultSecretPatterns; pass an empty, non-nil slice to strip nothing.
// Entries of env without '=' are dropped. A name set in extra replaces the
// same name in env, and extra is appended in sorted order, so the result
// holds each name once and is deterministic.
func FilterEnv(env []string, patterns []string, extra map[string]string, id string) []string {
	if patterns == nil {
		patterns = DefaultSecretPatterns
	}
	upper := make([]string, len(patterns))
	for i, p := range patterns {
		upper[i] = strings.ToUpper(p)
	}
	keep := func(name string) bool {
		if name == "" || strings.ContainsAny(name, "=\x00") || name == RequestIDVar {
			return false
		}
		return !secretName(name, upper)
	}

	out := make([]string, 0, len(env)+len(extra)+1)
	for _, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || !keep(name) {
			continue
		}
		if _, over := extra[name]; over {
			continue
		}
		out = append(out, kv)
	}
	names := make([]string, 0, len(extra))
	for name := range extra {
		if keep(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		out = append(out, name+"="+extra[name])
	}
	return append(out, RequestIDVar+"="+id)
}

// secretName reports whether name matches one of the upper-cased patterns.
func secretName(name string, upper []string) bool {
	n := strings.ToUpper(name)
	for _, p := range upper {
		ok, err := path.Match(p, n)
		if err != nil {
			ok = p == n
		}
		if ok {
			return true
		}
	}
	return false
}

// CheckPatterns reports the first malformed pattern, for a config loader to
// refuse before FilterEnv would quietly treat it as a literal name.
func CheckPatterns(patterns []string) error {
	for _, p := range patterns {
		if p == "" {
			return fmt.Errorf("exec: empty secret pattern")
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("exec: secret pattern %q: %w", p, err)
		}
	}
	return nil
}
