#!/usr/bin/env python3
"""llama.cpp's own flash-attention spread on the tiny models that kiln checks with
streaming attention (tests/model/test_tiny_models.cpp, TinyModelsStreaming).

For each family: llama.cpp's logits at every prompt position with flash attention
off (the run tests/golden/tiny holds) and on, and the largest difference between
the two over the whole vocabulary: the oracle's own spread between the two
attention orders, which bounds kiln's streaming attention against the default
fixture. Also the default run's greedy continuation with the gap between the two
best logits at each step (so a step where kiln's streaming attention picks the
other of a near-tie is told from an error).

Output: tests/golden/tiny_stream/<family>.json.
Usage: tools/tiny_stream_fixtures.py [--build build] [--families a,b]
"""
import argparse
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from tiny_model_fixtures import llama_run

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "tiny_stream"
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))
FAMILIES = ["llama", "gemma2", "gemma3", "cohere2", "gpt-oss", "bloom", "mpt", "deepseek2", "llama4", "mistral3", "qwen35",
            "olmo2@q4_k", "phi3@long"]


def run(path, prompt, kv_type, flash_attn):
    """tiny_model_fixtures.llama_run with llama.cpp's flash attention on or off."""
    return llama_run(path, prompt, kv_type, flash_attn=flash_attn)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--families", default=",".join(FAMILIES))
    args = ap.parse_args()
    tool = Path(args.build) / "tests" / "make_tiny_model"
    listing = subprocess.run([str(tool), "--list"], check=True, capture_output=True, text=True).stdout.splitlines()
    kv_types = {line.split("\t")[0]: (line.split("\t") + ["f16"])[2] for line in listing if "\t" in line}
    prompt = [int(x) for x in listing[-1].split()[1:]]
    source = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for fam in [f for f in args.families.split(",") if f]:
            path = Path(tmp) / f"tiny-{fam}.gguf"
            subprocess.run([str(tool), fam, str(source), str(path)], check=True)
            off, greedy, gaps = run(path, prompt, kv_types[fam], False)
            on, greedy_fa, _ = run(path, prompt, kv_types[fam], True)
            data = {"family": fam, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "prompt": prompt,
                    "llama_fa_max_diff": float(np.abs(on - off).max()),
                    "llama_fa_argmax_changes": int((on.argmax(axis=1) != off.argmax(axis=1)).sum()),
                    "largest_logit": float(np.abs(off).max()),
                    "greedy": greedy, "greedy_gap": gaps, "greedy_flash_attn": greedy_fa}
            (OUT / f"{fam}.json").write_text(json.dumps(data) + "\n")
            print(f"{fam}: llama.cpp fa on vs off {data['llama_fa_max_diff']:.5f} (largest {data['largest_logit']:.2f}), "
                  f"greedy {greedy}, with fa {greedy_fa}")


if __name__ == "__main__":
    main()
