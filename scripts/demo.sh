#!/bin/sh
# The two-terminal flow of sluice in one script, on a throwaway spool: an
# agent queues a command with 'sluice run' and waits; a person lists the
# queue with 'sluice ls' and denies it with 'sluice deny'; the agent's
# 'sluice run' exits 126 with the reason.
set -eu
bin=${1:-bin/sluice}
SLUICE_SPOOL=$(mktemp -d "${TMPDIR:-/tmp}/sluice-demo.XXXXXX")/spool
export SLUICE_SPOOL
trap 'rm -rf "$(dirname "$SLUICE_SPOOL")"' EXIT

if [ -t 1 ] && [ -z "${NO_COLOR:-}" ]; then
	say() { printf '\n\033[1m%s\033[0m\n' "$*"; }
else
	say() { printf '\n%s\n' "$*"; }
fi

say "agent\$ sluice run --agent demo --note 'say hello' -- echo hi   (waits for a person)"
"$bin" run --agent demo --note 'say hello' -- echo hi &
agent=$!

i=0
until [ -n "$("$bin" ls --json | grep '"id"' || true)" ]; do
	i=$((i + 1)); [ $i -lt 100 ] || { echo "request never showed up" >&2; exit 1; }
	sleep 0.05
done

say "person\$ sluice ls"
"$bin" ls
id=$("$bin" ls --json | sed -n 's/^ *"id": "\([^"]*\)".*/\1/p' | head -n 1)

say "person\$ sluice deny $id --reason 'not in the demo'"
"$bin" deny "$id" --reason 'not in the demo'

rc=0
wait $agent || rc=$?
say "agent: sluice run exited $rc (126 means denied)"
