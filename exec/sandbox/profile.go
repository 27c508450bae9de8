package sandbox

import (
	"fmt"
	"path/filepath"
)

// Profile is what a confined run may do.
type Profile string

// The profiles, from the narrowest.
const (
	// ReadOnly reads the file system except secret paths and writes
	// nothing but its terminal, /dev/null, its private temporary directory
	// and the writable caches; it opens no socket of any family
	// (socketpair is allowed).
	ReadOnly Profile = "read_only"
	// Mutating is ReadOnly plus writes inside the jail roots.
	Mutating Profile = "mutating"
	// Networked is Mutating plus inet (IPv4 and IPv6) sockets.
	Networked Profile = "networked"
)

// Profiles lists the profiles, from the narrowest.
func Profiles() []Profile { return []Profile{ReadOnly, Mutating, Networked} }

// ParseProfile turns a profile name into a Profile.
func ParseProfile(s string) (Profile, error) {
	for _, p := range Profiles() {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("sandbox: unknown profile %q (want read_only, mutating or networked)", s)
}

// Writes reports whether the profile writes inside the jail roots.
func (p Profile) Writes() bool { return p == Mutating || p == Networked }

// Network reports whether the profile opens inet sockets.
func (p Profile) Network() bool { return p == Networked }

// Describe says in a few words what the profile allows, for a person.
func (p Profile) Describe() string {
	switch p {
	case ReadOnly:
		return "read-only, no network"
	case Mutating:
		return "writes in the project, no network"
	case Networked:
		return "writes in the project, network"
	}
	return string(p)
}

// Spec is one run's confinement. Paths must be absolute; those that do
// not exist are ignored (nothing can be granted or hidden there yet).
type Spec struct {
	Profile Profile
	// Roots are the jail: the directories a mutating or networked run may
	// write (the project). A read-only run gets no write here.
	Roots []string
	// Writable are written under every profile: the caches that tools
	// write even to read (the Go build cache, the module cache).
	Writable []string
	// Hidden are never readable nor writable, whatever else grants them:
	// ~/.ssh, sluice's own spool and audit log.
	Hidden []string
	// Closed are directories whose contents no run reads, writes or
	// executes unless something opens them (the home directories, /root,
	// the users' runtime directories): entries made in them after the run
	// starts stay closed too. What opens part of a closed directory: the
	// Readable paths, the roots, the writable caches and the temporary
	// directory. A root that is a closed directory or holds one (the home
	// directory itself, /) opens nothing. The names of a closed
	// directory's entries can still be listed on Linux (Landlock's listing
	// right holds beneath the directories on the way down), not read.
	Closed []string
	// Readable are the paths inside closed directories every run may read
	// and execute: the toolchains and configs real tools read (~/go,
	// ~/.gitconfig, ~/.rustup).
	Readable []string
	// Protect are paths inside the roots a run that writes may not
	// change (git's hooks and config, .envrc): read-only where the run is
	// boxed (see BoxPath), else only the caller's to put back.
	Protect []string
	// Masked are files a run reads as empty (a project's secrets, for a
	// run nobody approved), where it is boxed.
	Masked []string
	// Box is the helper that starts a run that writes in namespaces of
	// its own (BoxPath); "" confines with Landlock and seccomp alone.
	Box string
	// TmpDir is the run's private temporary directory (writable).
	TmpDir string
	// TTY is the path of the run's terminal (writable), if it has one.
	TTY string
	// Proxy, for a networked run, sends its network through a proxy the
	// caller serves on the confinement's ProxyListener and nowhere else:
	// in a network namespace of its own where it is boxed, else through
	// one TCP port (Confinement.Network says which). Linux only.
	Proxy bool
	// PlanCache is a directory of this user's where the base layer's plan
	// is kept for the next process that confines the same way (sluice
	// sandbox, a new process for every command); "" keeps it in this
	// process only. Whatever is read from it is checked before it is
	// used (see loadBase): its grants are ones the plan would make now.
	PlanCache string
}

// Validate checks that the spec names a profile and absolute paths.
func (s *Spec) Validate() error {
	if _, err := ParseProfile(string(s.Profile)); err != nil {
		return err
	}
	if s.Proxy && !s.Profile.Network() {
		return fmt.Errorf("sandbox: a proxy is for the networked profile, not %s", s.Profile)
	}
	if s.Proxy && !proxySupported() {
		return fmt.Errorf("sandbox: a run's own proxy needs Linux's namespaces or Landlock")
	}
	lists := [][]string{s.Roots, s.Writable, s.Hidden, s.Closed, s.Readable, s.Protect, s.Masked, {s.TmpDir, s.TTY, s.Box, s.PlanCache}}
	for _, l := range lists {
		for _, p := range l {
			if p != "" && !filepath.IsAbs(p) {
				return fmt.Errorf("sandbox: path %q is not absolute", p)
			}
		}
	}
	return nil
}

// ProxySupported reports whether a networked run can be given a proxy of
// its own here (Spec.Proxy).
func ProxySupported() bool { return proxySupported() }
