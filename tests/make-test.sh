#!/usr/bin/env bash
# `make test`: go vet, the Go tests, the mcpp host test — each runs even when
# one before it failed, so one failure does not hide the others — then what
# was skipped, and the exit status: non-zero when any suite failed.
#
# A run of identical lines (a test logging one failure in a loop) is shown
# once, with how often it repeated, so the failure above it stays in sight.
#
# GO and PYTHON name the tools (the Makefile passes its own); the script runs
# from the checkout's root.
set -uo pipefail
if [ $# -gt 0 ]; then
  echo "usage: make test (or GO=go PYTHON=python3 bash tests/make-test.sh): it takes no arguments" >&2
  exit 2
fi
cd "$(dirname "$0")/.."
GO=${GO:-go}
PYTHON=${PYTHON:-python3}

failed=()

# collapse prints each line as it comes, but a line equal to the one before
# only as a count once the run of them ends.
collapse() {
  awk '
    $0 == last { n++; next }
    { flush(); last = $0; print; fflush() }
    END { flush() }
    function flush() {
      if (n > 0) { printf "    [the line above repeated %d more time%s]\n", n, n == 1 ? "" : "s"; fflush() }
      n = 0
    }'
}

# suite NAME HOW_LONG COMMAND...: one suite, announced with what it takes.
suite() {
  local name=$1 took=$2
  shift 2
  echo "make test: $name — $took"
  "$@" 2>&1 | collapse
  local status=${PIPESTATUS[0]}
  if [ "$status" -ne 0 ]; then
    echo "make test: $name FAILED (exit $status)"
    failed+=("$name")
  fi
}

suite "go vet ./..." "under a minute with a warm build cache, up to ~6 min on a cold one (2 cores)" \
  "$GO" vet ./...
# gotest runs the Go tests, printing each package's line as it finishes
# (tests/progress reads go test -json; plain go test holds every line until
# the packages listed before it are done), and a line naming the packages
# still running after each quiet minute.
gotest() {
  local progress
  progress=$(mktemp -d)/progress
  if ! "$GO" build -o "$progress" ./tests/progress; then
    echo "make test: could not build tests/progress — running go test without it"
    "$GO" test -count=1 -timeout 30m ./...
    return
  fi
  "$GO" test -json -count=1 -timeout 30m ./... 2>&1 | "$progress"
  local status=$?
  rm -rf "$(dirname "$progress")"
  return $status
}

suite "go test ./..." "the longest step: many minutes on 2 cores; each package's line as it finishes" \
  gotest
suite "the mcpp host test (tests/test_mcpp_host.py)" "about 30 s" \
  "$PYTHON" -m unittest discover -s tests -p 'test_*.py'

# What did not run, after everything else, where it is read.
notes=()
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  notes+=("the PostgreSQL suite was not run (skipped): no PostgreSQL server binaries — install Debian's postgresql package")
fi
if ! "$PYTHON" -c 'import yaml' 2>/dev/null; then
  notes+=("the mcpp host test (tests/test_mcpp_host.py) was skipped: $PYTHON has no PyYAML — install python3-yaml or run pip install pyyaml")
fi
clients=${MCPP_CHAT_E2E_BIN:-.cache/e2e/node_modules/.bin}
if [ ! -x "$clients/claude" ] || [ ! -x "$clients/codex" ]; then
  notes+=("the real Claude Code and Codex tests were skipped: no CLIs in $clients — run make e2e-clients to include them")
fi
if [ -z "${MCPP_CHAT_CHROMIUM:-}" ] && ! command -v chromium >/dev/null 2>&1 &&
  ! command -v chromium-browser >/dev/null 2>&1 && ! command -v google-chrome >/dev/null 2>&1; then
  notes+=("the page's browser test was skipped: no chromium — install it (apt-get install chromium)")
fi
for note in "${notes[@]}"; do
  echo "make test: $note"
done

if [ ${#failed[@]} -gt 0 ]; then
  printf 'make test: FAILED: %s\n' "$(IFS=,; echo "${failed[*]}" | sed 's/,/, /g')"
  exit 1
fi
echo "make test: every suite passed"
