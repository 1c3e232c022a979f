"""Plays the mcpp host: loads tool.yaml and mcpptool.py the way an mcpp host
does and runs the worked example through execute() across two repositories;
then the bridge's kept-alive workers: one per workspace, replaced when killed,
gone when the host exits, bounded by MCPP_TIMEOUT_SECONDS, never an exception.

Needs bin/mcpp-chat (`make test` builds it first). Every run uses its own
temporary database, home and repositories. Every process a test starts is
bounded in time and stops by itself.
"""
import ast
import importlib.util
import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest

try:
    import yaml
except ImportError:
    # An mcpp host reads tool.yaml with PyYAML; without it there is no host
    # to play. Skip, saying how to get it, rather than fail `make test` on a
    # machine that lacks it (CI installs it, so CI runs this test).
    raise unittest.SkipTest(
        "PyYAML is missing, so the mcpp host test is skipped — install it "
        "(apt-get install python3-yaml, or pip install pyyaml) to run it")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "bin", "mcpp-chat")


def load_bridge(module_dir, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(module_dir, "mcpptool.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def alive(pid):
    """Whether pid is a running process (a zombie is not)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
            return True
        except ProcessLookupError:
            return False


def reaped(pid):
    """Whether pid is gone, its exit collected (a Go process killed by a
    signal shows as a zombie while its other threads still hold its pipes)."""
    try:
        os.kill(pid, 0)
        return False
    except ProcessLookupError:
        return True


def wait_until(predicate, seconds):
    end = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True


def worker_pids(bridge):
    """The bridge's worker process per workspace."""
    return {ws: w.proc.pid for ws, w in bridge._workers.items()}


def in_thread(fn, *args):
    """Runs fn in a daemon thread; returns the thread and a list that gets its
    return value, or the exception it raised."""
    out = []

    def run():
        try:
            out.append(fn(*args))
        except BaseException as e:  # the test reports it
            out.append(e)
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


def fake_module(tmp, worker_source):
    """A module folder whose bin/mcpp-chat is a Python script: the worker."""
    os.makedirs(os.path.join(tmp, "bin"), exist_ok=True)
    shutil.copy(os.path.join(ROOT, "mcpptool.py"), tmp)
    fake = os.path.join(tmp, "bin", "mcpp-chat")
    with open(fake, "w") as f:
        f.write(f"#!{sys.executable}\n" + textwrap.dedent(worker_source))
    os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
    return tmp


class Host:
    """The parts of an mcpp host the module meets: manifest checks, the
    context it passes and the two text contents it makes of a result."""

    def __init__(self, module_dir):
        self.module_dir = module_dir
        with open(os.path.join(module_dir, "tool.yaml"), encoding="utf-8") as f:
            self.manifest = yaml.safe_load(f)
        names = [t["name"] for t in self.manifest["tools"]]
        if len(names) != len(set(names)):
            raise ValueError(f"duplicate tool names in tool.yaml: {names}")
        if "help" in names:
            raise ValueError("a module may not declare a tool named help")
        self.bridge = load_bridge(module_dir, "mcpptool_under_test")

    def context(self, workspace):
        return {"workspace_dir": workspace, "module_dir": self.module_dir,
                "module_scope": self.manifest["scope"]}

    def call(self, workspace, tool, args=None):
        reply = self.bridge.execute(tool, args or {}, self.context(workspace))
        if not reply.get("success"):
            return reply, None
        contents = [reply["display"], json.dumps(reply["result"])]
        return reply, contents


class Isolated(unittest.TestCase):
    """Each test gets its own database, module folder, home and repos."""

    def setUp(self):
        if not os.access(BINARY, os.X_OK):
            self.fail(f"{BINARY} is missing — run `make build` (make test does it first)")
        self.tmp = tempfile.mkdtemp(prefix="mcpp-host-test-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        saved = dict(os.environ)
        self.addCleanup(lambda: (os.environ.clear(), os.environ.update(saved)))
        for k in list(os.environ):
            if k.startswith(("MCPP_", "CLAUDE_", "XDG_")):
                del os.environ[k]
        home = os.path.join(self.tmp, "home")
        os.environ.update({
            "MCPP_CHAT_DB": os.path.join(self.tmp, "data", "chat.db"),
            "MCPP_CHAT_HOME": os.path.join(self.tmp, "module"),
            "HOME": home,
            "XDG_DATA_HOME": os.path.join(home, ".local", "share"),
            "XDG_STATE_HOME": os.path.join(home, ".local", "state"),
            "XDG_CACHE_HOME": os.path.join(home, ".cache"),
        })
        self.host = Host(ROOT)
        self.addCleanup(self.host.bridge._close_all)  # this test's workers, not the run's

    def repo(self, name, sub=""):
        path = os.path.join(self.tmp, "repos", name)
        os.makedirs(os.path.join(path, ".git"), exist_ok=True)
        start = os.path.join(path, sub)
        os.makedirs(start, exist_ok=True)
        return os.path.realpath(path), os.path.realpath(start)

    def ok(self, workspace, tool, args=None):
        reply, contents = self.host.call(workspace, tool, args)
        self.assertTrue(reply.get("success"), f"{tool} {args}: {reply}")
        self.assertTrue(contents[0].strip(), f"{tool}: empty display")
        return json.loads(contents[1])


class ManifestTest(unittest.TestCase):
    def test_tool_yaml_is_module_yaml(self):
        path = os.path.join(ROOT, "tool.yaml")
        self.assertTrue(os.path.islink(path), "tool.yaml should be a symlink to module.yaml")
        self.assertEqual(os.readlink(path), "module.yaml")
        with open(path, "rb") as a, open(os.path.join(ROOT, "module.yaml"), "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_loads_as_mcpp_would(self):
        with open(os.path.join(ROOT, "tool.yaml"), encoding="utf-8") as f:
            m = yaml.safe_load(f)
        self.assertEqual(m["name"], "chat")
        self.assertIn(m["scope"], ("local", "global", "user", "project"))
        self.assertIn("authoritative", m["about"])
        names = [t["name"] for t in m["tools"]]
        self.assertGreaterEqual(len(names), 14)
        self.assertEqual(len(names), len(set(names)))
        self.assertNotIn("help", names)
        for t in m["tools"]:
            self.assertTrue(t["name"].startswith("chat_"), t["name"])
            self.assertIsInstance(t["description"], str)
            self.assertTrue(t["description"].strip(), t["name"])
            self.assertEqual(t["inputSchema"]["type"], "object", t["name"])
            self.assertIsInstance(t["inputSchema"].get("properties", {}), dict)

    def test_tools_yaml_serves_this_module(self):
        with open(os.path.join(ROOT, "tools.yaml"), encoding="utf-8") as f:
            conf = yaml.safe_load(f)
        self.assertEqual(conf, {"modules": [{"path": "."}]})
        module = os.path.join(ROOT, conf["modules"][0]["path"])
        for need in ("tool.yaml", "mcpptool.py"):
            self.assertTrue(os.path.isfile(os.path.join(module, need)), need)

    def test_bridge_is_small_and_stdlib_only(self):
        with open(os.path.join(ROOT, "mcpptool.py"), encoding="utf-8") as f:
            source = f.read()
        # Small enough to read in one sitting: the worker protocol lives in Go.
        self.assertLessEqual(len(source.splitlines()), 360)
        tree = ast.parse(source)
        imported = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                imported.add(node.module.split(".")[0])
        self.assertTrue(imported <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names))
        funcs = {n.name: [a.arg for a in n.args.args] for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.assertEqual(funcs["execute"], ["tool_name", "arguments", "context"])
        self.assertEqual(funcs["get_info"], ["context"])
        self.assertEqual(funcs["initialize"], [])


class WorkedExampleTest(Isolated):
    def test_two_repositories_through_execute(self):
        gw_root, gw = self.repo("mesh-gw", os.path.join("src", "radio"))
        dash_root, dash = self.repo("node-dash")

        self.assertEqual(self.ok(dash, "chat_whoami", {"about": "web dashboard"})["me"], "node-dash")
        self.assertEqual(self.ok(gw, "chat_whoami")["me"], "mesh-gw", "a subfolder is its repository")

        self.ok(gw, "chat_channel_new", {"name": "gw--dash", "parties": ["node-dash"]})
        asked = self.ok(gw, "chat_ask", {"title": "Is the chunk header enum closed?",
                                         "body": "I need FRAME_AUX.", "slug": "chunk-api"})
        self.assertEqual((asked["slug"], asked["status"], asked["awaiting_ack_from"]),
                         ("chunk-api", "open", ["node-dash"]))

        inbox = self.ok(dash, "chat_inbox")
        self.assertEqual([w["item"] for w in inbox["waiting_on_me"]], ["chunk-api"])

        replied = self.ok(dash, "chat_reply", {"item": "chunk-api", "text": "I own the generator; FRAME_AUX added."})
        self.assertTrue(replied["auto_acked"])

        read = self.ok(gw, "chat_read")
        self.assertEqual(read["messages"][-1]["body"], "I own the generator; FRAME_AUX added.")
        self.assertEqual(read["messages"][-1]["from"], "node-dash")

        # Only the raiser confirms: node-dash resolving without answered=true is refused.
        refused, _ = self.host.call(dash, "chat_resolve", {"item": "chunk-api"})
        self.assertFalse(refused["success"])
        self.assertTrue(refused["error"])

        self.assertEqual(self.ok(gw, "chat_resolve", {"item": "chunk-api", "note": "Confirmed."})["status"], "done")
        self.assertFalse(self.ok(gw, "chat_prune_ok", {"item": "chunk-api"})["archived_now"])
        self.assertTrue(self.ok(dash, "chat_prune_ok", {"item": "gw--dash:chunk-api"})["archived_now"])

        live = self.ok(gw, "chat_read", {"since": 0, "peek": True})
        self.assertNotIn("chunk-api", [m.get("slug") for m in live["messages"]])
        archived = self.ok(gw, "chat_read", {"archived": True})
        self.assertEqual(archived["messages"][0]["slug"], "chunk-api")
        self.assertTrue(archived["messages"][0]["archived"])

        parties = {p["name"]: p for p in self.ok(dash, "chat_whoami")["known_parties"]}
        self.assertEqual(parties["mesh-gw"]["workspace"], gw_root)
        self.assertEqual(parties["node-dash"]["workspace"], dash_root)

    def test_tool_error_is_a_failure_not_an_exception(self):
        _, ws = self.repo("lonely")
        reply, _ = self.host.call(ws, "chat_say", {"text": "hello"})
        self.assertFalse(reply["success"])
        self.assertIn("channel", reply["error"])
        reply, _ = self.host.call(ws, "chat_no_such_tool", {})
        self.assertFalse(reply["success"])
        self.assertIn("chat_whoami", reply["error"])

    def test_wait_is_clamped_by_mcpp_timeout(self):
        _, a = self.repo("alpha")
        _, b = self.repo("beta")
        self.ok(b, "chat_whoami")
        self.ok(a, "chat_channel_new", {"name": "ab", "parties": ["beta"]})
        os.environ["MCPP_TIMEOUT_SECONDS"] = "7"  # the host gives up after 7 s: wait at most 7 - 5
        start = time.monotonic()
        waited = self.ok(a, "chat_wait", {"seconds": 20})
        elapsed = time.monotonic() - start
        self.assertFalse(waited["arrived"])
        self.assertGreaterEqual(waited["waited_seconds"], 1.5)
        self.assertLess(waited["waited_seconds"], 5, "chat_wait ignored MCPP_TIMEOUT_SECONDS")
        self.assertLess(elapsed, 15)


class KeptAliveTest(Isolated):
    """One worker per workspace for the host's life, replaced when it dies."""

    def test_one_worker_per_workspace_for_the_host_lifetime(self):
        _, a = self.repo("alpha")
        _, b = self.repo("beta")
        for _ in range(3):
            self.ok(a, "chat_whoami")
            self.ok(b, "chat_whoami")
        pids = worker_pids(self.host.bridge)
        self.assertEqual(set(pids), {a, b})
        self.assertNotEqual(pids[a], pids[b])
        for _ in range(5):
            self.ok(a, "chat_inbox")
        self.assertEqual(worker_pids(self.host.bridge), pids, "a call started a new process")
        self.assertTrue(all(alive(p) for p in pids.values()))

    def test_killed_between_calls_is_replaced(self):
        _, a = self.repo("alpha")
        self.ok(a, "chat_whoami")
        pid = worker_pids(self.host.bridge)[a]
        os.kill(pid, signal.SIGKILL)
        self.assertTrue(wait_until(lambda: reaped(pid), 5))  # the bridge noticed
        self.assertEqual(self.ok(a, "chat_whoami")["me"], "alpha")
        self.assertNotEqual(worker_pids(self.host.bridge)[a], pid)

    def test_killed_during_a_wait_fails_with_retry_then_works(self):
        _, a = self.repo("alpha")
        _, b = self.repo("beta")
        self.ok(b, "chat_whoami")
        self.ok(a, "chat_channel_new", {"name": "ab", "parties": ["beta"]})
        pid = worker_pids(self.host.bridge)[a]
        t, out = in_thread(self.host.call, a, "chat_wait", {"seconds": 20})
        self.assertTrue(wait_until(lambda: self.host.bridge._workers[a].pending, 5))
        time.sleep(0.3)  # the worker has read the call and waits
        os.kill(pid, signal.SIGKILL)
        t.join(10)
        self.assertFalse(t.is_alive(), "the call hung after its worker died")
        reply, _ = out[0]  # an exception would not unpack
        self.assertFalse(reply["success"])
        self.assertIn("retry", reply["error"])
        self.assertEqual(self.ok(a, "chat_whoami")["me"], "alpha")

    def test_threads_share_a_worker_and_a_wait_holds_up_no_one(self):
        _, a = self.repo("alpha")
        _, b = self.repo("beta")
        self.ok(b, "chat_whoami")
        self.ok(a, "chat_channel_new", {"name": "ab", "parties": ["beta"]})
        waiter, waited = in_thread(self.host.call, b, "chat_wait", {"seconds": 10})
        self.assertTrue(wait_until(lambda: self.host.bridge._workers[b].pending, 5))
        start = time.monotonic()
        self.ok(b, "chat_whoami")
        self.assertLess(time.monotonic() - start, 2, "a call waited for another's chat_wait")

        def send(i):
            got = []
            for j in range(15):
                said = self.host.call(a, "chat_say", {"text": f"t{i} m{j}"})[0]
                nope = self.host.call(a, f"chat_nope_{i}_{j}")[0]
                got.append((said["result"]["seq"], f"chat_nope_{i}_{j}" in nope["error"]))
            return got
        threads = [in_thread(send, i) for i in range(6)]
        for t, _ in threads:
            t.join(60)
        results = [r for _, out in threads for r in out[0]]
        self.assertEqual(len(results), 90)
        self.assertEqual(len({seq for seq, _ in results}), 90, "two calls got one answer")
        self.assertTrue(all(named for _, named in results), "an answer went to another call")
        waiter.join(15)
        self.assertTrue(waited[0][0]["result"]["arrived"])
        bodies = []
        while True:  # each read moves the cursor on
            page = self.ok(b, "chat_read", {"channel": "ab", "limit": 40})
            bodies += [m["body"] for m in page["messages"]]
            if not page["more"]:
                break
        self.assertEqual(sorted(bodies), sorted(f"t{i} m{j}" for i in range(6) for j in range(15)))

    def test_an_environment_change_starts_a_new_worker(self):
        _, a = self.repo("alpha")
        _, b = self.repo("beta")
        self.ok(b, "chat_whoami")
        self.assertEqual(len(self.ok(a, "chat_whoami")["known_parties"]), 2)
        old = worker_pids(self.host.bridge)[a]
        os.environ["MCPP_CHAT_DB"] = os.path.join(self.tmp, "other", "chat.db")
        parties = [p["name"] for p in self.ok(a, "chat_whoami")["known_parties"]]
        self.assertEqual(parties, ["alpha"], "the call went to the old database")
        self.assertNotEqual(worker_pids(self.host.bridge)[a], old)
        self.assertTrue(wait_until(lambda: not alive(old), 5), "the replaced worker did not exit")

    def test_a_rebuilt_binary_starts_a_new_worker(self):
        module = os.path.join(self.tmp, "checkout")
        os.makedirs(os.path.join(module, "bin"))
        shutil.copy(os.path.join(ROOT, "mcpptool.py"), module)
        shutil.copy2(BINARY, os.path.join(module, "bin", "mcpp-chat"))
        bridge = load_bridge(module, "mcpptool_rebuilt")
        self.addCleanup(bridge._close_all)
        _, a = self.repo("alpha")
        self.assertTrue(bridge.execute("chat_whoami", {}, {"workspace_dir": a})["success"])
        old = worker_pids(bridge)[a]
        later = time.time() + 5
        os.utime(os.path.join(module, "bin", "mcpp-chat"), (later, later))  # as `make build` would
        self.assertTrue(bridge.execute("chat_whoami", {}, {"workspace_dir": a})["success"])
        self.assertNotEqual(worker_pids(bridge)[a], old)

    def test_a_database_that_does_not_open_is_a_failure_saying_so(self):
        _, a = self.repo("alpha")
        not_a_db = os.path.join(self.tmp, "not-a-db")
        with open(not_a_db, "w") as f:
            f.write("this is not a database\n" * 100)
        os.environ["MCPP_CHAT_DB"] = not_a_db
        reply, _ = self.host.call(a, "chat_whoami")
        self.assertFalse(reply["success"])
        self.assertIn(not_a_db, reply["error"])
        self.assertNotIn("make build", reply["error"], "a build does not fix a database")


class ColdStartTest(Isolated):
    """Loading the module starts the worker for the host's folder, so the
    first call there finds it ready; a first call elsewhere closes it."""

    def load_in(self, folder, name):
        cwd = os.getcwd()
        os.chdir(folder)
        self.addCleanup(os.chdir, cwd)
        bridge = load_bridge(ROOT, name)
        self.addCleanup(bridge._close_all)
        return bridge

    def test_loading_starts_the_worker_the_first_call_uses(self):
        _, a = self.repo("alpha")
        bridge = self.load_in(a, "mcpptool_cold")
        self.assertEqual(list(worker_pids(bridge)), [a], "loading the module started no worker")
        spare = bridge._workers[a]
        self.assertTrue(spare.ready.wait(10) and spare.started, spare.why)
        reply = bridge.execute("chat_whoami", {}, {"workspace_dir": a})
        self.assertEqual(reply["result"]["me"], "alpha")
        self.assertIs(bridge._workers[a], spare, "the first call started another worker")
        self.assertTrue(alive(spare.proc.pid))

    def test_a_first_call_elsewhere_closes_the_spare(self):
        _, a = self.repo("alpha")
        _, b = self.repo("beta")
        bridge = self.load_in(a, "mcpptool_cold_elsewhere")
        spare = worker_pids(bridge)[a]
        self.assertEqual(bridge.execute("chat_whoami", {}, {"workspace_dir": b})["result"]["me"], "beta")
        self.assertEqual(list(worker_pids(bridge)), [b])
        self.assertTrue(wait_until(lambda: not alive(spare), 5), "the unused worker was kept")
        parties = [p["name"] for p in bridge.execute("chat_whoami", {}, {"workspace_dir": b})["result"]["known_parties"]]
        self.assertEqual(parties, ["beta"], "the worker started at load registered a party")


HOST_SCRIPT = """
import json, os, sys, threading, time
sys.path.insert(0, {tests!r})
from test_mcpp_host import Host
module, a, b, mode, report = sys.argv[1:6]
host = Host(module)
host.call(a, "chat_whoami")
host.call(b, "chat_whoami")
if module == {root!r}:  # a chat_wait in flight when the host goes
    host.call(a, "chat_channel_new", {{"name": "ab", "parties": [os.path.basename(b)]}})
    threading.Thread(target=host.call, args=(a, "chat_wait", {{"seconds": 20}}), daemon=True).start()
    time.sleep(0.5)
with open(report + ".tmp", "w") as f:
    json.dump([w.proc.pid for w in host.bridge._running], f)
os.rename(report + ".tmp", report)
if mode == "kill":
    time.sleep(60)  # until the test kills it
"""

# A worker that answers every call but stays 30 s after its input ends.
LINGERING_WORKER = """
    import json, sys, time
    print('{"ready": true}', flush=True)
    for line in sys.stdin:
        reply = {"id": json.loads(line)["id"], "success": True, "result": {}, "display": "ok"}
        print(json.dumps(reply), flush=True)
    time.sleep(30)
"""


class HostExitTest(Isolated):
    """No worker outlives the host that started it."""

    def run_host(self, mode, module=ROOT):
        _, a = self.repo("alpha")
        _, b = self.repo("beta")
        script = os.path.join(self.tmp, "host.py")
        with open(script, "w") as f:
            f.write(HOST_SCRIPT.format(tests=os.path.dirname(os.path.abspath(__file__)), root=ROOT))
        report = os.path.join(self.tmp, "pids.json")
        host = subprocess.Popen([sys.executable, script, module, a, b, mode, report])
        self.addCleanup(lambda: host.poll() is None and (host.kill(), host.wait()))
        self.assertTrue(wait_until(lambda: os.path.exists(report) or host.poll() is not None, 30))
        with open(report) as f:
            pids = json.load(f)
        self.addCleanup(lambda: [os.kill(p, signal.SIGKILL) for p in pids if alive(p)])
        self.assertGreaterEqual(len(pids), 2)  # and the one started at load, if it still runs
        return host, pids

    def assertGone(self, pids):
        self.assertTrue(wait_until(lambda: not any(alive(p) for p in pids), 5),
                        f"workers {[p for p in pids if alive(p)]} outlived the host")

    def test_exit_with_a_wait_in_flight(self):
        host, pids = self.run_host("exit")
        self.assertEqual(host.wait(15), 0)
        self.assertGone(pids)

    def test_killed_host_with_a_wait_in_flight(self):
        # No atexit runs: each worker sees its stdin end, answers the wait at once and exits.
        host, pids = self.run_host("kill")
        host.kill()
        host.wait(5)
        self.assertGone(pids)

    def test_exit_kills_a_worker_that_stays(self):
        module = fake_module(os.path.join(self.tmp, "fake"), LINGERING_WORKER)
        os.symlink(os.path.join(ROOT, "module.yaml"), os.path.join(module, "tool.yaml"))
        host, pids = self.run_host("exit", module)
        self.assertEqual(host.wait(15), 0)
        self.assertGone(pids)


class AnswerBudgetTest(Isolated):
    """The host joins the display and json.dumps(result) — with its spaces
    and every non-ASCII character escaped — into what reaches the model;
    that stays within chat.answer_budget_chars, and reading page by page
    through the host delivers every message once."""

    BUDGET = 32000

    def test_backlog_reaches_the_model_whole(self):
        gw, _ = self.repo("mesh-gw")
        dash, _ = self.repo("node-dash")
        self.ok(dash, "chat_whoami")
        self.ok(gw, "chat_channel_new", {"name": "gw--dash", "parties": ["node-dash"]})
        sent = {}
        for i in range(1, 61):
            # Non-ASCII text costs six characters a letter in json.dumps.
            text = f"backlog {i}: " + ("é漢 " * 60 + "plain words ") * 3
            r = self.ok(gw, "chat_say", {"text": text, "channel": "gw--dash"})
            sent[r["seq"]] = text.strip()
        got, args, pages = {}, {"channel": "gw--dash"}, 0
        while True:
            reply, contents = self.host.call(dash, "chat_read", args)
            self.assertTrue(reply.get("success"), reply)
            size = len(contents[0]) + len(contents[1])
            self.assertLessEqual(size, self.BUDGET, f"page {pages + 1}: {size} characters reach the model")
            result = json.loads(contents[1])
            pages += 1
            for m in result["messages"]:
                self.assertNotIn(m["seq"], got, f"#{m['seq']} delivered twice")
                got[m["seq"]] = m["body"]
            nxt = (result.get("next") or {}).get("chat_read")
            if nxt is None:
                break
            args = nxt
        self.assertGreater(pages, 1, "60 long messages fit one page: the test does not exercise the budget")
        self.assertEqual(got, sent)
        inbox = self.ok(dash, "chat_inbox")
        self.assertEqual(inbox["unread_total"], 0)


class InfoTest(Isolated):
    def test_get_info(self):
        root, start = self.repo("mesh-gw", "docs")
        info = self.host.bridge.get_info(self.host.context(start))
        self.assertNotIn("error", info)
        self.assertIn("authoritative", info["about"])
        ident = info["identity"]
        self.assertEqual((ident["party_name"], ident["workspace_dir"]), ("mesh-gw", root))
        self.assertTrue(ident["note"])
        self.assertEqual(info["db_path"], os.environ["MCPP_CHAT_DB"])
        self.assertEqual(info["tick_file"], os.path.join(self.tmp, "data", ".tick"))
        for p in ("read_limit", "wait_seconds", "default_channel"):
            self.assertIn("values", info["params"][p])
            self.assertIn("default", info["params"][p])
        self.assertEqual(info["params"]["read_limit"]["default"], 50)
        self.assertEqual(info["params"]["wait_seconds"]["default"], 10)
        protocol = " ".join(info["protocol"])
        for words in ("chat_say", "chat_ask", "raiser", "prune", "your own name"):
            self.assertIn(words, protocol)
        boundary = " ".join(info["boundary"]).lower()
        for words in ("authoritative about your own", "never assert", "never edit another party"):
            self.assertIn(words, boundary)

    def test_get_info_writes_no_party(self):
        _, start = self.repo("quiet")
        self.host.bridge.get_info(self.host.context(start))
        _, other = self.repo("other")
        parties = [p["name"] for p in self.ok(other, "chat_whoami")["known_parties"]]
        self.assertEqual(parties, ["other"], "get_info registered a party")

    def test_initialize(self):
        self.assertEqual(self.host.bridge.initialize(), {"success": True})
        not_a_db = os.path.join(self.tmp, "not-a-db")
        with open(not_a_db, "w") as f:
            f.write("this is not a database\n" * 100)
        os.environ["MCPP_CHAT_DB"] = not_a_db
        result = self.host.bridge.initialize()
        self.assertFalse(result["success"])
        self.assertIn(not_a_db, result["error"])


class BrokenInstallTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="mcpp-bridge-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        shutil.copy(os.path.join(ROOT, "mcpptool.py"), self.dir)

    def test_missing_binary(self):
        bridge = load_bridge(self.dir, "mcpptool_no_binary")  # loads, starting nothing
        self.assertEqual(bridge._workers, {})
        for reply in (bridge.execute("chat_whoami", {}, {"workspace_dir": self.dir}),
                      bridge.get_info({"workspace_dir": self.dir}), bridge.initialize()):
            self.assertFalse(reply["success"])
            self.assertIn("make build", reply["error"])
            self.assertIn(os.path.realpath(self.dir), reply["error"])

    def test_crash_and_garbage(self):
        os.makedirs(os.path.join(self.dir, "bin"))
        fake = os.path.join(self.dir, "bin", "mcpp-chat")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\necho 'panic: something broke' >&2\necho not json\nexit 2\n")
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)
        bridge = load_bridge(self.dir, "mcpptool_crash")
        reply = bridge.execute("chat_whoami", {}, None)
        self.assertFalse(reply["success"])
        self.assertIn("panic: something broke", reply["error"])
        self.assertIn("make build", reply["error"])
        self.assertFalse(bridge.initialize()["success"])

    def bridge_with(self, name, worker_source):
        bridge = load_bridge(fake_module(self.dir, worker_source), name)
        self.addCleanup(bridge._close_all)
        return bridge

    def test_honours_mcpp_timeout(self):
        bridge = self.bridge_with("mcpptool_stuck", """
            import sys, time
            print('{"ready": true}', flush=True)
            for line in sys.stdin:
                time.sleep(30)  # never answers in time; gone by itself later
        """)
        saved = os.environ.get("MCPP_TIMEOUT_SECONDS")
        self.addCleanup(lambda: os.environ.pop("MCPP_TIMEOUT_SECONDS") if saved is None
                        else os.environ.update(MCPP_TIMEOUT_SECONDS=saved))
        os.environ["MCPP_TIMEOUT_SECONDS"] = "2"
        start = time.monotonic()
        t, out = in_thread(bridge.execute, "chat_whoami", {}, {"workspace_dir": self.dir})
        t.join(15)
        self.assertFalse(t.is_alive(), "the call hung past MCPP_TIMEOUT_SECONDS")
        self.assertGreater(time.monotonic() - start, 1.5)
        self.assertFalse(out[0]["success"])
        self.assertIn("within 2 s", out[0]["error"])
        self.assertIn("retry", out[0]["error"])
        pid = worker_pids(bridge)[self.dir]
        self.assertTrue(wait_until(lambda: not alive(pid), 5), "the stuck worker was left running")

    def test_crash_during_a_call(self):
        bridge = self.bridge_with("mcpptool_crash_in_call", r"""
            import sys
            print('{"ready": true}', flush=True)
            sys.stdin.readline()
            print("panic: runtime error: boom\n\ngoroutine 1 [running]:\nmain.main()\n"
                  "\t/src/main.go:12 +0x1d", file=sys.stderr, flush=True)
            sys.exit(2)
        """)
        reply = bridge.execute("chat_whoami", {}, {"workspace_dir": self.dir})
        self.assertFalse(reply["success"])
        self.assertIn("panic: runtime error: boom", reply["error"])
        self.assertIn("retry", reply["error"])

    def test_garbage_answer(self):
        bridge = self.bridge_with("mcpptool_garbage", """
            import sys
            print('{"ready": true}', flush=True)
            sys.stdin.readline()
            print("Segmentation fault (not JSON)", flush=True)
            sys.stdin.read()
        """)
        reply = bridge.execute("chat_whoami", {}, {"workspace_dir": self.dir})
        self.assertFalse(reply["success"])
        self.assertIn("not a JSON object", reply["error"])
        self.assertIn("make build", reply["error"])

    def test_unserialisable_arguments(self):
        bridge = load_bridge(self.dir, "mcpptool_args")
        reply = bridge.execute("chat_say", {"text": object()}, None)
        self.assertFalse(reply["success"])
        self.assertIn("not JSON", reply["error"])


if __name__ == "__main__":
    unittest.main()
