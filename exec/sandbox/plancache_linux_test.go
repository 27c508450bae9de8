package sandbox

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cacheTree is a home directory with a secret (~/.ssh/id, and
// ~/.ssh/keys/id deeper), a project holding a hidden .env (so both are
// carved: their entries are granted one by one) and a plan cache.
type cacheTree struct {
	home, ssh, proj, src, cache string
	spec                        Spec
}

func newCacheTree(t *testing.T) *cacheTree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	x := &cacheTree{home: filepath.Join(root, "home")}
	x.ssh = filepath.Join(x.home, ".ssh")
	x.proj = filepath.Join(x.home, "proj")
	x.src = filepath.Join(x.proj, "src")
	x.cache = filepath.Join(root, "cache", "plans")
	for _, d := range []string{filepath.Join(x.ssh, "keys"), x.src, filepath.Dir(x.cache)} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for f, s := range map[string]string{filepath.Join(x.ssh, "id"): "SECRET-KEY\n", filepath.Join(x.ssh, "keys", "id"): "SECRET-KEY\n",
		filepath.Join(x.proj, ".env"): "SECRET-ENV\n", filepath.Join(x.src, "main.go"): "package main\n", filepath.Join(x.proj, "id"): "public\n",
		filepath.Join(x.home, "my notes"): "notes\n"} {
		if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	x.spec = Spec{Profile: ReadOnly, Hidden: []string{x.ssh, filepath.Join(x.proj, ".env")}, TmpDir: t.TempDir(), PlanCache: x.cache}
	return x
}

// planPath is where the tree's plan is kept.
func (x *cacheTree) planPath() (string, string) { return planFile(x.cache, x.spec.Base()) }

// cat runs cat on paths confined by the tree's spec, as a new process
// would (nothing kept in this one), and returns what it printed.
func (x *cacheTree) cat(t *testing.T, paths ...string) string {
	t.Helper()
	DropIdle()
	c, err := Prepare(x.spec)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd := osexec.Command("/bin/cat", paths...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := Start(cmd, c, nil); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	return out.String()
}

// forge rewrites the plan file as an agent that knows the format would:
// every watched directory and every grant stamped as it is now (so the
// plan looks fresh), the grant on drop left out, plus extra grants.
func (x *cacheTree) forge(t *testing.T, drop string, extra ...Grant) {
	t.Helper()
	path, sum := x.planPath()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	watch, grants, err := parsePlan(data, sum)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range extra {
		grants = append(grants, cachedGrant{Grant: g})
	}
	var b strings.Builder
	b.WriteString(planVersion + " " + sum + "\n")
	for _, w := range watch {
		var st unix.Stat_t
		if unix.Stat(w.path, &st) == nil {
			w.dev, w.ino, w.ctime = st.Dev, st.Ino, st.Ctim
		}
		kind := "W"
		if w.carved {
			kind = "D"
		}
		fmt.Fprintf(&b, "%s %d %d %d %d %s\n", kind, w.dev, w.ino, w.ctime.Sec, w.ctime.Nsec, w.path)
	}
	root := filepath.Dir(x.home)
	for _, g := range grants {
		// Only the tree's own: the rest (other processes' files in
		// /tmp) may go between one stamp and the next.
		if g.Path == drop || (!within(root, g.Path) && !slices.Contains(extra, g.Grant)) {
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(g.Path, &st) != nil {
			continue // gone (another process's file in /tmp)
		}
		g.dev, g.ino = st.Dev, st.Ino // what the name is now
		fmt.Fprintf(&b, "G %d %d %d %s\n", g.Access, g.dev, g.ino, g.Path)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// load loads the tree's plan as a new process would, and says why it was
// refused (nil: used).
func (x *cacheTree) load(t *testing.T) error {
	t.Helper()
	abi, _ := abiOnce()
	b, err := loadBase(x.spec.Base(), abi, x.cache)
	if b != nil {
		b.close()
	}
	return err
}

// loadForged forges the plan with forge and loads it. Where a carved
// directory changed in between (another process's file in /tmp), the
// directory is carved again from scratch, what the forgery put under it
// dropped and the plan kept again: then it forges and loads again.
func (x *cacheTree) loadForged(t *testing.T, forge func()) error {
	t.Helper()
	path, _ := x.planPath()
	id := func() [2]uint64 {
		var st unix.Stat_t
		_ = unix.Lstat(path, &st)
		return [2]uint64{st.Ino, uint64(st.Ctim.Nano())}
	}
	for range 10 {
		forge()
		before := id()
		err := x.load(t)
		if err != nil || id() == before {
			return err
		}
	}
	t.Fatal("the plan was carved again on every load")
	return nil
}

// TestPlanCacheReused: the plan one process made is used by the next, and
// confines as a plan made from scratch does.
func TestPlanCacheReused(t *testing.T) {
	requireSandbox(t)
	x := newCacheTree(t)
	if out := x.cat(t, filepath.Join(x.ssh, "id"), filepath.Join(x.src, "main.go")); strings.Contains(out, "SECRET") || !strings.Contains(out, "package main") {
		t.Fatalf("planned: %q", out)
	}
	path, _ := x.planPath()
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("no private plan file kept: %v %v", fi, err)
	}
	if err := x.load(t); err != nil {
		t.Fatalf("the kept plan is not used: %v", err)
	}
	out := x.cat(t, filepath.Join(x.ssh, "id"), filepath.Join(x.proj, ".env"), filepath.Join(x.src, "main.go"), filepath.Join(x.proj, "id"), filepath.Join(x.home, "my notes"))
	if strings.Contains(out, "SECRET") || !strings.Contains(out, "package main") || !strings.Contains(out, "public") || !strings.Contains(out, "notes") {
		t.Fatalf("from the kept plan: %q", out)
	}
	// A new entry in a carved directory: that directory is carved again
	// (and the plan kept again), the entry readable, the rest as before.
	if err := os.WriteFile(filepath.Join(x.home, "notes"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := x.cat(t, filepath.Join(x.home, "notes"), filepath.Join(x.ssh, "id"), filepath.Join(x.proj, ".env")); !strings.HasPrefix(out, "notes\n") || strings.Contains(out, "SECRET") {
		t.Fatalf("a new entry after the plan was kept: %q", out)
	}
	if data, err := os.ReadFile(path); err != nil || !strings.Contains(string(data), " "+filepath.Join(x.home, "notes")+"\n") {
		t.Fatalf("the plan kept again has no grant for the new entry: %v\n%s", err, data)
	}
	// A new hidden path where nothing was (~/.aws under the carved home):
	// never granted.
	aws := filepath.Join(x.home, ".aws")
	x.spec.Hidden = append(x.spec.Hidden, aws)
	x.cat(t, "/dev/null")
	if err := os.MkdirAll(aws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(aws, "credentials"), []byte("SECRET-AWS\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := x.cat(t, filepath.Join(aws, "credentials")); strings.Contains(out, "SECRET") {
		t.Fatalf("a hidden path made after the plan was kept: %q", out)
	}
}

// TestPlanCacheRefusesSymlinkSwap: a carved directory gained a hidden
// path's sibling swapped for a symlink into the hidden path, and the agent
// stamped the kept plan as fresh, with the objects the links lead to: the
// plan is refused, made again, and the secret stays unreadable.
func TestPlanCacheRefusesSymlinkSwap(t *testing.T) {
	requireSandbox(t)
	for _, tc := range []struct {
		name       string
		swap, into string // swap is replaced by a symlink to into
		read       string // what would then be read through it
		why        string
	}{
		// ~/proj (a sibling of ~/.ssh, granted whole) -> ~/.ssh.
		{"sibling", "proj", ".ssh", "proj/id", "is a symlink"},
		// ~/proj -> ~/.ssh, where ~/proj/src was granted: ~/.ssh/src
		// is no hidden object itself, only under one, and the plan
		// names its inode.
		{"beneath", "proj", ".ssh", "proj/src/id", "too many levels of symbolic links"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := newCacheTree(t)
			x.cat(t, "/dev/null") // plan kept
			swap := filepath.Join(x.home, tc.swap)
			if err := os.Rename(swap, swap+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(tc.into, swap); err != nil {
				t.Fatal(err)
			}
			var extra []Grant
			drop := ""
			if tc.name == "beneath" {
				drop = swap // its listing grant would be refused first
				// What a plan kept for ~/proj/src reads as ~/.ssh/keys.
				if err := os.Rename(filepath.Join(x.ssh, "keys"), filepath.Join(x.ssh, "src")); err != nil {
					t.Fatal(err)
				}
			} else {
				extra = append(extra, Grant{Path: swap, Access: readAll | writeAll | Ioctl, Dir: true})
			}
			err := x.loadForged(t, func() { x.forge(t, drop, extra...) })
			if !errors.Is(err, errPlanRefused) || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("a plan leading through a swapped symlink: %v, want refused: %s", err, tc.why)
			}
			if out := x.cat(t, filepath.Join(x.home, tc.read)); strings.Contains(out, "SECRET") || !strings.Contains(out, "Permission denied") {
				t.Fatalf("through the swapped symlink: %q", out)
			}
			if err := x.load(t); err != nil {
				t.Fatalf("the plan made again is not kept: %v", err)
			}
		})
	}
}

// TestPlanCacheRefusesForgery: a plan file the agent wrote or put in place
// is never used: grants the planner would not make, a file or directory
// of someone else's or open to others, a symlink, a FIFO, garbage.
func TestPlanCacheRefusesForgery(t *testing.T) {
	requireSandbox(t)
	type forgery struct {
		name string
		do   func(t *testing.T, x *cacheTree, path string)
		why  string
	}
	write := func(s string) func(*testing.T, *cacheTree, string) {
		return func(t *testing.T, x *cacheTree, path string) {
			_, sum := x.planPath()
			if err := os.WriteFile(path, []byte(strings.ReplaceAll(s, "SUM", sum)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := readAll | writeAll | Ioctl
	cases := []forgery{
		{"grants /", func(t *testing.T, x *cacheTree, _ string) { x.forge(t, "", Grant{Path: "/", Access: all, Dir: true}) }, "holds a hidden path"},
		{"grants the home directory", func(t *testing.T, x *cacheTree, _ string) {
			x.forge(t, "", Grant{Path: x.home, Access: all, Dir: true})
		}, "holds a hidden path"},
		{"grants the hidden path", func(t *testing.T, x *cacheTree, _ string) { x.forge(t, "", Grant{Path: x.ssh, Access: all, Dir: true}) }, "is hidden"},
		{"grants beneath the hidden path", func(t *testing.T, x *cacheTree, _ string) {
			x.forge(t, "", Grant{Path: filepath.Join(x.ssh, "keys"), Access: all, Dir: true})
		}, "is hidden"},
		{"grants a dotted path", func(t *testing.T, x *cacheTree, _ string) {
			x.forge(t, "", Grant{Path: x.proj + "/../.ssh", Access: all, Dir: true})
		}, "not a clean absolute path"},
		{"grants a hard link of a secret", func(t *testing.T, x *cacheTree, _ string) {
			link := filepath.Join(x.home, "id-link")
			if err := os.Link(filepath.Join(x.proj, ".env"), link); err != nil && !errors.Is(err, os.ErrExist) {
				t.Fatal(err)
			}
			x.cat(t, "/dev/null") // planned with the link
			x.forge(t, "", Grant{Path: link, Access: all})
		}, "is a hidden object"},
		{"another object than planned", func(t *testing.T, x *cacheTree, path string) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Every grant's inode off by one.
			var b strings.Builder
			for _, l := range strings.SplitAfter(string(data), "\n") {
				if f := strings.SplitN(l, " ", 5); len(f) == 5 && f[0] == "G" {
					var ino uint64
					fmt.Sscan(f[3], &ino)
					l = fmt.Sprintf("G %s %s %d %s", f[1], f[2], ino+1, f[4])
				}
				b.WriteString(l)
			}
			if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "another object than planned"},
		{"unknown rights", write("sluice-plan 1 SUM\nG 4096 1 1 /\n"), "unknown rights"},
		{"another spec's", write("sluice-plan 1 0000\n"), "not a plan of this spec"},
		{"truncated", write("sluice-plan 1 SUM\nG 1 1 1 /usr"), "truncated"},
		{"garbage", write("sluice-plan 1 SUM\nG x y z /\n"), "malformed"},
		{"short line", write("sluice-plan 1 SUM\nW\n"), "malformed"},
		{"empty", write(""), "not a plan of this spec"},
		{"open to others", func(t *testing.T, _ *cacheTree, path string) {
			if err := os.Chmod(path, 0o644); err != nil {
				t.Fatal(err)
			}
		}, "open to others"},
		{"in a directory others write", func(t *testing.T, _ *cacheTree, path string) {
			if err := os.Chmod(filepath.Dir(path), 0o777); err != nil {
				t.Fatal(err)
			}
		}, "writable by others"},
		{"a symlink", func(t *testing.T, _ *cacheTree, path string) {
			if err := os.Rename(path, path+".real"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(path+".real", path); err != nil {
				t.Fatal(err)
			}
		}, "too many levels of symbolic links"},
		{"a FIFO", func(t *testing.T, _ *cacheTree, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := unix.Mkfifo(path, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "not a regular file"},
	}
	if os.Geteuid() == 0 {
		cases = append(cases, forgery{"someone else's", func(t *testing.T, _ *cacheTree, path string) {
			if err := os.Lchown(path, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 65534"}, forgery{"in someone else's directory", func(t *testing.T, _ *cacheTree, path string) {
			if err := os.Lchown(filepath.Dir(path), 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 65534"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newCacheTree(t)
			x.cat(t, "/dev/null") // plan kept
			path, _ := x.planPath()
			err := x.loadForged(t, func() { tc.do(t, x, path) })
			if err == nil || !strings.Contains(err.Error(), tc.why) {
				t.Fatalf("loaded: %v, want refused: %s", err, tc.why)
			}
			// Made again (kept or not), and confining.
			if out := x.cat(t, filepath.Join(x.ssh, "id"), filepath.Join(x.ssh, "keys", "id"), filepath.Join(x.home, "id-link")); strings.Contains(out, "SECRET") {
				t.Fatalf("after a forged plan: %q", out)
			}
		})
	}
}

// FuzzParsePlan: no plan file makes the decoder panic, and what it
// accepts holds only known rights.
func FuzzParsePlan(f *testing.F) {
	f.Add([]byte("sluice-plan 1 S\nW 1 2 3 4 /\nG 2 1 2 /\n"), "S")
	f.Add([]byte("sluice-plan 1 S\nG 63 1 2 /a b\n"), "S")
	f.Add([]byte("sluice-plan 1 S\nW 1 2 3\n"), "S")
	f.Add([]byte("sluice-plan 1 S\nG -1 1 2 /\n"), "S")
	f.Fuzz(func(t *testing.T, data []byte, sum string) {
		_, grants, err := parsePlan(data, sum)
		if err != nil {
			return
		}
		for _, g := range grants {
			if g.Access&^(readAll|writeAll|Ioctl) != 0 {
				t.Fatalf("accepted rights %b", g.Access)
			}
		}
	})
}

// TestPrunePlans: keeping a plan removes the plans idle for planIdle, the
// oldest beyond maxPlans, and dead writers' temporary files, and nothing
// else in the directory.
func TestPrunePlans(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	write := func(name string, age time.Duration) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return path
	}
	var fresh []string
	for i := range maxPlans + 5 {
		fresh = append(fresh, write(fmt.Sprintf("%032d.plan", i), time.Duration(i)*time.Minute))
	}
	keep := write("kept.plan", 40*24*time.Hour) // the one just written (its clock aside)
	idle := write("idle.plan", planIdle+time.Hour)
	deadTmp := write(".plan-123", 2*time.Hour)
	liveTmp := write(".plan-456", time.Minute)
	other := write("notes.txt", planIdle+time.Hour)

	prunePlans(dir, keep, now)

	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	for _, p := range []string{keep, liveTmp, other} {
		if !exists(p) {
			t.Errorf("%s removed", filepath.Base(p))
		}
	}
	for _, p := range []string{idle, deadTmp} {
		if exists(p) {
			t.Errorf("%s kept", filepath.Base(p))
		}
	}
	kept := 0
	for i, p := range fresh {
		if exists(p) {
			kept++
			if i >= maxPlans-1 {
				t.Errorf("%s kept, newer ones removed", filepath.Base(p))
			}
		}
	}
	if kept != maxPlans-1 {
		t.Errorf("%d of the %d recent plans kept, want %d (and the one kept)", kept, len(fresh), maxPlans-1)
	}
}
