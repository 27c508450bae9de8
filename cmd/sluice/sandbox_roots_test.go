package main

import (
	"slices"
	"testing"
)

// TestBoundRoots: a hook's wrapped command gets its roots bounded by the
// agent's project directory: the git top level of a home kept in git, or
// of a monorepo, above the project, is cut to the project.
func TestBoundRoots(t *testing.T) {
	for _, c := range []struct {
		roots   []string
		project string
		want    []string
	}{
		{[]string{"/home/a/src/app/web", "/home/a"}, "/home/a/src/app", []string{"/home/a/src/app/web", "/home/a/src/app"}},
		{[]string{"/home/a/mono/svc", "/home/a/mono"}, "/home/a/mono/svc", []string{"/home/a/mono/svc"}},
		{[]string{"/work/app"}, "/work/app", []string{"/work/app"}},
		{[]string{"/tmp/scratch"}, "/work/app", []string{"/tmp/scratch"}},
		{[]string{"/"}, "/work/app", []string{"/work/app"}},
		{[]string{"/home/a/src/app2", "/home/a"}, "/home/a/src/app", []string{"/home/a/src/app2", "/home/a/src/app"}},
		{[]string{"/home/a/x", "/home/a"}, "", []string{"/home/a/x", "/home/a"}},
	} {
		if got := boundRoots(c.roots, c.project); !slices.Equal(got, c.want) {
			t.Errorf("boundRoots(%q, %q) = %q, want %q", c.roots, c.project, got, c.want)
		}
	}
}
