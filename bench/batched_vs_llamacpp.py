#!/usr/bin/env python3
"""Aggregate decode throughput of many sequences: kiln vs llama.cpp, side by side.

For each model, in interleaved rounds (the machine is shared: only ratios from
interleaved runs mean much), runs

  kiln bench -m MODEL -p 32 -n 64 -r 3 --parallel N --json         (N = 1 and 8)
  llama-batched-bench -m MODEL -npp 32 -ntg 64 -npl 1,8 -t THREADS (jsonl)

and prints the medians over rounds of kiln's aggregate generation rate at each N,
llama.cpp's (its S_TG: all sequences' generated tokens over the generation time),
and the ratios: kiln(8) / llama.cpp(8) and kiln(8) / kiln(1).

llama-batched-bench is built from the llama.cpp sources in the llama-cpp-python
source distribution by `tools/setup_oracle.sh --batched-bench` (into
.oracle/llama.cpp/build/bin); give another with --llama-bin.

  .venv/bin/python bench/batched_vs_llamacpp.py [--rounds 5] [--threads 2] [--models smollm2,q4_0]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from vs_llamacpp import model_path  # noqa: E402  (the same model files and synthetic 1B writer)


def kiln_aggregate(kiln, path, n_par, threads, n_prompt, n_gen):
    out = subprocess.run([kiln, "bench", "-m", path, "-p", str(n_prompt), "-n", str(n_gen), "-r", "3", "-t", str(threads),
                          "--parallel", str(n_par), "--json", "--no-probe"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)["aggregate_tg_tokens_per_s"]


def llama_aggregate(llama_bin, path, pls, threads, n_prompt, n_gen):
    n_kv = max(pls) * (n_prompt + n_gen) + 16
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.dirname(llama_bin))
    out = subprocess.run([llama_bin, "-m", path, "-c", str(n_kv), "-b", "2048", "-ub", "512", "-npp", str(n_prompt),
                          "-ntg", str(n_gen), "-npl", ",".join(map(str, pls)), "-t", str(threads), "--output-format", "jsonl"],
                         check=True, capture_output=True, text=True, env=env).stdout
    rows = [json.loads(l) for l in out.splitlines() if l.startswith("{")]
    return {r["pl"]: r["speed_tg"] for r in rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--models", default="smollm2,q4_0")
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("-p", type=int, default=32)
    ap.add_argument("-n", type=int, default=64)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--llama-bin", default=os.path.join(ROOT, ".oracle", "llama.cpp", "build", "bin", "llama-batched-bench"))
    a = ap.parse_args()
    if not os.path.exists(a.llama_bin):
        sys.exit(f"{a.llama_bin} not found: run tools/setup_oracle.sh --batched-bench (or give --llama-bin)")
    build = os.path.dirname(a.kiln)
    print(f"| model | kiln 1 seq | kiln {a.parallel} seq | llama.cpp 1 | llama.cpp {a.parallel} | "
          f"kiln/llama.cpp at {a.parallel} | kiln {a.parallel}/1 |")
    print("|---|---|---|---|---|---|---|")
    for key in a.models.split(","):
        name, path = model_path(key, build)
        k1, k8, l1, l8, r_l, r_k = [], [], [], [], [], []
        for r in range(a.rounds):
            # Alternate which engine goes first.
            order = ["kiln", "llama"] if r % 2 == 0 else ["llama", "kiln"]
            for who in order:
                if who == "kiln":
                    k1.append(kiln_aggregate(a.kiln, path, 1, a.threads, a.p, a.n))
                    k8.append(kiln_aggregate(a.kiln, path, a.parallel, a.threads, a.p, a.n))
                else:
                    got = llama_aggregate(a.llama_bin, path, [1, a.parallel], a.threads, a.p, a.n)
                    l1.append(got[1])
                    l8.append(got[a.parallel])
            r_l.append(k8[-1] / l8[-1])
            r_k.append(k8[-1] / k1[-1])
            print(f"round {r + 1}: {name}: kiln {k1[-1]:.1f} / {k8[-1]:.1f}, llama.cpp {l1[-1]:.1f} / {l8[-1]:.1f} t/s",
                  file=sys.stderr)
        med = statistics.median
        print(f"| {name} | {med(k1):.1f} | {med(k8):.1f} | {med(l1):.1f} | {med(l8):.1f} | {med(r_l):.2f}x | {med(r_k):.2f}x |")


if __name__ == "__main__":
    main()
