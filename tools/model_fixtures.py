#!/usr/bin/env python3
"""Reference logits and greedy continuations from llama.cpp (llama-cpp-python) for
the real-model golden tests in tests/model/.

For each model and prompt (tools/model_prompts.py): the prompt's tokens
(tokenized by llama.cpp with BOS and special tokens), and for every position the
argmax, the 10 largest logits and the logits of 64 fixed random vocabulary ids.
For the GREEDY prompts, 128 greedy tokens and, at each step, the margin between
the best and second-best logit (to explain any divergence on a near-tie).

It also measures llama.cpp against itself: the same prompts with flash attention
on (a different but equally valid order and precision of the attention math).
The largest logit difference and the argmax changes between those two runs are
the oracle's own numerical spread, which the tests use to bound kiln's.

Output: tests/golden/model/<model>.json (ids, indexes) and <model>.f32 (the
logit values, little-endian float32, in the order the JSON describes).

Usage: tools/model_fixtures.py [--threads N]
"""
import argparse
import json
import os
import sys
from pathlib import Path

import numpy as np
import llama_cpp
from llama_cpp import Llama

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_prompts import PROMPTS, GREEDY  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "model"
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))
FILES = {"smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf", "gemma3": "gemma-3-270m-q4_k_m.gguf"}
TOP = 10
N_RANDOM = 64
N_GREEDY = 128


def self_noise(path: Path, threads: int, reference: dict) -> dict:
    """llama.cpp with flash attention on, against the default (off) run."""
    llm = Llama(model_path=str(path), n_ctx=2048, n_batch=512, n_ubatch=512, logits_all=True, flash_attn=True,
                n_threads=threads, n_threads_batch=threads, verbose=False, seed=0)
    out = {}
    for prompt in PROMPTS:
        tokens, logits = reference[prompt["name"]]
        llm.reset()
        llm.eval(tokens)
        alt = np.array(llm.scores[: len(tokens)], dtype=np.float32)
        out[prompt["name"]] = {"max_diff": float(np.abs(alt - logits).max()),
                               "argmax_changes": int((alt.argmax(axis=1) != logits.argmax(axis=1)).sum())}
    return out


def run_model(key: str, threads: int) -> None:
    path = MODELS / FILES[key]
    reference = {}
    llm = Llama(model_path=str(path), n_ctx=2048, n_batch=512, n_ubatch=512, logits_all=True,
                n_threads=threads, n_threads_batch=threads, verbose=False, seed=0)
    n_vocab = llm.n_vocab()
    rng = np.random.default_rng(1234)
    random_ids = sorted(rng.choice(n_vocab, size=N_RANDOM, replace=False).tolist())
    floats: list[np.ndarray] = []
    offset = 0
    entries = []
    for prompt in PROMPTS:
        tokens = llm.tokenize(prompt["text"].encode("utf-8"), add_bos=True, special=True)
        llm.reset()
        llm.eval(tokens)
        logits = np.array(llm.scores[: len(tokens)], dtype=np.float32)  # [n_tokens, n_vocab]
        reference[prompt["name"]] = (tokens, logits)
        top_ids = np.argsort(-logits, axis=1, kind="stable")[:, :TOP]
        top_vals = np.take_along_axis(logits, top_ids, axis=1)
        rand_vals = logits[:, random_ids]
        block = np.concatenate([top_vals, rand_vals], axis=1).astype(np.float32)
        entry = {"name": prompt["name"], "tokens": tokens, "argmax": logits.argmax(axis=1).tolist(),
                 "top_ids": top_ids.tolist(), "float_offset": offset}
        floats.append(block.reshape(-1))
        offset += block.size
        if prompt["name"] in GREEDY:
            llm.reset()
            llm.eval(tokens)
            out, margins = [], []
            for _ in range(N_GREEDY):
                last = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
                order = np.argsort(-last, kind="stable")[:2]
                tok = int(order[0])
                out.append(tok)
                margins.append(float(last[order[0]] - last[order[1]]))
                if tok == llm.token_eos():
                    break
                llm.eval([tok])
            entry["greedy"] = out
            entry["greedy_margins"] = margins
        entries.append(entry)
        print(f"{key}: {prompt['name']}: {len(tokens)} tokens", flush=True)
    (OUT / f"{key}.f32").write_bytes(np.concatenate(floats).astype("<f4").tobytes())
    del llm
    noise = self_noise(path, threads, reference)
    for e in entries:
        e["self_noise"] = noise[e["name"]]
    meta = {"model": FILES[key], "n_vocab": n_vocab, "top": TOP, "random_ids": random_ids,
            "oracle": "llama-cpp-python " + llama_cpp.__version__, "prompts": entries}
    (OUT / f"{key}.json").write_text(json.dumps(meta) + "\n")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("models", nargs="*", default=list(FILES))
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for key in args.models:
        run_model(key, args.threads)


if __name__ == "__main__":
    main()
