package exec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"github.com/sluice-dev/sluice/queue"
)

// Actor carries out claimed requests of every kind: exec requests run
// under the pty Runner; write, edit and patch requests are planned against
// the files as they are now and applied, all or nothing. It implements
// queue.Runner.
type Actor struct {
	Runner *Runner
	// Jail returns the directories a request in cwd may touch.
	Jail func(cwd string) []string
}

var _ queue.Runner = (*Actor)(nil)

// Run implements queue.Runner.
func (a *Actor) Run(ctx context.Context, req *queue.Request, ro queue.RunOptions) (queue.Result, string) {
	logPath, output := ro.LogPath, ro.Output
	var jail []string
	if a.Jail != nil && req.Cwd != "" {
		jail = a.Jail(req.Cwd)
	}
	if req.Kind == queue.KindExec {
		return a.Runner.Run(ctx, req, Options{LogPath: logPath, Output: output, Jail: jail,
			Profile: ro.Verdict.Profile, Unconfined: ro.Unconfined})
	}
	start := time.Now()
	res := queue.Result{ID: req.ID, StartedAt: start.UTC(), Log: queue.LogRel(req.ID)}
	change, err := Plan(req, jail)
	if err == nil {
		err = change.Apply(jail)
	}
	var summary string
	switch {
	case errors.Is(err, ErrChanged):
		res.Status, res.Reason = queue.StatusFailed, "a file changed since the change was judged; nothing was written"
	case err != nil:
		res.Status, res.Reason = queue.StatusFailed, err.Error()
	default:
		res.Status, res.ExitCode = queue.StatusDone, new(int)
		summary = change.Diff()
	}
	// The log holds the diff that was applied, for the agent and the audit.
	if summary != "" {
		if f, err := OpenLog(logPath); err == nil {
			_, _ = f.WriteString(summary)
			f.Close()
		}
		if output != nil {
			output([]byte(summary))
		}
		res.OutputBytes = int64(len(summary))
		res.OutputTail = tail(summary, 64<<10)
	}
	res.FinishedAt = time.Now().UTC()
	res.DurationMS = time.Since(start).Milliseconds()
	sum := sha256.Sum256([]byte(summary))
	return res, hex.EncodeToString(sum[:])
}

// tail returns at most n bytes of the end of s, cut at a rune start.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	for len(s) > 0 && s[0]&0xC0 == 0x80 {
		s = s[1:]
	}
	return s
}
