"""Plays the mcpp host: loads tool.yaml and mcpptool.py the way an mcpp host
does and runs the worked example through execute() across two repositories.

Needs bin/mcpp-chat (`make test` builds it first). Every run uses its own
temporary database, home and repositories.
"""
import ast
import importlib.util
import json
import os
import shutil
import stat
import sys
import tempfile
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
        self.assertLessEqual(len(source.splitlines()), 80)
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
        bridge = load_bridge(self.dir, "mcpptool_no_binary")
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

    def test_unserialisable_arguments(self):
        bridge = load_bridge(self.dir, "mcpptool_args")
        reply = bridge.execute("chat_say", {"text": object()}, None)
        self.assertFalse(reply["success"])
        self.assertIn("not JSON", reply["error"])


if __name__ == "__main__":
    unittest.main()
