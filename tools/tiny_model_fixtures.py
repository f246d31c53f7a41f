#!/usr/bin/env python3
"""llama.cpp's logits for kiln's tiny random models (one per runnable family and variant).

The models are written by kiln's own GGUF writer (build/tests/make_tiny_model,
fixed seed, SmolLM2's tokenizer copied in); the tests rebuild the same files
byte for byte and compare with these logits. For every position of the tiny
prompt: the argmax, the 10 largest logits and 64 fixed random ids' logits; then
a greedy continuation of GREEDY_STEPS tokens fed back one at a time, with the
gap between the two best logits at each step; plus the sha256 of the model
file (so a changed writer can be told from a changed forward pass).

Usage: tools/tiny_model_fixtures.py [--build build] [--families llama,qwen2@q4_k,...]
(without --families every tiny model is regenerated).
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
GREEDY_STEPS = 8

# Families llama.cpp has no graph for, checked against an independent forward
# written from their reference definition (tools/gptj_reference.py).
REFERENCE_FAMILIES = {"gptj"}


def llama_run(path, prompt, kv_type, flash_attn=False):
    """llama.cpp's logits at every prompt position, then a greedy continuation with its gaps."""
    kv = {"f32": {"type_k": 0, "type_v": 0}}.get(kv_type, {})  # GGML_TYPE_F32
    llm = Llama(model_path=str(path), n_ctx=256, n_batch=64, logits_all=True, verbose=False, n_threads=2,
                flash_attn=flash_attn, **kv)
    llm.eval(prompt)
    logits = np.array(llm.scores[: len(prompt)], dtype=np.float32)
    greedy, gaps = [], []
    for _ in range(GREEDY_STEPS):
        last = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        order = np.argsort(-last, kind="stable")
        greedy.append(int(order[0]))
        gaps.append(float(last[order[0]] - last[order[1]]))
        llm.eval([greedy[-1]])
    del llm
    return logits, greedy, gaps


def reference_run(path, prompt):
    """The same from the reference forward (the whole sequence again at each greedy step)."""
    from gptj_reference import GptJ
    model = GptJ(str(path))
    logits = model.logits(prompt).astype(np.float32)
    seq, greedy, gaps = list(prompt), [], []
    last = logits[-1]
    for _ in range(GREEDY_STEPS):
        order = np.argsort(-last, kind="stable")
        greedy.append(int(order[0]))
        gaps.append(float(last[order[0]] - last[order[1]]))
        seq.append(greedy[-1])
        last = model.logits(seq)[-1].astype(np.float32)
    return logits, greedy, gaps


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--families", default="", help="comma-separated tiny models to regenerate (default: all)")
    args = ap.parse_args()
    tool = Path(args.build) / "tests" / "make_tiny_model"
    listing = subprocess.run([str(tool), "--list"], check=True, capture_output=True, text=True).stdout.splitlines()
    families = [line.split("\t")[0] for line in listing if "\t" in line]
    # The KV cache type each model's fixture is made with (f16 unless the recipe says f32).
    kv_types = {line.split("\t")[0]: (line.split("\t") + ["f16"])[2] for line in listing if "\t" in line}
    if args.families:
        wanted = [f for f in args.families.split(",") if f]
        unknown = sorted(set(wanted) - set(families))
        if unknown:
            raise SystemExit(f"unknown tiny models: {', '.join(unknown)} (known: {', '.join(families)})")
        families = [f for f in families if f in wanted]
    prompt = [int(x) for x in listing[-1].split()[1:]]
    source = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for fam in families:
            # One generator per family, seeded by its name: regenerating one
            # family leaves the others' random ids as they are.
            rng = np.random.default_rng(int.from_bytes(hashlib.sha256(fam.encode()).digest()[:8], "little"))
            path = Path(tmp) / f"tiny-{fam}.gguf"
            subprocess.run([str(tool), fam, str(source), str(path)], check=True)
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            if fam.split("@")[0] in REFERENCE_FAMILIES:
                logits, greedy, gaps = reference_run(path, prompt)
                oracle = "reference: tools/gptj_reference.py (transformers' modeling_gptj in numpy, float64)"
            else:
                logits, greedy, gaps = llama_run(path, prompt, kv_types[fam])
                oracle = "llama.cpp"
            n_vocab = logits.shape[1]
            # Seeded per family, so a --families run draws what a full run does.
            rng = np.random.default_rng([7, *fam.encode()])
            random_ids = sorted(rng.choice(n_vocab, size=64, replace=False).tolist())
            top_ids = np.argsort(-logits, axis=1, kind="stable")[:, :10]
            data = {
                "family": fam, "sha256": sha, "prompt": prompt, "n_vocab": n_vocab, "kv_type": kv_types[fam], "oracle": oracle,
                "argmax": logits.argmax(axis=1).tolist(),
                "top_ids": top_ids.tolist(),
                "top_logits": np.take_along_axis(logits, top_ids, axis=1).tolist(),
                "random_ids": random_ids,
                "random_logits": logits[:, random_ids].tolist(),
                "greedy": greedy, "greedy_gap": gaps,
            }
            (OUT / f"{fam}.json").write_text(json.dumps(data) + "\n")
            print(f"{fam}: sha256 {sha[:16]}..., logits range [{logits.min():.3f}, {logits.max():.3f}], greedy {greedy}")


if __name__ == "__main__":
    main()
