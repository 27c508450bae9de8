package policy

import (
	"path/filepath"
	"strings"
)

// gitHosts adds the hosts a networked git command reaches over HTTP(S)
// or git's own protocol: the URL on the line (git clone URL, git fetch
// URL), else the URLs of the remote it names, or of the one it uses
// without a name (origin, or the only remote), read from the config of
// the repository holding dir. Remotes over SSH add nothing: their
// traffic does not go through the run's proxy.
//
// The repository's config is a project file an agent may have edited
// (git remote set-url): a remote there is what the person's git would
// reach too, but the host a person sees in the verdict is the one that
// counts.
func gitHosts(s *hostSet, pt *part, dir string) {
	form := strings.TrimPrefix(pt.form, pt.name+" ")
	ops := operands(pt.ops)
	if len(ops) > maxGitOperands {
		ops = ops[:maxGitOperands]
	}
	has := func(flags ...string) bool {
		for _, o := range pt.ops {
			for _, f := range flags {
				if o.option && !o.w.dyn && (o.w.val == f || strings.HasPrefix(o.w.val, f+"=")) {
					return true
				}
			}
		}
		return false
	}
	var named []word // remotes or URLs, as written
	all := false     // every remote
	switch form {
	case "clone":
		if len(ops) > 0 {
			named = ops[:1]
		}
	case "fetch", "pull", "push", "ls-remote":
		switch {
		case form == "fetch" && has("--all"):
			all = true
		case form == "fetch" && has("--multiple"):
			named = ops
		case form == "push" && has("--repo"):
			for _, o := range pt.ops {
				if v, ok := optionValue(o, "--repo"); ok {
					named = append(named, v)
				}
			}
		case len(ops) > 0:
			named = ops[:1]
		}
	case "remote update":
		named = ops
		all = len(ops) == 0
	case "remote show", "remote prune":
		named = ops
	case "remote set-head":
		if len(ops) > 0 {
			named = ops[:1]
		}
	case "remote add":
		if len(ops) > 1 {
			named = ops[1:2]
		}
	default:
		return
	}
	if form == "clone" {
		for _, n := range named {
			if h, ok := gitURLHost(n); ok {
				s.add(h, "the line: git clone")
			}
		}
		return
	}
	var remotes map[string][]string
	var order []string
	config := func() {
		if remotes == nil {
			remotes, order = gitRemotes(readConfigFile(gitConfigPath(gitDir(pt.words, dir))))
		}
	}
	if len(named) == 0 && !all {
		config()
		switch {
		case remotes["origin"] != nil:
			named = []word{{val: "origin"}}
		case len(order) == 1:
			named = []word{{val: order[0]}}
		}
	}
	if all {
		config()
		for _, r := range order {
			named = append(named, word{val: r})
		}
	}
	for _, n := range named {
		if n.dyn {
			continue
		}
		if h, ok := gitURLHost(n); ok {
			s.add(h, "the line: git "+form)
			continue
		}
		config()
		for _, u := range remotes[n.val] {
			if h, ok := urlHost(u); ok {
				s.add(h, "git remote "+n.val)
			}
		}
	}
}

// maxGitOperands bounds the remotes one command's hosts are looked up for.
const maxGitOperands = 32

// gitURLHost is the host of a literal git URL word.
func gitURLHost(w word) (string, bool) {
	if w.dyn || !strings.Contains(w.val, "://") {
		return "", false
	}
	return urlHost(w.val)
}

// gitDir is the directory git works in: dir, moved by git -C DIR (each
// one relative to the one before, as git takes them); "" when a -C is
// computed at run time.
func gitDir(words []word, dir string) string {
	for i := 1; i+1 < len(words); i++ {
		w := words[i]
		if w.dyn || !strings.HasPrefix(w.val, "-") || w.val == "--" {
			return dir
		}
		if w.val != "-C" {
			if takesValue(w.val, gitGlobalValueOpts) {
				i++
			}
			continue
		}
		next := words[i+1]
		i++
		switch {
		case next.dyn:
			return ""
		case filepath.IsAbs(next.val):
			dir = next.val
		case dir != "":
			dir = filepath.Join(dir, next.val)
		}
	}
	return dir
}
