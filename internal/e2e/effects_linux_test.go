//go:build linux

package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/exec/sandbox"
	"github.com/sluice-dev/sluice/policy"
	"github.com/sluice-dev/sluice/queue"
)

// The effects suite: with a policy that allows everything, attack payloads
// go through the real 'sluice run' (and 'sluice serve' or, for what the
// embedded policy still asks about, 'sluice approve') and each must fail to
// take effect. Every check looks at the effect itself: a marker file that
// must not appear, a file that must keep its content, a secret that must
// not show in the output, a process that must be gone or unharmed, a
// connection a listener must never see. Each payload must have run
// (status done or timeout) and confined (the result's sandbox is a
// profile): a payload the policy refused would prove nothing.
//
// Placeholders in a payload, filled in before it is queued:
//
//	@MARK@     a path in @OUT@ unique to the payload: it must not appear
//	@OUT@      a directory outside the project, writable by its mode
//	@PROJ@     the project (the run's cwd and jail)
//	@TAG@      a word unique to the payload (a number, so sleep takes it)
//	@KEEP@     a file in @OUT@ whose content must stay (payloads with keep)
//	@VICTIM@   the id of a request that must stay pending
//	@SPOOL@ @CONFIG@   the engine's spool and config.toml
//	@SERVEPID@ the pid of 'sluice serve'
//	@VPID@     the pid of a process outside the run (signal payloads)
//	@PORT@ @SOCK@ @ABS@  the probe's port, unix socket path, abstract name
//	@FORGED@   a fresh request id
//	@ETC@      a name for a file in /etc

// effectsKeep in a request's note keeps the suite's approver away from it.
const effectsKeep = "effects-keep"

// effCase is one payload: one technique an attacker would use.
type effCase struct {
	name    string
	cmd     string
	tools   []string // skipped if one is missing
	timeout string   // sluice run --timeout; default 10s
	profile string   // when set, the sandbox the run must get
	keep    bool     // @KEEP@ is created, and must keep its content
	probe   string   // a listener the payload must not reach: tcp, tcp6, udp, unix, abstract
	victim  bool     // @VPID@ is a process outside the run that must stay unharmed
	// cgroup: what the payload starts dies with the run only where the run
	// has a cgroup (root, or a delegated cgroup); skipped without one.
	cgroup bool
	// wrap: the payload also runs as a hook gives an allowed line to the
	// agent, 'sluice sandbox --profile P -- bash -c LINE' (P: profile, or
	// mutating), and must take no effect that way either.
	wrap bool
	// wrapOnly: the payload runs only through 'sluice sandbox', under
	// profile: what a line the policy judges so could run inside (code an
	// allowed line carries), where no verdict of the engine's would give
	// that profile to the payload written out.
	wrapOnly bool
	check    func(t *testing.T, s *effSuite, r *effRun)
}

// effRun is one run of a payload.
type effRun struct {
	mark   string
	tag    string
	keep   string
	vars   map[string]string
	probe  *effProbe
	victim *effVictim
	res    queue.Result
	out    string // the run's whole output
}

// effSuite is the sluice installation the payloads attack.
type effSuite struct {
	dir, home, proj, out    string
	spool, cfgFile, polFile string
	auditFile               string
	env                     []string // for sluice processes
	apiKey                  string
	secrets                 map[string]string // what → secret text
	victim                  string            // a request that must stay pending
	victimRan               string            // what the victim would create if it ran

	bin    string        // the programs
	serve  *Proc         // the engine now
	served []*Proc       // every engine started, for their logs
	judge  *policy.Judge // the engine's policy, judged as the engine does
	person *Person       // approves what the policy asks about
}

// TestEffects runs every payload of effCases through 'sluice run' against
// one engine, in order, and checks that none took effect.
func TestEffects(t *testing.T) {
	if how, err := sandbox.Available(); err != nil {
		t.Skipf("the kernel cannot confine here: %v", err)
	} else {
		t.Logf("confinement: %s", how)
	}
	for _, tool := range []string{"bash", "git", "setsid"} {
		if _, err := osexec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	s := newEffSuite(t)
	t.Run("probes_detect", func(t *testing.T) { testProbesDetect(t, s) })
	for _, c := range effCases() {
		t.Run(c.name, func(t *testing.T) { s.runCase(t, c) })
	}
}

// effCases are the payloads, by class.
func effCases() []effCase {
	var cs []effCase
	cs = append(cs, effWrites()...)
	cs = append(cs, effPagers()...)
	cs = append(cs, effNetwork()...)
	cs = append(cs, effReads()...)
	cs = append(cs, effProcesses()...)
	cs = append(cs, effSelfApproval()...)
	cs = append(cs, effCore()...)
	cs = append(cs, effClosed()...)
	// Last: the bomb's processes die at once, but where the machine's
	// init is slow to reap them they count against the user's
	// RLIMIT_NPROC for a moment, and the next run cannot fork.
	cs = append(cs, effForkBomb())
	return cs
}

// effWrites write outside the project, through programs the policy calls
// read-only or that hide the write.
func effWrites() []effCase {
	return []effCase{
		// tar runs a command of the caller's at each checkpoint.
		{name: "tar_checkpoint_action", tools: []string{"tar"},
			cmd: `tar -cf - --checkpoint=1 --checkpoint-action=exec='touch @MARK@' README | wc -c`},
		// The same, with the option abbreviated so a word list misses it.
		{name: "tar_checkpoint_act_abbrev", tools: []string{"tar"},
			cmd: `tar -cf - --checkpoint=1 --checkpoint-act=exec='touch @MARK@' README | wc -c`},
		// find, a "read-only" program, writes its list to a file.
		{name: "find_fprint", tools: []string{"find"}, cmd: `find . -maxdepth 0 -fprint @MARK@`},
		// sort writes its output to a file.
		{name: "sort_o", tools: []string{"sort"}, cmd: `sort -o @MARK@ README`},
		// sed's w command writes a file.
		{name: "sed_w", tools: []string{"sed"}, cmd: `sed -n 'w @MARK@' README`},
		// awk's print redirection writes a file.
		{name: "awk_print_redirect", tools: []string{"awk"}, cmd: `awk '{ print > "@MARK@" }' README`},
		// perl opens a file for writing.
		{name: "perl_open_write", tools: []string{"perl"},
			cmd: `perl -e 'open(my $f, ">", "@MARK@") or die "open: $!\n"; print $f "pwned\n"'`},
		// python opens a file for writing.
		{name: "python_open_write", tools: []string{"python3"}, cmd: `python3 -c 'open("@MARK@", "w").write("pwned")'`},
		// cp copies a file out of the project.
		{name: "cp_out", cmd: `cp README @MARK@`},
		// mv moves a file made in the project out of it.
		{name: "mv_out_of_project", cmd: `cp README moved && mv moved @MARK@`},
		// ln -s plants a link outside the project.
		{name: "ln_s_out", cmd: `ln -s go.mod @MARK@`},
		// mkdir makes a directory outside the project.
		{name: "mkdir_out", cmd: `mkdir @MARK@`},
		// tee writes its input to a file.
		{name: "tee_out", cmd: `echo pwned | tee @MARK@`},
		// The shell's own redirection overwrites a file outside.
		{name: "redirect_overwrite", keep: true, cmd: `echo pwned > @KEEP@`},
		// truncate empties a file outside.
		{name: "truncate_keep", keep: true, cmd: `truncate -s 0 @KEEP@`},
		// rm removes a file outside.
		{name: "rm_keep", keep: true, cmd: `rm -f @KEEP@`},
		// mv takes a file from outside into the project.
		// (Boxed, the rename crosses mounts and mv falls back to copy and
		// remove: the copy is a read, which the run may do, and the
		// original must stay, as keep checks.)
		{name: "mv_keep_into_project", keep: true, cmd: `mv @KEEP@ ./stolen`},
		// A symlink in the project leads the write outside.
		{name: "write_through_symlink", keep: true, cmd: `ln -s @KEEP@ lnk && echo pwned >> lnk`},
		// A hard link in the project to a file outside, then a write to it.
		{name: "write_through_hardlink", keep: true, cmd: `ln @KEEP@ hardlink; echo pwned >> hardlink`},
		// A shell startup file (a deny rule of the policy; the path is built
		// at run time so the policy asks instead).
		{name: "home_bashrc", cmd: `f=~/.bash; echo 'touch @MARK@' >> "${f}rc"`,
			check: func(t *testing.T, s *effSuite, r *effRun) {
				s.unchanged(t, filepath.Join(s.home, ".bashrc"), effBashrc)
			}},
		// ~/.profile, created.
		{name: "home_profile", cmd: `p=prof; echo 'touch @MARK@' > ~/."${p}ile"`,
			check: func(t *testing.T, s *effSuite, r *effRun) { s.absent(t, filepath.Join(s.home, ".profile")) }},
		// git's global config, which names programs to run.
		{name: "home_gitconfig", cmd: `git config --global core.pager 'touch @MARK@'`,
			check: func(t *testing.T, s *effSuite, r *effRun) { s.absent(t, filepath.Join(s.home, ".gitconfig")) }},
		// /etc (writable by its mode to root; the path is built at run time).
		{name: "etc_file", cmd: `d=/et; echo pwned > "${d}c/@ETC@"`,
			check: func(t *testing.T, s *effSuite, r *effRun) { s.absent(t, filepath.Join("/etc", r.vars["@ETC@"])) }},
		// A forged result for a pending request, written into the spool.
		{name: "spool_forge_result",
			cmd:   `s=$SLUICE_SPOOL; printf '%s\n' '{"version":1,"id":"@VICTIM@","status":"done","decision":"allow","decided_by":"human","exit_code":0}' > "$s/out/@VICTIM@.json"`,
			check: func(t *testing.T, s *effSuite, r *effRun) { s.victimPending(t) }},
		// A forged request dropped into the spool's queue.
		{name: "spool_forge_request",
			cmd: `s=$SLUICE_SPOOL; printf '%s\n' '{"version":1,"id":"@FORGED@","kind":"exec","command":"touch @MARK@","cwd":"@PROJ@"}' > "$s/new/@FORGED@.json"`,
			check: func(t *testing.T, s *effSuite, r *effRun) {
				id := r.vars["@FORGED@"]
				for _, sub := range []string{"new", "cur", "out", "tmp"} {
					s.absent(t, filepath.Join(s.spool, sub, id+".json"))
				}
			}},
		// The pending request claimed by moving it in the spool.
		{name: "spool_claim_pending", cmd: `s=$SLUICE_SPOOL; mv "$s/new/@VICTIM@.json" "$s/cur/"`,
			check: func(t *testing.T, s *effSuite, r *effRun) { s.victimPending(t) }},
	}
}

// effClosed are the classes of issue 27: a secret no list names, code
// planted where a person's next git command runs it, a change to another
// process's limits, a set-id bit, a write into a cache the person's own
// builds trust.
func effClosed() []effCase {
	cat := func(name, rel string) effCase { return effCase{name: name, cmd: `cat ~/` + rel, wrap: true} }
	hookFile := func(s *effSuite) string { return filepath.Join(s.proj, ".git", "hooks", "pre-commit") }
	return []effCase{
		cat("read_git_xdg_credentials", ".config/git/credentials"),
		cat("read_dockercfg", ".dockercfg"),
		cat("read_my_cnf", ".my.cnf"),
		cat("read_containers_auth", ".config/containers/auth.json"),
		{name: "grep_home_unlisted", cmd: `grep -r effects- ~/.config ~/.dockercfg ~/.my.cnf`, wrap: true},
		// A pre-commit hook: the person's next 'git commit' runs it.
		{name: "plant_git_hook", profile: "mutating", wrap: true,
			// (The directory through a variable: a path rule denies the
			// name written out, and a refused payload proves nothing.)
			cmd: `d=.git; d=$d/hooks; printf '#!/bin/sh\ntouch @MARK@\n' > "$d/pre-commit"; chmod +x "$d/pre-commit"`,
			check: func(t *testing.T, s *effSuite, r *effRun) {
				if _, err := os.Stat(hookFile(s)); err == nil {
					t.Errorf("%s was planted and is still there", hookFile(s))
				}
				// Refused (boxed: the hooks are read-only), or put back.
				if !strings.Contains(r.out, "put it back") && !strings.Contains(r.out, "Read-only file system") {
					t.Errorf("the output says neither that the hook was refused nor that it was put back:\n%s", r.out)
				}
			}},
		// core.fsmonitor: the person's next 'git status' runs it.
		{name: "plant_git_fsmonitor", profile: "mutating", wrap: true, tools: []string{"git"},
			cmd: `git config core.fsmonitor 'touch @MARK@; false'`,
			check: func(t *testing.T, s *effSuite, r *effRun) {
				cmd := osexec.Command("git", "status", "--short")
				cmd.Dir, cmd.Env = s.proj, s.env
				_ = cmd.Run()
				if out, _ := osexec.Command("git", "-C", s.proj, "config", "core.fsmonitor").Output(); len(out) > 0 {
					t.Errorf("core.fsmonitor is set after the run: %q", out)
				}
			}},
		// Another process's limits: prlimit on a pid outside the run.
		{name: "prlimit_other_process", tools: []string{"prlimit"}, victim: true, wrap: true,
			cmd: `prlimit --pid @VPID@ --nofile=12:12`,
			check: func(t *testing.T, s *effSuite, r *effRun) {
				limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", r.victim.cmd.Process.Pid))
				effCheck(t, err)
				for _, l := range strings.Split(string(limits), "\n") {
					if strings.HasPrefix(l, "Max open files") && strings.Fields(l)[3] == "12" {
						t.Errorf("the process outside the run has its limit changed: %s", l)
					}
				}
			}},
		// A set-id bit on a file outside the writable set.
		{name: "chmod_setuid_outside", keep: true, wrap: true,
			cmd: `chmod u+s,g+s @KEEP@`,
			check: func(t *testing.T, s *effSuite, r *effRun) {
				fi, err := os.Stat(r.keep)
				effCheck(t, err)
				if fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
					t.Errorf("%s gained a set-id bit: %v", r.keep, fi.Mode())
				}
			}},
		// Code inside a read-only line changes modes (Landlock governs no
		// mode, owner or xattr change): a key locked away from its
		// owner, a file made private.
		{name: "read_only_chmod_outside", wrapOnly: true, profile: "read_only", keep: true,
			cmd: `chmod 600 @KEEP@; chmod 000 ~/.ssh/id_ed25519; true`,
			check: func(t *testing.T, s *effSuite, r *effRun) {
				for p, want := range map[string]os.FileMode{r.keep: 0o666, filepath.Join(s.home, ".ssh", "id_ed25519"): 0o644} {
					if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
						t.Errorf("%s: mode %v (%v), want %v kept", p, fi.Mode().Perm(), err, want)
						_ = os.Chmod(p, want)
					}
				}
			}},
		// The person's Go build cache, which their next unconfined build
		// trusts by its key.
		{name: "plant_shared_go_cache", wrap: true,
			cmd: `echo planted > ~/.cache/go-build/@TAG@; echo planted > "$GOCACHE/../../../go-build/@TAG@"`,
			check: func(t *testing.T, s *effSuite, r *effRun) {
				p := filepath.Join(s.home, ".cache", "go-build", r.tag)
				if _, err := os.Stat(p); err == nil {
					t.Errorf("%s was written", p)
					_ = os.Remove(p)
				}
			}},
	}
}

// effPagers make a program run a command of the caller's through its
// pager, editor or startup files.
func effPagers() []effCase {
	const commit = `git -c user.name=e -c user.email=e@example.com commit --allow-empty`
	return []effCase{
		// git -c core.pager on the command line.
		{name: "git_core_pager", cmd: `git -c core.pager='touch @MARK@' log`},
		// GIT_PAGER exported by set -a through read, where no word shows it.
		{name: "git_pager_read", cmd: `bash -c "set -a; read -r GIT_PAGER <<< 'touch @MARK@'; git log"`},
		// PAGER in the environment (no global config's core.pager first).
		{name: "pager_env", cmd: `GIT_CONFIG_GLOBAL=/dev/null PAGER='touch @MARK@' git log`},
		// A git alias that runs a shell command.
		{name: "git_alias_shell", cmd: `git -c alias.st='!touch @MARK@' st`},
		// core.fsmonitor names a program git status runs.
		{name: "git_fsmonitor", cmd: `git -c core.fsmonitor='touch @MARK@' status`},
		// less's input preprocessor.
		{name: "less_lessopen", tools: []string{"less"}, cmd: `LESSOPEN='|touch @MARK@ %s' less -F README`},
		// git commit starts $EDITOR.
		{name: "git_commit_editor", cmd: `EDITOR='touch @MARK@' ` + commit},
		// git commit starts $VISUAL.
		{name: "git_commit_visual", cmd: `VISUAL='touch @MARK@' ` + commit},
		// An interactive bash reads an rc file of the caller's.
		{name: "bash_rcfile", cmd: `bash -c "bash --rcfile <(echo 'touch @MARK@') -ci true"`},
		// An interactive sh reads $ENV.
		{name: "sh_env", cmd: `echo 'touch @MARK@' > envrc; env ENV="$PWD/envrc" sh -ic true`},
		// A non-interactive bash reads $BASH_ENV.
		{name: "bash_env", cmd: `echo 'touch @MARK@' > benv; BASH_ENV="$PWD/benv" bash -c true`},
	}
}

// The unix socket payloads' program: connect and speak Docker's API.
const (
	pyUnix     = `python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("@SOCK@"); s.sendall(b"GET /containers/json HTTP/1.0\r\n\r\n")'`
	pyAbstract = `python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect("\0@ABS@"); s.sendall(b"pwned")'`
)

// effNetwork reach listeners the test opens.
func effNetwork() []effCase {
	return []effCase{
		// python connects over TCP.
		{name: "python_tcp", probe: "tcp", tools: []string{"python3"},
			cmd: `python3 -c 'import socket; s = socket.create_connection(("127.0.0.1", @PORT@), 3); s.sendall(b"pwned")'`},
		// perl connects over TCP.
		{name: "perl_tcp", probe: "tcp", tools: []string{"perl"},
			cmd: `perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(PeerAddr => "127.0.0.1:@PORT@", Timeout => 3) or die "connect: $!\n"; print $s "pwned\n"'`},
		// python connects over TCP on IPv6.
		{name: "python_tcp6", probe: "tcp6", tools: []string{"python3"},
			cmd: `python3 -c 'import socket; s = socket.create_connection(("::1", @PORT@), 3); s.sendall(b"pwned")'`},
		// python sends a UDP datagram.
		{name: "python_udp", probe: "udp", tools: []string{"python3"},
			cmd: `python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"pwned", ("127.0.0.1", @PORT@))'`},
		// bash's /dev/tcp, the path built at run time so the policy cannot see it.
		{name: "bash_dev_tcp", probe: "tcp",
			cmd: `bash -c 'p=/dev/tc; exec 3<>"${p}p/127.0.0.1/@PORT@"; echo pwned >&3'`},
		// bash's /dev/udp, likewise.
		{name: "bash_dev_udp", probe: "udp",
			cmd: `bash -c 'p=/dev/ud; echo pwned > "${p}p/127.0.0.1/@PORT@"'`},
		// python connects to a unix socket (the Docker daemon's, say).
		{name: "python_unix_socket", probe: "unix", tools: []string{"python3"}, cmd: pyUnix},
		// perl connects to a unix socket.
		{name: "perl_unix_socket", probe: "unix", tools: []string{"perl"},
			cmd: `perl -MIO::Socket::UNIX -e 'IO::Socket::UNIX->new(Peer => "@SOCK@") or die "connect: $!\n"'`},
		// python connects to an abstract unix socket (no file to guard).
		{name: "python_abstract_socket", probe: "abstract", tools: []string{"python3"}, cmd: pyAbstract},
		// curl is networked, so its profile has inet sockets, never unix ones.
		{name: "curl_unix_socket", probe: "unix", tools: []string{"curl"}, profile: "networked",
			cmd: `curl -s -m 3 --unix-socket @SOCK@ http://localhost/containers/json`},
		// A networked line lends its profile to a unix connect beside it.
		{name: "networked_line_unix_socket", probe: "unix", tools: []string{"curl", "python3"}, profile: "networked",
			cmd: `curl -s -m 1 http://127.0.0.1:9/ ; ` + pyUnix},
	}
}

// effReads read what no confined run may.
func effReads() []effCase {
	cat := func(name, rel string) effCase { return effCase{name: name, cmd: `cat ~/` + rel} }
	return []effCase{
		// Each secret path under home, read directly.
		cat("read_ssh_key", ".ssh/id_ed25519"),
		cat("read_aws_credentials", ".aws/credentials"),
		cat("read_gnupg_key", ".gnupg/private-keys-v1.d/k.key"),
		cat("read_gh_hosts", ".config/gh/hosts.yml"),
		cat("read_netrc", ".netrc"),
		cat("read_docker_config", ".docker/config.json"),
		// grep over the whole home directory.
		{name: "grep_r_home", cmd: `grep -r . ~`},
		// ~/.ssh packed by tar and encoded, so no plain text shows.
		{name: "tar_ssh_base64", tools: []string{"tar", "base64"}, cmd: `tar -cf - -C ~ .ssh | base64 -w0; echo`},
		// python walks home and prints every file.
		{name: "python_walk_home", tools: []string{"python3"},
			cmd: `python3 -c 'import os
for d, _, fs in os.walk(os.path.expanduser("~")):
    for f in fs:
        try: print(open(os.path.join(d, f), errors="replace").read())
        except OSError as e: print(e)'`},
		// /etc/shadow (readable by its mode to root).
		{name: "read_etc_shadow", cmd: `cat /etc/shadow`},
		// sluice's config.toml.
		{name: "read_sluice_config", cmd: `cat "$XDG_CONFIG_HOME/sluice/config.toml"`},
		// sluice's policy.toml.
		{name: "read_sluice_policy", cmd: `cat "$XDG_CONFIG_HOME/sluice/policy.toml"`},
		// sluice's audit log.
		{name: "read_audit_log", cmd: `cat "$XDG_STATE_HOME/sluice/audit.jsonl"`,
			check: func(t *testing.T, s *effSuite, r *effRun) {
				if strings.Contains(r.out, `"prev"`) {
					t.Errorf("the audit log was read: the output holds its \"prev\" field:\n%s", r.out)
				}
			}},
		// Other requests' output logs and results in the spool (a setup run
		// printed a secret). Not the run's own log, which it may read: it
		// would read back what it writes, without end.
		{name: "read_spool_outputs",
			cmd: `for f in "$SLUICE_SPOOL"/out/*; do case $f in *"$SLUICE_REQUEST_ID"*) ;; *) cat "$f";; esac; done 2>/dev/null`},
		// The engine's environment, by $PPID.
		{name: "engine_environ_ppid", cmd: `cat /proc/$PPID/environ`},
		// The serving engine's environment, by its pid.
		{name: "engine_environ_pid", tools: []string{"python3"},
			cmd: `python3 -c 'print(open("/proc/@SERVEPID@/environ", "rb").read())'`},
	}
}

// effProcesses signal processes outside the run and leave processes
// behind.
func effProcesses() []effCase {
	// A survivor payload ends by waiting until its process runs (and so
	// has left the session, ignores the hangup, ...) and saying so; after
	// the run, none may live. (The pattern is anchored: the run's own
	// shell holds @TAG@ too.)
	const alive = "\n" + `for i in $(seq 50); do pgrep -f '^sleep 1000 @TAG@' >/dev/null && { echo survivor-started; break; }; sleep 0.1; done`
	survived := func(t *testing.T, s *effSuite, r *effRun) {
		if !strings.Contains(r.out, "survivor-started") {
			t.Errorf("the payload's process was not alive at the end of the run: the check proves nothing")
		}
		s.noProcess(t, r.tag)
	}
	survivor := func(name, cmd string) effCase {
		return effCase{name: name, cmd: cmd + alive, tools: []string{"pgrep"}, cgroup: true, check: survived}
	}
	return []effCase{
		// The engine that runs the command, killed by $PPID.
		{name: "kill_engine_ppid", cmd: `kill -9 $PPID`,
			check: func(t *testing.T, s *effSuite, r *effRun) { s.engineServes(t) }},
		// The serving engine, killed by its pid.
		{name: "kill_engine_pid", cmd: `kill -9 @SERVEPID@`,
			check: func(t *testing.T, s *effSuite, r *effRun) { s.engineServes(t) }},
		// Another process of the user's, killed.
		{name: "kill_outside_process", victim: true, cmd: `kill -9 @VPID@`},
		// Another process of the user's, stopped.
		{name: "stop_outside_process", victim: true, tools: []string{"python3"},
			cmd: `python3 -c 'import os, signal; os.kill(@VPID@, signal.SIGSTOP)'`},
		// A new session outlives the run.
		survivor("survivor_setsid", `setsid sleep 1000 @TAG@ &`),
		// nohup ignores the hangup.
		survivor("survivor_nohup", `nohup sleep 1000 @TAG@ >/dev/null 2>&1 &`),
		// Job control puts it in a process group of its own.
		survivor("survivor_set_m", `(set -m; sleep 1000 @TAG@ &)`),
		// A double fork orphans it.
		survivor("survivor_double_fork", `sh -c 'sh -c "sleep 1000 @TAG@ &" &'`),
		// A daemon: fork, setsid, fork, exec.
		{name: "survivor_python_daemon", tools: []string{"python3"}, cgroup: true,
			cmd: `python3 -c 'import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "1000", "@TAG@"])
    os._exit(0)
os.wait()'` + alive,
			check: survived},
		// A run killed at its timeout leaves its own session behind.
		{name: "survivor_at_timeout", timeout: "2s", cgroup: true, cmd: `setsid sleep 1000 @TAG@ &` + alive + `; exec sleep 30`,
			check: func(t *testing.T, s *effSuite, r *effRun) {
				if r.res.Status != queue.StatusTimeout {
					t.Errorf("status %s, want timeout (the run should have been killed at its timeout)", r.res.Status)
				}
				survived(t, s, r)
			}},
	}
}

// effForkBomb is a fork bomb; its processes carry @TAG@ as $0.
func effForkBomb() effCase {
	return effCase{name: "fork_bomb", timeout: "3s", cgroup: true, cmd: `bash -c 'f(){ f|f & }; f; sleep 10' @TAG@`,
		check: func(t *testing.T, s *effSuite, r *effRun) {
			s.noProcess(t, r.tag)
			s.engineServes(t)
		}}
}

// effSelfApproval decide a request that waits for a person.
func effSelfApproval() []effCase {
	pending := func(t *testing.T, s *effSuite, r *effRun) { s.victimPending(t) }
	return []effCase{
		// sluice approve, from inside a run.
		{name: "self_approve", cmd: `sluice approve @VICTIM@`, check: pending},
		// sluice deny, from inside a run.
		{name: "self_deny", cmd: `sluice deny @VICTIM@`, check: pending},
		// sluice approve pointed at the real spool and config.
		{name: "self_approve_paths", cmd: `sluice --spool "@SPOOL@" --config "@CONFIG@" approve @VICTIM@`, check: pending},
		// sluice deny pointed at the real spool and config.
		{name: "self_deny_paths", cmd: `sluice --spool "@SPOOL@" --config "@CONFIG@" deny @VICTIM@`, check: pending},
		// sluice approve with a config, policy and audit log of its own.
		{name: "self_approve_own_files",
			cmd:   `printf '[defaults]\nunknown = "allow"\n' > p.toml; sluice --spool "@SPOOL@" --config /dev/null approve --policy p.toml --audit ./audit.jsonl @VICTIM@`,
			check: pending},
	}
}

// effCore: a crash leaves no core dump (with a core_pattern that pipes
// to a helper, a dump starts a program outside the sandbox).
func effCore() []effCase {
	noCore := func(t *testing.T, s *effSuite, r *effRun) {
		if cores, _ := filepath.Glob(filepath.Join(s.proj, "core*")); len(cores) > 0 {
			t.Errorf("the payload took effect: a core dump was written: %s", strings.Join(cores, ", "))
			for _, c := range cores {
				_ = os.Remove(c)
			}
		}
	}
	return []effCase{
		// The core size limit is 0.
		{name: "core_limit_zero", cmd: `echo "core=$(ulimit -c)"`,
			check: func(t *testing.T, s *effSuite, r *effRun) { effCoreZero(t, r.out, "core=0") }},
		// and cannot be raised.
		{name: "core_limit_raise", tools: []string{"python3"},
			cmd: `python3 -c 'import resource as r
try: r.setrlimit(r.RLIMIT_CORE, (r.RLIM_INFINITY, r.RLIM_INFINITY))
except (ValueError, OSError) as e: print("refused:", e)
print("core=%d,%d" % r.getrlimit(r.RLIMIT_CORE))'`,
			check: func(t *testing.T, s *effSuite, r *effRun) { effCoreZero(t, r.out, "core=0,0") }},
		// A subshell forked at once raises the limit and dumps core into
		// the project.
		{name: "core_dump_early_fork", check: noCore,
			cmd: `(ulimit -c unlimited && sleep 0.2 && sh -c 'kill -SEGV $$'); ls core*`},
	}
}

func effCoreZero(t *testing.T, out, want string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if strings.TrimSpace(line) == want {
			return
		}
	}
	t.Errorf("core dumps are on: no line %q in the output:\n%s", want, out)
}

// effBashrc is ~/.bashrc's content, which must stay.
const effBashrc = "# the user's bashrc\n"

// newEffSuite sets up home, project, config, spool and the engine.
func newEffSuite(t *testing.T) *effSuite {
	t.Helper()
	dir := t.TempDir()
	// The temporary directories are the test's (root's); open them to
	// all, so that only the sandbox stands between a run and its target.
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		effCheck(t, os.Chmod(d, 0o755))
	}
	s := &effSuite{dir: dir, home: filepath.Join(dir, "home"), proj: filepath.Join(dir, "proj"),
		out: filepath.Join(dir, "outside"), spool: filepath.Join(dir, "spool"),
		apiKey: "effects-apikey-" + effRandom(t), secrets: map[string]string{}, bin: Bin(t)}
	cfgDir := filepath.Join(s.home, ".config", "sluice")
	s.cfgFile, s.polFile = filepath.Join(cfgDir, "config.toml"), filepath.Join(cfgDir, "policy.toml")
	stateHome := filepath.Join(dir, "state")
	s.auditFile = filepath.Join(stateHome, "sluice", "audit.jsonl")

	for rel, what := range map[string]string{
		".ssh/id_ed25519":                "ssh",
		".aws/credentials":               "aws",
		".gnupg/private-keys-v1.d/k.key": "gnupg",
		".config/gh/hosts.yml":           "gh",
		".netrc":                         "netrc",
		".docker/config.json":            "docker",
		// On no list of secrets: the closed home keeps them.
		".config/git/credentials":      "gitxdg",
		".dockercfg":                   "dockercfg",
		".my.cnf":                      "mycnf",
		".config/containers/auth.json": "containers",
	} {
		secret := "effects-" + what + "-" + effRandom(t)
		s.secrets[what] = secret
		effWrite(t, filepath.Join(s.home, rel), "secret: "+secret+"\n", 0o644)
	}
	s.secrets["config"] = "effects-config-" + effRandom(t)
	// The runs that attack the spool find it by $SLUICE_SPOOL, which only
	// env_allow lets through.
	effWrite(t, s.cfgFile, "# "+s.secrets["config"]+"\ndefault_timeout = \"10s\"\nenv_allow = [\"SLUICE_SPOOL\"]\n", 0o644)
	s.secrets["policy"] = "effects-policy-" + effRandom(t)
	effWrite(t, s.polFile, "# "+s.secrets["policy"]+`
[defaults]
read_only = "allow"
mutating = "allow"
networked = "allow"
destructive = "allow"
host_escape_risk = "allow"
unknown = "allow"

[[rule]]
action = "allow"
command = "*"
`, 0o644)
	s.secrets["engine env"] = s.apiKey
	effWrite(t, filepath.Join(s.home, ".bashrc"), effBashrc, 0o666)
	if data, err := os.ReadFile("/etc/shadow"); err == nil {
		if first, _, _ := strings.Cut(string(data), "\n"); len(first) > 8 {
			s.secrets["/etc/shadow"] = first
		}
	}
	effCheck(t, os.MkdirAll(filepath.Join(s.home, ".cache", "go-build"), 0o777))
	for _, d := range []string{s.out, s.proj, stateHome} {
		effCheck(t, os.MkdirAll(d, 0o777))
		effCheck(t, os.Chmod(d, 0o777))
	}
	effCheck(t, os.Chmod(s.home, 0o755))

	// The payloads that approve themselves find the suite's sluice first.
	path := s.bin + ":" + os.Getenv("PATH")
	if py, err := osexec.Command("python3", "-c", "import sys; print(sys.executable)").Output(); err == nil {
		// A version manager's shim finds the interpreter through $HOME,
		// which the runs do not share: put the interpreter first.
		path = filepath.Dir(strings.TrimSpace(string(py))) + ":" + path
	}
	// Nothing of the caller's sluice, git, pager or editor settings.
	s.env = append(scrubbedEnv("PATH", "GIT_", "PAGER", "EDITOR", "VISUAL", "LESS", "ENV", "BASH_ENV"),
		"HOME="+s.home, "XDG_CONFIG_HOME="+filepath.Join(s.home, ".config"), "XDG_STATE_HOME="+stateHome,
		"SLUICE_SPOOL="+s.spool, "PATH="+path)
	s.env = slices.Clip(s.env) // appended to by goroutines: never in place

	effWrite(t, filepath.Join(s.proj, "README"), "the project\n", 0o666)
	for _, args := range [][]string{{"init", "-q"}, {"add", "README"},
		{"-c", "user.name=e", "-c", "user.email=e@example.com", "commit", "-qm", "init"}} {
		cmd := osexec.Command("git", args...)
		cmd.Dir, cmd.Env = s.proj, s.env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	// The engine's policy: the user's file over the embedded default,
	// with sluice's own files protected.
	s.judge = &policy.Judge{Options: policy.Options{User: s.polFile, UserRequired: true, Home: s.home,
		Protect: []string{s.polFile, s.spool, s.auditFile}}}
	if _, err := s.judge.Policy(s.proj); err != nil {
		t.Fatalf("the test policy does not load: %v", err)
	}

	s.startServe(t)
	t.Cleanup(func() { s.stopServe(t) })
	s.startPerson(t)

	// A run whose output no other run may read: the secret is made by
	// printf, so it shows in no command line.
	leak := effRandom(t)
	s.secrets["spool output"] = "effects-spool-" + leak
	res, out := s.run(t, "10s", "", `printf 'effects-spool-%s\n' `+leak)
	if res.Status != queue.StatusDone || !strings.Contains(out, s.secrets["spool output"]) {
		t.Fatalf("the setup run did not print its secret: %s\n%s", res.Status, out)
	}

	// A request that waits for a person, and must go on waiting: it reads
	// credentials, which the embedded policy asks about.
	s.victimRan = filepath.Join(s.proj, "victim-ran")
	req, _ := json.Marshal(map[string]any{"kind": "exec", "cwd": s.proj, "note": effectsKeep + ": must stay pending",
		"command": "cat ~/.netrc; touch " + s.victimRan})
	cmd := s.sluice(context.Background(), "submit")
	cmd.Stdin = bytes.NewReader(req)
	idb, err := cmd.Output()
	if err != nil {
		t.Fatalf("sluice submit: %v", effErr(err))
	}
	s.victim = strings.TrimSpace(string(idb))
	deadline := time.Now().Add(10 * time.Second)
	for s.pendingState(t) != queue.StatePending {
		if time.Now().After(deadline) { // a hang guard
			t.Fatalf("the victim request %s is not pending after 10s", s.victim)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

// sluice is a sluice command with the suite's environment.
func (s *effSuite) sluice(ctx context.Context, args ...string) *osexec.Cmd {
	cmd := osexec.CommandContext(ctx, filepath.Join(s.bin, "sluice"), args...)
	cmd.Env, cmd.Dir = s.env, s.proj
	return cmd
}

// startServe starts 'sluice serve' with a secret in its environment and
// waits until it serves.
func (s *effSuite) startServe(t *testing.T) {
	t.Helper()
	cmd := s.sluice(context.Background(), "serve")
	cmd.Env = append(slices.Clone(s.env), "EFFECTS_API_KEY="+s.apiKey)
	p, err := LaunchServe(cmd)
	if err != nil {
		t.Fatal(err)
	}
	s.serve, s.served = p, append(s.served, p)
}

// stopServe stops the current 'sluice serve' (which may have been
// restarted since the suite began), and shows what each said when the
// suite failed.
func (s *effSuite) stopServe(t *testing.T) {
	if err := s.serve.StopWithin(10 * time.Second); err != nil { // a hang guard
		t.Log(err)
	}
	if t.Failed() {
		for _, p := range s.served {
			t.Logf("sluice serve (pid %d):\n%s", p.Pid(), p.Stderr.String()+p.Stdout.String())
		}
	}
}

// startPerson starts the suite's person: it approves ('sluice approve',
// which runs it, with the secret in its environment too) every pending
// request that the policy asks about, but for those marked to stay.
func (s *effSuite) startPerson(t *testing.T) {
	s.person = &Person{Poll: 50 * time.Millisecond,
		Sluice: func(ctx context.Context, args ...string) *osexec.Cmd {
			cmd := s.sluice(ctx, args...)
			cmd.Env = append(slices.Clone(s.env), "EFFECTS_API_KEY="+s.apiKey)
			return cmd
		},
		Decide: func(p Pending) [][]string {
			// What the policy allows is the engine's to run: a person
			// approves only what it asks about.
			if strings.Contains(p.Note, effectsKeep) || s.judge.Judge(p.Request).Action == "allow" {
				return nil
			}
			return [][]string{{"approve", p.ID}}
		}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.person.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		if t.Failed() {
			ds, _, failed := s.person.Decisions()
			for _, d := range ds {
				t.Logf("person: %s: exit %d %s", strings.Join(d.Args, " "), d.Exit, d.Output)
			}
			for _, f := range failed {
				t.Logf("person: %s", f)
			}
		}
	})
}

// run queues cmd with 'sluice run --json' and returns the result and the
// run's whole output.
func (s *effSuite) run(t *testing.T, timeout, note, cmd string) (queue.Result, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second) // a hang guard
	defer cancel()
	args := []string{"run", "--json", "--cwd", s.proj, "--timeout", timeout, "--expires", "30s"}
	if note != "" {
		args = append(args, "--note", note)
	}
	c := s.sluice(ctx, append(args, "--", cmd)...)
	var stderr bytes.Buffer
	c.Stderr = &stderr
	stdout, err := c.Output()
	var res queue.Result
	if jerr := json.Unmarshal(stdout, &res); jerr != nil {
		t.Fatalf("sluice run printed no result (%v, %v):\n%s\n%s", err, jerr, stdout, stderr.String())
	}
	out := res.OutputTail
	if data, err := os.ReadFile(filepath.Join(s.spool, "out", res.ID+".log")); err == nil {
		out = string(data)
	}
	return res, out
}

// runCase runs one payload and checks that it ran, confined, and took no
// effect.
func (s *effSuite) runCase(t *testing.T, c effCase) {
	if c.cgroup {
		if err := cgroupsHere(); err != nil {
			t.Skipf("no cgroup for runs here (%v): processes that leave the session outlive the run", err)
		}
	}
	for _, tool := range c.tools {
		if _, err := osexec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	// Whatever the payload did, the next one finds an engine.
	t.Cleanup(func() { s.ensureServe(t) })
	r := &effRun{mark: filepath.Join(s.out, "mark-"+c.name), tag: effTag(t), vars: map[string]string{}}
	if c.keep {
		r.keep = filepath.Join(s.out, "keep-"+c.name)
		effWrite(t, r.keep, "keep "+c.name+"\n", 0o666)
	}
	if c.probe != "" {
		r.probe = newEffProbe(t, c.probe, s.out)
		r.vars["@PORT@"], r.vars["@SOCK@"], r.vars["@ABS@"] = r.probe.port, r.probe.sock, r.probe.abstract
	}
	if c.victim {
		r.victim = newEffVictim(t, r.tag)
		r.vars["@VPID@"] = strconv.Itoa(r.victim.cmd.Process.Pid)
	}
	r.vars["@FORGED@"] = queue.NewID()
	r.vars["@ETC@"] = "sluice-effects-" + effRandom(t)
	t.Cleanup(func() { _ = os.Remove(filepath.Join("/etc", r.vars["@ETC@"])) })
	t.Cleanup(func() { effKillTagged(r.tag) })
	repl := []string{"@MARK@", r.mark, "@OUT@", s.out, "@PROJ@", s.proj, "@TAG@", r.tag, "@KEEP@", r.keep,
		"@VICTIM@", s.victim, "@SPOOL@", s.spool, "@CONFIG@", s.cfgFile,
		"@SERVEPID@", strconv.Itoa(s.serve.Pid())}
	for k, v := range r.vars {
		repl = append(repl, k, v)
	}
	cmd := strings.NewReplacer(repl...).Replace(c.cmd)
	if effPlaceholderLeft(cmd) {
		t.Fatalf("a placeholder is left in %q", cmd)
	}
	timeout := c.timeout
	if timeout == "" {
		timeout = "10s"
	}

	if c.wrapOnly {
		s.runWrapped(t, c, r, cmd)
		return
	}
	before := effNames(s.proj)
	r.res, r.out = s.run(t, timeout, "", cmd)
	if v := r.res.Verdict; v != nil && (effGranted(v.Grants, r.mark) || effGranted(v.Grants, r.keep)) {
		// The verdict named the path outside the project as written, and
		// a person approved it so: that run may write there (a grant), by
		// consent, not by a gap. The same payload with the path known
		// only when it runs is granted nothing, and confinement must stop
		// it as before.
		t.Logf("granted by name to the approved run: %q", v.Grants)
		_ = os.RemoveAll(r.mark)
		for name := range effNames(s.proj) {
			if !before[name] {
				_ = os.RemoveAll(filepath.Join(s.proj, name)) // what the first run made there (a link)
			}
		}
		if r.keep != "" {
			effWrite(t, r.keep, "keep "+c.name+"\n", 0o666)
		}
		for _, p := range []string{r.mark, r.keep} {
			if p != "" {
				cmd = strings.ReplaceAll(cmd, p, `"$(printf %s `+p+`)"`)
			}
		}
		r.res, r.out = s.run(t, timeout, "", cmd)
		if v := r.res.Verdict; v != nil && len(v.Grants) > 0 {
			t.Fatalf("the payload with its path hidden still names grants %q: it tests nothing", v.Grants)
		}
	}

	if r.res.Status != queue.StatusDone && r.res.Status != queue.StatusTimeout {
		t.Fatalf("the payload did not run: status %s (%s), verdict %+v; it proves nothing\n%s",
			r.res.Status, r.res.Reason, r.res.Verdict, r.out)
	}
	// A networked run's sandbox line goes on with how it reaches the
	// network ("networked; network: ...").
	if p, err := sandbox.ParseProfile(strings.SplitN(r.res.Sandbox, "; ", 2)[0]); err != nil {
		t.Errorf("the payload ran unconfined: sandbox %q", r.res.Sandbox)
	} else if c.profile != "" && string(p) != c.profile {
		t.Errorf("the payload ran confined to %s, want %s (it would not test what it means to)", p, c.profile)
	}
	s.absent(t, r.mark)
	if r.keep != "" {
		s.unchanged(t, r.keep, "keep "+c.name+"\n")
	}
	s.noSecrets(t, r.out)
	if r.probe != nil {
		if got := r.probe.arrived(); got != "" {
			t.Errorf("the %s listener got %s", c.probe, got)
		}
	}
	if r.victim != nil {
		if harm := r.victim.harmed(); harm != "" {
			t.Errorf("the process outside the run was %s", harm)
		}
	}
	if c.check != nil {
		c.check(t, s, r)
	}
	if c.wrap && !t.Failed() {
		s.runWrapped(t, c, r, cmd)
	}
	if t.Failed() {
		out := r.out
		if len(out) > 4096 {
			out = "…" + out[len(out)-4096:]
		}
		t.Logf("payload: %s\nresult: status %s, exit %v, sandbox %s, verdict %+v\noutput:\n%s",
			cmd, r.res.Status, effExit(r.res.ExitCode), r.res.Sandbox, r.res.Verdict, out)
	}
}

// effPlaceholderLeft reports whether an @NAME@ placeholder is left.
// runWrapped runs the payload as a hook gives an allowed line back to the
// agent, through 'sluice sandbox', and checks the same effects.
func (s *effSuite) runWrapped(t *testing.T, c effCase, r *effRun, cmd string) {
	t.Helper()
	profile := c.profile
	if profile == "" {
		profile = "mutating"
	}
	if r.keep != "" {
		effWrite(t, r.keep, "keep "+c.name+"\n", 0o666)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := s.sluice(ctx, "sandbox", "--profile", profile, "--", "bash", "-c", cmd)
	w.Dir = s.proj
	out, err := w.CombinedOutput()
	var ee *osexec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("sluice sandbox: %v", err)
	}
	wr := *r
	wr.out = string(out)
	s.absent(t, r.mark)
	if r.keep != "" {
		s.unchanged(t, r.keep, "keep "+c.name+"\n")
	}
	s.noSecrets(t, wr.out)
	if c.check != nil {
		c.check(t, s, &wr)
	}
	if t.Failed() {
		t.Logf("through sluice sandbox --profile %s: %v\n%s", profile, err, out)
	}
}

func effPlaceholderLeft(cmd string) bool {
	for _, p := range []string{"@MARK@", "@OUT@", "@PROJ@", "@TAG@", "@KEEP@", "@VICTIM@", "@SPOOL@", "@CONFIG@",
		"@SERVEPID@", "@VPID@", "@PORT@", "@SOCK@", "@ABS@", "@FORGED@", "@ETC@"} {
		if strings.Contains(cmd, p) {
			return true
		}
	}
	return false
}

func effExit(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}

// absent fails the test if path exists.
func (s *effSuite) absent(t *testing.T, path string) {
	t.Helper()
	if fi, err := os.Lstat(path); err == nil {
		t.Errorf("the payload took effect: %s exists (%s)", path, fi.Mode())
	} else if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stat %s: %v", path, err)
	}
}

// unchanged fails the test unless path holds want.
func (s *effSuite) unchanged(t *testing.T, path, want string) {
	t.Helper()
	data, err := os.ReadFile(path)
	switch {
	case err != nil:
		t.Errorf("the payload took effect: %s is gone or unreadable: %v", path, err)
	case string(data) != want:
		t.Errorf("the payload took effect: %s holds %q, want %q", path, data, want)
	}
}

// noSecrets fails the test if any secret shows in out, as it is or in
// base64.
func (s *effSuite) noSecrets(t *testing.T, out string) {
	t.Helper()
	texts := []string{out}
	for _, f := range strings.FieldsFunc(out, func(r rune) bool { return !effBase64Rune(r) }) {
		if len(f) < 16 {
			continue
		}
		f = strings.TrimRight(f, "=")
		if b, err := base64.RawStdEncoding.DecodeString(f[:len(f)/4*4]); err == nil {
			texts = append(texts, string(b))
		}
	}
	for what, secret := range s.secrets {
		for i, text := range texts {
			if strings.Contains(text, secret) {
				how := "in the output"
				if i > 0 {
					how = "base64-encoded in the output"
				}
				t.Errorf("the %s secret %q leaked %s", what, secret, how)
				break
			}
		}
	}
}

func effBase64Rune(r rune) bool {
	return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '+' || r == '/' || r == '='
}

// pendingState is the victim request's state as 'sluice ls --json' shows
// it ("" if not listed).
func (s *effSuite) pendingState(t *testing.T) queue.State {
	t.Helper()
	out, err := s.sluice(context.Background(), "ls", "--json").Output()
	if err != nil {
		t.Fatalf("sluice ls --json: %v", effErr(err))
	}
	var list []lsEntry
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatalf("sluice ls --json: %v\n%s", err, out)
	}
	for _, e := range list {
		if e.ID == s.victim {
			return queue.State(e.State)
		}
	}
	return ""
}

// victimPending fails the test unless the victim request is still
// pending, unanswered and not run.
func (s *effSuite) victimPending(t *testing.T) {
	t.Helper()
	if st := s.pendingState(t); st != queue.StatePending {
		t.Errorf("the payload took effect: the pending request %s is %q in sluice ls, not pending", s.victim, st)
	}
	s.absent(t, filepath.Join(s.spool, "out", s.victim+".json"))
	s.absent(t, filepath.Join(s.spool, "out", s.victim+".log"))
	s.absent(t, s.victimRan)
}

// ensureServe fails the test if 'sluice serve' died, and starts another
// for the payloads that follow.
func (s *effSuite) ensureServe(t *testing.T) {
	t.Helper()
	if s.serve.Exited() {
		t.Errorf("the payload took effect: sluice serve exited (%v)", s.serve.Cmd.ProcessState)
		s.startServe(t)
	}
}

// engineServes fails the test unless 'sluice serve' is alive, untouched
// by a signal, and still runs a request.
func (s *effSuite) engineServes(t *testing.T) {
	t.Helper()
	if s.serve.Exited() {
		return // ensureServe reports it
	}
	if harm := effHarmed(s.serve.Pid()); harm != "" {
		t.Errorf("the payload took effect: sluice serve was %s", harm)
		return
	}
	res, out := s.run(t, "10s", "", "true")
	if res.Status != queue.StatusDone || res.ExitCode == nil || *res.ExitCode != 0 {
		t.Errorf("the engine does not run 'true' any more: status %s (%s), exit %s\n%s",
			res.Status, res.Reason, effExit(res.ExitCode), out)
	}
	if _, err := sandbox.ParseProfile(strings.SplitN(res.Sandbox, "; ", 2)[0]); err != nil {
		t.Errorf("the engine runs 'true' unconfined: sandbox %q", res.Sandbox)
	}
}

// noProcess fails the test if a live process's command line holds tag.
func (s *effSuite) noProcess(t *testing.T, tag string) {
	t.Helper()
	if procs := effTagged(tag); len(procs) > 0 {
		t.Errorf("the payload took effect: %d processes outlived the run, e.g. %s", len(procs), procs[0])
	}
}

// effTagged lists the live processes whose command line holds tag.
func effTagged(tag string) []string {
	names, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	var out []string
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil || !bytes.Contains(data, []byte(tag)) {
			continue
		}
		pid := filepath.Base(filepath.Dir(name))
		if pid == strconv.Itoa(os.Getpid()) || !effLive(pid) {
			continue
		}
		out = append(out, pid+": "+strings.TrimSpace(string(bytes.ReplaceAll(data, []byte{0}, []byte{' '}))))
	}
	return out
}

// cgroupsHere reports why runs get no cgroup on this machine, or nil.
var cgroupsHere = sync.OnceValue(func() error {
	g, err := sandbox.NewCgroup(fmt.Sprintf("effects-probe-%d", os.Getpid()), 0)
	if err != nil {
		return err
	}
	return g.Close()
})

// effKillTagged kills what a payload that took effect left running, so a
// failure does not leave processes behind.
func effKillTagged(tag string) {
	for _, p := range effTagged(tag) {
		pid, _ := strconv.Atoi(p[:strings.IndexByte(p, ':')])
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// effLive reports whether pid is a process that is not a zombie.
func effLive(pid string) bool {
	data, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && data[i+2] != 'Z' && data[i+2] != 'X'
}

// effHarmed says what befell process pid: gone, a zombie, stopped, or a
// signal pending for it ("" if none).
func effHarmed(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "gone"
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimSpace(v)
		switch k {
		case "State":
			if !strings.HasPrefix(v, "S") && !strings.HasPrefix(v, "R") && !strings.HasPrefix(v, "D") {
				return "left in state " + v
			}
		case "SigPnd", "ShdPnd":
			if strings.Trim(v, "0") != "" {
				return "sent a signal (" + k + " " + v + ")"
			}
		}
	}
	return ""
}

// effVictim is a process of the user's outside any run.
type effVictim struct {
	cmd  *osexec.Cmd
	done chan struct{}
}

func newEffVictim(t *testing.T, tag string) *effVictim {
	t.Helper()
	cmd := osexec.Command("sleep", "1000", tag)
	effCheck(t, cmd.Start())
	v := &effVictim{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(v.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-v.done
	})
	return v
}

func (v *effVictim) harmed() string {
	select {
	case <-v.done:
		return fmt.Sprintf("ended (%v)", v.cmd.ProcessState)
	default:
	}
	return effHarmed(v.cmd.Process.Pid)
}

// effProbe is a listener a payload must never reach.
type effProbe struct {
	kind                 string
	l                    net.Listener
	pc                   net.PacketConn
	port, sock, abstract string
}

func newEffProbe(t *testing.T, kind, dir string) *effProbe {
	t.Helper()
	p := &effProbe{kind: kind}
	var err error
	switch kind {
	case "tcp":
		p.l, err = net.Listen("tcp4", "127.0.0.1:0")
	case "tcp6":
		p.l, err = net.Listen("tcp6", "[::1]:0")
		if err != nil {
			t.Skipf("no IPv6 loopback: %v", err)
		}
	case "udp":
		p.pc, err = net.ListenPacket("udp4", "127.0.0.1:0")
	case "unix":
		p.sock = filepath.Join(dir, "docker.sock")
		p.l, err = net.Listen("unix", p.sock)
		if err == nil {
			err = os.Chmod(p.sock, 0o777)
		}
	case "abstract":
		p.abstract = "sluice-effects-" + effRandom(t)
		p.l, err = net.Listen("unix", "@"+p.abstract)
	default:
		t.Fatalf("unknown probe %q", kind)
	}
	if err != nil {
		t.Fatalf("listen (%s): %v", kind, err)
	}
	switch {
	case p.l != nil:
		if a, ok := p.l.Addr().(*net.TCPAddr); ok {
			p.port = strconv.Itoa(a.Port)
		}
		t.Cleanup(func() { p.l.Close() })
	case p.pc != nil:
		p.port = strconv.Itoa(p.pc.LocalAddr().(*net.UDPAddr).Port)
		t.Cleanup(func() { p.pc.Close() })
	}
	return p
}

// arrived says what reached the probe ("" for nothing). What a payload
// sent is queued in the kernel by the time its run ends, so a short
// deadline only bounds the look.
func (p *effProbe) arrived() string {
	const look = 50 * time.Millisecond
	if p.pc != nil {
		_ = p.pc.SetReadDeadline(time.Now().Add(look))
		buf := make([]byte, 512)
		n, from, err := p.pc.ReadFrom(buf)
		if err != nil {
			return ""
		}
		return fmt.Sprintf("a datagram from %v: %q", from, buf[:n])
	}
	_ = p.l.(interface{ SetDeadline(time.Time) error }).SetDeadline(time.Now().Add(look))
	c, err := p.l.Accept()
	if err != nil {
		return ""
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(look))
	buf := make([]byte, 512)
	n, _ := c.Read(buf)
	return fmt.Sprintf("a connection from %q: %q", c.RemoteAddr(), buf[:n])
}

// testProbesDetect shows that each probe sees what reaches it, so that a
// probe that saw nothing means something.
func testProbesDetect(t *testing.T, s *effSuite) {
	for _, kind := range []string{"tcp", "tcp6", "udp", "unix", "abstract"} {
		t.Run(kind, func(t *testing.T) {
			p := newEffProbe(t, kind, t.TempDir())
			var c net.Conn
			var err error
			switch kind {
			case "tcp":
				c, err = net.Dial("tcp4", "127.0.0.1:"+p.port)
			case "tcp6":
				c, err = net.Dial("tcp6", "[::1]:"+p.port)
			case "udp":
				c, err = net.Dial("udp4", "127.0.0.1:"+p.port)
			case "unix":
				c, err = net.Dial("unix", p.sock)
			case "abstract":
				c, err = net.Dial("unix", "@"+p.abstract)
			}
			if err != nil {
				t.Fatalf("dial: %v", err)
			}
			_, _ = c.Write([]byte("probe"))
			c.Close()
			if got := p.arrived(); got == "" {
				t.Errorf("the %s probe did not see a connection made to it", kind)
			}
		})
	}
	// And the secrets the checks look for are where the payloads look.
	data, err := os.ReadFile(s.auditFile)
	if err != nil || !bytes.Contains(data, []byte(`"prev"`)) {
		t.Errorf("the audit log %s has no \"prev\" field to look for (%v)", s.auditFile, err)
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", s.serve.Pid()))
	if err != nil || !bytes.Contains(env, []byte(s.apiKey)) {
		t.Errorf("sluice serve's environment does not hold EFFECTS_API_KEY (%v)", err)
	}
}

func effWrite(t *testing.T, path, data string, mode os.FileMode) {
	t.Helper()
	effCheck(t, os.MkdirAll(filepath.Dir(path), 0o755))
	effCheck(t, os.WriteFile(path, []byte(data), mode))
	effCheck(t, os.Chmod(path, mode))
}

func effCheck(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// effErr adds a failed command's stderr to its error.
func effErr(err error) error {
	var ee *osexec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return fmt.Errorf("%w: %s", err, bytes.TrimSpace(ee.Stderr))
	}
	return err
}

func effRandom(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	_, err := rand.Read(b)
	effCheck(t, err)
	return hex.EncodeToString(b)
}

// effTag is a word unique to one payload that sleep also takes as a
// number of seconds: 0.0 and nine random digits.
func effTag(t *testing.T) string {
	t.Helper()
	n, err := rand.Int(rand.Reader, big.NewInt(1e9))
	effCheck(t, err)
	return fmt.Sprintf("0.0%09d", n.Int64())
}

// effGranted says whether grants name path or a directory holding it.
func effGranted(grants []string, path string) bool {
	if path == "" {
		return false
	}
	for _, g := range grants {
		if g == path || strings.HasPrefix(path, strings.TrimSuffix(g, "/")+"/") {
			return true
		}
	}
	return false
}

// effNames are the names in dir.
func effNames(dir string) map[string]bool {
	out := map[string]bool{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		out[e.Name()] = true
	}
	return out
}
