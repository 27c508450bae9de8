package policy

import (
	"bufio"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/sluice-dev/sluice/netproxy/netrule"
)

// The files this reads to learn which hosts a run reaches are the
// person's own (~/.npmrc, pip.conf, go's env file, /etc/apt) or the
// repository's .git/config. Any of them may be written by the agent
// whose request is judged (a project file certainly), so each is read
// with care: a regular file only (never a FIFO that would block the
// judge, nor a device), at most maxConfigFile bytes, and parsed by code
// that takes anything without panicking. No command is run.

// maxConfigFile bounds how much of a configuration file is read.
const maxConfigFile = 256 << 10

// readConfigFile reads a small regular file, "" when it is missing,
// not a regular file, or unreadable. A larger file is cut at
// maxConfigFile.
func readConfigFile(path string) string {
	if path == "" {
		return ""
	}
	// A symlink is followed (dotfiles are often links), but only to a
	// regular file: opening a device can do things.
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	// O_NONBLOCK: a FIFO put in a file's place must not hang the judge
	// (it is refused below, after the open returns).
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	b, err := io.ReadAll(io.LimitReader(f, maxConfigFile))
	if err != nil {
		return ""
	}
	return string(b)
}

// urlHost is the host a URL reaches as a host rule (host:port, the port
// the scheme's default where none is given): ok only for the schemes a
// run's proxy carries (http, https, and git's own protocol) and a host
// that is a valid rule.
func urlHost(raw string) (string, bool) {
	raw = strings.TrimSpace(raw)
	if len(raw) > 2048 {
		return "", false
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", false
	}
	var port string
	switch strings.ToLower(u.Scheme) {
	case "https", "git+https":
		port = "443"
	case "http", "git+http":
		port = "80"
	case "git":
		port = "9418"
	default:
		return "", false
	}
	if p := u.Port(); p != "" {
		port = p
	}
	host := u.Hostname()
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	r, err := netrule.ParseRule(host + ":" + port)
	if err != nil || r.Wildcard {
		return "", false
	}
	return r.String(), true
}

// npmrcRegistries are the registry URLs an .npmrc names: registry= and
// @scope:registry= lines. Values that use ${VAR} are left out: what
// they name is known only where npm runs.
func npmrcRegistries(src string) []string {
	var out []string
	for _, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		if key != "registry" && !strings.HasSuffix(key, ":registry") {
			continue
		}
		val = strings.TrimSpace(val)
		if s, err := strconv.Unquote(val); err == nil {
			val = s
		}
		if val != "" && !strings.Contains(val, "${") {
			out = append(out, val)
		}
	}
	return out
}

// pipIndexes are the index URLs a pip.conf names: index-url and
// extra-index-url (either spelling, with _) in any section, an
// extra-index-url's several URLs on one line or on indented lines below.
func pipIndexes(src string) []string {
	var out []string
	inList := false // after an index key: indented lines continue it
	for _, line := range strings.Split(src, "\n") {
		if inList && line != "" && (line[0] == ' ' || line[0] == '\t') {
			out = append(out, strings.Fields(line)...)
			continue
		}
		inList = false
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' || line[0] == '[' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			continue
		}
		key := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(line[:i])), "_", "-")
		if key != "index-url" && key != "extra-index-url" {
			continue
		}
		out = append(out, strings.Fields(line[i+1:])...)
		inList = true
	}
	return out
}

// goEnvFile reads go's own settings file (go env -w): NAME=VALUE lines.
func goEnvFile(src string) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(src, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && k != "" {
			env[k] = v
		}
	}
	return env
}

// gitRemotes reads a git config file's remotes: each remote's url and
// pushurl values by remote name, in the file's order. It follows git's
// syntax far enough for what git writes and people edit: [remote "NAME"]
// sections (and the old [remote.NAME]), case-insensitive section and key
// names, quoted values, comments after # or ;, backslash escapes and
// continuation lines. The names, in order, come with it.
func gitRemotes(src string) (map[string][]string, []string) {
	remotes := map[string][]string{}
	var order []string
	remote := "" // the remote whose section we are in; "" for another
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 0, 4096), maxConfigFile)
	for sc.Scan() {
		line := sc.Text()
		for strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") && sc.Scan() {
			line = line[:len(line)-1] + sc.Text()
		}
		t := strings.TrimSpace(line)
		if t == "" || t[0] == '#' || t[0] == ';' {
			continue
		}
		if t[0] == '[' {
			remote = ""
			end := strings.LastIndexByte(t, ']')
			if end < 0 {
				continue
			}
			head := t[1:end]
			name, sub, quoted := strings.Cut(head, " ")
			switch {
			case quoted && strings.EqualFold(name, "remote"):
				sub = strings.TrimSpace(sub)
				if s, err := strconv.Unquote(sub); err == nil {
					remote = s
				}
			case !quoted && len(head) > len("remote.") && strings.EqualFold(head[:len("remote.")], "remote."):
				remote = strings.ToLower(head[len("remote."):])
			}
			if remote != "" {
				if _, seen := remotes[remote]; !seen {
					order = append(order, remote)
					remotes[remote] = nil
				}
			}
			// A key may follow the header on its line: [remote "o"] url = x
			t = strings.TrimSpace(t[end+1:])
			if t == "" {
				continue
			}
		}
		if remote == "" {
			continue
		}
		key, val, ok := strings.Cut(t, "=")
		if !ok {
			continue
		}
		key = strings.ToLower(strings.TrimSpace(key))
		if key != "url" && key != "pushurl" {
			continue
		}
		if v := gitValue(val); v != "" {
			remotes[remote] = append(remotes[remote], v)
		}
	}
	return remotes, order
}

// gitValue is a git config value as git reads it: surrounding space
// trimmed, quotes removed, \" \\ \t \n \b unescaped, a comment cut.
func gitValue(v string) string {
	var b strings.Builder
	inQuote := false
	pending := "" // spaces seen outside quotes, kept only if text follows
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '"':
			inQuote = !inQuote
			continue
		case c == '\\' && i+1 < len(v):
			i++
			switch v[i] {
			case 't':
				c = '\t'
			case 'n':
				c = '\n'
			case 'b':
				c = '\b'
			default:
				c = v[i]
			}
		case !inQuote && (c == '#' || c == ';'):
			return b.String()
		case !inQuote && (c == ' ' || c == '\t'):
			if b.Len() > 0 {
				pending += string(c)
			}
			continue
		}
		b.WriteString(pending)
		pending = ""
		b.WriteByte(c)
	}
	return b.String()
}

// gitConfigPath finds the config file of the repository holding dir: the
// .git directory's config, or for a worktree (.git is a file saying
// "gitdir: X") the config of X's common directory. "" when there is no
// repository, or its pointers are not what git writes.
func gitConfigPath(dir string) string {
	if dir == "" {
		return ""
	}
	root := findRoot(dir)
	dotgit := filepath.Join(root, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return filepath.Join(dotgit, "config")
	case !fi.Mode().IsRegular():
		return ""
	}
	gitdir, ok := strings.CutPrefix(strings.TrimSpace(readConfigFile(dotgit)), "gitdir:")
	if !ok {
		return ""
	}
	gitdir = strings.TrimSpace(gitdir)
	if gitdir == "" {
		return ""
	}
	if !filepath.IsAbs(gitdir) {
		gitdir = filepath.Join(root, gitdir)
	}
	if common := strings.TrimSpace(readConfigFile(filepath.Join(gitdir, "commondir"))); common != "" {
		if !filepath.IsAbs(common) {
			common = filepath.Join(gitdir, common)
		}
		return filepath.Join(common, "config")
	}
	return filepath.Join(gitdir, "config")
}

// aptSourceHosts are the hosts the APT sources lists under dir
// (/etc/apt) name: sources.list and sources.list.d's *.list (one-line
// "deb [opts] URI suite ..." entries) and *.sources (deb822 "URIs:"
// fields).
func aptSourceHosts(dir string) []string {
	files := []string{filepath.Join(dir, "sources.list")}
	for _, pat := range []string{"*.list", "*.sources"} {
		m, _ := filepath.Glob(filepath.Join(dir, "sources.list.d", pat))
		files = append(files, m...)
	}
	if len(files) > maxAptFiles {
		files = files[:maxAptFiles]
	}
	var out []string
	for _, f := range files {
		for _, line := range strings.Split(readConfigFile(f), "\n") {
			line = strings.TrimSpace(line)
			var uris []string
			switch {
			case strings.HasPrefix(line, "deb ") || strings.HasPrefix(line, "deb-src "):
				fields := strings.Fields(line)[1:]
				if len(fields) > 0 && strings.HasPrefix(fields[0], "[") {
					// [arch=amd64 signed-by=...]: up to the closing ].
					for len(fields) > 0 && !strings.HasSuffix(fields[0], "]") {
						fields = fields[1:]
					}
					if len(fields) > 0 {
						fields = fields[1:]
					}
				}
				if len(fields) > 0 {
					uris = fields[:1]
				}
			case len(line) > 5 && strings.EqualFold(line[:5], "uris:"):
				uris = strings.Fields(line[5:])
			}
			for _, u := range uris {
				if h, ok := urlHost(u); ok {
					out = append(out, h)
				}
			}
		}
	}
	return out
}

// maxAptFiles bounds the sources lists read.
const maxAptFiles = 64
