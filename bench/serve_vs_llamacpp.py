#!/usr/bin/env python3
"""Server throughput under concurrent clients: kiln serve against llama-server.

Both servers get the same model file, threads and parallel slots, on loopback.
For each concurrency C (default 1, 4, 16), C client threads each send streamed
/v1/chat/completions requests (greedy, max_tokens N, different prompts) for a
fixed number of requests per client; the figure is all generated tokens over the
wall time of the whole load, and the median time to first token. Rounds
alternate which server goes first (the machine is shared: compare ratios).

llama-server is built from the llama.cpp sources in the llama-cpp-python source
distribution by `tools/setup_oracle.sh --batched-bench` (into
.oracle/llama.cpp/build/bin).

  .venv/bin/python bench/serve_vs_llamacpp.py [--rounds 3] [--clients 1,4,16] [--parallel 4]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

from server_process import free_port, wait_ready  # bench/, the script's folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.environ.get("KILN_MODELS", os.path.expanduser("~/.cache/kiln/models"))
SMOLLM2 = os.path.join(MODELS, "SmolLM2-135M-Instruct.Q4_1.gguf")
TOPICS = ["the sea", "mountains", "a library", "winter", "trains", "bees", "a city at night", "bread", "the moon",
          "rivers", "old maps", "chess", "rain", "a lighthouse", "forests", "clocks"]


def start(kind, args, model, port):
    if kind == "kiln":
        cmd = [args.kiln, "serve", "-m", model, "--host", "127.0.0.1", "--port", str(port), "-t", str(args.threads),
               "--parallel", str(args.parallel), "-c", str(args.ctx)]
        env = os.environ
    else:
        cmd = [args.llama_server, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-t", str(args.threads),
               "-np", str(args.parallel), "-c", str(args.ctx * args.parallel), "--no-webui"]
        env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(args.llama_server))
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    wait_ready(f"http://127.0.0.1:{port}", proc)
    return proc


def one_request(url, topic, max_tokens):
    body = json.dumps({"messages": [{"role": "user", "content": f"Write a short paragraph about {topic}."}],
                       "max_tokens": max_tokens, "temperature": 0, "stream": True,
                       "stream_options": {"include_usage": True}}).encode()
    req = urllib.request.Request(url + "/v1/chat/completions", data=body, headers={"Content-Type": "application/json"})
    t0 = time.time()
    first = None
    tokens = 0
    with urllib.request.urlopen(req, timeout=600) as r:
        for line in r:
            line = line.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            ev = json.loads(line[6:])
            if ev.get("choices") and ev["choices"][0].get("delta", {}).get("content"):
                if first is None:
                    first = time.time() - t0
            if ev.get("usage"):
                tokens = ev["usage"]["completion_tokens"]
    return tokens, first if first is not None else time.time() - t0


def load(url, clients, per_client, max_tokens):
    results, lock = [], threading.Lock()

    def client(i):
        for k in range(per_client):
            r = one_request(url, TOPICS[(i * per_client + k) % len(TOPICS)], max_tokens)
            with lock:
                results.append(r)

    t0 = time.time()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.time() - t0
    return sum(r[0] for r in results) / wall, statistics.median(r[1] for r in results)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--clients", default="1,4,16")
    ap.add_argument("--per-client", type=int, default=2)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--parallel", type=int, default=4)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=1024)
    ap.add_argument("--model", default=SMOLLM2)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--llama-server", default=os.path.join(ROOT, ".oracle", "llama.cpp", "build", "bin", "llama-server"))
    a = ap.parse_args()
    if not os.path.exists(a.llama_server):
        sys.exit(f"{a.llama_server} not found")
    clients = [int(c) for c in a.clients.split(",")]
    figures = {(who, c): [] for who in ("kiln", "llama") for c in clients}
    for r in range(a.rounds):
        for who in (["kiln", "llama"] if r % 2 == 0 else ["llama", "kiln"]):
            port = free_port()
            proc = start(who, a, a.model, port)
            try:
                url = f"http://127.0.0.1:{port}"
                one_request(url, "warm-up", 8)
                for c in clients:
                    tps, ttft = load(url, c, a.per_client, a.max_tokens)
                    figures[(who, c)].append((tps, ttft))
                    print(f"round {r + 1} {who} {c} clients: {tps:.1f} t/s, TTFT {ttft * 1000:.0f} ms", file=sys.stderr)
            finally:
                proc.terminate()
                proc.wait(timeout=30)
    med = statistics.median
    print(f"| clients | kiln t/s | llama-server t/s | kiln / llama-server | kiln TTFT ms | llama-server TTFT ms |")
    print("|---|---|---|---|---|---|")
    for c in clients:
        k = figures[("kiln", c)]
        l = figures[("llama", c)]
        ratio = med([x[0] / y[0] for x, y in zip(k, l)])
        print(f"| {c} | {med(x[0] for x in k):.1f} | {med(y[0] for y in l):.1f} | {ratio:.2f}x | "
              f"{med(x[1] for x in k) * 1000:.0f} | {med(y[1] for y in l) * 1000:.0f} |")


if __name__ == "__main__":
    main()
