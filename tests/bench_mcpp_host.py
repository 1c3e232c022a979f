"""Times chat calls through an mcpp host: the harness of test_mcpp_host.py
(its Host loads tool.yaml and mcpptool.py and wraps each reply as the host
does) on a database with realistic content. Not a test: run it by hand.

    python3 tests/bench_mcpp_host.py                  # 3 runs of 300 calls each
    python3 tests/bench_mcpp_host.py --runs 1 -n 100
    python3 tests/bench_mcpp_host.py --bridge OTHER/mcpptool.py   # another bridge, same binary
    python3 tests/bench_mcpp_host.py --worker-only    # the worker alone: raw pipes, no bridge
    python3 tests/bench_mcpp_host.py --runs 9 --cold-only   # a fresh host's first calls only

Each run seeds a fresh database in a temporary folder (never HOME): three
repositories, two channels, 300 messages, 30 live items (10 open, 10
acked, 6 done waiting for prune-ok, 4 announcements) and 10 archived, then
times node-dash's calls, p50 and p95 in milliseconds, each from execute()
to the host's two text contents. A fresh host (the module just loaded, its
initialize() run, as a host starts) times its first five calls first. Needs bin/mcpp-chat (make build).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_mcpp_host import ROOT, Host  # noqa: E402


def isolate(tmp):
    for k in list(os.environ):
        if k.startswith(("MCPP_", "CLAUDE_", "XDG_")):
            del os.environ[k]
    home = os.path.join(tmp, "home")
    os.environ.update({"MCPP_CHAT_DB": os.path.join(tmp, "data", "chat.db"),
                       "MCPP_CHAT_HOME": os.path.join(tmp, "module"), "HOME": home,
                       "XDG_DATA_HOME": os.path.join(home, ".local", "share")})


def module_with(bridge, tmp):
    """A module folder holding bridge, with this checkout's tool.yaml and bin/."""
    module = os.path.join(tmp, "other-bridge")
    os.makedirs(module)
    shutil.copy(bridge, os.path.join(module, "mcpptool.py"))
    for name in ("tool.yaml", "bin"):
        os.symlink(os.path.join(ROOT, name), os.path.join(module, name))
    return module


class Run:
    def __init__(self, host, tmp):
        self.host = host
        self.ws = {}
        for name in ("mesh-gw", "node-dash", "fw-core"):
            path = os.path.join(tmp, "repos", name)
            os.makedirs(os.path.join(path, ".git"))
            self.ws[name] = path

    def call(self, who, tool, args=None):
        reply, contents = self.host.call(self.ws[who], tool, args)
        if not reply.get("success"):
            raise SystemExit(f"{who} {tool} {args}: {reply}")
        return reply["result"]

    def seed(self):
        for who in self.ws:
            self.call(who, "chat_whoami")
        self.call("mesh-gw", "chat_channel_new", {"name": "gw--dash", "parties": ["node-dash"]})
        self.call("fw-core", "chat_channel_new", {"name": "fw", "parties": ["mesh-gw", "node-dash"]})
        line = "the frame parser now rejects short headers; the dashboard shows them as errors"
        for i in range(300):
            who, channel = [("mesh-gw", "gw--dash"), ("node-dash", "gw--dash"), ("fw-core", "fw")][i % 3]
            self.call(who, "chat_say", {"channel": channel, "text": f"{i}: {line} ({i % 7} of 7)"})
        def ask(n, channel, **more):
            self.call("mesh-gw", "chat_ask", dict(
                channel=channel, title=f"Question {n}: is the chunk header enum closed?",
                body="I need FRAME_AUX for the radio path; what does the generator emit?",
                slug=f"q{n}", **more))
        for n in range(10):        # archived: resolved, both said prune-ok
            ask(n, "gw--dash")
            self.call("node-dash", "chat_reply", {"item": f"gw--dash:q{n}", "text": "Closed; FRAME_AUX added."})
            self.call("mesh-gw", "chat_resolve", {"item": f"gw--dash:q{n}"})
            self.call("mesh-gw", "chat_prune_ok", {"item": f"gw--dash:q{n}"})
            self.call("node-dash", "chat_prune_ok", {"item": f"gw--dash:q{n}"})
        for n in range(10, 20):    # open, waiting for node-dash's ack
            ask(n, "gw--dash" if n % 2 else "fw")
        for n in range(20, 30):    # acked by node-dash's reply
            ask(n, "gw--dash")
            self.call("node-dash", "chat_reply", {"item": f"gw--dash:q{n}", "text": "Looking at it."})
        for n in range(30, 36):    # done, waiting for node-dash's prune-ok
            ask(n, "gw--dash")
            self.call("node-dash", "chat_reply", {"item": f"gw--dash:q{n}", "text": "Done."})
            self.call("mesh-gw", "chat_resolve", {"item": f"gw--dash:q{n}"})
            self.call("mesh-gw", "chat_prune_ok", {"item": f"gw--dash:q{n}"})
        for n in range(36, 40):    # announcements
            ask(n, "fw", announce=True)
        self.call("node-dash", "chat_read", {"channel": "fw"})  # has read one channel, not the other
        live = self.call("node-dash", "chat_read", {"channel": "gw--dash", "peek": True, "since": 0, "limit": 500})
        return [m["seq"] for m in live["messages"]]


class Workers:
    """The calls without the bridge: a raw client of one `call --stream`
    worker per workspace (write a line, read a line), to tell the worker's
    share of a call from the bridge's."""

    def __init__(self, ws):
        self.ws, self.procs = ws, {}

    def call(self, who, tool, args=None):
        if who not in self.procs:
            proc = subprocess.Popen([os.path.join(ROOT, "bin", "mcpp-chat"), "call", "--stream",
                                     "--workspace", self.ws[who]],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            proc.stdout.readline()  # {"ready": true}
            self.procs[who] = proc
        proc = self.procs[who]
        proc.stdin.write((json.dumps({"id": 1, "tool": tool, "arguments": args or {}}) + "\n").encode())
        proc.stdin.flush()
        reply = json.loads(proc.stdout.readline())
        if not reply.get("success"):
            raise SystemExit(f"{who} {tool} {args}: {reply}")
        return reply["result"]

    def close(self):
        for proc in self.procs.values():
            proc.stdin.close()
            proc.wait()


def timed(fn, n, before=None):
    """fn's time in ms over n calls (before runs untimed ahead of each)."""
    times = []
    for _ in range(n):
        if before:
            before()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times


def p(times, q):
    times = sorted(times)
    return times[min(len(times) - 1, int(q * len(times)))]


def session(run):
    """A session's first calls: whoami, inbox, say, read, inbox."""
    run.call("node-dash", "chat_whoami")
    run.call("node-dash", "chat_inbox")
    run.call("node-dash", "chat_say", {"channel": "gw--dash", "text": "on it"})
    run.call("node-dash", "chat_read", {"channel": "gw--dash"})
    run.call("node-dash", "chat_inbox")


def timed_session(run):
    """session(run), each call's time in ms."""
    times = []
    original = run.call

    def call(*args):
        start = time.perf_counter()
        try:
            return original(*args)
        finally:
            times.append((time.perf_counter() - start) * 1000)
    run.call = call
    try:
        session(run)
    finally:
        run.call = original
    return times


def one_run(module, n, worker_only=False, cold_only=False):
    tmp = tempfile.mkdtemp(prefix="mcpp-bench-")
    saved, cwd = dict(os.environ), os.getcwd()
    try:
        isolate(tmp)
        run = Run(Host(module or ROOT), tmp)
        seqs = run.seed()
        getattr(run.host.bridge, "_close_all", lambda: None)()
        # A host that starts with the database in place, in node-dash's folder
        # (the module starts that workspace's worker as it loads).
        os.chdir(run.ws["node-dash"])
        run.host = host = Host(module or ROOT)
        if worker_only:
            workers = Workers(run.ws)
            run.call = workers.call
        else:
            host.bridge.initialize()  # as a host does once it loaded the module
        first = timed_session(run)

        def d(tool, args=None):  # node-dash's call
            return lambda: run.call("node-dash", tool, args)

        def peer():  # a write by another workspace's worker, untimed
            run.call("mesh-gw", "chat_say", {"channel": "gw--dash", "text": "peer news: build 412 is green"})
        cases = [
            ("chat_say", d("chat_say", {"channel": "gw--dash", "text": "status: the dashboard renders FRAME_AUX"}), None),
            ("chat_inbox", d("chat_inbox"), None),
            ("chat_inbox after a peer's write", d("chat_inbox"), peer),
            ("chat_read, 20 messages (peek)", d("chat_read", {"channel": "gw--dash", "limit": 20, "peek": True, "since": seqs[-21]}), None),
            ("chat_read, 50 messages (peek)", d("chat_read", {"channel": "gw--dash", "peek": True, "since": seqs[-51]}), None),
            ("chat_read of a peer's new message", d("chat_read", {"channel": "gw--dash"}), peer),
            ("chat_whoami", d("chat_whoami"), None),
            ("chat_whoami after a peer's write", d("chat_whoami"), peer),
        ]

        cases.append(("session: whoami, inbox, say, read, inbox (after a peer's write)", lambda: session(run), peer))
        results = {"a fresh host's first call": [first[0]], "a fresh host's first five calls (the session)": [sum(first)]}
        for name, fn, before in [] if cold_only else cases:
            timed(fn, max(5, n // 10), before)  # warm-up
            results[name] = timed(fn, n, before)
        getattr(host.bridge, "_close_all", lambda: None)()
        if worker_only:
            workers.close()
        return results
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(tmp, True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("-n", type=int, default=300, help="timed calls per case and run")
    ap.add_argument("--bridge", help="time this mcpptool.py instead of the checkout's")
    ap.add_argument("--worker-only", action="store_true",
                    help="time the worker over raw pipes, without the bridge and the host")
    ap.add_argument("--cold-only", action="store_true",
                    help="time only a fresh host's first calls (the worker's start)")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="mcpp-bench-module-")
    try:
        module = module_with(args.bridge, tmp) if args.bridge else None
        runs = []
        for i in range(args.runs):
            runs.append(one_run(module, args.n, args.worker_only, args.cold_only))
            print(f"run {i + 1}: " + "; ".join(f"{k} {p(v, .5):.2f}/{p(v, .95):.2f}"
                                                for k, v in runs[-1].items()), file=sys.stderr)
    finally:
        shutil.rmtree(tmp, True)
    print(f"| call | p50 (ms) | p95 (ms) |   ({args.runs} runs of {args.n}; ranges over runs)")
    print("|---|---|---|")
    def span(xs):
        return f"{min(xs):.2f}" if len(xs) == 1 else f"{min(xs):.2f}–{max(xs):.2f}"
    for name in runs[0]:
        print(f"| {name} | {span([p(r[name], .5) for r in runs])} | {span([p(r[name], .95) for r in runs])} |")
    print(f"load average {os.getloadavg()[0]:.1f}, median of p50s over all cases "
          f"{statistics.median(p(r[k], .5) for r in runs for k in r):.2f} ms", file=sys.stderr)


if __name__ == "__main__":
    main()
