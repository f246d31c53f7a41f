#!/usr/bin/env python3
"""What the live view's statistics cost, and that generation without them pays nothing.

One `kiln serve` (SmolLM2 by default); each round, interleaved:
  - greedy /v1/completions of N tokens: the server's decode tokens/s (normal generation,
    which never sets the tensor hook);
  - a live-view session stepped N tokens with statistics off, with the layer statistics,
    and with layer + attention statistics: the median milliseconds per step.
Prints medians over the rounds and the ratios to the statistics-off step. The
machine may be shared: compare the ratios.

  .venv/bin/python bench/live_view_cost.py [--rounds 5] [-n 32] [-m FILE] [-t 2]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.environ.get("KILN_MODELS", os.path.expanduser("~/.cache/kiln/models"))


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=300) as r:
        return json.loads(r.read())


def live(url, prompt, n, layers, attention):
    s = post(url + "/explore/live/start", {"prompt": prompt, "top_k": 5, "layers": layers, "attention": attention})
    ms = []
    tok = s["candidates"][0]["id"]
    for _ in range(n):
        r = post(url + "/explore/live/step", {"session": s["session"], "token": tok})
        ms.append(r["ms"])
        tok = r["candidates"][0]["id"]
    post(url + "/explore/live/close", {"session": s["session"]})
    return statistics.median(ms)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-n", type=int, default=32)
    ap.add_argument("-m", default=os.path.join(MODELS, "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    a = ap.parse_args()
    proc = subprocess.Popen([a.kiln, "serve", "-m", a.m, "--port", "0", "-t", str(a.t), "--parallel", "1", "-c", "1024", "-q"],
                            stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stderr:
            m = re.search(r"listening on (http://\S+)", line)
            if m:
                url = m.group(1)
                break
        else:
            sys.exit("kiln serve did not start")
        for _ in range(600):  # the model loads after the port opens
            try:
                with urllib.request.urlopen(url + "/health", timeout=5) as r:
                    if r.status == 200:
                        break
            except Exception:
                time.sleep(0.1)
        prompt = "The history of the city of Paris begins"
        post(url + "/v1/completions", {"prompt": prompt, "max_tokens": 4, "temperature": 0})  # warm up
        rows = {"decode tok/s (completions)": [], "step ms, statistics off": [], "step ms, layers": [], "step ms, layers + attention": []}
        for _ in range(a.rounds):
            r = post(url + "/v1/completions", {"prompt": prompt, "max_tokens": a.n, "temperature": 0, "ignore_eos": True})
            rows["decode tok/s (completions)"].append(r["timings"]["predicted_per_second"])
            rows["step ms, statistics off"].append(live(url, prompt, a.n, False, False))
            rows["step ms, layers"].append(live(url, prompt, a.n, True, False))
            rows["step ms, layers + attention"].append(live(url, prompt, a.n, True, True))
        base = statistics.median(rows["step ms, statistics off"])
        for k, v in rows.items():
            med = statistics.median(v)
            extra = f"   x{med / base:.3f} of the step without statistics" if k.startswith("step") else \
                f"   ({1000 / med:.2f} ms per token)"
            print(f"{k:32s} {med:9.3f}{extra}")
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
