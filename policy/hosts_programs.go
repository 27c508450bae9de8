package policy

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/sluice-dev/sluice/netproxy/netrule"
)

// hostGrant is one host (a netproxy rule) a run may reach without asking,
// and why.
type hostGrant struct{ host, by string }

// hostSet collects hosts in order, each once, with the first reason.
type hostSet struct {
	list []hostGrant
}

// add adds host (a netproxy rule) unless it is not a valid one or is
// there already.
func (s *hostSet) add(host, by string) {
	r, err := netrule.ParseRule(host)
	if err != nil {
		return
	}
	host = r.String()
	if !slices.ContainsFunc(s.list, func(g hostGrant) bool { return g.host == host }) {
		s.list = append(s.list, hostGrant{host, by})
	}
}

// admits reports whether the set admits all that host (a netproxy
// rule) does: registry.npmjs.org admits registry.npmjs.org:443.
func (s *hostSet) admits(host string) bool {
	a, err := netrule.ParseRule(host)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(s.list, func(g hostGrant) bool {
		r, err := netrule.ParseRule(g.host)
		return err == nil && covers(r, a)
	})
}

// Program families whose hosts the person's own configuration extends,
// or that name their hosts on the line.
var (
	npmFamily    = map[string]bool{"npm": true, "pnpm": true, "yarn": true}
	pipFamily    = map[string]bool{"pip": true, "pip3": true, "pip2": true, "uv": true, "poetry": true, "pipx": true}
	urlFamily    = map[string]bool{"curl": true, "curlie": true, "wget": true, "wget2": true, "http": true, "https": true, "xh": true, "xhs": true, "httpie": true}
	dockerFamily = map[string]bool{"docker": true, "podman": true, "nerdctl": true, "finch": true}
	aptFamily    = map[string]bool{"apt": true, "apt-get": true, "aptitude": true, "nala": true}
)

// partHosts are the hosts part pt reaches by itself when its run has the
// network, run in dir ("" when computed at run time): the knowledge
// table's, what the person's own configuration adds for the program, and
// what the line names (a URL, a git remote). notes are for the verdict's
// reasons: what a project file names that is not allowed.
func (p *Policy) partHosts(pt *part, dir string) (hosts []hostGrant, notes []string) {
	if p.net == nil || pt.name == "" {
		return nil, nil
	}
	var s hostSet
	name := pt.name
	table := pt.hosts
	if dockerFamily[name] && strings.HasSuffix(pt.form, " pull") {
		if reg, ok := imageRegistry(operands(pt.ops)); ok {
			table = nil // another registry than Docker Hub
			s.add(reg, "the line: "+name+" pull")
		}
	}
	for _, h := range table {
		s.add(h, "knowledge: "+name)
	}
	if len(table) > 0 {
		switch {
		case npmFamily[name]:
			notes = p.npmHosts(&s, pt, dir)
		case pipFamily[name]:
			p.pipHosts(&s, pt)
		case name == "go":
			p.goHosts(&s)
		case aptFamily[name]:
			for _, h := range aptSourceHosts(p.net.aptDir) {
				s.add(h, "system: "+filepath.Join(p.net.aptDir, "sources.list"))
			}
		}
	}
	if pt.cat >= Networked {
		switch {
		case urlFamily[name]:
			lineURLs(&s, pt)
		case name == "git":
			gitHosts(&s, pt, dir)
		}
	}
	return s.list, notes
}

// npmHosts adds the registries of the person's ~/.npmrc and those named
// on the line (--registry URL). A project's .npmrc is not trusted to
// add one (the agent can write it): the note says so.
func (p *Policy) npmHosts(s *hostSet, pt *part, dir string) []string {
	user := filepath.Join(p.home, ".npmrc")
	for _, u := range npmrcRegistries(readConfigFile(user)) {
		if h, ok := urlHost(u); ok {
			s.add(h, "config: ~/.npmrc registry")
		}
	}
	for _, u := range lineOption(pt.words, "--registry", "") {
		if h, ok := urlHost(u); ok {
			s.add(h, "the line: "+pt.name+" --registry")
		}
	}
	if dir == "" {
		return nil
	}
	var notes []string
	dirs := []string{dir}
	if root := findRoot(dir); root != dir {
		dirs = append(dirs, root)
	}
	for _, d := range dirs {
		f := filepath.Join(d, ".npmrc")
		if f == user {
			continue
		}
		for _, u := range npmrcRegistries(readConfigFile(f)) {
			if h, ok := urlHost(u); ok && !s.admits(h) {
				n := "the project's .npmrc names registry " + h + ": not allowed without asking"
				if !slices.Contains(notes, n) {
					notes = append(notes, n)
				}
			}
		}
	}
	return notes
}

// pipHosts adds the indexes of the person's pip.conf (both places pip
// reads) and those named on the line (-i, --index-url,
// --extra-index-url).
func (p *Policy) pipHosts(s *hostSet, pt *part) {
	for _, f := range []string{".config/pip/pip.conf", ".pip/pip.conf"} {
		for _, u := range pipIndexes(readConfigFile(filepath.Join(p.home, f))) {
			if h, ok := urlHost(u); ok {
				s.add(h, "config: ~/"+f)
			}
		}
	}
	for _, opt := range [][2]string{{"--index-url", "-i"}, {"--extra-index-url", ""}, {"--default-index", ""}, {"--index", ""}} {
		for _, u := range lineOption(pt.words, opt[0], opt[1]) {
			if h, ok := urlHost(u); ok {
				s.add(h, "the line: "+pt.name+" "+opt[0])
			}
		}
	}
}

// goHosts adds the hosts of the Go settings in the engine's environment,
// else go's own settings file (go env -w): GOPROXY's proxies, GOSUMDB's
// checksum database, and the hosts GONOSUMDB, GOPRIVATE and GONOPROXY
// name (their modules come from the host itself).
func (p *Policy) goHosts(s *hostSet) {
	var file map[string]string
	get := func(k string) string {
		if v := p.net.getenv(k); v != "" {
			return v
		}
		if file == nil {
			file = goEnvFile(readConfigFile(p.goEnvPath()))
		}
		return file[k]
	}
	for _, u := range strings.FieldsFunc(get("GOPROXY"), func(r rune) bool { return r == ',' || r == '|' }) {
		if h, ok := urlHost(u); ok {
			s.add(h, "config: GOPROXY")
		}
	}
	if db := strings.Fields(get("GOSUMDB")); len(db) > 0 && db[0] != "off" {
		if len(db) > 1 {
			if h, ok := urlHost(db[1]); ok {
				s.add(h, "config: GOSUMDB")
			}
		} else {
			name, _, _ := strings.Cut(db[0], "+")
			s.add(name+":443", "config: GOSUMDB")
		}
	}
	for _, k := range []string{"GONOSUMDB", "GOPRIVATE", "GONOPROXY"} {
		for _, pat := range strings.Split(get(k), ",") {
			host, _, _ := strings.Cut(strings.TrimSpace(pat), "/")
			// github.com/corp/*: github.com; *.corp.example: itself (a
			// wildcard rule); other globs name no host. go fetches such
			// modules from the host itself, over HTTPS.
			if rest, wild := strings.CutPrefix(host, "*."); wild && !strings.ContainsAny(rest, "*?[\\:") ||
				!wild && !strings.ContainsAny(host, "*?[\\:") {
				s.add(host+":443", "config: "+k)
			}
		}
	}
}

// goEnvPath is go's settings file: $GOENV, else
// $XDG_CONFIG_HOME/go/env, else ~/.config/go/env.
func (p *Policy) goEnvPath() string {
	switch env := p.net.getenv("GOENV"); env {
	case "off":
		return ""
	case "":
	default:
		return env
	}
	if x := p.net.getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "go", "env")
	}
	return filepath.Join(p.home, ".config", "go", "env")
}

// lineOption returns the literal values of option long (and short, if
// any) in words: "--opt V", "--opt=V", "-o V", "-oV".
func lineOption(words []word, long, short string) []string {
	var out []string
	for i := 1; i < len(words); i++ {
		w := words[i]
		if w.dyn {
			continue
		}
		switch {
		case w.val == "--":
			return out
		case w.val == long || short != "" && w.val == short:
			if i+1 < len(words) && !words[i+1].dyn {
				out = append(out, words[i+1].val)
			}
			i++
		case strings.HasPrefix(w.val, long+"="):
			out = append(out, w.val[len(long)+1:])
		case short != "" && len(w.val) > len(short) && strings.HasPrefix(w.val, short) && !strings.HasPrefix(w.val, "--"):
			out = append(out, w.val[len(short):])
		}
	}
	return out
}

// lineURLs adds the host of every http(s) URL among a command's words
// (curl, wget, httpie): operands and option values alike ("--url=U"),
// except a referer, which names a page, not where to connect.
func lineURLs(s *hostSet, pt *part) {
	words := pt.words
	for i := 1; i < len(words); i++ {
		w := words[i]
		if w.dyn {
			continue
		}
		if w.val == "-e" || w.val == "--referer" {
			i++
			continue
		}
		v := w.val
		if strings.HasPrefix(v, "-") {
			if _, after, ok := strings.Cut(v, "="); ok && !strings.HasPrefix(v, "--referer=") {
				v = after
			}
		}
		if l := strings.ToLower(v); strings.HasPrefix(l, "http://") || strings.HasPrefix(l, "https://") {
			if h, ok := urlHost(v); ok {
				s.add(h, "the line: "+pt.name+" URL")
			}
		}
	}
}

// imageRegistry is the registry an image reference names when it is not
// Docker Hub: the first component of NAME/... when it holds a '.' or a
// ':' or is localhost (ghcr.io/o/i:tag, registry.local:5000/i).
func imageRegistry(ops []word) (string, bool) {
	for _, o := range ops {
		if o.dyn || o.val == "--" {
			continue
		}
		first, _, ok := strings.Cut(o.val, "/")
		if !ok || !strings.ContainsAny(first, ".:") && first != "localhost" {
			return "", false
		}
		if first == "docker.io" || first == "index.docker.io" || first == "registry-1.docker.io" {
			return "", false
		}
		if _, err := netrule.ParseRule(first); err != nil {
			return "", false
		}
		if !strings.Contains(first, ":") {
			first += ":443"
		}
		return first, true
	}
	return "", false
}
