#!/usr/bin/env bash
# End-to-end for the fleet, with the real programs: 'sluice hub serve' (the
# embedded hub), two boxes each running 'sluice serve --hub' on their own
# spool, agents asking through 'sluice run', and a person deciding at a
# console's terminal (tmux) with 'sluice hub ls' and 'sluice hub approve',
# and denying from another. Then the hub is killed (SIGKILL) and started
# again: a box keeps serving locally and publishes what waits once the hub
# is back. Run by 'make test'.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v tmux >/dev/null || { echo "e2e-hub: tmux is not installed (apt-get install tmux)"; exit 1; }

work=$(mktemp -d)
sock="$work/tmux.sock"
pids=()
cleanup() {
	tmux -S "$sock" kill-server 2>/dev/null || true
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	pkill -f "$work/bin/" 2>/dev/null || true # agents still waiting, bridges
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
[ -n "${KEEP:-}" ] && trap - EXIT
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/sluice ./cmd/sluice-engine ./cmd/sluice-console ./cmd/sluice-hub
sluice="$work/bin/sluice"
port=0 # the first start picks a free one; restarts take the same
store="$work/store"
fail() { echo "e2e-hub: FAIL: $*"; for f in "$work"/*.log; do echo "--- $f"; tail -20 "$f"; done; echo "--- screen ---"; tmux -S "$sock" capture-pane -p -t con 2>/dev/null || true; exit 1; }
# until CMD succeeds (15 s)
until_ok() { for _ in $(seq 150); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done; fail "timed out: $*"; }

start_hub() {
	: > "$work/hub.log"
	"$sluice" hub serve --listen "127.0.0.1:$port" --store "$store" >> "$work/hub.log" 2>&1 &
	hub=$!
	pids+=("$hub")
	until_ok grep -q "listening on" "$work/hub.log"
	port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$work/hub.log")
}
start_hub
url="nats://127.0.0.1:$port"
"$sluice" hub add-box b1 --url "$url" --store "$store" > /dev/null
"$sluice" hub add-box b2 --url "$url" --store "$store" > /dev/null
"$sluice" hub add-console me --url "$url" --store "$store" > /dev/null
grep -q "certificate fingerprint (SHA-256) [0-9a-f]\{64\}" "$work/hub.log" || fail "the hub did not print its fingerprint"

# box NAME: its own home, spool and audit log; serve bridged to the hub
box_env() { echo "HOME=$work/$1/home XDG_CONFIG_HOME=$work/$1/config XDG_STATE_HOME=$work/$1/state XDG_RUNTIME_DIR= SLUICE_SPOOL=$work/$1/spool SLUICE_AUDIT=$work/$1/audit.jsonl SLUICE_CONFIG="; }
for b in b1 b2; do
	mkdir -p "$work/$b/config/sluice" "$work/$b/home" "$work/$b/project"
	cp "$store/creds/$b.creds" "$work/$b/config/sluice/hub.creds"
	(cd "$work/$b/project" && git init -q)
	(cd "$work/$b/project" && env $(box_env $b) "$sluice" serve --hub "$url" >> "$work/$b-serve.log" 2>&1) &
	pids+=("$!")
	until_ok grep -q "bridging spool" "$work/$b-serve.log"
done
ask() { # ask BOX COMMAND: an agent's run on the box, in the background
	(cd "$work/$1/project" && rc=0 && { env $(box_env $1) "$sluice" run -- "$2" > "$work/$1-agent-$3.out" 2>&1 || rc=$?; } && echo "exit=$rc" >> "$work/$1-agent-$3.out") &
}
ask b1 "touch approved-at-the-hub" 1
ask b2 "touch denied-at-the-hub" 1
con_env="HOME=$work/con XDG_CONFIG_HOME=$work/con/config"
mkdir -p "$work/con/config/sluice"
cp "$store/creds/me.creds" "$work/con/config/sluice/hub.creds"
listed() { env $con_env "$sluice" hub ls > "$work/ls.out" 2>&1 && grep -q "$1" "$work/ls.out"; }
until_ok listed "touch approved-at-the-hub"
until_ok listed "touch denied-at-the-hub"
id1=$(grep "touch approved-at-the-hub" "$work/ls.out" | awk '{print $1}')
id2=$(grep "touch denied-at-the-hub" "$work/ls.out" | awk '{print $1}')
case "$id1" in b1/*) ;; *) fail "b1's request listed as $id1";; esac
case "$id2" in b2/*) ;; *) fail "b2's request listed as $id2";; esac

# The person at a terminal: approve shows the request and asks.
tmux -S "$sock" new-session -d -s con -x 100 -y 30 "env $con_env bash --norc"
tmux -S "$sock" send-keys -t con "$sluice hub approve $id1" Enter
until_ok sh -c "tmux -S '$sock' capture-pane -p -t con | grep -q 'approve it? \[y/N\]'"
tmux -S "$sock" capture-pane -p -t con | grep -q "request: touch approved-at-the-hub" || fail "approve did not show the request"
[ ! -e "$work/b1/project/approved-at-the-hub" ] || fail "ran before the person said yes"
tmux -S "$sock" send-keys -t con y Enter
until_ok sh -c "tmux -S '$sock' capture-pane -p -t con | grep -q 'b1: done, exit status 0'"
until_ok test -e "$work/b1/project/approved-at-the-hub"
until_ok grep -q "exit=0" "$work/b1-agent-1.out"

env $con_env "$sluice" hub deny "$id2" --reason "not on b2" > "$work/deny.out" 2>&1 || fail "deny: $(cat "$work/deny.out")"
until_ok grep -q "exit=126" "$work/b2-agent-1.out"
grep -q "not on b2" "$work/b2-agent-1.out" || fail "the agent on b2 did not get the reason: $(cat "$work/b2-agent-1.out")"
[ ! -e "$work/b2/project/denied-at-the-hub" ] || fail "a denied request ran"
if env $con_env "$sluice" hub approve "$id2" --yes > "$work/late.out" 2>&1; then fail "a second decision was taken"; fi
grep -q "already decided: deny by" "$work/late.out" || fail "the second decision was not told who decided: $(cat "$work/late.out")"

# Each box's own audit chain names the person and verifies.
# (through a file: with pipefail, grep -q's early exit would fail audit tail on SIGPIPE)
env $(box_env b1) "$sluice" audit tail --json > "$work/b1-audit.out" || fail "b1's audit tail"
grep -q '"actor":"[^"]*@me (via the hub)"' "$work/b1-audit.out" || fail "b1's audit log does not name the person"
for b in b1 b2; do env $(box_env $b) "$sluice" audit verify > /dev/null || fail "$b's audit chain"; done

# The console's own screen over the hub: every box's requests with their
# box, a approves (the box runs it, its output shows), d denies with a
# reason; History shows both.
ask b1 "echo from-the-fleet-screen; touch approved-on-screen" 3
until_ok listed "approved-on-screen"
ask b2 "touch denied-on-screen" 3
until_ok listed "denied-on-screen"
tmux -S "$sock" new-window -t con -n fleet "env $con_env NO_COLOR=1 $sluice console --hub $url; sleep 60"
fleet() { tmux -S "$sock" capture-pane -p -t con:fleet; }
on_screen() { fleet | grep -q -- "$1"; }
# the detail title says "approve keys wait N.Ns" while the grace lasts
off_screen() { ! fleet | grep -q -- "$1"; }
until_ok on_screen "b2 cli touch denied-on-screen"
on_screen "b1 cli echo from-the-fleet-screen" || fail "b1's request is not on the fleet screen: $(fleet)"
on_screen "hub nats://127.0.0.1:$port" || fail "the header does not name the hub: $(fleet)"
until_ok off_screen "approve keys wait" # the approve keys' grace
tmux -S "$sock" send-keys -t con:fleet a
until_ok test -e "$work/b1/project/approved-on-screen"
until_ok grep -q "exit=0" "$work/b1-agent-3.out"
until_ok on_screen "│ from-the-fleet-screen  "
until_ok off_screen "approve keys wait"
tmux -S "$sock" send-keys -t con:fleet d
until_ok on_screen "reason (optional)"
tmux -S "$sock" send-keys -t con:fleet "not from the fleet screen" Enter
until_ok grep -q "exit=126" "$work/b2-agent-3.out"
grep -q "not from the fleet screen" "$work/b2-agent-3.out" || fail "the agent on b2 did not get the reason: $(cat "$work/b2-agent-3.out")"
[ ! -e "$work/b2/project/denied-on-screen" ] || fail "a request denied on the fleet screen ran"
tmux -S "$sock" send-keys -t con:fleet Tab
until_ok on_screen "denied  *b2 touch denied-on-screen"
on_screen "done  *exit 0 [0-9.]*s  *b1 echo from-the-fleet-screen" || fail "History lacks b1's run: $(fleet)"
tmux -S "$sock" send-keys -t con:fleet q

# The hub killed: the box serves on, and publishes what waits once the hub
# is back; a fleet console open all the while shows it (it lists the hub
# anew as soon as it is back: it took 10 to 20 s).
tmux -S "$sock" new-window -t con -n fleet2 "env $con_env NO_COLOR=1 $sluice console --hub $url; sleep 60"
fleet2() { tmux -S "$sock" capture-pane -p -t con:fleet2; }
on_screen2() { fleet2 | grep -q -- "$1"; }
until_ok on_screen2 "hub nats://127.0.0.1:$port"
{ kill -9 "$hub" && wait "$hub"; } 2>/dev/null || true # no "Killed" notice
(cd "$work/b1/project" && env $(box_env b1) "$sluice" run -- echo local-still-works > "$work/b1-local.out" 2>&1) || fail "b1 does not serve locally with the hub down"
ask b1 "touch after-the-hub-came-back" 2
until_ok sh -c "env $(box_env b1) '$sluice' ls | grep -q after-the-hub-came-back" # asked while the hub is down
start_hub
back=$(date +%s%N)
until_ok on_screen2 "b1 cli touch after-the-hub-came-back"
echo "e2e-hub: the fleet console showed the request asked while the hub was down $((($(date +%s%N) - back) / 1000000)) ms after the hub was back"
until_ok listed "touch after-the-hub-came-back"
tmux -S "$sock" send-keys -t con:fleet2 q
echo "e2e-hub: ok (two boxes and a console with the real programs: ls, approve at a terminal, deny, first decision wins, the console's screen over the hub, audit chains, hub SIGKILLed and back, the fleet console catching up)"
