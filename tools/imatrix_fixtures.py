#!/usr/bin/env python3
"""llama.cpp's llama-imatrix and llama-quantize --imatrix output for kiln's tests.

The model is SmolLM2-135M-Instruct in F16, made by `kiln quantize F16
--allow-requantize` from the installed Q4_1 file, as tools/quantize_fixtures.py
makes it (the same bytes).

1. llama-imatrix over tests/data/text/genesis-1-5.txt, chunks of 128, the first 8
   chunks: per entry its counts, the total of its sums and 24 evenly spaced sums (7 significant digits)
   go to tests/golden/imatrix/smollm2_genesis.json (kiln imatrix is compared with
   them within a bound).
2. A synthetic imatrix (every 2-D blk.* weight, value(name, j) below: exact in
   float, so kiln's test writes the same file), given to llama-quantize for each
   preset: every output tensor's type and sha256 to
   tests/golden/imatrix/smollm2_PRESET.json (LONG_PRESETS: tests/golden/imatrix_long/,
   for the long check; kiln quantize --imatrix is compared
   tensor for tensor).

Usage: tools/imatrix_fixtures.py [--build build] [--llama-bin DIR] [--presets Q4_0,...] [--no-imatrix-run]
"""
import argparse
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import gguf
import numpy as np

from quantize_fixtures import tensor_digests  # the same digests as the plain presets' fixtures

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))
PRESETS = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_NL", "Q2_K", "Q2_K_S", "Q3_K_M"]
# Checked by a long test only (README "Long checks"): tests/golden/imatrix_long.
LONG_PRESETS = ["IQ4_XS", "IQ3_XXS", "IQ3_XS", "IQ3_S", "IQ3_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M"]
TEXT = ROOT / "tests" / "data" / "text" / "genesis-1-5.txt"
N_CTX, N_CHUNKS, N_SAMPLES = 128, 8, 24


def fnv1a32(s):
    h = 2166136261
    for b in s.encode():
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def synthetic_values(name, n):
    """1 + ((fnv1a32(name) + 2654435761 j) mod 2^32 >> 16) / 4096: in [1, 17), exact in float."""
    j = np.arange(n, dtype=np.uint64)
    k = ((np.uint64(fnv1a32(name)) + np.uint64(2654435761) * j) & np.uint64(0xFFFFFFFF)) >> np.uint64(16)
    return (np.float32(1.0) + k.astype(np.float32) / np.float32(4096.0)).astype(np.float32)


def write_synthetic(model_path, out_path):
    r = gguf.GGUFReader(str(model_path))
    w = gguf.GGUFWriter(str(out_path), arch="imatrix", use_temp_file=False)
    # GGUFWriter always adds general.architecture; llama-quantize ignores it, kiln too.
    w.add_string("general.type", "imatrix")
    w.add_array("imatrix.datasets", ["synthetic"])
    w.add_uint32("imatrix.chunk_count", 1)
    w.add_uint32("imatrix.chunk_size", 1)
    names = sorted(t.name for t in r.tensors if t.name.startswith("blk.") and len(t.shape) == 2 and t.shape[1] > 1)
    shapes = {t.name: [int(x) for x in t.shape] for t in r.tensors}
    for name in names:
        n_in = shapes[name][0]
        w.add_tensor(name + ".in_sum2", synthetic_values(name, n_in).reshape(1, n_in))
        w.add_tensor(name + ".counts", np.ones((1, 1), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return names


def imatrix_summary(path):
    r = gguf.GGUFReader(str(path))
    sums, counts = {}, {}
    for t in r.tensors:
        if t.name.endswith(".in_sum2"):
            sums[t.name[: -len(".in_sum2")]] = np.array(t.data, dtype=np.float64).reshape(-1)
        elif t.name.endswith(".counts"):
            counts[t.name[: -len(".counts")]] = [int(round(float(c))) for c in np.array(t.data).reshape(-1)]
    out = {}
    for name in sorted(sums):
        s = sums[name]
        idx = np.linspace(0, len(s) - 1, N_SAMPLES).round().astype(int)
        out[name] = {"n": len(s), "counts": counts[name], "total": float(f"{s.sum():.7g}"),
                     "samples": {str(int(i)): float(f"{s[i]:.7g}") for i in idx}}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--llama-bin", default=str(ROOT / ".oracle" / "llama.cpp" / "build" / "bin"))
    ap.add_argument("--presets", default=",".join(PRESETS + LONG_PRESETS))
    ap.add_argument("--no-imatrix-run", action="store_true", help="keep smollm2_genesis.json; only the quantize fixtures")
    args = ap.parse_args()
    bin_dir = Path(args.llama_bin)
    out = ROOT / "tests" / "golden" / "imatrix"
    out.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, LD_LIBRARY_PATH=str(bin_dir))
    with tempfile.TemporaryDirectory() as tmp:
        f16 = Path(tmp) / "smollm2-f16.gguf"
        subprocess.run([str(Path(args.build) / "kiln"), "quantize", str(MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"), str(f16),
                        "F16", "--allow-requantize"], check=True)
        source = tensor_digests(f16)
        source_digest = hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest()
        im = Path(tmp) / "genesis.imatrix.gguf"
        if not args.no_imatrix_run:
            subprocess.run([str(bin_dir / "llama-imatrix"), "-m", str(f16), "-f", str(TEXT), "-o", str(im), "-c", str(N_CTX),
                            "-b", str(N_CTX), "--chunks", str(N_CHUNKS), "-t", "2", "--no-ppl"], env=env, check=True,
                           capture_output=True)
            (out / "smollm2_genesis.json").write_text(json.dumps({
                "source": "SmolLM2-135M-Instruct.Q4_1.gguf as F16 (kiln quantize F16 --allow-requantize)",
                "source_tensors_sha256": source_digest, "text": "tests/data/text/genesis-1-5.txt",
                "n_ctx": N_CTX, "chunks": N_CHUNKS, "entries": imatrix_summary(im)}, indent=1, sort_keys=True) + "\n")
        syn = Path(tmp) / "synthetic.imatrix.gguf"
        names = write_synthetic(f16, syn)
        for preset in args.presets.split(","):
            q = Path(tmp) / f"{preset}.gguf"
            subprocess.run([str(bin_dir / "llama-quantize"), "--imatrix", str(syn), str(f16), str(q), preset, "2"], env=env,
                           check=True, capture_output=True)
            r = {"preset": preset, "imatrix": f"synthetic: {len(names)} entries (tools/imatrix_fixtures.py)",
                 "source_tensors_sha256": source_digest, "tensors": tensor_digests(q)}
            dest = ROOT / "tests" / "golden" / "imatrix_long" if preset in LONG_PRESETS else out
            dest.mkdir(parents=True, exist_ok=True)
            (dest / f"smollm2_{preset}.json").write_text(json.dumps(r, indent=1, sort_keys=True) + "\n")
            print(preset, "ok")


if __name__ == "__main__":
    main()
