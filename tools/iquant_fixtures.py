#!/usr/bin/env python3
"""ggml's file quantizers for the i-quants, for kiln's bit-exact tests.

What llama-quantize writes for a tensor is ggml_quantize_chunk's output, which for
IQ4_XS and the grid i-quants (IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M)
is not the traits table's reference quantizer: they search scales, weighted by an
importance matrix when one is given. This script calls ggml_quantize_chunk from
the shared libraries llama-cpp-python ships (ctypes; nothing is linked into kiln)
on the quantize fixture's input (tests/golden/quant/quantize/input.f32: 24 chunks
of 256 values in different regimes) as 4 rows of 1536, with and without an
importance matrix (1536 values, one per column, in [0.01, 40)), and writes the
blocks to tests/golden/quant/iquant/ with iquant.json naming them.

Usage: tools/iquant_fixtures.py [--types IQ4_XS,IQ3_XXS,...]
"""
import argparse
import ctypes
import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf.constants import GGML_QUANT_SIZES

ROOT = Path(__file__).resolve().parent.parent
QUANT = ROOT / "tests" / "golden" / "quant"
OUT = QUANT / "iquant"
N_PER_ROW, N_ROWS = 1536, 4
# ggml asserts an importance matrix for these (ggml_quantize_requires_imatrix; not IQ1_M)
NEEDS_IMATRIX = {T.IQ2_XXS, T.IQ2_XS, T.IQ1_S}
TYPES = ["IQ4_XS", "IQ3_XXS", "IQ2_XXS", "IQ2_XS", "IQ3_S", "IQ2_S", "IQ1_S", "IQ1_M"]


def load_ggml():
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("llama-cpp-python is not installed (tools/setup_oracle.sh installs it)")
    lib = Path(spec.submodule_search_locations[0]) / "lib"
    base = ctypes.CDLL(str(lib / "libggml-base.so"), mode=ctypes.RTLD_GLOBAL)
    base.ggml_quantize_chunk.restype = ctypes.c_size_t
    base.ggml_quantize_chunk.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64,
                                         ctypes.c_int64, ctypes.c_void_p]
    import llama_cpp
    return base, f"ggml_quantize_chunk from llama-cpp-python {llama_cpp.__version__}"


def importance():
    """A deterministic imatrix row: log-uniform in [0.01, 40), like real mean squared activations."""
    rng = np.random.default_rng(25)
    return np.exp(rng.uniform(np.log(0.01), np.log(40.0), N_PER_ROW)).astype(np.float32)


def quantize(base, t, x, qw):
    block, size = GGML_QUANT_SIZES[t]
    out = np.zeros(N_ROWS * N_PER_ROW // block * size, dtype=np.uint8)
    n = base.ggml_quantize_chunk(t.value, x.ctypes.data, out.ctypes.data, 0, N_ROWS, N_PER_ROW,
                                 qw.ctypes.data if qw is not None else None)
    assert n == out.size, (t.name, n, out.size)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--types", default=",".join(TYPES))
    args = ap.parse_args()
    base, oracle = load_ggml()
    x = np.fromfile(QUANT / "quantize" / "input.f32", dtype="<f4")
    assert x.size == N_PER_ROW * N_ROWS, x.size
    qw = importance()
    OUT.mkdir(parents=True, exist_ok=True)
    manifest_path = OUT / "iquant.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    manifest.update({"generator": "tools/iquant_fixtures.py", "oracle": oracle, "input": "quantize/input.f32",
                     "n_per_row": N_PER_ROW, "rows": N_ROWS})
    (OUT / "importance.f32").write_bytes(qw.tobytes())
    manifest["importance"] = "iquant/importance.f32"
    types = manifest.setdefault("types", {})
    for name in args.types.split(","):
        t = T[name]
        entry = {}
        (OUT / f"{name}.imatrix.blocks").write_bytes(quantize(base, t, x, qw).tobytes())
        entry["imatrix"] = f"iquant/{name}.imatrix.blocks"
        if t not in NEEDS_IMATRIX:
            (OUT / f"{name}.plain.blocks").write_bytes(quantize(base, t, x, None).tobytes())
            entry["plain"] = f"iquant/{name}.plain.blocks"
        types[name] = entry
        print(name, entry)
    manifest_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
