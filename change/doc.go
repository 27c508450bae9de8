// Package change plans and applies the file changes of write, edit and
// patch requests.
//
// Plan computes the change against the files as they are now (refusing a
// path that leads out of the jail, through symlinks too, an edit whose
// old_string is not unique, a patch whose context does not match); Diff
// renders it as a git-style unified diff for the preview; Apply writes all
// files or none, each through a synced temporary file renamed into place
// inside an os.Root at its jail directory, and returns ErrChanged, writing
// nothing, if a file changed since the plan. Preview is Plan and Diff in
// one call, for the callers that only show a change.
//
// An agent's hook previews with it too: PreviewCodexPatch parses Codex's
// apply_patch text (its own format, not a unified diff), applies it to
// the files as they are now the way Codex does, and returns the diff;
// ReadPreview reads a file as the agent will, following symlinks.
//
// Which directories a request may touch (its jail, or roots) is not this
// package's decision: policy makes it, and every caller passes the roots
// in. The package imports nothing of sluice but queue.
package change

import (
	"regexp"
	"sync"
)

// lazyRegexp compiles pat on first use rather than when every process that
// links the package starts (an agent's hook included).
func lazyRegexp(pat string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(pat) })
}
