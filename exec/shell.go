package exec

import (
	"os"
	"regexp"
	"sync"
)

// Shell is the shell an exec request's command line runs in: bash when
// the machine has it, as the agents run their commands, else /bin/sh.
// The policy parses the line in the same dialect (policy.Options.Shell),
// so that what is judged is what runs.
var Shell = sync.OnceValue(func() string {
	for _, p := range []string{"/bin/bash", "/usr/bin/bash"} {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return "/bin/sh"
})

// ShellDialect is Shell's dialect for the policy's parser: "bash" or
// "posix".
func ShellDialect() string {
	if Shell() == "/bin/sh" {
		return "posix"
	}
	return "bash"
}

// lazyRegexp compiles pat on first use rather than when every sluice
// process starts (an agent's hook included).
func lazyRegexp(pat string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pat) })
}
