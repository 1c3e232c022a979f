"""mcpp module bridge for mcpp-chat: calls go to a kept-alive worker per workspace.

Standard library only. The host imports this file and calls execute(),
get_info() and initialize(); none of them raises.

execute() hands each call to a `bin/mcpp-chat call --stream --workspace
<the host's workspace_dir>` process, started on the workspace's first call
and kept for the host's life: one open database, no process start per call.
Loading the module starts the worker for the host's current folder already,
the likely workspace of the first call; a first call elsewhere closes it.
It prints {"ready": true}, then takes one JSON line per call
({"id", "tool", "arguments"}) and answers each with `mcpp-chat call`'s reply
and the id, as the calls finish. Threads may call at once; a reader thread
hands each answer to the caller waiting for its id.

- A worker is kept for one workspace, one build of the binary and one value
  of each variable the binary reads (ENV_READ). When one changes (make build,
  another MCPP_CHAT_DB or MCPP_TIMEOUT_SECONDS), the next call starts a new
  worker; the old one exits once it answered the calls it holds.
- A worker that died is replaced on the next call. A call it was answering
  fails with a sentence that says to retry; so does a call not answered
  within MCPP_TIMEOUT_SECONDS, and that worker is killed.
- None outlives the host: a worker exits when its stdin ends, which happens
  when the host exits, also by SIGKILL; at exit the bridge closes them and
  kills any still running a second later. Each runs in a session of its own,
  so a Ctrl-C meant for the host does not stop it in the middle of a write.

get_info() and initialize() run `mcpp-chat info`, a process each time.
"""
import atexit
import json
import os
import subprocess
import threading
import time

MODULE_DIR = os.path.dirname(os.path.realpath(__file__))
BINARY = os.path.join(MODULE_DIR, "bin", "mcpp-chat")
# What the binary reads from its environment (internal/config, tools):
# paths, the login name recorded with a new party, chat_wait's clamp. The
# workspace comes from --workspace, which wins over MCPP_CHAT_WORKSPACE and
# CLAUDE_PROJECT_DIR.
ENV_READ = ("MCPP_CHAT_DB", "MCPP_CHAT_HOME", "MCPP_CHAT_CONFIG", "MCPP_TIMEOUT_SECONDS",
            "HOME", "XDG_DATA_HOME", "USER", "USERNAME")
DOCTOR = f"run `bin/mcpp-chat doctor` in {MODULE_DIR}"
REBUILD = f"run `make build` in {MODULE_DIR}, then `bin/mcpp-chat doctor` there"


def _fail(error):
    return {"success": False, "error": error}


def _timeout():
    # The host stops waiting after MCPP_TIMEOUT_SECONDS; answer before it.
    try:
        return max(1.0, float(os.environ.get("MCPP_TIMEOUT_SECONDS", "30")))
    except ValueError:
        return 30.0


class _Failed(Exception):
    """A call that got no answer; str() is the sentence for the host."""

    def __init__(self, error, unsent=False):
        super().__init__(error)
        self.unsent = unsent  # the request reached no worker: safe to send again


class _Worker:
    """One `mcpp-chat call --stream` process and the calls waiting for it."""

    def __init__(self, workspace, key):
        self.key = key
        self.lock = threading.Lock()        # pending, last_id, closed
        self.write_lock = threading.Lock()  # one request line at a time
        self.pending = {}                   # request id -> [Event, reply or None]
        self.last_id = 0
        self.closed = False                 # takes no more calls
        self.ready = threading.Event()      # its first line came, or it stopped
        self.started = False                # it said {"ready": true}
        self.refused = None                 # the error of {"ready": false}
        self.why = None                     # why it stopped, once it has
        self.killed = None                  # why the bridge killed it
        self.said = None                    # its last line on stderr, or a panic's first
        self.stderr_done = threading.Event()
        self.proc = subprocess.Popen(
            [BINARY, "call", "--workspace", workspace, "--stream"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True)
        _running.add(self)
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        threading.Thread(target=self._read, daemon=True).start()

    def call(self, tool, arguments, deadline):
        """The worker's reply to one call, or _Failed."""
        if not self.ready.wait(max(0.0, deadline - time.monotonic())):
            self.kill("it was not ready in time")
            raise _Failed(f"mcpp-chat did not start within {_timeout():g} s — retry; "
                          f"if it persists {DOCTOR}")
        if self.refused is not None:
            return _fail(self.refused)
        if not self.started:
            raise _Failed(f"mcpp-chat did not start ({self.why}) — {REBUILD}")
        waiter = [threading.Event(), None]
        with self.lock:
            if self.closed:
                raise _Failed(f"mcpp-chat stopped — retry; if it persists {DOCTOR}", unsent=True)
            self.last_id += 1
            rid = self.last_id
            self.pending[rid] = waiter
        line = json.dumps({"id": rid, "tool": tool, "arguments": arguments}) + "\n"
        try:
            with self.write_lock:
                self.proc.stdin.write(line.encode())
                self.proc.stdin.flush()
        except (OSError, ValueError):  # ValueError: closed by another thread
            with self.lock:
                self.pending.pop(rid, None)
            raise _Failed(f"mcpp-chat stopped — retry; if it persists {DOCTOR}", unsent=True)
        if not waiter[0].wait(max(0.0, deadline - time.monotonic())):
            self.kill(f"a call got no answer within {_timeout():g} s")
            raise _Failed(f"mcpp-chat did not answer within {_timeout():g} s — retry; "
                          f"if it persists {DOCTOR}")
        if waiter[1] is None:
            raise _Failed(f"mcpp-chat stopped during the call ({self.why}) — retry the call "
                          f"(a write may be stored already: chat_read shows it); "
                          f"if it persists {REBUILD}")
        return waiter[1]

    def _read(self):
        why = "it exited"
        try:
            for line in self.proc.stdout:
                try:
                    reply = json.loads(line)
                except ValueError:
                    reply = None
                if not isinstance(reply, dict):
                    why = "it wrote something that is not a JSON object"
                    break
                if not self.ready.is_set():
                    self.started = reply.get("ready") is True
                    if not self.started:
                        self.refused = str(reply.get("error") or "it is not ready")
                    self.ready.set()
                    continue
                with self.lock:
                    waiter = self.pending.pop(reply.pop("id", None), None)
                if waiter:
                    waiter[1] = reply
                    waiter[0].set()
        except (OSError, ValueError) as e:
            why = f"its output failed: {e}"
        self.proc.stdout.close()
        self._stopped(why)

    def _drain_stderr(self):
        panicked = False
        try:
            for line in self.proc.stderr:
                line = line.decode("utf-8", "replace").strip()
                if line and not panicked:  # after a Go panic come its goroutines' stacks
                    self.said = line
                    panicked = line.startswith(("panic:", "fatal error:"))
        except (OSError, ValueError):
            pass
        self.proc.stderr.close()
        self.stderr_done.set()

    def _stopped(self, why):
        """Reaps the process and fails every call still waiting for it."""
        self.proc.kill()  # a no-op once it exited; stops one that wrote garbage
        self.close()
        code = self.proc.wait()
        self.stderr_done.wait(1.0)
        if why == "it exited":
            why = self.said or (f"it exited with code {code}" if code >= 0
                                else f"it got signal {-code}")
        elif self.said:
            why = f"{why}: {self.said}"
        self.why = self.killed or why
        _running.discard(self)
        with self.lock:
            waiters, self.pending = list(self.pending.values()), {}
        self.ready.set()
        for event, _ in waiters:
            event.set()

    def kill(self, why):
        self.killed = f"the bridge stopped it: {why}"
        self.proc.kill()
        self.close()

    def close(self):
        """Takes no more calls; exits once it answered the calls it holds."""
        with self.lock:
            self.closed = True
        if not self.write_lock.acquire(timeout=1.0):
            self.proc.kill()  # a call is stuck writing: it does not read its input
            return
        try:
            self.proc.stdin.close()
        except OSError:
            pass  # what it could not flush is a call it never read
        finally:
            self.write_lock.release()


_workers = {}      # workspace -> the _Worker that takes its calls
_running = set()   # every _Worker whose process may still run
_lock = threading.Lock()
_spare = None      # the workspace of the worker started at load, until a call decides


def _key():
    """What a worker was started with; a call with another key needs a new one."""
    st = os.stat(BINARY)
    return st.st_mtime_ns, st.st_ino, tuple(os.environ.get(k) for k in ENV_READ)


def _worker(workspace):
    global _spare
    key = _key()
    with _lock:
        if _spare is not None and _spare != workspace:
            _workers.pop(_spare).close()  # the host works elsewhere: not kept for nothing
        _spare = None
        worker = _workers.get(workspace)
        if worker is not None and not worker.closed and worker.key == key:
            return worker
        if worker is not None:
            worker.close()
        worker = _workers[workspace] = _Worker(workspace, key)
        return worker


def _close_all():
    """At exit: close every worker, kill any still running a second later."""
    workers = list(_running)
    for worker in workers:
        worker.close()
    deadline = time.monotonic() + 1.0
    for worker in workers:
        try:
            worker.proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            worker.proc.kill()
            worker.proc.wait()


def _start_spare():
    """At load: start the worker for the host's folder, the likely workspace
    of the first call, so that call does not wait for a process start. The
    first call for another workspace closes it. Never fails the load."""
    global _spare
    if not os.access(BINARY, os.X_OK):
        return  # execute() says what to do
    try:
        _worker(os.getcwd())
        _spare = os.getcwd()
    except Exception:  # noqa: BLE001 — the first call tries again and says why
        pass


def _forget_after_fork():
    # A forked child must not write into its parent's workers; it starts its own.
    global _lock, _spare
    _lock = threading.Lock()
    _spare = None
    _workers.clear()
    _running.clear()


atexit.register(_close_all)
os.register_at_fork(after_in_child=_forget_after_fork)
_start_spare()


def _run(args, stdin=""):
    """Run the binary once; return its JSON object or a failure that says what to do."""
    if not os.access(BINARY, os.X_OK):
        return _fail(f"the mcpp-chat binary {BINARY} is missing — run `make build` in {MODULE_DIR}")
    try:
        proc = subprocess.run([BINARY, *args], input=stdin, capture_output=True,
                              text=True, timeout=_timeout())
    except subprocess.TimeoutExpired:
        return _fail(f"mcpp-chat {args[0]} did not answer within {_timeout():g} s — retry; "
                     f"if it persists {DOCTOR}")
    except (OSError, ValueError) as e:
        return _fail(f"cannot run {BINARY} ({e}) — run `make build` in {MODULE_DIR}")
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        out = None
    if not isinstance(out, dict):
        why = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return _fail(f"mcpp-chat {args[0]} gave no JSON answer ({why}) — {REBUILD}")
    return out


def _workspace(context):
    return (context or {}).get("workspace_dir") or os.getcwd()


def execute(tool_name, arguments, context=None):
    """Run one chat_* tool: {"success", "result", "display"} or {"success": False, "error"}."""
    arguments = {} if arguments is None else arguments
    try:
        json.dumps(arguments)
    except (TypeError, ValueError) as e:
        return _fail(f"the arguments are not JSON ({e}) — pass a JSON object")
    if not os.access(BINARY, os.X_OK):
        return _fail(f"the mcpp-chat binary {BINARY} is missing — run `make build` in {MODULE_DIR}")
    workspace, deadline = _workspace(context), time.monotonic() + _timeout()
    try:
        try:
            return _worker(workspace).call(str(tool_name), arguments, deadline)
        except _Failed as failed:
            if not failed.unsent:
                raise
            return _worker(workspace).call(str(tool_name), arguments, deadline)  # a new worker
    except _Failed as failed:
        return _fail(str(failed))
    except OSError as e:
        return _fail(f"cannot run {BINARY} ({e}) — run `make build` in {MODULE_DIR}")
    except Exception as e:  # never into the host
        return _fail(f"the mcpp-chat bridge failed ({e!r}) — retry; if it persists {DOCTOR}")


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
