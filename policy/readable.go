package policy

import (
	"path/filepath"
	"strings"

	"github.com/bmatcuk/doublestar/v4"
)

// DefaultReadable lists what an agent's own file tools (Read, Grep, Glob,
// LS and Gemini's read_file, glob, …) may read outside the project
// without asking, and what a confined run may read outside its roots:
// the system, and the few files and caches in the home directory that
// tools read on their own. home is the user's home directory ("" leaves
// the home entries out). ReadableExceptions lists the secrets inside
// these entries, which stay unreadable.
func DefaultReadable(home string) []string {
	list := []string{
		"/usr",                        // programs, libraries, headers, documentation
		"/etc",                        // system configuration (its secrets are exceptions)
		"/lib",                        // libraries (a link to /usr/lib on merged systems)
		"/lib32", "/lib64", "/libx32", // multilib libraries
		"/bin", "/sbin", // programs (links to /usr on merged systems)
		"/opt",  // software installed outside the package manager
		"/proc", // process and kernel state; other processes' environ, cmdline and mem ask by path rule
		"/sys",  // kernel and device state
	}
	if home == "" {
		return list
	}
	for _, rel := range []string{
		".gitconfig",         // git's global config: every git command reads it
		".config/git/config", // git's global config, XDG place
		".config/git/ignore", // git's global excludes
		"go",                 // GOPATH: the module cache and installed tools
		".cargo",             // cargo's registry, git checkouts and tools (credentials are exceptions)
		".rustup",            // Rust toolchains and their sources
		".npm",               // npm's cache
		".cache/pip",         // pip's cache
		".nvm",               // node versions installed by nvm
		".pyenv",             // Python versions installed by pyenv
		".local/lib",         // packages installed with pip --user
	} {
		list = append(list, filepath.Join(home, rel))
	}
	return list
}

// ReadableExceptions lists the secrets inside DefaultReadable's entries:
// reading one asks (and a confined run should not see it).
func ReadableExceptions(home string) []string {
	list := []string{
		"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", // password hashes
		"/etc/sudoers", "/etc/sudoers.d", // who may become root
		"/etc/ssh",         // the host's private keys
		"/etc/ssl/private", // TLS private keys
	}
	if home == "" {
		return list
	}
	for _, rel := range []string{
		".cargo/credentials",      // crates.io token (old name)
		".cargo/credentials.toml", // crates.io token
	} {
		list = append(list, filepath.Join(home, rel))
	}
	return list
}

// readable reports whether abs lies in one of DefaultReadable's entries
// and in none of their exceptions.
func readable(abs, home string) bool {
	for _, e := range ReadableExceptions(home) {
		if under(abs, e) {
			return false
		}
	}
	for _, r := range DefaultReadable(home) {
		if under(abs, r) {
			return true
		}
	}
	return false
}

// holdsException names an exception that lies below dir (a search of
// /etc reaches /etc/shadow), "" when none does.
func holdsException(dir, home string) string {
	for _, e := range ReadableExceptions(home) {
		if under(e, dir) {
			return e
		}
	}
	return ""
}

// projectSecrets are the files in a project that usually hold secrets:
// an agent's file tool reading one asks, as a command reading it does.
// A policy file's project_secrets adds to them.
// (id_* is an SSH key's name without an extension: id_ed25519, not
// id_gen.go.)
var projectSecrets = []string{".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_*", ".npmrc", ".pypirc",
	"credentials*.json", ".envrc", ".netrc", ".git-credentials"}

// secretFile reports the glob that makes abs a secret file (matched
// against its name, or against its path below a project root when the
// glob has a '/'), "" when none does.
func (p *Policy) secretFile(abs string, roots []string) string {
	base := filepath.Base(abs)
	for _, g := range append(projectSecrets[:len(projectSecrets):len(projectSecrets)], p.projectSecrets...) {
		if !strings.Contains(g, "/") {
			if ok, _ := doublestar.Match(g, base); ok && (g != "id_*" || !strings.Contains(base, ".")) {
				return g
			}
			continue
		}
		for _, r := range roots {
			if rel, err := filepath.Rel(r, abs); err == nil && !strings.HasPrefix(rel, "..") {
				if ok, _ := doublestar.Match(strings.TrimPrefix(g, "./"), rel); ok {
					return g
				}
			}
		}
	}
	return ""
}
