#!/bin/sh
# twoclones.sh — issue 24's acceptance run: `make test` passes in two fresh
# clones at the same time while two busy loops hold the CPU.
#
#   tests/twoclones.sh [REPO]
#
# It clones REPO (default: this checkout) twice into a temporary folder at
# its HEAD commit (what is not committed is not tested), starts two
# `sh -c 'while :; do :; done'` loops, runs `make test` in both clones at
# once, and stops the loops at the end, however it ends. It exits non-zero
# if either run failed, after printing that clone's failing test lines.
# Not part of `make test`: it takes as long as two of them on a loaded
# machine (most of an hour on 2 cores).
#
# Environment: TARGET=short runs `make short` instead (a quick check of
# the script itself); KEEP=1 keeps the clones and their logs.
set -u

here=$(cd "$(dirname "$0")/.." && pwd)
repo=${1:-$here}
rev=$(git -C "$repo" rev-parse HEAD) || exit 2
target=${TARGET:-test}
work=$(mktemp -d "${TMPDIR:-/tmp}/mcpp-twoclones.XXXXXX") || exit 2

# Every process this script starts, each the leader of its own process
# group (setsid), so that stopping one stops all it started.
started=""
cleanup() {
	for pid in $started; do
		# The group; the process alone if it has not made its group yet.
		kill -TERM "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
	done
	for pid in $started; do
		wait "$pid" 2>/dev/null
	done
	if [ "${KEEP:-0}" = 1 ]; then
		echo "twoclones: kept $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

for name in a b; do
	git clone -q --no-checkout "$repo" "$work/$name" &&
		git -C "$work/$name" checkout -q "$rev" || exit 2
done
echo "twoclones: $rev cloned twice into $work"

for _ in 1 2; do
	setsid sh -c 'while :; do :; done' &
	started="$started $!"
done
echo "twoclones: two busy loops running; make $target in both clones at once"

begin=$(date +%s)
setsid -w make -C "$work/a" "$target" >"$work/a.log" 2>&1 &
pid_a=$!
setsid -w make -C "$work/b" "$target" >"$work/b.log" 2>&1 &
pid_b=$!
started="$started $pid_a $pid_b"
wait "$pid_a"
rc_a=$?
wait "$pid_b"
rc_b=$?
echo "twoclones: both done in $(($(date +%s) - begin)) s"

# failures prints what a failed run says about its failing tests: the
# FAIL lines, the test files' messages, panics, and the build's errors.
failures() {
	grep -E -e '--- FAIL|^FAIL|^panic:|_test\.go:[0-9]+:|^make: \*\*\*|: error:|^Ran [0-9]+ tests' "$1" | head -n 200
}

status=0
for run in "a $rc_a" "b $rc_b"; do
	set -- $run
	if [ "$2" = 0 ]; then
		echo "twoclones: clone $1: make $target passed"
		continue
	fi
	status=1
	log="KEEP=1 keeps the whole log"
	[ "${KEEP:-0}" = 1 ] && log="the whole log: $work/$1.log"
	echo "twoclones: clone $1: make $target FAILED (exit $2); its failing lines ($log):"
	failures "$work/$1.log" | sed 's/^/    /'
done
exit $status
