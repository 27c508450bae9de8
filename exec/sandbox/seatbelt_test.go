package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// seatbeltSpec is a spec with every kind of path and a secret inside a
// root.
func seatbeltSpec(p Profile) *Spec {
	return &Spec{
		Profile:  p,
		Roots:    []string{"/Users/u/proj"},
		Writable: []string{"/Users/u/Library/Caches/go-build"},
		Hidden:   []string{"/Users/u/.ssh", "/Users/u/proj/.env", "/Users/u/.sluice/spool"},
		TmpDir:   "/tmp/sluice-r1",
		TTY:      "/dev/ttys003",
	}
}

// lines splits a profile into its lines.
func lines(profile string) []string {
	return strings.Split(strings.TrimSuffix(profile, "\n"), "\n")
}

// checkInOrder fails unless every want line is in profile, each after the
// one before it.
func checkInOrder(t *testing.T, profile string, want []string) {
	t.Helper()
	ls := lines(profile)
	at, prev := 0, ""
	for _, w := range want {
		i := slices.Index(ls[at:], w)
		if i < 0 {
			if slices.Contains(ls, w) {
				t.Errorf("line %q is in the profile but not after %q:\n%s", w, prev, profile)
			} else {
				t.Errorf("line %q is missing from the profile:\n%s", w, profile)
			}
			continue
		}
		at += i + 1
		prev = w
	}
}

func TestSeatbeltProfiles(t *testing.T) {
	t.Parallel()
	head := []string{
		"(version 1)",
		"(allow default)",
		"(deny file-write*)",
		`(allow file-write* (literal "/dev/null"))`,
		`(allow file-write* (literal "/dev/tty"))`,
		`(allow file-write* (literal "/dev/dtracehelper"))`,
		`(allow file-write* (subpath "/dev/fd"))`,
		`(allow file-write* (literal "/dev/ttys003"))`,
		`(allow file-write* (subpath "/tmp/sluice-r1"))`,
		`(allow file-write* (subpath "/private/tmp/sluice-r1"))`,
		`(allow file-write* (subpath "/Users/u/Library/Caches/go-build"))`,
	}
	rootWrite := `(allow file-write* (subpath "/Users/u/proj"))`
	secrets := []string{
		`(deny file-read* file-write* (subpath "/Users/u/.ssh"))`,
		`(deny file-read* file-write* (subpath "/Users/u/proj/.env"))`,
		`(deny file-read* file-write* (subpath "/Users/u/.sluice/spool"))`,
		"(deny signal)",
		"(allow signal (target same-sandbox))",
	}
	noNet := []string{"(deny network*)"}
	inet := []string{
		"(deny network-outbound (remote unix-socket))",
		"(deny network-bind (local unix-socket))",
		`(allow network-outbound (remote unix-socket (path-literal "/private/var/run/mDNSResponder")))`,
	}
	cat := func(parts ...[]string) []string { return slices.Concat(parts...) }
	tests := []struct {
		profile Profile
		want    []string // in this order
		absent  []string
	}{
		{ReadOnly, cat(head, secrets, noNet), cat([]string{rootWrite}, inet)},
		{Mutating, cat(head, []string{rootWrite}, secrets, noNet), inet},
		{Networked, cat(head, []string{rootWrite}, secrets, inet), noNet},
	}
	for _, tt := range tests {
		t.Run(string(tt.profile), func(t *testing.T) {
			t.Parallel()
			got, err := SeatbeltProfile(seatbeltSpec(tt.profile))
			if err != nil {
				t.Fatalf("SeatbeltProfile: %v", err)
			}
			checkInOrder(t, got, tt.want)
			for _, a := range tt.absent {
				if slices.Contains(lines(got), a) {
					t.Errorf("line %q should not be in the %s profile:\n%s", a, tt.profile, got)
				}
			}
			if !strings.HasSuffix(got, "\n") {
				t.Errorf("profile does not end in a newline:\n%s", got)
			}
		})
	}
}

// A hidden path is denied after every grant that covers it, whichever
// list the grant came from: in SBPL the last matching rule wins.
func TestSeatbeltHiddenOverridesGrants(t *testing.T) {
	t.Parallel()
	s := &Spec{
		Profile:  Mutating,
		Roots:    []string{"/work"},
		Writable: []string{"/work/cache"},
		Hidden:   []string{"/work/cache/token", "/work/secret"},
		TmpDir:   "/work/tmp",
		TTY:      "/work/secret/tty",
	}
	got, err := SeatbeltProfile(s)
	if err != nil {
		t.Fatalf("SeatbeltProfile: %v", err)
	}
	ls := lines(got)
	index := func(l string) int {
		i := slices.Index(ls, l)
		if i < 0 {
			t.Fatalf("line %q is missing from the profile:\n%s", l, got)
		}
		return i
	}
	lastGrant := max(
		index(`(allow file-write* (subpath "/work"))`),
		index(`(allow file-write* (subpath "/work/cache"))`),
		index(`(allow file-write* (subpath "/work/tmp"))`),
		index(`(allow file-write* (literal "/work/secret/tty"))`),
	)
	for _, h := range []string{
		`(deny file-read* file-write* (subpath "/work/cache/token"))`,
		`(deny file-read* file-write* (subpath "/work/secret"))`,
	} {
		if i := index(h); i < lastGrant {
			t.Errorf("%q comes before a write grant it must override (line %d < %d):\n%s", h, i, lastGrant, got)
		}
	}
}

func TestSeatbeltQuoting(t *testing.T) {
	t.Parallel()
	s := &Spec{Profile: Mutating, Roots: []string{`/work/a "b"\c`}}
	got, err := SeatbeltProfile(s)
	if err != nil {
		t.Fatalf("SeatbeltProfile: %v", err)
	}
	want := `(allow file-write* (subpath "/work/a \"b\"\\c"))`
	if !slices.Contains(lines(got), want) {
		t.Errorf("profile lacks %s:\n%s", want, got)
	}
}

func TestSeatbeltRefusesControlCharacters(t *testing.T) {
	t.Parallel()
	bad := map[string]string{
		"newline":        "/work/a\n(allow file-write* (subpath \"/\"))",
		"carriage":       "/work/a\rb",
		"NUL":            "/work/a\x00b",
		"tab":            "/work/a\tb",
		"DEL":            "/work/a\x7fb",
		"C1 control":     "/work/a\u0085b",
		"invalid UTF-8":  "/work/a\xffb",
		"escape (ANSI)":  "/work/\x1b[2Ja",
		"trailing \\x00": "/work/a\x00",
	}
	fields := map[string]func(s *Spec, p string){
		"Roots":    func(s *Spec, p string) { s.Roots = []string{p} },
		"Writable": func(s *Spec, p string) { s.Writable = []string{p} },
		"Hidden":   func(s *Spec, p string) { s.Hidden = []string{p} },
		"TmpDir":   func(s *Spec, p string) { s.TmpDir = p },
		"TTY":      func(s *Spec, p string) { s.TTY = p },
	}
	for name, p := range bad {
		for field, set := range fields {
			t.Run(name+"/"+field, func(t *testing.T) {
				t.Parallel()
				s := &Spec{Profile: Networked}
				set(s, p)
				got, err := SeatbeltProfile(s)
				if err == nil {
					t.Fatalf("SeatbeltProfile accepted %s %q; profile:\n%s", field, p, got)
				}
				if got != "" {
					t.Errorf("SeatbeltProfile returned a profile with its error %v:\n%s", err, got)
				}
				if !strings.HasPrefix(err.Error(), "sandbox: ") {
					t.Errorf("error %q lacks the \"sandbox: \" prefix", err)
				}
			})
		}
	}
}

func TestSeatbeltRefusesRelativePaths(t *testing.T) {
	t.Parallel()
	s := &Spec{Profile: ReadOnly, Hidden: []string{".ssh"}}
	if got, err := SeatbeltProfile(s); err == nil {
		t.Fatalf("SeatbeltProfile accepted a relative hidden path; profile:\n%s", got)
	}
	s = &Spec{Profile: "root"}
	if got, err := SeatbeltProfile(s); err == nil {
		t.Fatalf("SeatbeltProfile accepted an unknown profile; profile:\n%s", got)
	}
}

func TestSeatbeltPrivateTwins(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"/tmp/x", []string{"/tmp/x", "/private/tmp/x"}},
		{"/tmp", []string{"/tmp", "/private/tmp"}},
		{"/var/folders/ab/T/run", []string{"/var/folders/ab/T/run", "/private/var/folders/ab/T/run"}},
		{"/etc/ssl", []string{"/etc/ssl", "/private/etc/ssl"}},
		{"/private/tmp/x", []string{"/private/tmp/x", "/tmp/x"}},
		{"/private/var/db", []string{"/private/var/db", "/var/db"}},
		{"/tmpfoo/x", []string{"/tmpfoo/x"}},
		{"/private/tmpfoo", []string{"/private/tmpfoo"}},
		{"/Users/u/tmp", []string{"/Users/u/tmp"}},
		{"/tmp/../Users/u/./x/", []string{"/Users/u/x"}},
	}
	for _, tt := range tests {
		if got := forms([]string{tt.in}); !slices.Equal(got, tt.want) {
			t.Errorf("forms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	got := forms([]string{"/tmp/x", "/private/tmp/x", "", "/tmp/x/"})
	if want := []string{"/tmp/x", "/private/tmp/x"}; !slices.Equal(got, want) {
		t.Errorf("forms dropped no duplicate: got %q, want %q", got, want)
	}
}

// Both spellings of a hidden path under /tmp are denied.
func TestSeatbeltPrivateTwinsInProfile(t *testing.T) {
	t.Parallel()
	s := &Spec{
		Profile: ReadOnly,
		Hidden:  []string{"/tmp/spool"},
		TmpDir:  "/var/folders/ab/T/r1",
	}
	got, err := SeatbeltProfile(s)
	if err != nil {
		t.Fatalf("SeatbeltProfile: %v", err)
	}
	checkInOrder(t, got, []string{
		`(allow file-write* (subpath "/var/folders/ab/T/r1"))`,
		`(allow file-write* (subpath "/private/var/folders/ab/T/r1"))`,
		`(deny file-read* file-write* (subpath "/tmp/spool"))`,
		`(deny file-read* file-write* (subpath "/private/tmp/spool"))`,
	})
}

func TestSeatbeltRealPaths(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(dir, "dotfiles", "ssh")
	if err := os.MkdirAll(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, ".ssh")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	tmpLink := filepath.Join(dir, "tmp")
	if err := os.Symlink(filepath.Join(dir, "dotfiles"), tmpLink); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "proj")
	missing := filepath.Join(dir, "missing")
	in := Spec{
		Profile: Mutating,
		Roots:   []string{plain, missing},
		Hidden:  []string{link},
		TmpDir:  tmpLink,
	}
	orig := slices.Clone(in.Hidden)
	got := withRealPaths(in)
	if want := []string{link, target}; !slices.Equal(got.Hidden, want) {
		t.Errorf("Hidden = %q, want %q", got.Hidden, want)
	}
	if want := []string{plain, missing}; !slices.Equal(got.Roots, want) {
		t.Errorf("Roots = %q, want %q (no link, nothing added)", got.Roots, want)
	}
	if want := []string{filepath.Join(dir, "dotfiles")}; !slices.Equal(got.Writable, want) {
		t.Errorf("Writable = %q, want the resolved TmpDir %q", got.Writable, want)
	}
	if got.TmpDir != tmpLink {
		t.Errorf("TmpDir = %q, want it unchanged (%q)", got.TmpDir, tmpLink)
	}
	if !slices.Equal(in.Hidden, orig) {
		t.Errorf("withRealPaths changed its argument's Hidden to %q", in.Hidden)
	}
}

// TestSeatbeltClosedHome: the home directory is closed (neither read nor
// written), what opens it is granted after the closing rule (the last
// matching rule decides), a hidden path inside an opened one is denied
// after that, and a root that is the home directory opens nothing.
func TestSeatbeltClosedHome(t *testing.T) {
	t.Parallel()
	s := seatbeltSpec(Mutating)
	s.Closed = []string{"/Users/u"}
	s.Readable = []string{"/Users/u/.gitconfig", "/Users/u/go"}
	s.Hidden = append(s.Hidden, "/Users/u/go/secret")
	got, err := SeatbeltProfile(s)
	if err != nil {
		t.Fatalf("SeatbeltProfile: %v", err)
	}
	checkInOrder(t, got, []string{
		`(deny file-read-data file-read-xattr file-write* (subpath "/Users/u"))`,
		`(allow file-read-data file-read-xattr (subpath "/Users/u/.gitconfig"))`,
		`(allow file-read-data file-read-xattr (subpath "/Users/u/go"))`,
		`(allow file-read-data file-read-xattr (subpath "/Users/u/proj"))`,
		`(allow file-read-data file-read-xattr (subpath "/Users/u/Library/Caches/go-build"))`,
		`(allow file-write* (subpath "/Users/u/proj"))`,
		`(deny file-read* file-write* (subpath "/Users/u/go/secret"))`,
	})
	s.Roots = []string{"/Users/u"}
	got, err = SeatbeltProfile(s)
	if err != nil {
		t.Fatalf("SeatbeltProfile: %v", err)
	}
	if strings.Contains(got, `(subpath "/Users/u"))`+"\n") && !strings.Contains(got, `(deny file-read-data file-read-xattr file-write* (subpath "/Users/u"))`) ||
		strings.Contains(got, `(allow file-read-data file-read-xattr (subpath "/Users/u"))`) || strings.Contains(got, `(allow file-write* (subpath "/Users/u"))`) {
		t.Errorf("the home directory as a root opened it:\n%s", got)
	}
}
