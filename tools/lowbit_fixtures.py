#!/usr/bin/env python3
"""llama.cpp's greedy continuations of SmolLM2-135M requantized to each low-bit
type kiln has kernels for (tests/model/test_lowbit_models.cpp).

The requantized files are written by kiln (build/tests/make_tiny_model
--requantize TYPE: every layer matrix whose rows are whole blocks of TYPE
re-encoded by kiln's reference quantizer, tests/support/requantize.h); the test
rebuilds the same bytes and compares kiln's greedy tokens with these. For
SmolLM2 (width 576, FFN 1536) the 256-element types can take only ffn_down; the
32-element MXFP4 takes every layer matrix. Per type and prompt: the prompt's
tokens, 32 greedy tokens and at each step llama.cpp's margin between the best
and second-best logit (a divergence is allowed only at a near-tie), and the
sha256 of the file.

Output: tests/golden/lowbit/smollm2_<type>.json

Usage: tools/lowbit_fixtures.py [--build build] [--types Q2_K,MXFP4]
"""
import argparse
import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import llama_cpp
from llama_cpp import Llama

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "lowbit"
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))
TYPES = ["Q2_K", "Q3_K", "MXFP4"]  # the test's (TQ1_0 / TQ2_0 work with --types; see the test)
PROMPTS = {
    "question": "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "story": "Once upon a time, in a small village by the sea, there lived",
}
N_GREEDY = 32


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--types", default=",".join(TYPES))
    args = ap.parse_args()
    tool = Path(args.build) / "tests" / "make_tiny_model"
    source = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for t in args.types.split(","):
            path = Path(tmp) / f"smollm2-{t}.gguf"
            subprocess.run([str(tool), "--requantize", t, str(source), str(path)], check=True)
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            llm = Llama(model_path=str(path), n_ctx=512, n_batch=256, n_threads=2, logits_all=True, verbose=False, seed=0)
            prompts = []
            for name, text in PROMPTS.items():
                tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)
                llm.reset()
                llm.eval(tokens)
                out, margins = [], []
                for _ in range(N_GREEDY):
                    last = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
                    order = np.argsort(-last, kind="stable")[:2]
                    out.append(int(order[0]))
                    margins.append(float(last[order[0]] - last[order[1]]))
                    llm.eval([int(order[0])])
                prompts.append({"name": name, "tokens": tokens, "greedy": out, "greedy_margins": margins})
                print(f"{t} {name}: {llm.detokenize(out).decode('utf-8', 'replace')!r}", flush=True)
            data = {"type": t, "source": source.name, "sha256": sha, "oracle": "llama-cpp-python " + llama_cpp.__version__,
                    "prompts": prompts}
            (OUT / f"smollm2_{t}.json").write_text(json.dumps(data) + "\n")
            del llm


if __name__ == "__main__":
    main()
