package exec

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/change"
	"github.com/sluice-dev/sluice/checkpoint"
	"github.com/sluice-dev/sluice/exec/sandbox"
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
	// Checkpoints, when set, snapshots the jail's roots before and after
	// every run that may change files, so that the result lists the
	// files it changed and 'sluice undo' can restore them.
	Checkpoints *checkpoint.Store
	// ProjectCaches, when set, holds a cache directory per project for
	// confined runs (Options.Caches): they do not write the caches the
	// person's own, unconfined builds trust.
	ProjectCaches string

	warmMu sync.Mutex
	warmed map[string]time.Time // cwd -> when Warm last looked at it
}

var _ queue.Runner = (*Actor)(nil)

// Run implements queue.Runner.
func (a *Actor) Run(ctx context.Context, req *queue.Request, ro queue.RunOptions) (queue.Result, string) {
	var jail []string
	if a.Jail != nil && req.Cwd != "" {
		jail = a.Jail(req.Cwd)
	}
	var pre []checkpoint.Snapshot
	cp := a.checkpointed(req, ro)
	// Checkpoints outlive a killed run: what it changed is still listed.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkpointTimeout)
	defer cancel()
	var t *turn
	if cp != nil {
		// One checkpointed run at a time in a project: its changed
		// files and undo are its own (turns.go).
		waited := false
		var err error
		t, err = takeTurn(ctx, filepath.Join(a.Checkpoints.Dir, "turns"), roots(req, jail), req.ID, func(holder string) {
			waited = true
			if ro.Output != nil {
				ro.Output([]byte(waitsLine(holder)))
			}
			if ro.Waiting != nil {
				ro.Waiting(holder)
			}
		}, ro.GoAhead)
		if waited && ro.Waiting != nil {
			ro.Waiting("")
		}
		switch {
		case err != nil && ctx.Err() != nil:
			// Killed while it waited: the command never started.
			return queue.Result{Version: queue.Version, ID: req.ID, Status: queue.StatusKilled, Checkpoint: cp,
				Reason: "killed while it waited for its turn behind another run in the same project: the command never started"}, ""
		case err != nil:
			cp.Error = "runs in this project could not take turns: " + err.Error()
		default:
			defer t.release()
			if len(t.with) > 0 && ro.Output != nil {
				ro.Output([]byte(aheadLine(t.with)))
			}
		}
		pre = a.snapshot(cctx, req, jail, "pre", cp)
	}
	if ro.Verdict.Action == queue.ActionAllowWithCheckpoint && len(pre) == 0 {
		// Allowed only with a checkpoint: without one it does not run.
		why := "checkpoints are off"
		if cp != nil && cp.Error != "" {
			why = cp.Error
		}
		return queue.Result{Version: queue.Version, ID: req.ID, Status: queue.StatusFailed, Checkpoint: cp,
			Reason: "not run: the policy allows it only with a checkpoint, and none could be taken: " + why}, ""
	}
	res, sum := a.run(ctx, req, ro, jail)
	if cp != nil {
		res.Checkpoint = cp
		a.changes(cctx, req, jail, pre, &res)
		cp.Overlapped = t.release() // after the last snapshot
	}
	return res, sum
}

var _ queue.Warmer = (*Actor)(nil)

// ReleaseIdle implements queue's idle releaser: what the runs keep for the
// next (the Landlock base layers, which pin the inodes they grant) goes,
// so that space freed on a full disk is free.
func (a *Actor) ReleaseIdle() { sandbox.DropIdle() }

// Warm implements queue.Warmer: a request that will be checkpointed if
// approved has its project read into the checkpoint store now, in the
// background, so that approving it does not wait for a first checkpoint
// (seconds for a large project). Errors show at the run.
func (a *Actor) Warm(req *queue.Request, v queue.Verdict) {
	if a.checkpointed(req, queue.RunOptions{Verdict: v}) == nil || !a.warmDue(req.Cwd) {
		return
	}
	var jail []string
	if a.Jail != nil && req.Cwd != "" {
		jail = a.Jail(req.Cwd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkpointTimeout)
	defer cancel()
	for _, root := range roots(req, jail) {
		_ = a.Checkpoints.Warm(ctx, root)
	}
}

// warmDue says whether Warm should look at cwd's roots: not when it did
// within warmAgain. A burst of asks from one project (an agent's flood)
// then costs a map lookup each rather than a project lookup and a stat;
// the store warms each root once anyway, so this only delays noticing a
// project made in cwd meanwhile, which the run's checkpoint takes in.
func (a *Actor) warmDue(cwd string) bool {
	now := time.Now()
	a.warmMu.Lock()
	defer a.warmMu.Unlock()
	if t, ok := a.warmed[cwd]; ok && now.Sub(t) < warmAgain {
		return false
	}
	if a.warmed == nil || len(a.warmed) >= 1024 {
		a.warmed = map[string]time.Time{}
	}
	a.warmed[cwd] = now
	return true
}

// warmAgain is how long Warm leaves a cwd it looked at alone.
const warmAgain = 5 * time.Second

// checkpointTimeout bounds the snapshots of one run (the first one of a
// large project copies every file into its shadow repository).
const checkpointTimeout = 5 * time.Minute

// checkpointed says whether req's run is checkpointed: any run that may
// change files (a file request, a command not confined read-only), when
// there is a store. Its Checkpoint is filled in as the snapshots are taken.
func (a *Actor) checkpointed(req *queue.Request, ro queue.RunOptions) *queue.Checkpoint {
	if a.Checkpoints == nil {
		return nil
	}
	if req.Kind == queue.KindExec && !ro.Unconfined && ro.Verdict.Profile == "read_only" &&
		ro.Verdict.Action != queue.ActionAllowWithCheckpoint {
		return nil
	}
	return &queue.Checkpoint{}
}

// CheckpointNote says, before req runs, why a run of it that may change
// files will not be checkpointed under verdict v (no git project, the
// home directory): its changes will not be listed, nor undoable. "" when
// it will be, or when it needs none (read-only, checkpoints off).
func (a *Actor) CheckpointNote(req *queue.Request, v queue.Verdict) string {
	if a.checkpointed(req, queue.RunOptions{Verdict: v}) == nil {
		return ""
	}
	var jail []string
	if a.Jail != nil && req.Cwd != "" {
		jail = a.Jail(req.Cwd)
	}
	if len(roots(req, jail)) > 0 {
		return ""
	}
	return "none: not in a git project, so what it changes is not listed and cannot be undone"
}

// roots are the directories checkpointed for req: the git projects among
// its jail (its cwd's top level), never the home directory or /. A
// request outside a project is not checkpointed: its shadow copy would
// take in whatever lies there, secrets included.
func roots(req *queue.Request, jail []string) []string {
	if len(jail) == 0 && req.Cwd != "" {
		jail = []string{req.Cwd}
	}
	home, _ := os.UserHomeDir()
	var out []string
	for _, r := range jail {
		r = filepath.Clean(r)
		if r == "/" || r == filepath.Clean(home) {
			continue
		}
		if _, err := os.Lstat(filepath.Join(r, ".git")); err != nil {
			continue // the cwd inside a project: its top level is in the jail too
		}
		out = append(out, r)
	}
	return out
}

// snapshot takes the named snapshot (pre, post) of each root; a root that
// cannot be snapshotted is said in cp.Error and left out.
func (a *Actor) snapshot(ctx context.Context, req *queue.Request, jail []string, name string, cp *queue.Checkpoint) []checkpoint.Snapshot {
	var out []checkpoint.Snapshot
	rs := roots(req, jail)
	if len(rs) == 0 && cp.Error == "" {
		cp.Error = "not in a git project (other than the home directory): not checkpointed"
	}
	for _, root := range rs {
		s, err := a.Checkpoints.Take(ctx, root, req.ID+"/"+name)
		if err != nil {
			if cp.Error == "" {
				cp.Error = err.Error()
			}
			continue
		}
		if name == "pre" {
			cp.Roots = append(cp.Roots, root)
		}
		out = append(out, s)
	}
	return out
}

// changes takes the snapshots after the run and lists what changed.
func (a *Actor) changes(ctx context.Context, req *queue.Request, jail []string, pre []checkpoint.Snapshot, res *queue.Result) {
	if len(pre) == 0 {
		res.Checkpoint.Roots = nil
		return
	}
	post := a.snapshot(ctx, req, jail, "post", res.Checkpoint)
	for i, p := range post {
		if i >= len(pre) || pre[i].Root != p.Root {
			continue
		}
		cs, err := a.Checkpoints.Changes(ctx, pre[i], p)
		if err != nil {
			res.Checkpoint.Error = err.Error()
			continue
		}
		for _, c := range cs {
			res.ChangedFiles = append(res.ChangedFiles, queue.FileChange{Path: c.Path, Change: c.Change})
		}
	}
}

// run carries out req: a command under the pty runner, or a file change.
func (a *Actor) run(ctx context.Context, req *queue.Request, ro queue.RunOptions, jail []string) (queue.Result, string) {
	logPath, output := ro.LogPath, ro.Output
	if req.Kind == queue.KindExec {
		opt := Options{LogPath: logPath, Output: output, Jail: jail,
			Profile: ro.Verdict.Profile, Unconfined: ro.Unconfined, Pipe: !req.WantsTTY(), Approved: ro.Approved,
			Grants: ro.Verdict.Grants, Hosts: HostSet{Allow: ro.Verdict.Hosts, By: ro.Verdict.HostsBy, Deny: ro.Verdict.HostsDenied}}
		if ro.Verdict.Action == queue.ActionAllowWithCheckpoint {
			opt.RequireConfined = true
		}
		if a.ProjectCaches != "" {
			opt.Caches = ProjectCache(a.ProjectCaches, roots(req, jail))
		}
		return a.Runner.Run(ctx, req, opt)
	}
	start := time.Now()
	res := queue.Result{ID: req.ID, StartedAt: start.UTC(), Log: queue.LogRel(req.ID)}
	ch, err := change.Plan(req, jail)
	if err == nil {
		err = ch.Apply(jail)
	}
	var summary string
	switch {
	case errors.Is(err, change.ErrChanged):
		res.Status, res.Reason = queue.StatusFailed, "a file changed since the change was judged; nothing was written"
	case err != nil:
		res.Status, res.Reason = queue.StatusFailed, err.Error()
	default:
		res.Status, res.ExitCode = queue.StatusDone, new(int)
		summary = ch.Diff()
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
