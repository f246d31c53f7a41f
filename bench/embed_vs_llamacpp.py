#!/usr/bin/env python3
"""Embeddings per second: kiln serve against llama-server, same file, same threads.

The models are synthetic, written by kiln's own writer (build/tests/make_tiny_encoder,
fixed seed, random F16 weights; speed does not depend on the values): a
bert-base-shaped encoder (12 layers, width 768, 12 heads, FFN 3072, learned
positions) and a nomic-embed-text-v1.5-shaped one (the same widths, RoPE, fused
QKV, SwiGLU), both with the bert-bge WordPiece vocabulary. Each request is one
POST /v1/embeddings of a batch of 32 inputs of 128 token ids ([CLS] 126 ids [SEP]),
given as token ids so both servers embed exactly the same tokens; the figure is
32 / the request's wall time, median over the rounds, and the rounds alternate
which server goes first (the machine may be shared: compare the ratio).

llama-server is built from the llama.cpp sources in the llama-cpp-python source
distribution by `tools/setup_oracle.sh --batched-bench` (into .oracle/llama.cpp/build/bin).

  .venv/bin/python bench/embed_vs_llamacpp.py [--rounds 5] [--threads 2] [--batch 32] [--tokens 128]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import tempfile
import time
import urllib.request

from server_process import free_port, wait_ready  # bench/, the script's folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VOCAB = os.path.join(os.path.dirname(ROOT), "shared", "testdata", "tokenizer", "ggml-vocab-bert-bge.gguf")
SHAPES = {"bert-base": "bench_bert_base", "nomic-embed": "bench_nomic_embed"}


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/embeddings", data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        out = json.loads(r.read())
    dt = time.perf_counter() - t0
    if len(out["data"]) != len(body["input"]):
        raise SystemExit(f"port {port}: {len(out['data'])} embeddings for {len(body['input'])} inputs")
    return dt, [d["embedding"] for d in out["data"]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--tokens", type=int, default=128)
    ap.add_argument("--shapes", default="bert-base,nomic-embed")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--llama-server", default=os.path.join(ROOT, ".oracle", "llama.cpp", "build", "bin", "llama-server"))
    args = ap.parse_args()
    kiln = os.path.join(args.build, "kiln")
    writer = os.path.join(args.build, "tests", "make_tiny_encoder")
    rng = random.Random(27)
    inputs = [[101] + [rng.randrange(1996, 29600) for _ in range(args.tokens - 2)] + [102] for _ in range(args.batch)]
    body = {"input": inputs}
    n_ctx = 512
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            path = os.path.join(tmp, f"{shape}.gguf")
            body["model"] = shape  # kiln serve names a model by its file's stem
            subprocess.run([writer, SHAPES[shape], VOCAB, path], check=True)
            kp, lp = free_port(), free_port()
            servers = {
                "kiln": subprocess.Popen([kiln, "serve", "-m", path, "--port", str(kp), "-t", str(args.threads), "-c", str(n_ctx),
                                          "--parallel", str(args.batch)],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
                "llama.cpp": subprocess.Popen([args.llama_server, "-m", path, "--port", str(lp), "-t", str(args.threads),
                                               "--embeddings", "-c", str(n_ctx * args.batch), "-np", str(args.batch),
                                               "-b", "4096", "-ub", "4096"],
                                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL),
            }
            ports = {"kiln": kp, "llama.cpp": lp}
            try:
                for name, proc in servers.items():
                    wait_ready(f"http://127.0.0.1:{ports[name]}", proc, timeout=300, what=name)
                # Warm-up, and the two servers' vectors agree (same file, same tokens).
                _, ek = post(kp, body)
                _, el = post(lp, body)
                cos = min(sum(a * b for a, b in zip(x, y)) for x, y in zip(ek, el))  # both L2-normalized
                times = {"kiln": [], "llama.cpp": []}
                for r in range(args.rounds):
                    order = ["kiln", "llama.cpp"] if r % 2 == 0 else ["llama.cpp", "kiln"]
                    for name in order:
                        times[name].append(post(ports[name], body)[0])
                rate = {n: args.batch / statistics.median(t) for n, t in times.items()}
                print(f"{shape}: {args.batch} x {args.tokens} tokens, {args.threads} threads, {args.rounds} rounds: "
                      f"kiln {rate['kiln']:.1f} embeddings/s, llama.cpp {rate['llama.cpp']:.1f} embeddings/s, "
                      f"ratio {rate['kiln'] / rate['llama.cpp']:.2f}x (min cosine between them {cos:.6f}); "
                      f"per round kiln {[round(args.batch / t, 1) for t in times['kiln']]}, "
                      f"llama.cpp {[round(args.batch / t, 1) for t in times['llama.cpp']]}", flush=True)
            finally:
                for proc in servers.values():
                    proc.terminate()
                for proc in servers.values():
                    try:
                        proc.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        proc.kill()


if __name__ == "__main__":
    main()
