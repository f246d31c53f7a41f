#!/usr/bin/env python3
"""Tokenizer throughput, kiln beside llama.cpp, on the same multi-MB text and
the same vocabulary file.

    bench/tokenizer_vs_llamacpp.py [--bench build/bench/bench_tokenizer] [--rounds 3] [VOCAB.gguf ...]

The text is tests/golden/tokenizer/corpus.json's valid UTF-8 entries joined by
"\\n", repeated to 4 MiB (code, prose in many scripts, emoji, numbers, special
tokens). llama.cpp runs through llama-cpp-python's bindings to llama_tokenize
(one call, the buffer sized beforehand); kiln runs BM_EncodeText of
bench_tokenizer. Two modes: "special" (add_special and parse_special on, as a
prompt is encoded) and "plain" (both off). The two are run in
turn, `rounds` times each, and the best MB/s of each is kept: runs on a shared
machine vary, and interleaving keeps them comparable. The ids are compared
as a check that both did the same work (a digest of the ids).

Default vocabularies: the SmolLM2 and Gemma 3 models, and llama.cpp's Llama 3,
Qwen 2 and GPT-2 vocab files where present. Needs the oracle environment.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def bench_text() -> bytes:
    corpus = json.loads((ROOT / "tests/golden/tokenizer/corpus.json").read_text(encoding="utf-8"))
    one = "".join(e["text"] + "\n" for e in corpus if "text" in e).encode("utf-8")
    out = b""
    while len(out) < (4 << 20):
        out += one
    return out


def digest(ids) -> int:
    h = 0
    for i in ids:
        h = (h * 1000003 + (i & 0xFFFFFFFF)) & ((1 << 48) - 1)
    return h


_llms: dict = {}


def llamacpp_mbps(path: Path, text: bytes, special: bool) -> tuple[float, int]:
    import llama_cpp
    from llama_cpp import Llama

    if path not in _llms:
        _llms[path] = Llama(model_path=str(path), vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(_llms[path]._model.model)
    cap = len(text) + 16
    buf = (llama_cpp.llama_token * cap)()
    t0 = time.perf_counter()
    n = llama_cpp.llama_tokenize(vocab, text, len(text), buf, cap, special, special)
    dt = time.perf_counter() - t0
    return len(text) / dt / 1e6, digest(buf[:n])


def kiln_mbps(bench: Path, path: Path, text_file: Path, special: bool) -> tuple[float, int]:
    env = dict(os.environ, KILN_BENCH_VOCAB=str(path), KILN_BENCH_TEXT=str(text_file))
    name = "special" if special else "plain"
    out = subprocess.run([str(bench), f"--benchmark_filter=^BM_EncodeText/{name}$", "--benchmark_format=json",
                          "--benchmark_min_time=2"], env=env, check=True, capture_output=True, text=True).stdout
    b = json.loads(out)["benchmarks"][0]
    return b["bytes_per_second"] / 1e6, int(b["digest"])


def default_vocabs() -> list[Path]:
    models = Path(os.environ.get("KILN_MODELS") or Path.home() / ".cache/kiln/models")
    vocabs = Path(os.environ.get("KILN_VOCABS") or Path.home() / ".cache/kiln/vocabs")
    cands = [models / "SmolLM2-135M-Instruct.Q4_1.gguf", models / "gemma-3-270m-q4_k_m.gguf",
             vocabs / "ggml-vocab-llama-bpe.gguf", vocabs / "ggml-vocab-qwen2.gguf",
             ROOT / "tests/data/shared/tokenizer/ggml-vocab-gpt-2.gguf"]
    return [p for p in cands if p.exists()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("vocabs", nargs="*", type=Path)
    ap.add_argument("--bench", type=Path, default=ROOT / "build/bench/bench_tokenizer")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    text = bench_text()
    with tempfile.NamedTemporaryFile(suffix=".txt", delete=False) as f:
        f.write(text)
        text_file = Path(f.name)
    print(f"text: {len(text) / 1e6:.2f} MB; best of {a.rounds} interleaved rounds")
    print(f"{'vocabulary':36} {'mode':8} {'kiln MB/s':>10} {'llama.cpp MB/s':>15} {'ratio':>8}  ids")
    try:
        for path in a.vocabs or default_vocabs():
            for special in (True, False):
                k_best = l_best = 0.0
                k_d = l_d = 0
                for _ in range(a.rounds):
                    k, k_d = kiln_mbps(a.bench, path, text_file, special)
                    l, l_d = llamacpp_mbps(path, text, special)
                    k_best, l_best = max(k_best, k), max(l_best, l)
                same = "equal" if k_d == l_d else "DIFFER"
                mode = "special" if special else "plain"
                print(f"{path.name:36} {mode:8} {k_best:10.1f} {l_best:15.1f} {k_best / l_best:7.2f}x  {same}",
                      flush=True)
    finally:
        text_file.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
