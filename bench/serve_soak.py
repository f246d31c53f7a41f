#!/usr/bin/env python3
"""Load soak of `kiln serve` (a long check, not in CI): N concurrent clients stream
chat completions for a bounded time, with cancellations (the client closes the
stream after a few events), malformed JSON, oversized bodies, wrong API keys and
unknown models mixed in, staying under the queue bound. It checks that nothing
crashes, that no valid request gets a 5xx, that every valid stream that was not
cancelled ends with its final event, and that the server's resident memory grows
by less than 5% between the end of the warm-up and the end of the run.

Usage: .venv/bin/python bench/serve_soak.py [--clients 64] [--minutes 3] [--warmup 30]
           [--model FILE] [--parallel 4] [--binary build/kiln]
Prints the counts per request kind, RSS samples and a pass / fail line; exits 1 on a failure.
"""
import argparse
import json
import os
import pathlib
import random
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parent.parent
MODELS = pathlib.Path(os.environ.get("KILN_MODELS", pathlib.Path.home() / ".cache" / "kiln" / "models"))
KEY = "soak-key"


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def start_server(args):
    cmd = [args.binary, "serve", "-m", args.model, "--host", "127.0.0.1", "--port", "0", "-t", str(args.threads),
           "--parallel", str(args.parallel), "-c", "2048", "--api-key", KEY, "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    for line in proc.stderr:
        m = re.search(r"listening on http://[^:]+:(\d+)", line)
        if m:
            port = int(m.group(1))
            break
    else:
        raise SystemExit("kiln serve did not start")
    threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            with urllib.request.urlopen(url + "/health", timeout=2):
                return proc, url, port
        except Exception:
            time.sleep(0.1)
    raise SystemExit("kiln serve did not become healthy")


def request(url, body, key=KEY, data=None):
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    return urllib.request.Request(url + "/v1/chat/completions", data=data if data is not None else json.dumps(body).encode(),
                                  headers=headers)


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.by_kind = {}
        self.failures = []

    def add(self, kind, ok, detail=""):
        with self.lock:
            n, bad = self.by_kind.get(kind, (0, 0))
            self.by_kind[kind] = (n + 1, bad + (0 if ok else 1))
            if not ok and len(self.failures) < 20:
                self.failures.append(f"{kind}: {detail}")


def one_request(url, port, rng, counts):
    roll = rng.random()
    words = " ".join(rng.choice(["apple", "river", "stone", "cloud", "seven", "green"]) for _ in range(rng.randint(3, 40)))
    body = {"messages": [{"role": "user", "content": f"Write about {words}."}], "max_tokens": rng.randint(8, 64),
            "stream": True, "temperature": rng.choice([0, 0.7, 1.0]), "seed": rng.randint(0, 1 << 30)}
    if roll < 0.05:
        kind, want, req = "malformed", 400, request(url, None, data=b"{\"messages\": [")
    elif roll < 0.08:
        kind, want, req = "oversized", 413, request(url, None, data=b"{\"x\": \"" + b"a" * (9 << 20) + b"\"}")
    elif roll < 0.12:
        kind, want, req = "wrong_key", 401, request(url, body, key="not-the-key")
    elif roll < 0.15:
        kind, want, req = "unknown_model", 404, request(url, dict(body, model="no-such-model"))
    elif roll < 0.30:
        kind, want, req = "cancelled", 200, request(url, body)
    else:
        kind, want, req = "stream", 200, request(url, body)
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            if kind == "cancelled":
                for _ in range(rng.randint(1, 4)):
                    r.readline()
                counts.add(kind, r.status == 200)
                return  # closing the connection cancels the sequence
            lines = [line for line in r.read().decode().splitlines() if line.startswith("data: ")]
            ok = r.status == want and lines and lines[-1] == "data: [DONE]"
            if ok:
                finishes = [c.get("finish_reason") for line in lines[:-1] for c in json.loads(line[6:]).get("choices", [])]
                ok = bool(finishes) and finishes[-1] in ("stop", "length")
            counts.add(kind, ok, f"status {r.status}, last line {lines[-1] if lines else None!r}")
    except urllib.error.HTTPError as e:
        e.read()
        counts.add(kind, e.code == want and e.code < 500, f"status {e.code}, wanted {want}")
    except (ConnectionError, socket.timeout, urllib.error.URLError) as e:
        # A 413 may be answered before the whole body was sent: the send then fails.
        counts.add(kind, kind == "oversized", repr(e))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--minutes", type=float, default=3)
    ap.add_argument("--warmup", type=float, default=30, help="seconds before the first RSS sample that counts")
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", default=str(MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--binary", default=str(ROOT / "build" / "kiln"))
    args = ap.parse_args()
    proc, url, port = start_server(args)
    counts = Counts()
    end = time.time() + args.warmup + args.minutes * 60
    samples = []

    def client(i):
        rng = random.Random(i)
        while time.time() < end and proc.poll() is None:
            one_request(url, port, rng, counts)

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(args.clients)]
    t0 = time.time()
    for t in threads:
        t.start()
    while time.time() < end and proc.poll() is None:
        time.sleep(5)
        samples.append((time.time() - t0, rss_kib(proc.pid)))
        print(f"  t={samples[-1][0]:6.0f} s  RSS {samples[-1][1] / 1024:7.1f} MiB  requests {sum(n for n, _ in counts.by_kind.values())}",
              flush=True)
    for t in threads:
        t.join(timeout=900)
    alive = proc.poll() is None
    metrics = ""
    if alive:
        with urllib.request.urlopen(urllib.request.Request(url + "/metrics", headers={"Authorization": "Bearer " + KEY})) as r:
            metrics = r.read().decode()
        proc.terminate()
        proc.wait(60)
    after_warmup = [rss for t, rss in samples if t >= args.warmup]
    growth = (after_warmup[-1] - after_warmup[0]) / after_warmup[0] if len(after_warmup) >= 2 else 0.0
    print(f"\n{args.clients} clients, {args.minutes} min after {args.warmup:.0f} s warm-up, --parallel {args.parallel}, "
          f"model {pathlib.Path(args.model).name}")
    for kind, (n, bad) in sorted(counts.by_kind.items()):
        print(f"  {kind:14s} {n:6d} requests, {bad} failed")
    generated = re.search(r"^kiln_tokens_predicted_total (\S+)", metrics, re.M)
    if generated:
        print(f"  generated tokens: {float(generated.group(1)):.0f}")
    if after_warmup:
        print(f"  RSS after warm-up {after_warmup[0] / 1024:.1f} MiB, at the end {after_warmup[-1] / 1024:.1f} MiB "
              f"({growth * 100:+.2f}%), peak {max(after_warmup) / 1024:.1f} MiB")
    for f in counts.failures:
        print("  failure:", f)
    ok = alive and not counts.failures and growth < 0.05
    print("PASS" if ok else "FAIL" + ("" if alive else " (the server exited)"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
