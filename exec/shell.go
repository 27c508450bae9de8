package exec

import (
	"os"
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
