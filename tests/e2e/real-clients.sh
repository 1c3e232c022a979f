#!/usr/bin/env bash
# End-to-end check with MCP clients nobody here wrote: the Claude Code CLI
# registers bin/mcpp-chat serve (with the command `mcpp-chat setup claude`
# prints) and `claude mcp list` performs the real handshake; the official
# TypeScript SDK client lists the tools and calls chat_whoami. Then the same
# against a team hub (`mcpp-chat hub serve` on loopback) over streamable
# HTTP: Claude Code registers it with the token in a header and connects,
# and the SDK's HTTP client lists the tools and calls chat_whoami and chat_say.
# Needs bin/mcpp-chat (make build), node and npm. Skips, saying so, only when
# npm cannot reach its registry. Touches nothing outside a temporary folder.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

CLAUDE_CODE_VERSION=2.1.332 # pinned: the version claude-code.md was checked against
MCP_SDK_VERSION=1.32.2

bin=$root/bin/mcpp-chat
[ -x "$bin" ] || { echo "real-clients: $bin is missing — run make build first" >&2; exit 1; }
if ! command -v npm >/dev/null 2>&1 || ! timeout 60 npm ping >/dev/null 2>&1; then
  echo "real-clients: SKIPPED — npm cannot reach its registry, so the real-client check did not run"
  exit 0
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/mcpp-chat-real-clients.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/npm" "$work/home"
echo "real-clients: installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION and @modelcontextprotocol/sdk@$MCP_SDK_VERSION"
(cd "$work/npm" && npm init -y >/dev/null &&
  npm install --no-audit --no-fund --loglevel=error --save-exact \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@modelcontextprotocol/sdk@$MCP_SDK_VERSION" >/dev/null)

# One isolated universe: its own database and HOME; a git repo whose
# subfolder is where Claude Code is started, as users often do.
unset MCPP_CHAT_HOME MCPP_CHAT_CONFIG MCPP_CHAT_WORKSPACE CLAUDE_PROJECT_DIR
export MCPP_CHAT_DB=$work/data/chat.db
repo=$work/repos/e2e-repo
start=$repo/src/deep
mkdir -p "$start" "$work/repos/onlooker"
git -C "$repo" init -q

claude() {
  HOME=$work/home XDG_CONFIG_HOME=$work/home/.config \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
    timeout 120 "$work/npm/node_modules/.bin/claude" "$@" </dev/null
}
echo "real-clients: $(claude --version)"

add=$("$bin" setup claude | grep '^claude mcp add ')
[ -n "$add" ] || { echo "real-clients: FAIL: mcpp-chat setup claude printed no 'claude mcp add' line" >&2; exit 1; }
echo "real-clients: $add"
(cd "$start" && eval "$add")

list=$(cd "$start" && claude mcp list 2>&1) || true
echo "real-clients: claude mcp list (from $start) printed:"
printf '%s\n' "$list" | sed 's/^/  | /'
grep -q '✔ Connected' <<<"$list" || { echo "real-clients: FAIL: claude mcp list did not print ✔ Connected" >&2; exit 1; }

# claude mcp list only starts the server and shakes hands: that makes no party (a party exists
# from its first tool call). The TypeScript client below checks that a call from the subfolder
# is the repository root's party.
known=$("$bin" call --workspace "$work/repos/onlooker" chat_whoami)
node -e '
  const r = JSON.parse(process.argv[1]);
  if ((r.result?.known_parties || []).some((p) => p.name === "e2e-repo")) {
    console.error("real-clients: FAIL: claude mcp list made e2e-repo a party without any tool call: " + process.argv[1]);
    process.exit(1);
  }' "$known"
echo "real-clients: claude mcp list made no party"

cp tests/e2e/ts-client.mjs "$work/npm/"
# The tools module.yaml declares: the server must offer exactly these.
declared=$(python3 -c 'import yaml; print(",".join(t["name"] for t in yaml.safe_load(open("module.yaml"))["tools"]))')
(cd "$work/npm" && node ts-client.mjs "$bin" "$start" e2e-repo "$declared")

# The team hub: its own store and module folder, a token for mesh-gw, a
# free loopback port.
hubdir=$work/hub
mkdir -p "$hubdir" "$work/repos/hubbed"
# The whole output is read before its first line is kept: a `| head -n 1` here
# closed the pipe under a command still writing, and pipefail made that SIGPIPE
# (exit 141) fail the run.
issued=$(MCPP_CHAT_HOME=$hubdir/module "$bin" hub token issue --store "sqlite:$hubdir/hub.db" --party mesh-gw --label real-clients --new-party)
token=${issued%%$'\n'*}
# Started directly, not through a function: $! is then the hub itself.
MCPP_CHAT_HOME=$hubdir/module "$bin" hub serve --store "sqlite:$hubdir/hub.db" --listen 127.0.0.1:0 >"$hubdir/out" 2>"$hubdir/log" &
hubpid=$!
trap 'kill "$hubpid" 2>/dev/null || true; wait "$hubpid" 2>/dev/null || true; rm -rf "$work"' EXIT
huburl=
for _ in $(seq 100); do
  huburl=$(sed -n 's/^mcpp-chat hub: serving .* on \(http:[^ ]*\)$/\1/p' "$hubdir/out")
  [ -n "$huburl" ] && break
  sleep 0.1
done
[ -n "$huburl" ] || { echo "real-clients: FAIL: the hub printed no address; its log:" >&2; cat "$hubdir/log" >&2; exit 1; }
echo "real-clients: a team hub serves $huburl"

(cd "$work/repos/hubbed" && claude mcp add --transport http team "$huburl" --header "Authorization: Bearer $token" >/dev/null)
list=$(cd "$work/repos/hubbed" && claude mcp list 2>&1) || true
echo "real-clients: claude mcp list (with the hub registered over HTTP) printed:"
printf '%s\n' "$list" | sed 's/^/  | /'
grep -q '^team: .*✔ Connected' <<<"$list" || {
  echo "real-clients: FAIL: the hub registered over HTTP is not ✔ Connected; the hub's log:" >&2
  sed 's/^/  | /' "$hubdir/log" >&2
  exit 1
}

cp tests/e2e/ts-http-client.mjs "$work/npm/"
(cd "$work/npm" && node ts-http-client.mjs "$huburl" "$token" mesh-gw "$declared")
kill "$hubpid"
wait "$hubpid" 2>/dev/null || true
echo "real-clients: 5 passed, 0 failed"
