#!/usr/bin/env python3
"""llama.cpp's logits for kiln's tiny models past 8192 positions (the rules a short prompt cannot reach).

llama4's chunked attention (chunks of 8192 positions) and the attention
temperature of its layers without RoPE (first step at position 8191) only act
on long prompts; tests/golden/tiny covers 40 positions. For each family here:
a deterministic prompt of N_PROMPT ids, evaluated by llama.cpp in batches up to
FIRST, then one token at a time; at each position of WATCH the 10 largest logits
and 64 fixed random ids' logits (the format of tools/tiny_model_fixtures.py, by
position). tests/model/test_moe_families.cpp evaluates the same way in kiln.

Usage: tools/tiny_long_fixtures.py [--build build] [--families llama4]
"""
import argparse
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from llama_cpp import Llama

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "tiny_long"
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))
FAMILIES = ["llama4"]
N_PROMPT = 8300
FIRST = 8186
# Around the first chunk boundary (8192) and the temperature's first step (8191), then later in chunk 2.
WATCH = list(range(8186, 8200)) + list(range(8290, 8300))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--families", default=",".join(FAMILIES))
    args = ap.parse_args()
    tool = Path(args.build) / "tests" / "make_tiny_model"
    source = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
    OUT.mkdir(parents=True, exist_ok=True)
    prompt = [1] + [100 + (i * 7919 + 13) % 49000 for i in range(1, N_PROMPT)]
    with tempfile.TemporaryDirectory() as tmp:
        for fam in [f for f in args.families.split(",") if f]:
            path = Path(tmp) / f"tiny-{fam}.gguf"
            subprocess.run([str(tool), fam, str(source), str(path)], check=True)
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            llm = Llama(model_path=str(path), n_ctx=8448, n_batch=512, logits_all=False, verbose=False, n_threads=2)
            n_vocab = llm.n_vocab()
            rng = np.random.default_rng([7, *fam.encode()])
            random_ids = sorted(rng.choice(n_vocab, size=64, replace=False).tolist())
            llm.eval(prompt[:FIRST])
            rows = {}
            for pos in range(FIRST, max(WATCH) + 1):
                llm.eval([prompt[pos]])
                if pos in WATCH:
                    rows[pos] = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).copy()
            logits = np.stack([rows[p] for p in WATCH])
            top_ids = np.argsort(-logits, axis=1, kind="stable")[:, :10]
            data = {
                "family": fam, "sha256": sha, "prompt": prompt, "first": FIRST, "watch": WATCH, "n_vocab": n_vocab,
                "top_ids": top_ids.tolist(),
                "top_logits": np.take_along_axis(logits, top_ids, axis=1).tolist(),
                "random_ids": random_ids,
                "random_logits": logits[:, random_ids].tolist(),
            }
            (OUT / f"{fam}.json").write_text(json.dumps(data) + "\n")
            print(f"{fam}: sha256 {sha[:16]}..., logits range [{logits.min():.3f}, {logits.max():.3f}]")
            del llm


if __name__ == "__main__":
    main()
