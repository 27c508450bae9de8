package sandbox

import (
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestBaseSeesNewSecret: a secret path that does not exist when the base
// layer is built, then appears (an agent's tool logs in: ~/.aws is made),
// is hidden from the next run: the base is built again.
func TestBaseSeesNewSecret(t *testing.T) {
	if _, err := Available(); err != nil {
		t.Skip(err)
	}
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	aws := filepath.Join(home, ".aws")
	spec := Spec{Profile: ReadOnly, Hidden: []string{aws, filepath.Join(home, ".ssh")}, TmpDir: t.TempDir()}
	cat := func() string {
		t.Helper()
		c, err := Prepare(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cmd := osexec.Command("/bin/cat", filepath.Join(aws, "credentials"))
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := Start(cmd, c, nil); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
		return out.String()
	}
	if out := cat(); !strings.Contains(out, "No such file") {
		t.Fatalf("before ~/.aws exists: %q", out)
	}
	if err := os.MkdirAll(aws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(aws, "credentials"), []byte("aws_secret_access_key = SECRET-KEY\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := cat(); strings.Contains(out, "SECRET-KEY") || !strings.Contains(out, "Permission denied") {
		t.Fatalf("a secret path made after the base was built is readable: %q", out)
	}
}

// refreshTree is a home directory holding a secret (~/.ssh/id), so that
// the home directory is carved: each of its entries granted one by one.
type refreshTree struct {
	home, ssh string
	spec      Spec
}

func newRefreshTree(t *testing.T) *refreshTree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	x := &refreshTree{home: filepath.Join(root, "home")}
	x.ssh = filepath.Join(x.home, ".ssh")
	if err := os.MkdirAll(x.ssh, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(x.ssh, "id"), []byte("SECRET-KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	x.spec = Spec{Profile: ReadOnly, Hidden: []string{x.ssh, filepath.Join(x.home, ".netrc")}, TmpDir: t.TempDir()}
	return x
}

// prepare prepares the tree's spec, closed at the end of the test.
func (x *refreshTree) prepare(t *testing.T) *Confinement {
	t.Helper()
	c, err := Prepare(x.spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// cat runs cat on path, confined by c.
func catWith(t *testing.T, c *Confinement, path string) string {
	t.Helper()
	cmd := osexec.Command("/bin/cat", path)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := Start(cmd, c, nil); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return out.String()
}

// sameBase prepares again after change, up to 5 times while the base was
// planned again anyway (another process renamed something out of /tmp,
// carved around the tree), and reports whether the base was kept.
func (x *refreshTree) sameBase(t *testing.T, change func(i int)) (*Confinement, bool) {
	t.Helper()
	for i := range 5 {
		c1 := x.prepare(t)
		change(i)
		c2 := x.prepare(t)
		if c2.base == c1.base {
			return c2, true
		}
	}
	return nil, false
}

// TestBaseRefreshNewEntry: a new entry in a carved directory, or one
// deleted, or renamed within it, keeps the base: one rule added for a new
// one, readable by the next run; the secret stays hidden.
func TestBaseRefreshNewEntry(t *testing.T) {
	if _, err := Available(); err != nil {
		t.Skip(err)
	}
	x := newRefreshTree(t)
	c, ok := x.sameBase(t, func(i int) {
		if err := os.WriteFile(filepath.Join(x.home, fmt.Sprintf("new%d", i)), []byte("new\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if !ok {
		t.Fatal("a new entry in the carved home directory: the base was planned again")
	}
	if out := catWith(t, c, filepath.Join(x.home, "new0")); out != "new\n" {
		t.Fatalf("the new entry, by the next run: %q", out)
	}
	if out := catWith(t, c, filepath.Join(x.ssh, "id")); strings.Contains(out, "SECRET") {
		t.Fatalf("the secret, after a refresh: %q", out)
	}
	c, ok = x.sameBase(t, func(i int) {
		if err := os.Remove(filepath.Join(x.home, "new0")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	})
	if !ok {
		t.Fatal("an entry deleted from the carved home directory: the base was planned again")
	}
	if c.base.plan.dead == 0 {
		t.Error("the deleted entry's rule is not counted")
	}
	if err := os.WriteFile(filepath.Join(x.home, "tomove"), []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, ok = x.sameBase(t, func(i int) {
		if err := os.Rename(filepath.Join(x.home, "tomove"), filepath.Join(x.home, "renamed")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	})
	if !ok {
		t.Fatal("an entry renamed within the carved home directory: the base was planned again")
	}
	if out := catWith(t, c, filepath.Join(x.home, "renamed")); out != "new\n" {
		t.Fatalf("the renamed entry: %q", out)
	}
}

// TestBaseRefreshMovedIntoSecret: an entry granted (made after the base
// was built, or before) then moved to where a secret is read from, is
// never readable there: its rule would follow it, so the base is planned
// again.
func TestBaseRefreshMovedIntoSecret(t *testing.T) {
	if _, err := Available(); err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name     string
		before   bool   // the entry is there when the base is built
		from, to string // under the home directory
	}{
		// git credential-store's way: a lock file renamed over the file.
		{"lock file renamed over a hidden path", false, ".netrc.lock", ".netrc"},
		{"entry moved into a hidden directory", true, "notes", ".ssh/notes"},
		{"new entry moved into a hidden directory", false, "notes", ".ssh/notes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newRefreshTree(t)
			from, to := filepath.Join(x.home, tc.from), filepath.Join(x.home, tc.to)
			write := func() {
				if err := os.WriteFile(from, []byte("SECRET-MOVED\n"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if tc.before {
				write()
			}
			c1 := x.prepare(t)
			if !tc.before {
				write()
			}
			c2 := x.prepare(t)
			if out := catWith(t, c2, from); out != "SECRET-MOVED\n" {
				t.Fatalf("before the move, where it is not hidden: %q", out)
			}
			if !tc.before && c2.base != c1.base {
				t.Log("planned again before the move (other changes around the tree)")
			}
			if err := os.Rename(from, to); err != nil {
				t.Fatal(err)
			}
			c3 := x.prepare(t)
			if c3.base == c2.base {
				t.Error("the base was kept after a granted entry moved into a hidden path")
			}
			if out := catWith(t, c3, to); strings.Contains(out, "SECRET") {
				t.Fatalf("moved into a hidden path: %q", out)
			}
		})
	}
}

// TestBaseRefreshByEvents: a base a long-lived process keeps learns which
// entries of a carved directory changed from their events, without
// listing the directory again: a new entry is readable by the next run,
// one renamed over a hidden path still makes a new plan, and events lost
// (the queue overflowed) make it list the directory whole once.
func TestBaseRefreshByEvents(t *testing.T) {
	if _, err := Available(); err != nil {
		t.Skip(err)
	}
	x := newRefreshTree(t)
	c1 := x.prepare(t)
	if c1.base.plan == nil || c1.base.plan.events == nil {
		t.Skip("no inotify watch here: the base lists its directories")
	}
	// Whatever changed while the base was planned is listed once.
	c1, _ = x.sameBase(t, func(i int) {})
	if c1 == nil {
		t.Fatal("the base was planned again with nothing changed")
	}
	before := listings.Load()
	c2, ok := x.sameBase(t, func(i int) {
		if err := os.WriteFile(filepath.Join(x.home, fmt.Sprintf("by-event%d", i)), []byte("evented\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	})
	if !ok {
		t.Fatal("a new entry: the base was planned again")
	}
	if out := catWith(t, c2, filepath.Join(x.home, "by-event0")); out != "evented\n" {
		t.Fatalf("the new entry, by the next run: %q", out)
	}
	if n := listings.Load() - before; n != 0 {
		t.Errorf("a new entry: the carved directory was listed %d times", n)
	}
	// Lost events: listed whole, the base kept.
	c2.base.plan.events.overflow()
	if err := os.WriteFile(filepath.Join(x.home, "after-overflow"), []byte("listed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before = listings.Load()
	c3 := x.prepare(t)
	if listings.Load() == before {
		t.Error("events lost: the carved directories were not listed")
	}
	if out := catWith(t, c3, filepath.Join(x.home, "after-overflow")); out != "listed\n" {
		t.Fatalf("the entry made after the events were lost: %q", out)
	}
	// A lock file granted, then renamed over a hidden path: its rule
	// would follow it, so the base is planned again.
	lock := filepath.Join(x.home, ".netrc.lock")
	if err := os.WriteFile(lock, []byte("SECRET-MOVED\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c4 := x.prepare(t)
	if out := catWith(t, c4, lock); out != "SECRET-MOVED\n" {
		t.Fatalf("the lock file, before the move: %q", out)
	}
	if err := os.Rename(lock, filepath.Join(x.home, ".netrc")); err != nil {
		t.Fatal(err)
	}
	c5 := x.prepare(t)
	if c5.base == c4.base {
		t.Error("the base was kept after a granted entry was renamed over a hidden path")
	}
	if out := catWith(t, c5, filepath.Join(x.home, ".netrc")); strings.Contains(out, "SECRET") {
		t.Fatalf("renamed over a hidden path: %q", out)
	}
}

// TestWatchable: a carved directory is watched only on a file system
// whose every change inotify sees, by names compared byte for byte;
// elsewhere (here /proc, as a network file system would be) it is listed
// whenever it changed.
func TestWatchable(t *testing.T) {
	if !watchable(t.TempDir()) {
		t.Skip("the test's temporary directory is on a file system not known as local")
	}
	if watchable("/proc") {
		t.Error("/proc taken for a local file system whose changes inotify sees")
	}
	if watchable(filepath.Join(t.TempDir(), "missing")) {
		t.Error("a directory that is not there taken as watchable")
	}
}

// TestBaseRefreshPhantomEntry: an entry the plan holds under a name the
// events never mention again (a case-insensitive directory's "Notes",
// found by lstat after "notes" took its place) does not vouch for its
// object when "notes" moves into a hidden directory: only an entry
// examined with the change does. The base is planned again, and the
// object is not readable where it went.
func TestBaseRefreshPhantomEntry(t *testing.T) {
	if _, err := Available(); err != nil {
		t.Skip(err)
	}
	x := newRefreshTree(t)
	notes := filepath.Join(x.home, "notes")
	if err := os.WriteFile(notes, []byte("SECRET-MOVED\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c1, ok := x.sameBase(t, func(int) {})
	if !ok {
		t.Fatal("the base was planned again with nothing changed")
	}
	if c1.base.plan == nil || c1.base.plan.events == nil || !c1.base.plan.events.tells(x.home) {
		t.Skip("the home directory is not watched here")
	}
	basesMu.Lock()
	pl := c1.base.plan
	ents := pl.p.entries[x.home]
	i := slices.IndexFunc(ents, func(e plannedEntry) bool { return e.name == "notes" })
	if i < 0 || ents[i].grant < 0 {
		basesMu.Unlock()
		t.Fatal("notes is not granted")
	}
	phantom := ents[i]
	phantom.name = "Notes"
	pl.p.entries[x.home] = append(ents, phantom)
	basesMu.Unlock()
	if err := os.Rename(notes, filepath.Join(x.ssh, "key")); err != nil {
		t.Fatal(err)
	}
	c2 := x.prepare(t)
	if c2.base == c1.base {
		t.Error("the base was kept: an entry nobody examined vouched for the object moved away")
	}
	if out := catWith(t, c2, filepath.Join(x.ssh, "key")); strings.Contains(out, "SECRET") {
		t.Fatalf("moved into a hidden directory: %q", out)
	}
}
