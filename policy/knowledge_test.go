package policy

import (
	"slices"
	"strings"
	"testing"
)

// embeddedTools decodes the embedded knowledge.toml: tools by every
// name and alias.
func embeddedTools(t *testing.T) map[string]*Tool {
	t.Helper()
	tools, err := loadKnowledge(knowledgeTOML, "knowledge.toml")
	if err != nil {
		t.Fatal(err)
	}
	return tools
}

// TestKnowledgeLoads checks the embedded table decodes with no unknown keys,
// every condition escalates, and it describes enough of the world.
func TestKnowledgeLoads(t *testing.T) {
	t.Parallel()
	tools := embeddedTools(t)
	seen := map[*Tool]bool{}
	for _, tl := range tools {
		seen[tl] = true
	}
	t.Logf("%d names, %d programs", len(tools), len(seen))
	if len(seen) < 200 {
		t.Errorf("the table describes %d programs; issue 3 asks for at least 200", len(seen))
	}
}

// codeHandled are the names the engine judges in code rather than from the
// table (wrappers, shells, interpreters, builtins); the issue's list may be
// satisfied by either.
var codeHandled = []string{
	"sudo", "doas", "env", "nice", "nohup", "timeout", "time", "stdbuf", "ionice", "setsid", "watch", "flock",
	"builtin", "exec", "command", "xargs", "tee", "eval", "source", ".", "cd",
	"sh", "bash", "zsh", "dash", "ksh", "python", "python3", "node", "ruby", "perl", "php",
}

// TestKnowledgeCoversTheIssue checks that every program issue 3 and its
// brief name is known, by the table or in code.
func TestKnowledgeCoversTheIssue(t *testing.T) {
	t.Parallel()
	tools := embeddedTools(t)
	want := strings.Fields(`
		ls cat head tail wc sort uniq cut tr diff cmp comm file stat du df pwd echo printf true false test [
		basename dirname realpath readlink which whereis type date id whoami uname hostname ps top free
		uptime tree less more jq yq xxd od hexdump strings nl tac rev column paste join fold fmt seq sleep
		yes sha256sum md5sum base64 touch mkdir rmdir ln mv cp install truncate split chmod chown chgrp
		shred tar zip unzip gzip gunzip xz patch rsync scp sftp ssh nc ncat netcat socat telnet wget curl
		ping dig nslookup host git gh go gofmt cargo rustc npm npx pnpm yarn bun pip pip3 uv poetry pipenv
		make cmake ninja gcc cc clang g++ javac mvn gradle docker podman kubectl helm terraform aws gcloud
		az systemctl launchctl crontab service at batch su chroot nsenter unshare mount umount losetup
		modprobe insmod rmmod sysctl setcap visudo passwd useradd usermod userdel groupadd mkfs mkfs.ext4
		fdisk parted wipefs dd kill pkill killall killall5 reboot shutdown halt poweroff iptables nft ufw
		apt apt-get dnf yum brew snap vim nano emacs open xdg-open ssh-keygen ssh-add gpg openssl tmux
		screen watchexec entr htop lsof netstat ss ip ifconfig sqlite3 psql mysql redis-cli deno pytest
		jest vitest mocha phpunit rspec eslint prettier black ruff rustfmt golangci-lint staticcheck
		shellcheck mypy tsc find sed awk rg fd grep security`)
	for _, name := range want {
		if tools[name] == nil && !slices.Contains(codeHandled, name) {
			t.Errorf("%s is neither in the table nor handled in code", name)
		}
	}
}

// TestKnowledgeShape checks what the decoder cannot: every escalation says
// why, option lists hold options, a written option's value can be found
// (it must take a value), and no subcommand is spelled like an option
// (options never name a subcommand, so it could not be reached).
func TestKnowledgeShape(t *testing.T) {
	t.Parallel()
	tools := embeddedTools(t)
	done := map[*Tool]bool{}
	var walk func(path string, tl *Tool)
	walk = func(path string, tl *Tool) {
		if done[tl] {
			return
		}
		done[tl] = true
		for i, c := range tl.When {
			if c.Reason == "" {
				t.Errorf("%s: when #%d has no reason", path, i+1)
			}
			for _, f := range c.Flags {
				if !strings.HasPrefix(f, "-") {
					t.Errorf("%s: when #%d: flag %q does not start with -", path, i+1, f)
				}
			}
			for _, a := range c.Args {
				if a == "" {
					t.Errorf("%s: when #%d: empty args pattern", path, i+1)
				}
			}
		}
		for _, v := range tl.ValueOptions {
			if !strings.HasPrefix(v, "-") || strings.Contains(v, "=") {
				t.Errorf("%s: value option %q is not an option name", path, v)
			}
		}
		for _, w := range tl.WriteOptions {
			switch {
			case strings.HasSuffix(w, "="):
			case !strings.HasPrefix(w, "-"):
				t.Errorf("%s: write option %q is neither an option nor an operand prefix", path, w)
			case !slices.Contains(tl.ValueOptions, w):
				t.Errorf("%s: write option %q is not a value option, so \"%s FILE\" would not be seen", path, w, w)
			}
		}
		for name, sub := range tl.Sub {
			if strings.HasPrefix(name, "-") {
				t.Errorf("%s: subcommand %q looks like an option and can never match", path, name)
			}
			walk(path+" "+name, sub)
		}
	}
	for name, tl := range tools {
		walk(name, tl)
	}
}

// TestKnowledgeIssueExamples spot-checks the categories issue 3 spells out,
// straight from the table (the verdict table checks them through the
// engine).
func TestKnowledgeIssueExamples(t *testing.T) {
	t.Parallel()
	tools := embeddedTools(t)
	lookup := func(path string) *Tool {
		f := strings.Fields(path)
		tl := tools[f[0]]
		for _, s := range f[1:] {
			if tl == nil {
				return nil
			}
			tl = tl.Sub[s]
		}
		return tl
	}
	// escalates reports whether a condition of tl raises it to c on flag
	// or operand w ("--" is an operand, as splitArgs keeps it).
	escalates := func(tl *Tool, w string, c Category) bool {
		for _, cond := range tl.When {
			if cond.Category < c {
				continue
			}
			if strings.HasPrefix(w, "-") && w != "--" {
				for _, f := range cond.Flags {
					if hasFlag(w, f) {
						return true
					}
				}
				continue
			}
			for _, a := range cond.Args {
				if a == "*" || wildMatch(a, w) {
					return true
				}
			}
		}
		return false
	}
	cats := map[string]Category{
		"git status": ReadOnly, "git diff": ReadOnly, "git log": ReadOnly, "git show": ReadOnly,
		"git commit": Mutating, "git add": Mutating, "git checkout": Mutating,
		"git push": Networked, "git fetch": Networked, "git pull": Networked, "git clone": Networked,
		"git restore": Destructive, "git stash drop": Destructive, "git stash clear": Destructive,
		"rm": Mutating, "sed": ReadOnly, "curl": Networked, "wget": Networked, "ssh": Networked,
		"scp": Networked, "nc": Networked, "mkfs": Destructive, "mkfs.ext4": Destructive,
		"shred": Destructive, "su": HostEscape, "chroot": HostEscape, "nsenter": HostEscape,
		"mount": HostEscape, "crontab": HostEscape, "systemctl": HostEscape, "launchctl": HostEscape,
		"docker run": Mutating, "kubectl delete": Destructive, "terraform apply": Destructive,
	}
	for path, want := range cats {
		tl := lookup(path)
		if tl == nil {
			t.Errorf("%s: not in the table", path)
			continue
		}
		if tl.Category != want {
			t.Errorf("%s: %s, want %s", path, tl.Category, want)
		}
	}
	escalations := []struct {
		path, word string
		want       Category
	}{
		{"git push", "--force", Destructive}, {"git push", "--force-with-lease", Destructive},
		{"git push", "+main", Destructive}, {"git push", ":old", Destructive},
		{"git reset", "--hard", Destructive}, {"git clean", "-f", Destructive}, {"git clean", "-fdx", Destructive},
		{"git checkout", "--", Destructive}, {"git checkout", ".", Destructive},
		{"git branch", "-D", Destructive}, {"git branch", "new-name", Mutating},
		{"rm", "-rf", Destructive}, {"rm", "-fr", Destructive}, {"rm", "-r", Destructive}, {"rm", "-R", Destructive},
		{"rm", "--recursive", Destructive}, {"rm", "--force", Destructive},
		{"sed", "-i", Mutating}, {"sed", "-i.bak", Mutating}, {"sed", "--in-place", Mutating},
		{"dd", "of=/dev/sda", Destructive}, {"chmod", "-R", Destructive}, {"chown", "-R", Destructive},
		{"kill", "1", Destructive}, {"kill", "-1", Destructive},
		{"rsync", "host:/srv", Networked}, {"rsync", "--delete", Destructive},
		{"tar", "-xzf", Mutating}, {"tar", "xzf", Mutating}, {"tar", "-czf", Mutating},
		{"find", "-delete", Destructive}, {"sort", "-o", Mutating}, {"gofmt", "-w", Mutating},
		{"go env", "-w", HostEscape}, {"kubectl config view", "--raw", HostEscape},
	}
	for _, e := range escalations {
		tl := lookup(e.path)
		if tl == nil {
			t.Errorf("%s: not in the table", e.path)
			continue
		}
		if !escalates(tl, e.word, e.want) {
			t.Errorf("%s %s: no condition escalates it to %s", e.path, e.word, e.want)
		}
	}
	for _, notEsc := range []struct{ path, word string }{
		{"tar", "-tzf"}, {"tar", "-tvf"}, {"git clean", "-n"}, {"git branch", "-a"}, {"git tag", "-l"},
	} {
		if escalates(lookup(notEsc.path), notEsc.word, Unknown) {
			t.Errorf("%s %s: escalated, want it left alone", notEsc.path, notEsc.word)
		}
	}
}
