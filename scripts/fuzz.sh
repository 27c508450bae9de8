#!/usr/bin/env bash
# Runs every fuzz target in the module for FUZZTIME each (default 30s).
# The committed corpora (testdata/fuzz/) replay in plain 'go test'; a
# failing input the fuzzer finds is written there too, to be committed
# with its fix. Usage: scripts/fuzz.sh [FUZZTIME]
set -euo pipefail
cd "$(dirname "$0")/.."
time=${1:-${FUZZTIME:-30s}}
n=0
while IFS=: read -r file _ line; do
	name=${line#func }
	name=${name%%(*}
	dir=./$(dirname "$file")
	echo "== $dir $name ($time)"
	go test "$dir" -run '^$' -fuzz "^${name}\$" -fuzztime "$time"
	n=$((n + 1))
done < <(git ls-files '*_test.go' | xargs grep -n '^func Fuzz' | sort)
echo "fuzz: $n targets, $time each: no failures"
