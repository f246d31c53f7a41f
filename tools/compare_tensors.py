#!/usr/bin/env python3
"""Lines up kiln's intermediates (build/tests/dump_kiln_tensors) with llama.cpp's
(tools/dump_llama_tensors.py) and prints the largest difference per tensor, in
forward order, so the first step where the two part is easy to see.

Usage: tools/compare_tensors.py KILN_DIR LLAMA.npz
"""
import sys
from pathlib import Path

import numpy as np

# kiln name -> llama.cpp name (both with "-<layer>" appended when per layer)
NAMES = {"inp_embd": "inp_scaled", "attn_norm": "attn_norm", "Qcur": "Qcur", "Kcur": "Kcur", "Vcur": "Vcur",
         "Qcur_normed": "Qcur_normed", "Kcur_normed": "Kcur_normed", "kqv_out": "kqv_out", "attn_out": "attn_out",
         "attn_post_norm": "attn_post_norm", "ffn_inp": "ffn_inp", "ffn_norm": "ffn_norm", "ffn_out": "ffn_out",
         "ffn_post_norm": "ffn_post_norm", "l_out": "l_out", "result_norm": "result_norm",
         "result_output": "result_output"}


def main() -> None:
    kdir, ref = Path(sys.argv[1]), np.load(sys.argv[2])
    files = sorted(kdir.glob("*.f32"), key=lambda p: p.stat().st_mtime_ns)
    for f in files:
        stem = f.stem
        name, _, layer = stem.rpartition("-") if stem.rsplit("-", 1)[-1].isdigit() else (stem, "", "")
        lname = NAMES.get(name)
        if lname is None:
            continue
        key = f"{lname}-{layer}" if layer else lname
        if key not in ref:
            if not layer and "inp_embd" in stem and "embd" in ref:
                key = "embd"
            else:
                continue
        per_row, rows = map(int, (kdir / (stem + ".shape")).read_text().split())
        k = np.fromfile(f, dtype=np.float32).reshape(rows, per_row)
        r = ref[key].reshape(-1)
        if r.size != k.size:
            print(f"{stem:24s} size differs: kiln {k.shape}, llama.cpp {ref[key].shape}")
            continue
        r = r.reshape(k.shape)
        diff = np.abs(k - r)
        scale = np.abs(r).max() + 1e-12
        print(f"{stem:24s} max|diff| {diff.max():.6g}  rel {diff.max() / scale:.3g}  (max|ref| {scale:.4g})")


if __name__ == "__main__":
    main()
