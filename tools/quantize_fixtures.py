#!/usr/bin/env python3
"""llama.cpp's llama-quantize output for `kiln quantize`'s tests.

The input is SmolLM2-135M-Instruct in F16, written by `kiln quantize` from the
installed Q4_1 file (`F16 --allow-requantize`: the Q4_1 values exactly, in
half precision; deterministic, so the test makes the same file). llama-quantize
(built by `tools/setup_oracle.sh --batched-bench`) turns it into each preset;
the `gguf` package reads every output tensor's type and the sha256 of its
bytes into tests/golden/quantize/smollm2_PRESET.json (LONG_PRESETS: into
tests/golden/quantize_long/, for the long check). The test quantizes the same
input with kiln and compares tensor by tensor.

Usage: tools/quantize_fixtures.py [--build build] [--llama-bin DIR] [--presets Q8_0,...]
"""
import argparse
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import gguf

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))
PRESETS = ["Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q6_K", "Q5_K_M", "Q5_K_S", "Q4_K_M", "Q4_K_S", "Q3_K_L", "Q3_K_M",
           "Q3_K_S", "Q2_K", "IQ4_NL"]
# Checked by a long test only (README "Long checks"): tests/golden/quantize_long.
LONG_PRESETS = ["IQ4_XS", "IQ3_S", "IQ3_M"]


def tensor_digests(path):
    r = gguf.GGUFReader(str(path))
    return {t.name: {"type": t.tensor_type.name, "sha256": hashlib.sha256(t.data.tobytes()).hexdigest()} for t in r.tensors}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--llama-bin", default=str(ROOT / ".oracle" / "llama.cpp" / "build" / "bin"))
    ap.add_argument("--presets", default=",".join(PRESETS + LONG_PRESETS))
    args = ap.parse_args()
    bin_dir = Path(args.llama_bin)
    env = dict(os.environ, LD_LIBRARY_PATH=str(bin_dir))
    with tempfile.TemporaryDirectory() as tmp:
        f16 = Path(tmp) / "smollm2-f16.gguf"
        subprocess.run([str(Path(args.build) / "kiln"), "quantize", str(MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"), str(f16),
                        "F16", "--allow-requantize"], check=True)
        source = tensor_digests(f16)
        for preset in args.presets.split(","):
            q = Path(tmp) / f"{preset}.gguf"
            subprocess.run([str(bin_dir / "llama-quantize"), str(f16), str(q), preset, "2"], env=env, check=True,
                           capture_output=True)
            r = {"preset": preset, "source": "SmolLM2-135M-Instruct.Q4_1.gguf as F16 (kiln quantize F16 --allow-requantize)",
                 "source_tensors_sha256": hashlib.sha256(json.dumps(source, sort_keys=True).encode()).hexdigest(),
                 "file_type": gguf.GGUFReader(str(q)).fields["general.file_type"].parts[-1][0].item(),
                 "tensors": tensor_digests(q)}
            out = ROOT / "tests" / "golden" / ("quantize_long" if preset in LONG_PRESETS else "quantize")
            out.mkdir(parents=True, exist_ok=True)
            (out / f"smollm2_{preset}.json").write_text(json.dumps(r, indent=1, sort_keys=True) + "\n")
            types = {}
            for t in r["tensors"].values():
                types[t["type"]] = types.get(t["type"], 0) + 1
            print(preset, types)


if __name__ == "__main__":
    main()
