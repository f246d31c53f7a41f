#!/usr/bin/env python3
"""How far a requantized SmolLM2's logits move under a change of float order, beside
how far kiln's are from llama.cpp's: tells a kernel bug from a model that amplifies
last-bit differences (docs/quant.md, "TQ1_0 / TQ2_0 on SmolLM2").

Per type (the file written by kiln, as tools/lowbit_fixtures.py writes it), for the
"story" prompt of tests/golden/lowbit:
1. the last position's logits of llama.cpp (flash attention off, its default here),
   of llama.cpp with flash attention on (only the attention's float order changes)
   and of kiln: the largest difference of each to the first, over the vocabulary
   and over llama.cpp's top 5;
2. llama.cpp's greedy tokens with flash attention off and on, and the first step
   where they part;
3. layer 0, 2 and 11's ffn_down products (kiln's and llama.cpp's intermediates,
   build/tests/dump_kiln_tensors and tools/dump_llama_tensors.py) against the exact
   product in double of the file's weights and the Q8_K-rounded input each engine
   had: both engines' kernels are exact to a few float roundings when this is
   small, and the engines part because their inputs differ.

Usage: tools/lowbit_sensitivity.py [--build build] [--types TQ2_0,Q2_K]
"""
import argparse
import os
import subprocess
import tempfile
from pathlib import Path

import gguf
import numpy as np
from llama_cpp import Llama

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))
PROMPT = "Once upon a time, in a small village by the sea, there lived"
LAYERS = [0, 2, 11]


def llama_run(path, flash, n=12):
    llm = Llama(model_path=str(path), n_ctx=512, n_batch=256, n_threads=2, logits_all=True, verbose=False, seed=0,
                flash_attn=flash)
    tokens = llm.tokenize(PROMPT.encode(), add_bos=True, special=True)
    llm.eval(tokens)
    first = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
    out = []
    for _ in range(n):
        last = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        out.append(int(np.argmax(last)))
        llm.eval([out[-1]])
    del llm
    return tokens, first, out


def q8_k(x):
    """ggml's quantize_row_q8_K_ref, dequantized: d = max / -127 (the element of largest magnitude), q = round(x / d)."""
    x = x.astype(np.float32).reshape(-1, 256)
    out = np.zeros(x.shape, dtype=np.float64)
    for b, v in enumerate(x):
        mx = v[np.argmax(np.abs(v))]
        if mx == 0:
            continue
        iscale = np.float32(-127.0) / mx
        q = np.minimum(127, np.rint(iscale * v))
        out[b] = q * np.float64(np.float32(1.0) / iscale)
    return out.reshape(-1)


def kiln_tensor(d, name):
    per, rows = map(int, (d / f"{name}.shape").read_text().split())
    return np.fromfile(d / f"{name}.f32", dtype=np.float32).reshape(rows, per)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--types", default="TQ2_0,Q2_K")
    args = ap.parse_args()
    build = Path(args.build)
    source = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
    with tempfile.TemporaryDirectory() as tmp:
        for t in args.types.split(","):
            path = Path(tmp) / f"smollm2-{t}.gguf"
            subprocess.run([str(build / "tests" / "make_tiny_model"), "--requantize", t, str(source), str(path)], check=True,
                           capture_output=True)
            tokens, ref, greedy = llama_run(path, False)
            _, fa, greedy_fa = llama_run(path, True)
            kdir = Path(tmp) / f"kiln-{t}"
            subprocess.run([str(build / "tests" / "dump_kiln_tensors"), str(path), str(kdir)] + [str(x) for x in tokens],
                           check=True)
            kiln = kiln_tensor(kdir, "result_output")[-1]
            top = np.argsort(-ref)[:5]
            print(f"{t}: last-position logits, max |x - llama.cpp| over all / llama.cpp's top 5: "
                  f"kiln {np.abs(kiln - ref).max():.3f} / {np.abs(kiln - ref)[top].max():.3f}, "
                  f"llama.cpp with flash attention {np.abs(fa - ref).max():.3f} / {np.abs(fa - ref)[top].max():.3f}")
            part = next((i for i, (a, b) in enumerate(zip(greedy, greedy_fa)) if a != b), None)
            print(f"{t}: llama.cpp greedy {greedy}\n{t}: with flash attention {greedy_fa} "
                  f"(parts at step {part})")
            npz = Path(tmp) / f"llama-{t}.npz"
            subprocess.run([str(ROOT / ".venv" / "bin" / "python"), str(ROOT / "tools" / "dump_llama_tensors.py"), str(path), str(npz),
                            "--tokens", ",".join(map(str, tokens)), "--names", "ffn_swiglu,ffn_out"], check=True,
                           capture_output=True)
            ref_t = np.load(npz)
            reader = gguf.GGUFReader(str(path))
            for layer in LAYERS:
                w = next(x for x in reader.tensors if x.name == f"blk.{layer}.ffn_down.weight")
                wd = gguf.quants.dequantize(w.data, w.tensor_type).astype(np.float64)
                ka, ko = kiln_tensor(kdir, f"ffn_act-{layer}"), kiln_tensor(kdir, f"ffn_out-{layer}")
                la = ref_t[f"ffn_swiglu-{layer}"].reshape(ka.shape)
                lo = ref_t[f"ffn_out-{layer}"].reshape(ko.shape)
                line = []
                for who, a, o in (("kiln", ka, ko), ("llama.cpp", la, lo)):
                    exact = np.stack([wd @ q8_k(row) for row in a])
                    line.append(f"{who} {np.abs(o - exact).max() / np.abs(exact).max():.2g}")
                print(f"{t}: layer {layer} ffn_down ({w.tensor_type.name}), max |product - exact| / max |exact|: {', '.join(line)}; "
                      f"inputs differ by {np.abs(ka - la).max() / np.abs(la).max():.2g}, outputs by "
                      f"{np.abs(ko - lo).max() / np.abs(lo).max():.2g} (relative to the largest)")


if __name__ == "__main__":
    main()
