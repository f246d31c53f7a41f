#!/usr/bin/env python3
"""llama.cpp's perplexity (its llama-perplexity tool) for `kiln perplexity`'s tests.

Runs llama-perplexity (built by `tools/setup_oracle.sh --batched-bench` into
.oracle/llama.cpp/build/bin) over tests/data/text/genesis-1-5.txt (King James
Bible, public domain; tools/kjv_text.sh) on both real models and on the tiny
random llama model (build/tests/make_tiny_model writes it byte for byte as the
test does; its sha256 is recorded), and writes each run's chunk estimates and
final estimate to tests/golden/perplexity/NAME.json. Then the KL divergence of
the tiny float llama re-encoded as Q4_0 from the float one (llama-perplexity
--kl-divergence-base / --kl-divergence over 8 chunks of 128) into
tests/golden/perplexity/kl_tiny_q4_0.json.

llama-perplexity runs with -fa off: its default on the CPU ("auto") turns flash
attention on, a different order and precision of the attention math from the
path kiln follows (llama.cpp's non-flash graph, which the logit fixtures of
tools/model_fixtures.py use too); docs/models.md gives the spread between the two.

Usage: tools/perplexity_fixtures.py [--build build] [--llama-bin DIR]
Long check: --text FILE --out DIR writes the same for another text (the full
book of Genesis: tools/kjv_text.sh 'Genesis1:1-50:26').
"""
import argparse
import hashlib
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))
TEXT = ROOT / "tests" / "data" / "text" / "genesis-1-5.txt"


def llama_perplexity(bin_dir, model, text, n_ctx):
    env = dict(os.environ, LD_LIBRARY_PATH=str(bin_dir))
    out = subprocess.run([str(bin_dir / "llama-perplexity"), "-m", str(model), "-f", str(text), "-c", str(n_ctx),
                          "-b", str(n_ctx), "-t", "2", "-fa", "off"], env=env, capture_output=True, text=True, check=True)
    log = out.stdout + out.stderr
    estimates = [float(v) for v in re.findall(r"\[\d+\]([0-9.]+),", log)]
    final = re.search(r"Final estimate: PPL = ([0-9.]+) \+/- ([0-9.]+)", log)
    if not estimates or not final:
        raise SystemExit("no estimates in llama-perplexity's output:\n" + log[-2000:])
    return {"n_ctx": n_ctx, "chunks": len(estimates), "estimates": estimates, "ppl": float(final.group(1)),
            "ppl_stderr": float(final.group(2))}


KL_CHUNKS = 8


def llama_kl(bin_dir, base_model, model, text, n_ctx, tmp):
    env = dict(os.environ, LD_LIBRARY_PATH=str(bin_dir))
    base_file = Path(tmp) / "base.kld"
    common = ["-c", str(n_ctx), "-b", str(n_ctx), "-t", "2", "-fa", "off", "--chunks", str(KL_CHUNKS), "--kl-divergence-base", str(base_file)]
    subprocess.run([str(bin_dir / "llama-perplexity"), "-m", str(base_model), "-f", str(text), *common], env=env,
                   capture_output=True, check=True)
    out = subprocess.run([str(bin_dir / "llama-perplexity"), "-m", str(model), *common, "--kl-divergence"], env=env,
                         capture_output=True, text=True, check=True)
    log = out.stdout + out.stderr

    def value(label):
        m = re.search(re.escape(label) + r"\s*:\s*(-?[0-9.]+)", log)
        if not m:
            raise SystemExit(f"no '{label}' in llama-perplexity's output:\n" + log[-3000:])
        return float(m.group(1))

    return {"n_ctx": n_ctx, "chunks": KL_CHUNKS, "ppl": value("Mean PPL(Q)"), "ppl_base": value("Mean PPL(base)"),
            "ln_ppl_ratio": value("Mean ln(PPL(Q)/PPL(base))"), "kld": value("Mean    KLD"),
            "kld_99": value("99.0%   KLD"), "kld_median": value("Median  KLD"),
            "same_top": value("Same top p") / 100}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--llama-bin", default=str(ROOT / ".oracle" / "llama.cpp" / "build" / "bin"))
    ap.add_argument("--text", default=str(TEXT))
    ap.add_argument("--out", default=str(ROOT / "tests" / "golden" / "perplexity"))
    args = ap.parse_args()
    bin_dir, out = Path(args.llama_bin), Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    smollm2 = MODELS / "SmolLM2-135M-Instruct.Q4_1.gguf"
    with tempfile.TemporaryDirectory() as tmp:
        tiny = Path(tmp) / "tiny_llama.gguf"
        subprocess.run([str(Path(args.build) / "tests" / "make_tiny_model"), "llama", str(smollm2), str(tiny)], check=True)
        runs = [("smollm2", smollm2, 256), ("gemma3", MODELS / "gemma-3-270m-q4_k_m.gguf", 256), ("tiny_llama", tiny, 128)]
        for name, model, n_ctx in runs:
            r = llama_perplexity(bin_dir, model, Path(args.text), n_ctx)
            r["text"] = os.path.relpath(args.text, ROOT)
            if name == "tiny_llama":
                r["sha256"] = hashlib.sha256(tiny.read_bytes()).hexdigest()
            (out / f"{name}.json").write_text(json.dumps(r, indent=1) + "\n")
            print(f"{name}: PPL {r['ppl']} +/- {r['ppl_stderr']} over {r['chunks']} chunks of {n_ctx}")
        tiny_float, tiny_q = Path(tmp) / "tiny_float.gguf", Path(tmp) / "tiny_q4_0.gguf"
        make = str(Path(args.build) / "tests" / "make_tiny_model")
        subprocess.run([make, "llama@float", str(smollm2), str(tiny_float)], check=True)
        subprocess.run([make, "--requantize", "Q4_0", str(tiny_float), str(tiny_q)], check=True, capture_output=True)
        r = llama_kl(bin_dir, tiny_float, tiny_q, Path(args.text), 128, tmp)
        r["text"] = os.path.relpath(args.text, ROOT)
        r["sha256_base"] = hashlib.sha256(tiny_float.read_bytes()).hexdigest()
        r["sha256"] = hashlib.sha256(tiny_q.read_bytes()).hexdigest()
        (out / "kl_tiny_q4_0.json").write_text(json.dumps(r, indent=1) + "\n")
        print(f"kl_tiny_q4_0: KLD {r['kld']} same top {r['same_top']}")


if __name__ == "__main__":
    main()
