#!/usr/bin/env python3
"""The language server's latency, through the real `dpplan lsp` over stdio.

    scripts/bench-lsp-latency.py [--dpplan BIN] [--gen BIN] [--rounds N]
                                 [--big-bytes B] [--skip-edits] [--skip-big]

Two measurements, each on a fresh server:

1. Edits (issue 33 item 6): a generated 2,000-line plan of 330 queries
   (`gen-plan queries 330`, a comment line added on top). Each round sends a
   `didChange` that edits one digit of a query's `gaussian sigma` (a release
   changes) or of the comment (nothing changes), and times the arrival of the
   first and the second `publishDiagnostics` of that version. Median, min
   and max over N rounds, the σ and comment edits alternating.
2. Scale: a generated plan of about B bytes (`gen-plan bytes B`, default
   13 MB). After `didOpen`, `textDocument/formatting` is sent, and once
   answered `textDocument/documentSymbol`; the time to each answer from
   `didOpen`, the times of the version's two publishes (if they come within
   the timeout), and the server's peak RSS (VmHWM of /proc/PID/status).

Asserts nothing but that every answer is a result; prints Markdown rows
for docs/benchmarks.md with the load average. The binaries default to
target/release (build them with `cargo build --release -p dpplan-cli -p
dpplan-check --example gen-plan`); pass the debug ones to measure those.
"""

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))


class Server:
    """`dpplan lsp` with a reader thread that stamps every message."""

    def __init__(self, binary):
        self.proc = subprocess.Popen(
            [binary, "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self.messages = queue.Queue()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.next_id = 1
        self.pending = []

    def _read(self):
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.messages.put((time.monotonic(), None))
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            body = out.read(length)
            self.messages.put((time.monotonic(), json.loads(body)))

    def send(self, message):
        body = json.dumps(message).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return time.monotonic()

    def request(self, method, params):
        i = self.next_id
        self.next_id += 1
        t = self.send({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
        return i, t

    def notify(self, method, params):
        return self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def wait(self, pred, timeout):
        """The first message (stamped) that `pred` accepts; others are kept."""
        for k, (t, m) in enumerate(self.pending):
            if pred(m):
                del self.pending[k]
                return t, m
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                t, m = self.messages.get(timeout=left)
            except queue.Empty:
                return None
            if m is None:
                raise SystemExit("the server closed its output")
            if pred(m):
                return t, m
            self.pending.append((t, m))

    def response(self, i, timeout):
        return self.wait(lambda m: m.get("id") == i and "method" not in m, timeout)

    def publish(self, uri, version, timeout):
        return self.wait(
            lambda m: m.get("method") == "textDocument/publishDiagnostics"
            and m["params"]["uri"] == uri
            and m["params"].get("version") == version,
            timeout,
        )

    def peak_rss_mb(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def start(self):
        i, _ = self.request("initialize", {"capabilities": {}, "processId": None, "rootUri": None})
        self.response(i, 60)
        self.notify("initialized", {})

    def stop(self):
        try:
            i, _ = self.request("shutdown", None)
            self.response(i, 30)
            self.notify("exit", None)
            self.proc.wait(timeout=30)
        except Exception:
            self.proc.kill()


def position(text, offset):
    before = text[:offset]
    line = before.count("\n")
    col = offset - (before.rfind("\n") + 1)
    return {"line": line, "character": col}


def generate(gen, *args):
    return subprocess.run([gen, *args], check=True, capture_output=True, text=True).stdout


def ms(x):
    return f"{x * 1000:.1f} ms"


def edits(args):
    text = "// edited comment 0\n" + generate(args.gen, "queries", "330")
    uri = "file:///bench-edits.dpplan"
    s = Server(args.dpplan)
    s.start()
    s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "dpplan", "version": 1, "text": text}})
    assert s.publish(uri, 1, 600) and s.publish(uri, 1, 600), "no diagnostics for the opened plan"
    # One σ in the middle of the file, set to a value it never had (the
    # accounting cache holds every earlier version's releases); the comment's
    # number.
    at = text.index("gaussian sigma ", len(text) // 2) + len("gaussian sigma ")
    places = {"sigma": at, "comment": len("// edited comment ")}
    times = {k: ([], []) for k in places}
    version = 1
    for r in range(2 * args.rounds):
        kind = "sigma" if r % 2 == 0 else "comment"
        off = places[kind]
        end_off = text.index("\n", off)
        new = str(4000 + r) if kind == "sigma" else str(r)
        start, end = position(text, off), position(text, end_off)
        text = text[:off] + new + text[end_off:]
        version += 1
        t0 = s.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": version},
            "contentChanges": [{"range": {"start": start, "end": end}, "text": new}],
        })
        first = s.publish(uri, version, 600)
        second = s.publish(uri, version, 600)
        assert first and second, f"version {version}: two publishes expected"
        times[kind][0].append(first[0] - t0)
        times[kind][1].append(second[0] - t0)
        # settle, so that one round's work does not overlap the next
        time.sleep(0.05)
    rss = s.peak_rss_mb()
    s.stop()
    lines = text.count("\n")
    print(f"\nEdits on a {lines}-line plan of 330 queries, {args.rounds} rounds each "
          f"(median, min–max); server peak RSS {rss:.0f} MB\n")
    print("| edit | first publish | second publish |")
    print("|---|---|---|")
    for kind, label in (("sigma", "one σ (a release changes)"), ("comment", "a comment")):
        a, b = times[kind]
        print(f"| {label} | {ms(statistics.median(a))} ({ms(min(a))}–{ms(max(a))}) "
              f"| {ms(statistics.median(b))} ({ms(min(b))}–{ms(max(b))}) |")


def big(args):
    text = generate(args.gen, "bytes", str(args.big_bytes))
    uri = "file:///bench-big.dpplan"
    s = Server(args.dpplan)
    s.start()
    t0 = s.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "dpplan", "version": 1, "text": text}})
    rows = []
    for method in ("textDocument/formatting", "textDocument/documentSymbol"):
        params = {"textDocument": {"uri": uri}}
        if method == "textDocument/formatting":
            params["options"] = {"tabSize": 2, "insertSpaces": True}
        i, sent = s.request(method, params)
        got = s.response(i, args.timeout)
        if got is None:
            rows.append((method, f"no answer in {args.timeout} s", ""))
            continue
        t, m = got
        assert "result" in m, f"{method}: {m.get('error')}"
        rows.append((method, f"{t - sent:.2f} s", f"{t - t0:.2f} s"))
    pubs = []
    for _ in range(2):
        p = s.publish(uri, 1, args.timeout)
        pubs.append(f"{p[0] - t0:.2f} s" if p else f"not within {args.timeout} s")
    rss = s.peak_rss_mb()
    s.stop()
    print(f"\nA {len(text) / 1e6:.1f} MB plan ({text.count(chr(10))} lines); "
          f"server peak RSS {rss:.0f} MB; publishes after didOpen: {pubs[0]}, {pubs[1]}\n")
    print("| request (sent after didOpen, one at a time) | answered after the request | after didOpen |")
    print("|---|---|---|")
    for method, a, b in rows:
        print(f"| `{method}` | {a} | {b} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dpplan", default=os.path.join(TARGET, "release", "dpplan"))
    ap.add_argument("--gen", default=os.path.join(TARGET, "release", "examples", "gen-plan"))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--big-bytes", type=int, default=13_000_000)
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--skip-edits", action="store_true")
    ap.add_argument("--skip-big", action="store_true")
    args = ap.parse_args()
    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}; binary {args.dpplan}")
    if not args.skip_edits:
        edits(args)
    if not args.skip_big:
        big(args)
    print(f"\nload average after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    sys.exit(main())
