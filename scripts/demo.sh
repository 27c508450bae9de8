#!/bin/sh
# The flow of sluice in one script, on a throwaway spool, project and audit
# log: 'sluice serve' acts on what the policy decides alone; an agent's
# 'sluice run' of a read-only command is answered at once, sudo is refused
# with the reason, and 'rm -rf build' waits until a person runs 'sluice
# approve'. Then the audit log is shown and verified.
set -eu
bin=$(cd "$(dirname "${1:-bin/sluice}")" && pwd)/$(basename "${1:-bin/sluice}")
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sluice-demo.XXXXXX")
SLUICE_SPOOL=$tmp/spool SLUICE_AUDIT=$tmp/audit.jsonl SLUICE_POLICY=$tmp/policy.toml
export SLUICE_SPOOL SLUICE_AUDIT SLUICE_POLICY
: > "$SLUICE_POLICY" # the embedded default policy alone
mkdir -p "$tmp/project/build" && cd "$tmp/project" && echo '# demo' > README.md
serve=""
trap '[ -n "$serve" ] && kill "$serve" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	say() { printf '\n\033[1m%s\033[0m\n' "$*"; }
else
	say() { printf '\n%s\n' "$*"; }
fi
pending() { "$bin" ls --json | sed -n 's/^ *"id": "\([^"]*\)".*/\1/p' | head -n 1; }

say "engine\$ sluice serve &      (logs below are the engine's)"
"$bin" serve &
serve=$!

say "agent\$ sluice run -- ls      (read-only: answered at once)"
"$bin" run --agent demo -- ls

rc=0
say "agent\$ sluice run -- sudo ls      (host escape: refused)"
"$bin" run --agent demo -- sudo ls || rc=$?
echo "exit status $rc (126 means denied)"

say "agent\$ sluice run -- rm -rf build      (destructive: waits for a person)"
"$bin" run --agent demo --note "clean before a fresh build" -- rm -rf build &
agent=$!
i=0
until [ -n "$(pending)" ]; do
	i=$((i + 1)); [ $i -lt 200 ] || { echo "the request never showed up" >&2; exit 1; }
	sleep 0.05
done
say "person\$ sluice ls"
"$bin" ls
id=$(pending)
say "person\$ sluice approve $id"
"$bin" approve "$id"
rc=0
wait $agent || rc=$?
echo "agent: sluice run exited $rc; build/ is $( [ -d build ] && echo still there || echo gone)"

kill "$serve" && wait "$serve" 2>/dev/null || true
serve=""
say "person\$ sluice audit tail && sluice audit verify"
"$bin" audit tail -n 20
"$bin" audit verify
