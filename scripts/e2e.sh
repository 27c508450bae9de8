#!/usr/bin/env bash
# End-to-end: the console in a detached tmux session, driven by keys, with
# agents submitting through 'sluice run' in the background. Run by 'make
# e2e' (part of 'make test').
set -euo pipefail
cd "$(dirname "$0")/.."
command -v tmux >/dev/null || { echo "e2e: tmux is not installed (apt-get install tmux)"; exit 1; }

work=$(mktemp -d)
sock="$work/tmux.sock"
trap 'tmux -S "$sock" kill-server 2>/dev/null || true; rm -rf "$work"' EXIT
CGO_ENABLED=0 go build -o "$work/" ./cmd/sluice ./cmd/sluice-engine ./cmd/sluice-console
export SLUICE_SPOOL="$work/spool" SLUICE_AUDIT="$work/audit.jsonl" HOME="$work/home"
export XDG_CONFIG_HOME="$work/config" XDG_RUNTIME_DIR="" SLUICE_CONFIG="" SLUICE_POLICY="$work/policy.toml"
mkdir -p "$HOME" "$work/project"
cat > "$SLUICE_POLICY" <<'TOML'
# printf passes on its own by default; make it wait for a person here
[[rule]]
action = "ask"
command = "printf *"
TOML
sluice="$work/sluice"
tm() { tmux -S "$sock" "$@"; }
screen() { tm capture-pane -p -t e2e; }
# newsession ARGS: tmux new-session, tried again if its server does not
# come up (a loaded machine: "server exited unexpectedly").
newsession() {
	for _ in 1 2 3; do tm new-session "$@" && return 0; sleep 0.5; done
	echo "e2e: FAIL: tmux would not start a session"; exit 1
}
fail() { echo "e2e: FAIL: $*"; echo "--- screen ---"; screen || true; exit 1; }
# waitfor TEXT: until the console shows TEXT (10 s).
waitfor() {
	for _ in $(seq 100); do screen | grep -qF -- "$1" && return 0; sleep 0.1; done
	fail "the console never showed: $1"
}
# waitgrace: until the approve keys' grace period is over: the detail
# pane's title says "approve keys wait N.Ns" while it lasts (the grace
# starts in the frame that shows the request, so it is there to see).
waitgrace() {
	for _ in $(seq 100); do screen | grep -qF "approve keys wait" || return 0; sleep 0.1; done
	fail "the approve keys' grace period never ended"
}
# waitexit PID: until the background agent exits (10 s), its status in $rc.
waitexit() {
	for _ in $(seq 100); do kill -0 "$1" 2>/dev/null || { wait "$1" && rc=0 || rc=$?; return 0; }; sleep 0.1; done
	fail "agent $1 still waiting"
}
# approve PID OUT WHAT: once the grace period is over, approves the
# request shown with a; the agent PID must then exit 0 (OUT its output).
approve() {
	waitgrace
	tm send-keys -t e2e a
	waitexit "$1"
	[ "$rc" -eq 0 ] || fail "$3 exited $rc: $(cat "$2")"
}

newsession -d -s e2e -x 100 -y 30 -e SLUICE_SPOOL="$SLUICE_SPOOL" -e SLUICE_AUDIT="$SLUICE_AUDIT" \
	-e HOME="$HOME" -e XDG_CONFIG_HOME="$XDG_CONFIG_HOME" -e SLUICE_POLICY="$SLUICE_POLICY" -e TERM=xterm-256color \
	"cd $work/project && $sluice console; echo console-exited=\$?; sleep 30"
waitfor "Queue (0)"

# An auto-allowed command passes on its own.
(cd "$work/project" && "$sluice" run -- echo passes-alone) > "$work/auto.out" 2>&1 &
auto=$!
waitexit $auto
[ "$rc" -eq 0 ] || fail "auto-allowed run exited $rc"
grep -q passes-alone "$work/auto.out" || fail "auto-allowed output missing"
waitfor "Output · done · echo passes-alone"

# A command that asks: shown with its verdict, approved with a key, output
# rendered through the emulator (\r moves back: 'b' overwrites 'a').
(cd "$work/project" && "$sluice" run -- "printf 'a\rb\n'") > "$work/ask.out" 2>&1 &
ask=$!
waitfor "printf 'a"
waitfor "ASK"
approve $ask "$work/ask.out" "approved run"
grep -q b "$work/ask.out" || fail "approved run's output did not reach the agent"
waitfor "Output · done"
screen | grep -q '^│ b ' || fail "output pane does not show the emulated line 'b'"

# The run's terminal is the output pane's size, after the layout moved
# (approving empties the queue, and the output pane grows): 'stty size'
# inside the run prints the pane's inner rows and columns.
# The agent has a terminal (script(1) gives it one), so the run gets a pty.
(cd "$work/project" && script -qec "$sluice run -- \"printf 'size: '; sleep 1; stty size\"" /dev/null) > "$work/stty.out" 2>&1 &
sz=$!
waitfor "printf 'size: '"
approve $sz "$work/stty.out" "stty run"
waitfor "Output · done · printf 'size: '"
pane=$(screen | python3 -c '
import sys
lines = sys.stdin.read().split("\n")
top = next(i for i, l in enumerate(lines) if "Output · " in l)
col = lines[top].index("│")
bottom = next(i for i in range(top + 1, len(lines)) if lines[i][col:col + 1] == "╰")
end = lines[top].rindex("│")
inner = lines[top][col + 1:end]
pad = len(inner) - len(inner.lstrip(" "))  # the padding, each side
print(bottom - top - 1, end - col - 1 - 2 * pad)
')
got=$(grep -o 'size: [0-9]* [0-9]*' "$work/stty.out" | cut -d' ' -f2-)
[ "$got" = "$pane" ] || fail "the run's terminal was '$got' (rows cols), the output pane '$pane'"

# Denied by a person, with a reason: the agent exits 126.
(cd "$work/project" && "$sluice" run -- rm -rf build) > "$work/deny.out" 2>&1 &
deny=$!
waitfor "rm -rf build"
tm send-keys -t e2e d
waitfor "reason (optional)"
tm send-keys -t e2e "not today" Enter
waitexit $deny
[ "$rc" -eq 126 ] || fail "denied run exited $rc, want 126"
grep -q "not today" "$work/deny.out" || fail "the reason did not reach the agent: $(cat "$work/deny.out")"

# Quit with nothing running: the console exits 0 at once.
tm send-keys -t e2e q
waitfor "console-exited=0"
"$sluice" audit verify >/dev/null || fail "audit chain does not verify"
n=$("$sluice" audit tail -n 100 --json | grep -c '"event":"approved"')
[ "$n" -eq 2 ] || fail "audit log has $n approved events, want 2 (printf and stty)"
# Restart: History comes back from the audit log.
tm kill-session -t e2e
newsession -d -s e2e -x 100 -y 30 -e SLUICE_SPOOL="$SLUICE_SPOOL" -e SLUICE_AUDIT="$SLUICE_AUDIT" \
	-e HOME="$HOME" -e XDG_CONFIG_HOME="$XDG_CONFIG_HOME" -e SLUICE_POLICY="$SLUICE_POLICY" -e TERM=xterm-256color \
	"cd $work/project && $sluice console; echo console-exited=\$?; sleep 30"
waitfor "Queue (0)"
tm send-keys -t e2e Tab
waitfor "History (4)"
waitfor "denied"
waitfor "rm -rf build"
waitfor "echo passes-alone"

# Approved from another terminal with 'sluice approve': it shows in History.
tm send-keys -t e2e Tab Tab # back to the queue
(cd "$work/project" && "$sluice" run -- "printf 'from-elsewhere\n'") > "$work/else.out" 2>&1 &
elsewhere=$!
waitfor "from-elsewhere"
id=$("$sluice" ls --json | grep -o '"id": "[0-9A-Z]*"' | head -1 | cut -d'"' -f4)
[ -n "$id" ] || fail "sluice ls does not list the pending request"
"$sluice" approve --yes "$id" > "$work/approve.out" 2>&1 || fail "sluice approve: $(cat "$work/approve.out")"
waitexit $elsewhere
tm send-keys -t e2e Tab
waitfor "History (5)"
waitfor "printf 'from-elsewhere"

# A policy edit takes effect without a restart: printf is now denied.
tm send-keys -t e2e Tab Tab
cat > "$SLUICE_POLICY" <<'TOML'
[[rule]]
action = "deny"
command = "printf *"
TOML
(cd "$work/project" && "$sluice" run -- "printf 'after-edit\n'") > "$work/edit.out" 2>&1 &
edited=$!
waitexit $edited
[ "$rc" -eq 126 ] || fail "after the policy edit, printf exited $rc, want 126 (denied)"
tm send-keys -t e2e Tab
waitfor "History (6)"
screen | grep -q "denied.*printf 'after-edit" || fail "History does not show the denial by the edited policy"
tm send-keys -t e2e q
waitfor "console-exited=0"

# A typo in the policy right after the console started, before any
# request was judged: the header says so at once, and a request from a
# project never seen gets the policy that loaded at start (printf denied),
# not a question for everything.
tm kill-session -t e2e
newsession -d -s e2e -x 80 -y 24 -e SLUICE_SPOOL="$SLUICE_SPOOL" -e SLUICE_AUDIT="$SLUICE_AUDIT" \
	-e HOME="$HOME" -e XDG_CONFIG_HOME="$XDG_CONFIG_HOME" -e SLUICE_POLICY="$SLUICE_POLICY" -e TERM=xterm-256color \
	"cd $work/project && $sluice console; echo console-exited=\$?; sleep 30"
waitfor "Queue (0)"
printf '[[rule]]\naction = "deny"\ncommand = "printf *"\nreson = "typo"\n' > "$SLUICE_POLICY"
mkdir -p "$work/other"
(cd "$work/other" && "$sluice" run -- "printf 'after-typo\n'") > "$work/typo.out" 2>&1 &
typo=$!
waitexit $typo
[ "$rc" -eq 126 ] || fail "after a policy typo, printf exited $rc, want 126 (the start's policy denies it): $(cat "$work/typo.out")"
waitfor "POLICY NOT RELOADED"

# At 80x24, a one-line command whose verdict has several parts is
# approved with a alone: the command shows before the breakdown, so the
# approve keys need no End first.
echo hello > "$work/other/notes.txt"
(cd "$work/other" && "$sluice" run -- "sed -i s/hello/HELLO/ notes.txt && echo mutated") > "$work/sed.out" 2>&1 &
sedrun=$!
waitfor "sed -i s/hello/HELLO/ notes.txt && echo mutated"
approve $sedrun "$work/sed.out" "the one-line command at 80x24 approved with a"
grep -q HELLO "$work/other/notes.txt" || fail "the approved sed did not run"
tm send-keys -t e2e q
waitfor "console-exited=0"
"$sluice" audit verify >/dev/null || fail "audit chain does not verify after the restart"
echo "e2e: ok (a policy typo before the first verdict shown at 80x24, a one-line command approved at 80x24 without End, auto-allow, approve with output, the run's terminal the pane's size, deny with reason, quit, audit verify, restart keeps History, approve from another terminal in History, policy edit without restart)"
