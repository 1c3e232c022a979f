"""mcpp module bridge for mcpp-chat: each call runs the Go binary.

Standard library only. The host imports this file and calls execute(),
get_info() and initialize(); none of them raises. The environment passes
through, so MCPP_CHAT_DB, MCPP_CHAT_HOME and MCPP_TIMEOUT_SECONDS apply.
"""
import json
import os
import subprocess

MODULE_DIR = os.path.dirname(os.path.realpath(__file__))
BINARY = os.path.join(MODULE_DIR, "bin", "mcpp-chat")


def _fail(error):
    return {"success": False, "error": error}


def _timeout():
    # The host stops waiting after MCPP_TIMEOUT_SECONDS; do not leave the
    # child running past that.
    try:
        return max(1.0, float(os.environ.get("MCPP_TIMEOUT_SECONDS", "30")))
    except ValueError:
        return 30.0


def _run(args, stdin=""):
    """Run the binary; return its JSON object or a failure that says what to do."""
    if not os.access(BINARY, os.X_OK):
        return _fail(f"the mcpp-chat binary {BINARY} is missing — run `make build` in {MODULE_DIR}")
    try:
        proc = subprocess.run([BINARY, *args], input=stdin, capture_output=True,
                              text=True, timeout=_timeout())
    except subprocess.TimeoutExpired:
        return _fail(f"mcpp-chat {args[0]} did not answer within {_timeout():g} s — retry; "
                     "if it persists run `bin/mcpp-chat doctor` in " + MODULE_DIR)
    except (OSError, ValueError) as e:
        return _fail(f"cannot run {BINARY} ({e}) — run `make build` in {MODULE_DIR}")
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        out = None
    if not isinstance(out, dict):
        why = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return _fail(f"mcpp-chat {args[0]} gave no JSON answer ({why}) — run `make build` "
                     f"in {MODULE_DIR}, then `bin/mcpp-chat doctor` there")
    return out


def _workspace(context):
    return (context or {}).get("workspace_dir") or os.getcwd()


def execute(tool_name, arguments, context=None):
    """Run one chat_* tool: {"success", "result", "display"} or {"success": False, "error"}."""
    try:
        payload = json.dumps(arguments or {})
    except (TypeError, ValueError) as e:
        return _fail(f"the arguments are not JSON ({e}) — pass a JSON object")
    return _run(["call", "--workspace", _workspace(context), str(tool_name), "-"], payload)


def get_info(context=None):
    """About, identity, paths, parameters, protocol and boundary lines (see `mcpp-chat info`)."""
    return _run(["info", "--workspace", _workspace(context)])


def initialize():
    """{"success": True} when the binary runs and the database opens."""
    info = _run(["info", "--workspace", os.getcwd()])
    if "error" in info:
        return _fail(info["error"])
    db = info.get("database") or {}
    if not db.get("ok"):
        return _fail(f"the chat database {info.get('db_path')} does not open: {db.get('error')}")
    return {"success": True}
