#!/usr/bin/env python3
"""llama.cpp's multi-token-prediction (NextN) head logits for kiln's tiny models with MTP blocks.

llama.cpp (the llama-cpp-python build in the venv) loads the tiny model with its
MTP block (load_mtp), evaluates the prompt in a target context that exposes every
row's h_nextn (the trunk's final normed hidden state, llama_set_embeddings_nextn,
unmasked), then runs its MTP graph (a context of type LLAMA_CONTEXT_TYPE_MTP) on
the rows llama.cpp's speculative driver makes: token p with the target's h_nextn
of position p - 1 (zeros at p = 0). Then one chained draft row: the head's argmax
at the last position with the head's own h_nextn of that row. For each MTP row:
the argmax, the 10 largest logits and 64 fixed random ids' logits.

Usage: tools/mtp_fixtures.py [--build build] [--families glm4moe,deepseek2@nextn]
"""
import argparse
import ctypes
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import llama_cpp as L

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "mtp"
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))
FAMILIES = ["glm4moe", "glm4moe@q8_0", "deepseek2@nextn", "qwen35@mtp", "qwen35moe@mtp"]

# The staging API llama.cpp's speculative driver uses (src/llama-ext.h): C++ symbols.
_lib = L.llama_cpp._lib
_set_nextn = getattr(_lib, "_Z26llama_set_embeddings_nextnP13llama_contextbb")
_set_nextn.argtypes = [ctypes.c_void_p, ctypes.c_bool, ctypes.c_bool]
_set_nextn.restype = None
_get_nextn = getattr(_lib, "_Z26llama_get_embeddings_nextnP13llama_context")
_get_nextn.argtypes = [ctypes.c_void_p]
_get_nextn.restype = ctypes.POINTER(ctypes.c_float)
_get_nextn_ith = getattr(_lib, "_Z30llama_get_embeddings_nextn_ithP13llama_contexti")
_get_nextn_ith.argtypes = [ctypes.c_void_p, ctypes.c_int32]
_get_nextn_ith.restype = ctypes.POINTER(ctypes.c_float)


class Batch:
    """A llama_batch over Python-owned arrays (tokens, and hidden states where given)."""

    def __init__(self, tokens, positions, states=None):
        n = len(tokens)
        self.tok = (ctypes.c_int32 * n)(*tokens)
        self.pos = (ctypes.c_int32 * n)(*positions)
        self.nseq = (ctypes.c_int32 * n)(*([1] * n))
        self.seq0 = (ctypes.c_int32 * 1)(0)
        self.seqs = (ctypes.POINTER(ctypes.c_int32) * n)(*([ctypes.cast(self.seq0, ctypes.POINTER(ctypes.c_int32))] * n))
        self.out = (ctypes.c_int8 * n)(*([1] * n))
        self.b = L.llama_batch()
        self.b.n_tokens = n
        self.b.token = ctypes.cast(self.tok, ctypes.POINTER(ctypes.c_int32))
        if states is not None:
            self.embd = np.ascontiguousarray(states, dtype=np.float32)
            self.b.embd = self.embd.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
        self.b.pos = ctypes.cast(self.pos, ctypes.POINTER(ctypes.c_int32))
        self.b.n_seq_id = ctypes.cast(self.nseq, ctypes.POINTER(ctypes.c_int32))
        self.b.seq_id = ctypes.cast(self.seqs, ctypes.POINTER(ctypes.POINTER(ctypes.c_int32)))
        self.b.logits = ctypes.cast(self.out, ctypes.POINTER(ctypes.c_int8))


def context(model, mtp):
    p = L.llama_context_default_params()
    p.n_ctx, p.n_batch, p.n_ubatch, p.n_seq_max = 256, 64, 64, 1
    p.n_threads = p.n_threads_batch = 2
    p.flash_attn_type = L.LLAMA_FLASH_ATTN_TYPE_DISABLED  # as the tiny fixtures' (llama_cpp.Llama's default)
    if mtp:
        p.ctx_type = L.LLAMA_CONTEXT_TYPE_MTP
    ctx = L.llama_init_from_model(model, p)
    if not ctx:
        raise SystemExit("llama.cpp could not make the context")
    return ctx


def mtp_run(path, prompt):
    mp = L.llama_model_default_params()
    mp.load_mtp = True
    model = L.llama_model_load_from_file(str(path).encode(), mp)
    if not model or L.llama_model_n_layer_nextn(model) < 1:
        raise SystemExit(f"{path}: llama.cpp loaded no MTP block")
    n_vocab = L.llama_vocab_n_tokens(L.llama_model_get_vocab(model))
    n_embd = L.llama_model_n_embd(model)
    n = len(prompt)
    tgt = context(model, False)
    _set_nextn(tgt, True, False)
    b = Batch(prompt, range(n))
    if L.llama_decode(tgt, b.b) != 0:
        raise SystemExit("llama_decode (target) failed")
    h = np.ctypeslib.as_array(_get_nextn(tgt), shape=(n * n_embd,)).reshape(n, n_embd).copy()
    trunk = np.array([np.ctypeslib.as_array(L.llama_get_logits_ith(tgt, i), shape=(n_vocab,)) for i in range(n)], dtype=np.float32)
    mtp = context(model, True)
    _set_nextn(mtp, True, True)
    states = np.vstack([np.zeros((1, n_embd), np.float32), h[:-1]])  # row p: the trunk's state at p - 1
    b = Batch(prompt, range(n), states)
    if L.llama_decode(mtp, b.b) != 0:
        raise SystemExit("llama_decode (MTP) failed")
    logits = [np.ctypeslib.as_array(L.llama_get_logits_ith(mtp, i), shape=(n_vocab,)).copy() for i in range(n)]
    g = np.ctypeslib.as_array(_get_nextn_ith(mtp, n - 1), shape=(n_embd,)).copy()
    chained = int(np.argmax(logits[-1]))
    b = Batch([chained], [n], g.reshape(1, n_embd))
    if L.llama_decode(mtp, b.b) != 0:
        raise SystemExit("llama_decode (MTP, chained) failed")
    logits.append(np.ctypeslib.as_array(L.llama_get_logits_ith(mtp, 0), shape=(n_vocab,)).copy())
    L.llama_free(mtp)
    L.llama_free(tgt)
    L.llama_model_free(model)
    return np.array(logits, dtype=np.float32), chained, trunk


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--families", default=",".join(FAMILIES))
    args = ap.parse_args()
    tool = Path(args.build) / "tests" / "make_tiny_model"
    listing = subprocess.run([str(tool), "--list"], check=True, capture_output=True, text=True).stdout.splitlines()
    prompt = [int(x) for x in listing[-1].split()[1:]]
    source = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
    OUT.mkdir(parents=True, exist_ok=True)
    L.llama_backend_init()
    with tempfile.TemporaryDirectory() as tmp:
        for fam in [f for f in args.families.split(",") if f]:
            path = Path(tmp) / f"tiny-{fam}.gguf"
            subprocess.run([str(tool), fam, str(source), str(path)], check=True)
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            logits, chained, trunk = mtp_run(path, prompt)
            rng = np.random.default_rng([11, *fam.encode()])
            random_ids = sorted(rng.choice(logits.shape[1], size=64, replace=False).tolist())
            top_ids = np.argsort(-logits, axis=1, kind="stable")[:, :10]
            data = {
                "family": fam, "sha256": sha, "prompt": prompt, "n_vocab": int(logits.shape[1]), "oracle": "llama.cpp MTP graph",
                "rows": "MTP rows 0..n-1: token p with the trunk's h_nextn at p - 1 (zeros at 0); row n: the chained draft",
                "chained_token": chained,
                "trunk_argmax": trunk.argmax(axis=1).tolist(),
                "argmax": logits.argmax(axis=1).tolist(),
                "top_ids": top_ids.tolist(),
                "top_logits": np.take_along_axis(logits, top_ids, axis=1).tolist(),
                "random_ids": random_ids,
                "random_logits": logits[:, random_ids].tolist(),
            }
            (OUT / f"{fam}.json").write_text(json.dumps(data) + "\n")
            print(f"{fam}: sha256 {sha[:16]}..., MTP logits range [{logits.min():.3f}, {logits.max():.3f}], chained {chained}")


if __name__ == "__main__":
    main()
