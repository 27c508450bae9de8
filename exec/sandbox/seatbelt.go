package sandbox

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// mDNSResponder is the socket through which macOS resolves host names
// (getaddrinfo asks the daemon, it does not send DNS itself): without it a
// networked run could reach addresses but no names.
const mDNSResponder = "/private/var/run/mDNSResponder"

// seatbeltDevices are the device files every run may write. /dev/null and
// /dev/tty as on Linux; dyld opens /dev/dtracehelper for writing in every
// process it loads, and fails noisily without it; /dev/fd/N only duplicates
// a descriptor the process holds already, so it grants nothing new.
var seatbeltDevices = []struct{ filter, path string }{
	{"literal", "/dev/null"},
	{"literal", "/dev/tty"},
	{"literal", "/dev/dtracehelper"},
	{"subpath", "/dev/fd"},
}

// SeatbeltProfile returns the text of the Seatbelt profile (the Sandbox
// Profile Language of sandbox-exec) that confines a run as the Linux
// confinement does for s: reads everywhere except the hidden paths and
// the closed directories (what opens those excepted); writes only in the private temporary directory,
// the writable caches, the terminal, a few devices and, for a mutating or
// networked run, the roots; signals only to the run's own processes; no
// network without network (a socketpair still works), inet and inet6 but
// no unix socket with it.
//
// Paths are used as given, made clean. One with a control character is
// refused: it could end the string it is written in and add rules of its
// own. Seatbelt matches the path the kernel reached, after symlinks, so
// paths under /tmp, /var and /etc (links into /private on macOS) are
// written in both forms; other links are the caller's to resolve (Prepare
// does).
func SeatbeltProfile(s *Spec) (string, error) {
	if err := s.Validate(); err != nil {
		return "", err
	}
	c := *s // its lists are narrowed below, not the caller's
	s = &c
	w := &sbplWriter{}
	w.line("(version 1)")
	// When several rules match an operation, the last one in the profile
	// decides. The profile therefore goes from the broadest rule to the
	// narrowest: everything allowed; writes denied; writes granted in the
	// writable places; the hidden paths denied over those grants, so that
	// a cache or root holding a secret does not expose it; the readable
	// paths granted over the hidden ones. Moving a block changes the
	// meaning.
	w.line("(allow default)")

	// The closed directories: neither read nor written, their entries'
	// names and attributes still seen (as on Linux, where a path through
	// one resolves and a listing shows names); then what opens them.
	closed := forms(s.Closed)
	if len(closed) > 0 {
		for _, p := range closed {
			w.rule("deny file-read-data file-read-xattr file-write*", "subpath", p)
		}
		// A root that is a closed directory, or holds one (the home
		// directory itself, /), opens nothing and is not written.
		s.Roots = slices.DeleteFunc(slices.Clone(s.Roots), func(r string) bool {
			return slices.ContainsFunc(closed, func(c string) bool { return within(filepath.Clean(r), c) })
		})
		open := slices.Clone(s.Readable)
		open = append(open, s.Roots...)
		open = append(open, s.Writable...)
		open = append(open, s.TmpDir)
		for _, p := range forms(open) {
			w.rule("allow file-read-data file-read-xattr", "subpath", p)
		}
	}

	w.line("(deny file-write*)")
	for _, d := range seatbeltDevices {
		w.rule("allow file-write*", d.filter, d.path)
	}
	if s.TTY != "" {
		w.rule("allow file-write*", "literal", s.TTY)
	}
	writable := []string{s.TmpDir}
	writable = append(writable, s.Writable...)
	if s.Profile.Writes() {
		writable = append(writable, s.Roots...)
	}
	for _, p := range forms(writable) {
		w.rule("allow file-write*", "subpath", p)
	}

	hidden := forms(s.Hidden)
	for _, p := range hidden {
		w.rule("deny file-read* file-write*", "subpath", p)
	}

	// A run may signal its own processes only, not the engine that
	// started it nor anything else of the user's (Landlock's signal
	// scope on Linux).
	w.line("(deny signal)")
	w.line("(allow signal (target same-sandbox))")

	if !s.Profile.Network() {
		// Inbound, outbound and bind, of every family, unix sockets
		// included. socketpair(2) neither binds nor connects and so is
		// untouched: a run can still talk to itself.
		w.line("(deny network*)")
	} else {
		// inet and inet6 stay open; unix sockets would reach the user's
		// daemons (ssh-agent, Docker, the engine's own), so they may be
		// neither connected to nor bound, except the resolver's.
		w.line("(deny network-outbound (remote unix-socket))")
		w.line("(deny network-bind (local unix-socket))")
		w.line(`(allow network-outbound (remote unix-socket (path-literal "` + mDNSResponder + `")))`)
	}
	if w.err != nil {
		return "", w.err
	}
	return w.b.String(), nil
}

// sbplWriter writes a profile line by line and keeps the first error.
type sbplWriter struct {
	b   strings.Builder
	err error
}

func (w *sbplWriter) line(s string) {
	w.b.WriteString(s)
	w.b.WriteByte('\n')
}

// rule writes "(head (filter "path"))".
func (w *sbplWriter) rule(head, filter, path string) {
	q, err := sbplString(path)
	if err != nil {
		if w.err == nil {
			w.err = err
		}
		return
	}
	w.line("(" + head + " (" + filter + " " + q + "))")
}

// sbplString quotes s as an SBPL string literal. Backslash and double
// quote are escaped; a control character (a newline would start a new
// rule in the eyes of a reader of the profile, NUL would end the profile
// where C reads it) and invalid UTF-8 are refused rather than escaped:
// no path worth confining has them, and a path that does comes from
// someone trying something.
func sbplString(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("sandbox: path %q is not valid UTF-8; refusing to write it into a Seatbelt profile", s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "", fmt.Errorf("sandbox: path %q contains a control character; refusing to write it into a Seatbelt profile", s)
		}
	}
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' || s[i] == '"' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String(), nil
}

// privateLinks are the top-level directories that macOS makes symbolic
// links into /private.
var privateLinks = []string{"/tmp", "/var", "/etc"}

// forms cleans each path and adds its other spelling where it lies under
// one of privateLinks (/tmp/x and /private/tmp/x), dropping empty paths
// and duplicates. Seatbelt only sees the /private form; the other costs
// nothing and keeps the profile right should a rule ever be matched
// against the name given.
func forms(paths []string) []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		p = filepath.Clean(p)
		add(p)
		for _, l := range privateLinks {
			switch {
			case within(l, p):
				add("/private" + p)
			case within("/private"+l, p):
				add(strings.TrimPrefix(p, "/private"))
			}
		}
	}
	return out
}

// withRealPaths returns s with, added to each of its lists, what every
// path resolves to where that differs from the path (a symlink on the way
// or at its end). Seatbelt matches the path the kernel reached, so a rule
// naming only the link would miss: ~/.ssh hidden by name, where it is a
// link into a dotfiles checkout, would hide nothing. The Spec's own names
// stay too, for paths that do not exist yet.
func withRealPaths(s Spec) Spec {
	resolve := func(paths []string) []string {
		out := slices.Clone(paths)
		for _, p := range paths {
			if p == "" {
				continue
			}
			r, err := filepath.EvalSymlinks(p)
			if err == nil && r != filepath.Clean(p) && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
		return out
	}
	s.Roots = resolve(s.Roots)
	s.Hidden = resolve(s.Hidden)
	s.Closed = resolve(s.Closed)
	s.Readable = resolve(s.Readable)
	// TmpDir is a single path: its resolved form joins the writable
	// caches, which are granted the same. The TTY is a device under /dev,
	// where nothing is a link but what points into /dev/fd.
	s.Writable = resolve(s.Writable)
	if s.TmpDir != "" {
		if r, err := filepath.EvalSymlinks(s.TmpDir); err == nil && r != filepath.Clean(s.TmpDir) {
			s.Writable = append(s.Writable, r)
		}
	}
	return s
}
