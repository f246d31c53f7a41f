#!/usr/bin/env python3
"""llama.cpp's logits for kiln's tiny random models (one per runnable family).

The models are written by kiln's own GGUF writer (build/tests/make_tiny_model,
fixed seed, SmolLM2's tokenizer copied in); the tests rebuild the same files
byte for byte and compare with these logits. For every position of the tiny
prompt: the argmax, the 10 largest logits and 64 fixed random ids' logits, plus
the sha256 of the model file (so a test can tell a changed writer from a changed
forward pass).

Usage: tools/tiny_model_fixtures.py [--build build] [--families llama_q2_k,llama_mxfp4]

--families regenerates only those fixtures; the others' files stay as they are
(each family's 64 random ids are drawn in the recipe order either way, so a
subset run writes exactly what a full run would).
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
OUT = ROOT / "tests" / "golden" / "tiny"
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--families", help="comma-separated families to regenerate (default: all)")
    args = ap.parse_args()
    tool = Path(args.build) / "tests" / "make_tiny_model"
    listing = subprocess.run([str(tool), "--list"], check=True, capture_output=True, text=True).stdout.splitlines()
    families = [line.split("\t")[0] for line in listing if "\t" in line]
    wanted = set(args.families.split(",")) if args.families else set(families)
    unknown = wanted - set(families)
    if unknown:
        raise SystemExit(f"unknown families: {', '.join(sorted(unknown))}; known: {', '.join(families)}")
    prompt = [int(x) for x in listing[-1].split()[1:]]
    source = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
    OUT.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory() as tmp:
        n_vocab = None
        for fam in families:
            if fam not in wanted:
                if n_vocab is None:  # every tiny model has SmolLM2's vocabulary
                    n_vocab = Llama(model_path=str(source), vocab_only=True, verbose=False).n_vocab()
                rng.choice(n_vocab, size=64, replace=False)  # keep the draws of the families after it
                continue
            path = Path(tmp) / f"tiny-{fam}.gguf"
            subprocess.run([str(tool), fam, str(source), str(path)], check=True)
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            llm = Llama(model_path=str(path), n_ctx=256, n_batch=64, logits_all=True, verbose=False, n_threads=2)
            llm.eval(prompt)
            logits = np.array(llm.scores[: len(prompt)], dtype=np.float32)
            n_vocab = logits.shape[1]
            random_ids = sorted(rng.choice(n_vocab, size=64, replace=False).tolist())
            top_ids = np.argsort(-logits, axis=1, kind="stable")[:, :10]
            data = {
                "family": fam, "sha256": sha, "prompt": prompt, "n_vocab": n_vocab,
                "argmax": logits.argmax(axis=1).tolist(),
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
