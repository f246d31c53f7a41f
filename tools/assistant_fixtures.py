#!/usr/bin/env python3
"""llama.cpp's gemma4-assistant draft logits for kiln's tiny gemma4 targets and their tiny assistants.

llama.cpp (the llama-cpp-python build in the venv) evaluates the prompt in the
target's context, which exposes every row's h_nextn (the final normed hidden
state, llama_set_embeddings_nextn, unmasked); the assistant's context is made
with ctx_other = the target's, so it shares the target's KV cache (llama.cpp's
speculative driver: the assistant's layers read the target's last sliding /
full layer's cells and write none). Then the draft rows as the driver makes
them: the pending token (the target's argmax at the prompt's last row) at
position n with the target's h_nextn of row n - 1, then STEPS - 1 chained rows,
each the assistant's argmax with its own h_nextn (nextn.post_projection), all
at position n. For each draft row: the argmax, the 10 largest logits and 64
fixed random ids' logits.

Usage: tools/assistant_fixtures.py [--build build] [--targets gemma4,gemma4@e2b]
"""
import argparse
import ctypes
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import llama_cpp as L

sys.path.insert(0, str(Path(__file__).resolve().parent))
from mtp_fixtures import Batch, _get_nextn, _get_nextn_ith, _set_nextn  # noqa: E402  (the staging API's bindings)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "assistant"
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))
TARGETS = ["gemma4", "gemma4@e2b"]
STEPS = 4


def params(other=None):
    p = L.llama_context_default_params()
    p.n_ctx, p.n_batch, p.n_ubatch, p.n_seq_max = 256, 64, 64, 1
    p.n_threads = p.n_threads_batch = 2
    p.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED  # as the tiny fixtures' (llama_cpp.Llama's default)
    if other is not None:
        p.ctx_other = other
    return p


def load(path):
    model = L.llama_model_load_from_file(str(path).encode(), L.llama_model_default_params())
    if not model:
        raise SystemExit(f"{path}: llama.cpp could not load it")
    return model


def assistant_run(target_path, assistant_path, prompt):
    tm, am = load(target_path), load(assistant_path)
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(tm))
    n_embd = L.llama_model_n_embd(tm)
    n = len(prompt)
    tgt = L.llama_init_from_model(tm, params())
    _set_nextn(tgt, True, False)
    # Made before the prompt, as the driver does: making a context clears its
    # memory, which here is the target's cells too.
    ast = L.llama_init_from_model(am, params(tgt))
    if not ast:
        raise SystemExit("llama.cpp could not make the assistant's context")
    _set_nextn(ast, True, True)
    b = Batch(prompt, range(n))
    if L.llama_decode(tgt, b.b) != 0:
        raise SystemExit("llama_decode (target) failed")
    h = np.ctypeslib.as_array(_get_nextn(tgt), shape=(n * n_embd,)).reshape(n, n_embd).copy()
    target_logits = np.ctypeslib.as_array(L.llama_get_logits_ith(tgt, n - 1), shape=(n_vocab,)).copy()
    pending = int(np.argmax(target_logits))
    logits, tokens = [], [pending]
    state = h[n - 1].reshape(1, n_embd)
    for _ in range(STEPS):
        b = Batch([tokens[-1]], [n], state)
        if L.llama_decode(ast, b.b) != 0:
            raise SystemExit("llama_decode (assistant) failed")
        row = np.ctypeslib.as_array(L.llama_get_logits_ith(ast, 0), shape=(n_vocab,)).copy()
        logits.append(row)
        tokens.append(int(np.argmax(row)))
        state = np.ctypeslib.as_array(_get_nextn_ith(ast, 0), shape=(n_embd,)).copy().reshape(1, n_embd)
    L.llama_free(ast)
    L.llama_free(tgt)
    L.llama_model_free(am)
    L.llama_model_free(tm)
    return np.array(logits, dtype=np.float32), pending


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--targets", default=",".join(TARGETS))
    args = ap.parse_args()
    tool = Path(args.build) / "tests" / "make_tiny_model"
    listing = subprocess.run([str(tool), "--list"], check=True, capture_output=True, text=True).stdout.splitlines()
    prompt = [int(x) for x in listing[-1].split()[1:]]
    source = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
    OUT.mkdir(parents=True, exist_ok=True)
    L.llama_backend_init()
    with tempfile.TemporaryDirectory() as tmp:
        for fam in [f for f in args.targets.split(",") if f]:
            tpath, apath = Path(tmp) / f"tiny-{fam}.gguf", Path(tmp) / f"tiny-assistant-{fam}.gguf"
            subprocess.run([str(tool), fam, str(source), str(tpath)], check=True)
            subprocess.run([str(tool), f"assistant:{fam}", str(source), str(apath)], check=True)
            logits, pending = assistant_run(tpath, apath, prompt)
            rng = np.random.default_rng([13, *fam.encode()])
            random_ids = sorted(rng.choice(logits.shape[1], size=64, replace=False).tolist())
            top_ids = np.argsort(-logits, axis=1, kind="stable")[:, :10]
            data = {
                "target": fam,
                "target_sha256": hashlib.sha256(tpath.read_bytes()).hexdigest(),
                "assistant_sha256": hashlib.sha256(apath.read_bytes()).hexdigest(),
                "prompt": prompt, "n_vocab": int(logits.shape[1]), "oracle": "llama.cpp gemma4-assistant graph, ctx_other = target",
                "rows": "draft rows at position n: the pending token with the target's h_nextn at n - 1, then each argmax "
                        "with the assistant's own h_nextn",
                "pending_token": pending,
                "argmax": logits.argmax(axis=1).tolist(),
                "top_ids": top_ids.tolist(),
                "top_logits": np.take_along_axis(logits, top_ids, axis=1).tolist(),
                "random_ids": random_ids,
                "random_logits": logits[:, random_ids].tolist(),
            }
            (OUT / f"{fam}.json").write_text(json.dumps(data) + "\n")
            print(f"{fam}: pending {pending}, drafts {data['argmax']}, logits range [{logits.min():.3f}, {logits.max():.3f}]")


if __name__ == "__main__":
    main()
