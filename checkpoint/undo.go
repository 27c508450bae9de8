package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Run is a checkpointed run as undo needs it: its id (its snapshots are
// the refs ID/pre and ID/post in each root's shadow repository), its
// working directory, its roots, and the runs that ran beside it in the
// same project (a person let one go ahead of its turn).
type Run struct {
	ID, Cwd    string
	Roots      []string
	Overlapped []string
}

// UndoPlan is what undoing a run would do, worked out against the files
// as they are now.
type UndoPlan struct {
	Run       Run      // the run (or undo) being undone
	Roots     []string // the roots it changed files under
	Paths     []string // the files it changed, absolute, sorted
	Conflicts []string // of Paths, those changed again since the run
	Diff      string   // what undoing applies to its own files (now → before the run)
	Since     string   // how the conflicts changed since the run
	Kept      []string // "created" by the run but there before it: left alone
	// Shared are those of Paths that a run overlapping this one changed
	// too, or may have (its changes are not known: it still runs); With
	// names those runs; SharedDiff is what undoing applies to them.
	Shared     []string
	With       []string
	SharedDiff string

	undoID string
	snaps  map[string][3]Snapshot // root → pre, post, now
}

// Without is the plan minus its shared files: what undo restores when the
// person keeps the other runs' files.
func (p *UndoPlan) Without() *UndoPlan {
	q := *p
	q.Paths = slices.DeleteFunc(slices.Clone(p.Paths), func(s string) bool { return slices.Contains(p.Shared, s) })
	q.Conflicts = slices.DeleteFunc(slices.Clone(p.Conflicts), func(s string) bool { return slices.Contains(p.Shared, s) })
	q.Shared, q.SharedDiff = nil, ""
	return &q
}

// PlanUndo works out what undoing run does now, taking the undo's own
// "before" snapshot (undoID/pre) on the way. The files come from the
// snapshots themselves, not from what the caller read about the run (its
// roots only): an edited audit log cannot make undo delete what the run
// did not change. A file that was there before the run but ignored then
// (a run that edited .gitignore) is not "created" by it and is left
// alone. find looks up the runs it overlapped: a file one of them changed
// too is shared, and so is every file when one of them cannot be found.
func (s *Store) PlanUndo(ctx context.Context, run Run, undoID string, find func(id string) (*Run, error)) (*UndoPlan, error) {
	if !validRunID(run.ID) || !validRunID(undoID) {
		return nil, fmt.Errorf("checkpoint: %q or %q is not a run's id", run.ID, undoID)
	}
	p := &UndoPlan{Run: run, undoID: undoID, snaps: map[string][3]Snapshot{}}
	others, err := s.overlapping(ctx, run, find)
	if err != nil {
		return nil, err
	}
	for _, root := range run.Roots {
		if !filepath.IsAbs(root) || filepath.Clean(root) != root {
			return nil, fmt.Errorf("checkpoint: %q is named as a checkpointed root, which is not a clean absolute path", root)
		}
		pre, err := s.Ref(ctx, root, run.ID+"/pre")
		if err != nil {
			return nil, err
		}
		post, err := s.Ref(ctx, root, run.ID+"/post")
		if err != nil {
			return nil, err
		}
		changes, err := s.Changes(ctx, pre, post)
		if err != nil {
			return nil, err
		}
		took, err := s.Time(ctx, pre)
		if err != nil {
			return nil, err
		}
		var under []string
		for _, c := range changes {
			if slices.Contains(strings.Split(c.Path, string(filepath.Separator)), ".git") {
				continue // never a repository's own files
			}
			if c.Change == Created {
				if fi, err := os.Lstat(c.Path); err == nil && fi.ModTime().Before(took.Add(-time.Second)) {
					p.Kept = append(p.Kept, c.Path) // there before the run, ignored then
					continue
				}
			}
			under = append(under, c.Path)
		}
		if len(under) == 0 {
			continue
		}
		now, err := s.Take(ctx, root, undoID+"/pre")
		if err != nil {
			return nil, err
		}
		p.snaps[root] = [3]Snapshot{pre, post, now}
		p.Roots = append(p.Roots, root)
		p.Paths = append(p.Paths, under...)
		var own, shared []string
		for _, path := range under {
			if by := others.changed(path); len(by) > 0 {
				shared = append(shared, path)
				for _, id := range by {
					if !slices.Contains(p.With, id) {
						p.With = append(p.With, id)
					}
				}
			} else {
				own = append(own, path)
			}
		}
		p.Shared = append(p.Shared, shared...)
		conflicts, err := s.conflictsSince(ctx, post, now, under)
		if err != nil {
			return nil, err
		}
		p.Conflicts = append(p.Conflicts, conflicts...)
		for _, d := range []struct {
			into     *string
			from, to Snapshot
			paths    []string
		}{
			{&p.SharedDiff, now, pre, shared},
			{&p.Since, post, now, conflicts},
			{&p.Diff, now, pre, own},
		} {
			if len(d.paths) == 0 {
				continue
			}
			text, err := s.Diff(ctx, d.from, d.to, d.paths)
			if err != nil {
				return nil, err
			}
			*d.into += text
		}
	}
	slices.Sort(p.Paths)
	slices.Sort(p.Shared)
	slices.Sort(p.With)
	return p, nil
}

// overlaps is what the runs one run overlapped changed: path → their ids;
// unknown names the runs whose changes could not be read (every file
// counts as theirs too).
type overlaps struct {
	by      map[string][]string
	unknown []string
}

func (o overlaps) changed(path string) []string {
	return append(slices.Clone(o.by[path]), o.unknown...)
}

// overlapping reads what the runs run overlapped changed, from their own
// snapshots.
func (s *Store) overlapping(ctx context.Context, run Run, find func(id string) (*Run, error)) (overlaps, error) {
	o := overlaps{by: map[string][]string{}}
	for _, id := range run.Overlapped {
		if !validRunID(id) {
			return o, fmt.Errorf("checkpoint: %q is named as a run %s overlapped, which is not a run's id", id, run.ID)
		}
		var other *Run
		var err error
		if find != nil {
			other, err = find(id)
		}
		if err != nil || other == nil {
			o.unknown = append(o.unknown, id)
			continue
		}
		for _, root := range other.Roots {
			pre, err := s.Ref(ctx, root, id+"/pre")
			if err != nil {
				o.unknown = append(o.unknown, id)
				break
			}
			post, err := s.Ref(ctx, root, id+"/post")
			if err != nil {
				o.unknown = append(o.unknown, id)
				break
			}
			changes, err := s.Changes(ctx, pre, post)
			if err != nil {
				return o, err
			}
			for _, c := range changes {
				if !slices.Contains(o.by[c.Path], id) {
					o.by[c.Path] = append(o.by[c.Path], id)
				}
			}
		}
	}
	return o, nil
}

// conflictsSince are those of paths that changed between the run's end
// (post) and now.
func (s *Store) conflictsSince(ctx context.Context, post, now Snapshot, paths []string) ([]string, error) {
	since, err := s.Changes(ctx, post, now)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, c := range since {
		if slices.Contains(paths, c.Path) {
			out = append(out, c.Path)
		}
	}
	return out, nil
}

// pathsUnder are the paths that lie under root.
func pathsUnder(root string, paths []string) []string {
	var out []string
	for _, p := range paths {
		if strings.HasPrefix(p, strings.TrimSuffix(root, string(filepath.Separator))+string(filepath.Separator)) {
			out = append(out, p)
		}
	}
	return out
}

// ApplyUndo restores plan's files and snapshots the result (the undo's
// id/post); it returns what the undo changed and the roots it changed
// them under, for the caller to record. A file that changed after the
// plan was made refuses the whole undo: what the person saw is stale.
func (s *Store) ApplyUndo(ctx context.Context, plan *UndoPlan) (changed []Change, roots []string, err error) {
	for _, root := range plan.Roots {
		snap, ok := plan.snaps[root]
		if !ok {
			continue
		}
		again, err := s.Take(ctx, root, plan.undoID+"/pre")
		if err != nil {
			return nil, nil, err
		}
		moved, err := s.Changes(ctx, snap[2], again)
		if err != nil {
			return nil, nil, err
		}
		for _, c := range moved {
			if slices.Contains(plan.Paths, c.Path) {
				return nil, nil, fmt.Errorf("%s changed after the undo was shown; nothing was restored: look again", c.Path)
			}
		}
		if err := s.Restore(ctx, snap[0], pathsUnder(root, plan.Paths)); err != nil {
			return nil, nil, err
		}
		after, err := s.Take(ctx, root, plan.undoID+"/post")
		if err != nil {
			return nil, nil, err
		}
		cs, err := s.Changes(ctx, again, after)
		if err != nil {
			return nil, nil, err
		}
		changed = append(changed, cs...)
		roots = append(roots, root)
	}
	return changed, roots, nil
}

// validRunID says whether id can name a run's refs: letters, digits, _
// and - only (a request id is 26 of them), so that no id reads as a path
// or a ref expression.
func validRunID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
