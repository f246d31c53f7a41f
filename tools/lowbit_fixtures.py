#!/usr/bin/env python3
"""llama.cpp's greedy continuations of SmolLM2-135M requantized to each low-bit
type kiln has kernels for (tests/model/test_lowbit_models.cpp).

Two kinds of file:
- Q2_K, Q3_K, MXFP4 (TQ1_0, TQ2_0 with --types): written by kiln
  (build/tests/make_tiny_model --requantize TYPE: every layer matrix whose rows
  are whole blocks of TYPE re-encoded by kiln's reference quantizer,
  tests/support/requantize.h); the test rebuilds the same bytes.
- The i-quants (IQ4_XS, IQ3_XXS, IQ3_S, IQ2_XXS, IQ2_XS, IQ2_S, IQ1_S, IQ1_M),
  which kiln cannot quantize: written by llama.cpp's llama-quantize --pure with an
  imatrix from llama-imatrix over tests/data/text/genesis-1-5.txt (SmolLM2 as F16
  made by `kiln quantize F16 --allow-requantize`, as tools/imatrix_fixtures.py).
  With --pure every matrix gets the type where its rows are whole 256-element
  blocks: for SmolLM2 (width 576, FFN 1536) ffn_down; llama-quantize falls back
  to IQ4_NL for the others (the fixture lists the file's tensor types). These
  files are kept in $KILN_MODELS/lowbit (the test skips without them: a long
  check, README).

For SmolLM2 the 256-element types can take only ffn_down; the 32-element MXFP4
takes every layer matrix. Per type and prompt: the prompt's tokens, 32 greedy
tokens and at each step llama.cpp's margin between the best and second-best
logit (a divergence is allowed only at a near-tie), and the sha256 of the file.

Output: tests/golden/lowbit/smollm2_<type>.json

Usage: tools/lowbit_fixtures.py [--build build] [--llama-bin DIR] [--types Q2_K,IQ2_XXS,...]
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
import llama_cpp
from llama_cpp import Llama

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "lowbit"
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))
KILN_TYPES = ["Q2_K", "Q3_K", "MXFP4", "TQ1_0", "TQ2_0"]
IQ_TYPES = ["IQ4_XS", "IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M"]
TEXT = ROOT / "tests" / "data" / "text" / "genesis-1-5.txt"
IMATRIX_CTX, IMATRIX_CHUNKS = 128, 8  # as tools/imatrix_fixtures.py
# llama-quantize's preset whose base type is the type (its IQ2_S preset is IQ2_XS's: IQ2_M's is IQ2_S)
PRESET = {"IQ2_S": "IQ2_M"}
PROMPTS = {
    "question": "<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n",
    "story": "Once upon a time, in a small village by the sea, there lived",
}
N_GREEDY = 32


def greedy(path: Path) -> list:
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
        print(f"{path.name} {name}: {llm.detokenize(out).decode('utf-8', 'replace')!r}", flush=True)
    del llm
    return prompts


def tensor_types(path: Path) -> dict:
    counts = {}
    for t in gguf.GGUFReader(str(path)).tensors:
        counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
    return dict(sorted(counts.items()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--llama-bin", default=str(ROOT / ".oracle" / "llama.cpp" / "build" / "bin"))
    ap.add_argument("--types", default=",".join(KILN_TYPES[:3] + IQ_TYPES))
    args = ap.parse_args()
    source = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
    bin_dir = Path(args.llama_bin)
    env = dict(os.environ, LD_LIBRARY_PATH=str(bin_dir))
    kept = MODELS / "lowbit"
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        imatrix = None
        for t in args.types.split(","):
            if t in IQ_TYPES:
                if imatrix is None:
                    f16 = Path(tmp) / "smollm2-f16.gguf"
                    subprocess.run([str(Path(args.build) / "kiln"), "quantize", str(source), str(f16), "F16", "--allow-requantize"],
                                   check=True, capture_output=True)
                    imatrix = Path(tmp) / "genesis.imatrix.gguf"
                    # Relative paths: llama-imatrix stores the text's path in the imatrix and
                    # llama-quantize the imatrix's and the text's in the model, so the file's
                    # bytes (and sha256) hold no path of this machine.
                    subprocess.run([str(bin_dir / "llama-imatrix"), "-m", str(f16), "-f", str(TEXT.relative_to(ROOT)), "-o",
                                    str(imatrix), "-c", str(IMATRIX_CTX), "-b", str(IMATRIX_CTX), "--chunks", str(IMATRIX_CHUNKS),
                                    "-t", "2", "--no-ppl"], env=env, check=True, capture_output=True, cwd=ROOT)
                kept.mkdir(parents=True, exist_ok=True)
                path = kept / f"SmolLM2-135M-Instruct.{t}.gguf"
                subprocess.run([str(bin_dir / "llama-quantize"), "--pure", "--imatrix", imatrix.name, str(f16), str(path), PRESET.get(t, t), "2"],
                               env=env, check=True, capture_output=True, cwd=tmp)
                made_by = (f"llama-quantize --pure --imatrix, preset {PRESET.get(t, t)} (llama-imatrix over {TEXT.relative_to(ROOT)}, {IMATRIX_CHUNKS} chunks "
                           f"of {IMATRIX_CTX}) from the F16 of {source.name}; kept as $KILN_MODELS/lowbit/{path.name}")
            elif t in KILN_TYPES:
                path = Path(tmp) / f"smollm2-{t}.gguf"
                subprocess.run([str(Path(args.build) / "tests" / "make_tiny_model"), "--requantize", t, str(source), str(path)],
                               check=True)
                made_by = "kiln (make_tiny_model --requantize)"
            else:
                raise SystemExit(f"unknown type {t}: one of {KILN_TYPES + IQ_TYPES}")
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            types = tensor_types(path)
            if types.get(t, 0) == 0:
                raise SystemExit(f"{path}: no tensor in {t}: {types}")
            data = {"type": t, "source": source.name, "made_by": made_by, "sha256": sha, "tensor_types": types,
                    "oracle": "llama-cpp-python " + llama_cpp.__version__, "prompts": greedy(path)}
            (OUT / f"smollm2_{t}.json").write_text(json.dumps(data) + "\n")


if __name__ == "__main__":
    main()
