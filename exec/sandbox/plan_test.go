package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// planTree is a home directory with secrets, a project, caches, symlinks
// and sluice's spool, built in a temporary directory.
type planTree struct {
	root                      string // the temporary directory, resolved
	home, ssh, idRSA, awsCred string
	awsConfig, bashrc         string
	project, mainGo, sub      string
	cache, spool, log, audit  string
	keyLink, sshLink, projLnk string // symlinks into .ssh and to project
	gnupgLink, vaultGnupg     string // ~/.gnupg -> root/vault/gnupg
	tmp, outside              string
}

func newPlanTree(t *testing.T) *planTree {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(root, "home")
	x := &planTree{
		root:       root,
		home:       home,
		ssh:        filepath.Join(home, ".ssh"),
		idRSA:      filepath.Join(home, ".ssh", "id_rsa"),
		awsCred:    filepath.Join(home, ".aws", "credentials"),
		awsConfig:  filepath.Join(home, ".aws", "config"),
		bashrc:     filepath.Join(home, ".bashrc"),
		project:    filepath.Join(home, "project"),
		mainGo:     filepath.Join(home, "project", "main.go"),
		sub:        filepath.Join(home, "project", "sub"),
		cache:      filepath.Join(home, ".cache", "go-build"),
		spool:      filepath.Join(home, ".sluice", "spool"),
		log:        filepath.Join(home, ".sluice", "spool", "out", "r1.log"),
		audit:      filepath.Join(home, ".sluice", "spool", "audit.log"),
		keyLink:    filepath.Join(home, "key-link"),
		sshLink:    filepath.Join(home, "ssh-link"),
		projLnk:    filepath.Join(home, "project-link"),
		gnupgLink:  filepath.Join(home, ".gnupg"),
		vaultGnupg: filepath.Join(root, "vault", "gnupg"),
		tmp:        filepath.Join(root, "tmp"),
		outside:    filepath.Join(root, "outside"),
	}
	for _, d := range []string{x.ssh, filepath.Dir(x.awsCred), x.sub, x.cache, filepath.Dir(x.log), x.vaultGnupg, x.tmp, x.outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{x.idRSA, filepath.Join(x.ssh, "known_hosts"), x.awsCred, x.awsConfig, x.bashrc, x.mainGo,
		filepath.Join(x.sub, "a.txt"), filepath.Join(x.cache, "entry"), x.log, x.audit,
		filepath.Join(x.vaultGnupg, "secring.gpg"), filepath.Join(root, "vault", "notes.txt"), filepath.Join(x.outside, "f")} {
		if err := os.WriteFile(f, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{x.keyLink: ".ssh/id_rsa", x.sshLink: ".ssh", x.projLnk: "project", x.gnupgLink: x.vaultGnupg} {
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
	}
	return x
}

// spec is the usual spec of the tree: ~/.ssh, ~/.aws/credentials and the
// spool hidden, the project the jail, a cache writable.
func (x *planTree) spec(p Profile) *Spec {
	return &Spec{
		Profile:  p,
		Roots:    []string{x.project},
		Writable: []string{x.cache},
		Hidden:   []string{x.ssh, x.awsCred, x.spool},
		TmpDir:   x.tmp,
	}
}

// union is what one layer's grants allow on p: a grant on p itself and
// every directory grant above it (Landlock's path-beneath rules).
func union(gs []Grant, p string) Access {
	var a Access
	for _, g := range gs {
		if g.Path == p || (g.Dir && within(g.Path, p)) {
			a |= g.Access
		}
	}
	return a
}

// runHandledAccess is what the run layer handles (runHandled): what it
// does not handle, only the base layer decides.
const runHandledAccess = Write | Create | Ioctl

// effective is what the kernel allows on p: each layer allows what it
// grants and what it does not handle, and an access needs both.
func effective(l Layers, p string) Access {
	return union(l.Base, p) & (union(l.Run, p) | ^runHandledAccess)
}

// grantOn returns the union of the grants of gs on exactly p, whether
// there is one, and whether one is a directory grant.
func grantOn(gs []Grant, p string) (Access, bool, bool) {
	var a Access
	found, dir := false, false
	for _, g := range gs {
		if g.Path == p {
			a |= g.Access
			found = true
			dir = dir || g.Dir
		}
	}
	return a, found, dir
}

func (a Access) String() string {
	var s []string
	for _, n := range []struct {
		a    Access
		name string
	}{{Read, "Read"}, {ReadDir, "ReadDir"}, {Exec, "Exec"}, {Write, "Write"}, {Create, "Create"}, {Ioctl, "Ioctl"}} {
		if a&n.a != 0 {
			s = append(s, n.name)
		}
	}
	if len(s) == 0 {
		return "0"
	}
	return strings.Join(s, "|")
}

func dumpGrants(l Layers, under string) string {
	var b strings.Builder
	for _, layer := range []struct {
		name string
		gs   []Grant
	}{{"base", l.Base}, {"run", l.Run}} {
		for _, g := range layer.gs {
			if within(under, g.Path) {
				fmt.Fprintf(&b, "  %s %s %v dir=%v\n", layer.name, g.Path, g.Access, g.Dir)
			}
		}
	}
	return b.String()
}

// ancestors lists the directories strictly above p, from "/" down.
func ancestors(p string) []string {
	var out []string
	for d := filepath.Dir(p); ; d = filepath.Dir(d) {
		out = append(out, d)
		if d == "/" {
			break
		}
	}
	slices.Reverse(out)
	return out
}

// everything is what the base layer gives what it does not carve.
const everything = readAll | writeAll | Ioctl

// checkInvariants asserts what must hold of any plan:
//   - no symlink is granted, in either layer;
//   - no base grant lies in a hidden path, and a base grant that covers
//     one is a directory above it with ReadDir only;
//   - whatever both layers grant, nothing but listing reaches a hidden
//     path or anything in it;
//   - every other entry on the way down to a hidden path (inside the
//     test's tree, where nothing else changes it) gets every right in the
//     base layer, and the directories on the way get ReadDir;
//   - the base layer depends on the hidden paths alone, and each layer
//     names each grant once.
func checkInvariants(t *testing.T, x *planTree, s *Spec, l Layers) {
	t.Helper()
	hidden := resolveAll(s.Hidden)
	for _, layer := range [][]Grant{l.Base, l.Run} {
		seen := map[Grant]bool{}
		for _, g := range layer {
			if fi, err := os.Lstat(g.Path); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				t.Errorf("symlink %s is granted %v", g.Path, g.Access)
			}
			// Devices are granted by name, as they are; a device named
			// twice (the TTY is /dev/tty) is harmless.
			if seen[g] && !strings.HasPrefix(g.Path, "/dev/") {
				t.Errorf("grant %s %v dir=%v is given twice in one layer", g.Path, g.Access, g.Dir)
			}
			seen[g] = true
		}
	}
	for _, g := range l.Base {
		for _, h := range hidden {
			switch {
			case within(h, g.Path):
				t.Errorf("base grant %s %v lies in hidden %s", g.Path, g.Access, h)
			case within(g.Path, h) && (!g.Dir || g.Access != ReadDir):
				t.Errorf("base grant %s %v (dir %v) covers hidden %s; only ReadDir on a directory above it may", g.Path, g.Access, g.Dir, h)
			}
		}
	}
	for _, h := range hidden {
		for _, p := range []string{h, filepath.Join(h, "id_rsa"), filepath.Join(h, "new", "deep")} {
			if a := effective(l, p) &^ ReadDir; a != 0 {
				t.Errorf("hidden %s: effective access %v", p, a)
			}
		}
	}
	isAncestor := func(p string) bool {
		for _, h := range hidden {
			if h != p && within(p, h) {
				return true
			}
		}
		return false
	}
	for _, h := range hidden {
		for _, a := range ancestors(h) {
			acc, ok, dir := grantOn(l.Base, a)
			if !ok || !dir || acc != ReadDir {
				t.Errorf("directory %s above hidden %s: base grant %v (found %v, dir %v), want ReadDir", a, h, acc, ok, dir)
			}
			if !within(x.root, a) {
				continue
			}
			entries, err := os.ReadDir(a)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				p := filepath.Join(a, e.Name())
				acc, ok, _ := grantOn(l.Base, p)
				switch {
				case e.Type()&os.ModeSymlink != 0:
					if ok {
						t.Errorf("symlink %s is granted %v", p, acc)
					}
				case slices.Contains(hidden, p):
					if ok {
						t.Errorf("hidden %s is granted %v", p, acc)
					}
				case isAncestor(p):
					if acc != ReadDir {
						t.Errorf("%s, above a hidden path, has %v (found %v), want ReadDir", p, acc, ok)
					}
				case e.IsDir():
					if acc != everything {
						t.Errorf("sibling directory %s on the way to %s has %v (found %v), want %v", p, h, acc, ok, Access(everything))
					}
				default:
					if acc != fileAccess {
						t.Errorf("sibling file %s on the way to %s has %v (found %v), want %v", p, h, acc, ok, Access(fileAccess))
					}
				}
			}
		}
	}
	// (Only inside the test's tree: other tests change /tmp meanwhile.)
	mine := func(gs []Grant) []Grant {
		return slices.DeleteFunc(slices.Clone(gs), func(g Grant) bool { return !within(x.root, g.Path) })
	}
	base, _ := PlanBase(s.Base())
	if !slices.Equal(mine(base), mine(l.Base)) {
		t.Errorf("Plan's base differs from PlanBase(s.Base()): the base depends on more than Base names")
	}
}

func TestPlan(t *testing.T) {
	t.Parallel()
	type check func(t *testing.T, x *planTree, l Layers)
	path := func(f func(x *planTree) string) func(x *planTree) string { return f }
	project := path(func(x *planTree) string { return x.project })
	tmp := path(func(x *planTree) string { return x.tmp })
	cache := path(func(x *planTree) string { return x.cache })
	home := path(func(x *planTree) string { return x.home })
	// can asserts that p (and a new entry inside, for a directory) is
	// allowed want, and cannot asserts it is allowed none of it.
	can := func(p func(*planTree) string, want Access) check {
		return func(t *testing.T, x *planTree, l Layers) {
			t.Helper()
			if a := effective(l, p(x)); a&want != want {
				t.Errorf("%s: effective %v, want %v", p(x), a, want)
			}
		}
	}
	cannot := func(p func(*planTree) string, not Access) check {
		return func(t *testing.T, x *planTree, l Layers) {
			t.Helper()
			if a := effective(l, p(x)); a&not != 0 {
				t.Errorf("%s: effective %v, want none of %v", p(x), a, not)
			}
		}
	}
	in := func(p func(*planTree) string, name string) func(*planTree) string {
		return func(x *planTree) string { return filepath.Join(p(x), name) }
	}
	// noRunWrite asserts that no run grant writes at, above or below p.
	noRunWrite := func(p func(*planTree) string) check {
		return func(t *testing.T, x *planTree, l Layers) {
			t.Helper()
			for _, g := range l.Run {
				if g.Access&writeAll != 0 && (within(g.Path, p(x)) || within(p(x), g.Path)) {
					t.Errorf("run grant %s %v writes %s", g.Path, g.Access, p(x))
				}
			}
		}
	}
	runDir := func(p func(*planTree) string) check {
		return func(t *testing.T, x *planTree, l Layers) {
			t.Helper()
			if a, ok, dir := grantOn(l.Run, p(x)); !ok || !dir || a != writeAll {
				t.Errorf("%s: run grant %v (found %v, dir %v), want %v", p(x), a, ok, dir, Access(writeAll))
			}
		}
	}
	const rw = readAll | writeAll
	usual := []check{can(tmp, rw), can(in(tmp, "new"), rw), can(cache, rw), can(in(cache, "entry"), Read|Write),
		runDir(tmp), runDir(cache), cannot(in(func(x *planTree) string { return x.outside }, "f"), writeAll),
		can(in(func(x *planTree) string { return x.outside }, "f"), Read)}
	for _, tc := range []struct {
		name   string
		spec   func(x *planTree) *Spec
		checks []check
	}{
		{
			name: "read_only",
			spec: func(x *planTree) *Spec { return x.spec(ReadOnly) },
			checks: append([]check{noRunWrite(project), cannot(project, writeAll), cannot(in(project, "main.go"), writeAll),
				can(in(project, "main.go"), Read|Exec), can(project, readAll),
				cannot(func(*planTree) string { return "/dev/shm" }, writeAll)}, usual...),
		},
		{
			name:   "mutating",
			spec:   func(x *planTree) *Spec { return x.spec(Mutating) },
			checks: append([]check{runDir(project), can(project, rw), can(in(project, "main.go"), Read|Write), can(in(project, "new"), rw)}, usual...),
		},
		{
			name:   "networked",
			spec:   func(x *planTree) *Spec { return x.spec(Networked) },
			checks: append([]check{runDir(project), can(project, rw), can(in(project, "main.go"), Read|Write)}, usual...),
		},
		{
			// Home as the jail: it holds ~/.ssh, so home itself may not
			// get Create (Landlock would then create inside .ssh too), nor
			// Write; its files and other directories are written.
			name: "mutating root holds a hidden path",
			spec: func(x *planTree) *Spec {
				s := x.spec(Mutating)
				s.Roots = []string{x.home}
				return s
			},
			checks: []check{cannot(home, writeAll), can(home, ReadDir), can(in(home, ".bashrc"), Read|Write),
				can(project, rw), can(in(project, "new"), rw), can(tmp, rw),
				// .aws holds the hidden credentials: no Create there, its
				// other file still writable.
				cannot(in(home, ".aws"), writeAll), can(in(home, ".aws/config"), Read|Write),
				cannot(in(home, ".ssh/id_rsa"), Read|Write), cannot(in(home, ".sluice/spool/out/r1.log"), Read|Write)},
		},
		{
			// A writable cache that holds a hidden path, read-only run.
			name: "read_only writable holds a hidden path",
			spec: func(x *planTree) *Spec {
				s := x.spec(ReadOnly)
				s.Writable = []string{filepath.Join(x.home, ".sluice")}
				return s
			},
			checks: []check{noRunWrite(project), cannot(in(home, ".sluice"), writeAll),
				cannot(in(home, ".sluice/spool/audit.log"), Read|Write)},
		},
		{
			name: "hidden inside the root",
			spec: func(x *planTree) *Spec {
				s := x.spec(Networked)
				s.Hidden = append(s.Hidden, filepath.Join(x.project, "main.go"))
				return s
			},
			checks: []check{cannot(project, writeAll), can(project, ReadDir), can(func(x *planTree) string { return x.sub }, rw),
				can(in(project, "sub/new"), rw), cannot(in(project, "main.go"), Read|Write)},
		},
		{
			// Spelled through symlinks: the grants name the objects.
			name: "symlinked spellings",
			spec: func(x *planTree) *Spec {
				s := x.spec(Mutating)
				s.Roots = []string{x.projLnk}
				s.Hidden = []string{x.sshLink, x.awsCred, x.spool, x.gnupgLink}
				return s
			},
			checks: []check{runDir(project), cannot(in(home, ".ssh/id_rsa"), Read),
				func(t *testing.T, x *planTree, l Layers) {
					t.Helper()
					for _, link := range []string{x.projLnk, x.sshLink, x.keyLink, x.gnupgLink} {
						for _, gs := range [][]Grant{l.Base, l.Run} {
							if a, ok, _ := grantOn(gs, link); ok {
								t.Errorf("symlink %s granted %v", link, a)
							}
						}
					}
					if a := effective(l, filepath.Join(x.vaultGnupg, "secring.gpg")) &^ ReadDir; a != 0 {
						t.Errorf("target of a hidden link: %v", a)
					}
					if a := effective(l, filepath.Join(x.root, "vault", "notes.txt")); a&Read == 0 {
						t.Errorf("sibling of the hidden link's target not readable: %v", a)
					}
				}},
		},
		{
			name: "missing paths are ignored",
			spec: func(x *planTree) *Spec {
				s := x.spec(Mutating)
				s.Roots = append(s.Roots, filepath.Join(x.root, "nope-root"))
				s.Writable = append(s.Writable, filepath.Join(x.root, "nope-writable"))
				// A missing secret inside the project must not split it.
				s.Hidden = append(s.Hidden, filepath.Join(x.project, "nope-hidden", "deeper"))
				s.TmpDir = filepath.Join(x.root, "nope-tmp")
				return s
			},
			checks: []check{runDir(project), can(in(project, "main.go"), Read|Write), func(t *testing.T, x *planTree, l Layers) {
				t.Helper()
				for _, gs := range [][]Grant{l.Base, l.Run} {
					for _, g := range gs {
						if strings.Contains(g.Path, "nope-") {
							t.Errorf("missing path granted: %s %v", g.Path, g.Access)
						}
						if g.Path == x.mainGo {
							t.Errorf("project split for a missing secret: %s %v", g.Path, g.Access)
						}
					}
				}
				// Its nearest existing parent is watched: creating it
				// must make the base stale.
				if !slices.Contains(l.Watch, x.project) {
					t.Errorf("watch %q lacks %s, the nearest parent of a missing hidden path", l.Watch, x.project)
				}
			}},
		},
		{
			name: "duplicates collapse",
			spec: func(x *planTree) *Spec {
				s := x.spec(Mutating)
				s.Roots = []string{x.project, x.project + "/", x.projLnk, filepath.Join(x.sub, "..")}
				s.Writable = []string{x.cache, x.cache, x.project}
				s.Hidden = []string{x.ssh, x.sshLink, x.ssh + "/", x.awsCred, x.spool}
				return s
			},
			checks: []check{runDir(project), func(t *testing.T, x *planTree, l Layers) {
				t.Helper()
				if _, n := grantCount(l.Run, x.project); n != 1 {
					t.Errorf("%s: %d run grants, want 1", x.project, n)
				}
			}},
		},
		{
			name: "devices",
			spec: func(x *planTree) *Spec {
				s := x.spec(ReadOnly)
				s.TTY = "/dev/null"
				return s
			},
			checks: []check{func(t *testing.T, x *planTree, l Layers) {
				t.Helper()
				for _, d := range []string{"/dev/null", "/dev/tty"} {
					if a, ok, dir := grantOn(l.Run, d); !ok || dir || a != Write|Ioctl {
						t.Errorf("%s: run grant %v (found %v, dir %v), want Write|Ioctl", d, a, ok, dir)
					}
					if a := effective(l, d); a&(Read|Write|Ioctl) != Read|Write|Ioctl {
						t.Errorf("%s: effective %v", d, a)
					}
				}
			}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := newPlanTree(t)
			s := tc.spec(x)
			if err := s.Validate(); err != nil {
				t.Fatal(err)
			}
			l := Plan(s)
			checkInvariants(t, x, s, l)
			for _, c := range tc.checks {
				c(t, x, l)
			}
			if t.Failed() {
				t.Logf("grants under %s:\n%s", x.root, dumpGrants(l, x.root))
			}
		})
	}
}

func grantCount(gs []Grant, p string) (Access, int) {
	var a Access
	n := 0
	for _, g := range gs {
		if g.Path == p {
			a |= g.Access
			n++
		}
	}
	return a, n
}

// TestPlanWatch: the base is watched where a change can make it wrong:
// every directory it listed (on the way down to each hidden path) and the
// nearest existing parent of each hidden path.
func TestPlanWatch(t *testing.T) {
	t.Parallel()
	x := newPlanTree(t)
	missing := filepath.Join(x.home, ".kube", "config") // ~/.kube does not exist
	_, watch := PlanBase(BaseSpec{Hidden: []string{x.ssh, x.awsCred, x.spool, missing}})
	for _, h := range []string{x.ssh, x.awsCred, x.spool} {
		for _, a := range ancestors(h) {
			if !slices.Contains(watch, a) {
				t.Errorf("watch lacks %s, listed on the way to %s", a, h)
			}
		}
	}
	if !slices.Contains(watch, x.home) {
		t.Errorf("watch lacks %s, the nearest parent of missing %s", x.home, missing)
	}
	for _, w := range watch {
		if within(x.root, w) && !slices.Contains([]string{x.root, x.home, filepath.Dir(x.awsCred), filepath.Dir(x.spool)}, w) {
			t.Errorf("watch holds %s, above no hidden path", w)
		}
	}
}

// TestPlanWritableInEveryProfile: TmpDir and Writable are written whatever
// the profile; only Roots depend on it.
func TestPlanWritableInEveryProfile(t *testing.T) {
	t.Parallel()
	for _, p := range Profiles() {
		t.Run(string(p), func(t *testing.T) {
			t.Parallel()
			x := newPlanTree(t)
			l := Plan(x.spec(p))
			for _, d := range []string{x.tmp, x.cache, filepath.Join(x.cache, "entry"), filepath.Join(x.tmp, "new")} {
				if a := effective(l, d); a&(Write|Create) != Write|Create {
					t.Errorf("%s: effective %v, want Write|Create", d, a)
				}
			}
			if a := effective(l, x.mainGo); p.Writes() != (a&Write != 0) {
				t.Errorf("%s in the root: effective %v (profile writes: %v)", x.mainGo, a, p.Writes())
			}
			if a := effective(l, filepath.Join(x.outside, "f")); a&writeAll != 0 || a&Read == 0 {
				t.Errorf("outside the roots: %v, want read and no write", a)
			}
		})
	}
}

func TestSpecValidate(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		spec Spec
		ok   bool
	}{
		{Spec{Profile: ReadOnly}, true},
		{Spec{Profile: Networked, Roots: []string{"/a"}, TmpDir: "/t"}, true},
		{Spec{Profile: ""}, false},
		{Spec{Profile: "root"}, false},
		{Spec{Profile: Mutating, Roots: []string{"rel"}}, false},
		{Spec{Profile: Mutating, Hidden: []string{"./x"}}, false},
		{Spec{Profile: Mutating, TmpDir: "tmp"}, false},
		{Spec{Profile: Mutating, TTY: "pts/1"}, false},
	} {
		if err := tc.spec.Validate(); (err == nil) != tc.ok {
			t.Errorf("Validate(%+v) = %v, want ok %v", tc.spec, err, tc.ok)
		}
	}
}

func TestParseProfile(t *testing.T) {
	t.Parallel()
	for _, p := range Profiles() {
		got, err := ParseProfile(string(p))
		if err != nil || got != p {
			t.Errorf("ParseProfile(%q) = %q, %v", p, got, err)
		}
	}
	if _, err := ParseProfile("READ_ONLY"); err == nil {
		t.Error("ParseProfile is case-insensitive")
	}
	if ReadOnly.Writes() || ReadOnly.Network() || !Mutating.Writes() || Mutating.Network() || !Networked.Writes() || !Networked.Network() {
		t.Error("Writes/Network")
	}
}
