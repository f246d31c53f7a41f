#!/usr/bin/env python3
"""Speculative decoding side by side: kiln --spec ngram / auto / off and, when
given, llama.cpp's lookup decoding (`llama-lookup`, built from the llama.cpp
sources of the llama-cpp-python source distribution), same file, threads,
prompt and greedy decoding; and with a draft model: kiln --spec draft / auto
--draft-model / off and llama.cpp's `llama-speculative`, same target and draft.

    bench/spec_vs_llamacpp.py [--rounds 5] [-n 160] [-t 2] [--kiln build/kiln]
                              [--lookup PATH/llama-lookup] [--speculative PATH/llama-speculative]
                              [--tasks edit,free,gemma_edit,summary,draft_edit,draft_free]
                              [--variants off,ngram,auto] [--draft-target F16.gguf]

Tasks (prompts below, each in its model's chat format, given to both engines as
raw text with special tokens parsed):
  edit        SmolLM2: rewrite a given text with small changes (the reply copies its input)
  free        SmolLM2: free text (a story): --spec auto must cost <= 3% against off
  summary     SmolLM2: summarize a given text (reported only)
  gemma_edit  Gemma 3 270M: the edit task (reported only)
  draft_edit  SmolLM2 as F16 (made by `kiln quantize` unless --draft-target), drafted for by the
              installed SmolLM2 Q4_1: the edit task
  draft_free  the same pair: free text
The draft tasks run kiln --spec off, draft and auto (both with --draft-model) and,
with --speculative, llama-speculative (--spec-draft-n-max as --draft-max).
Each round runs every variant once, in an order that rotates from round to round;
the table gives medians over rounds of decode speed (generated tokens over decode
wall time, drafting included) and of the per-round ratios to kiln --spec off, and
kiln's acceptance rate (accepted / drafted tokens) and the share of steps that
verified a draft. The machine may be shared: only the interleaved ratios mean much.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS_DIR = os.environ.get("KILN_MODELS", os.path.expanduser("~/.cache/kiln/models"))
SMOLLM2 = os.path.join(MODELS_DIR, "SmolLM2-135M-Instruct.Q4_1.gguf")
GEMMA3 = os.path.join(MODELS_DIR, "gemma-3-270m-q4_k_m.gguf")

PASSAGE = (
    "The old lighthouse stood at the end of the harbour wall. Every evening the keeper climbed the "
    "hundred and twelve steps to light the lamp, and every morning he climbed them again to put it out. "
    "The town below had grown around the harbour: first the fish market, then the chapel, then the rows "
    "of narrow houses painted blue, yellow and white. In winter the storms came from the north and the "
    "waves broke over the wall, and the keeper would sit by the lamp all night, listening to the wind. "
    "In summer the tourists came, and the keeper sold them postcards of the lighthouse and told them "
    "stories about the ships that had been lost on the rocks before the light was built. When the keeper "
    "finally retired, the town decided to keep the light burning, and a machine now turns it on at dusk."
)
EDIT = ("Rewrite the following text, replacing \"keeper\" with \"guardian\" and changing nothing else. "
        "Give only the rewritten text.\n\n" + PASSAGE)
SUMMARY = "Summarize the following text in a few sentences.\n\n" + PASSAGE
FREE = "Write a long story about a girl who builds a robot out of old bicycle parts."


def chatml(user):
    return f"<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


def gemma_turns(user):
    return f"<start_of_turn>user\n{user}<end_of_turn>\n<start_of_turn>model\n"


TASKS = {
    "edit": (SMOLLM2, chatml(EDIT)),
    "free": (SMOLLM2, chatml(FREE)),
    "summary": (SMOLLM2, chatml(SUMMARY)),
    "gemma_edit": (GEMMA3, gemma_turns(EDIT)),
    "draft_edit": (None, chatml(EDIT)),  # the model: the F16 target
    "draft_free": (None, chatml(FREE)),
}

GEN = re.compile(r"generated (\d+) tokens in ([0-9.]+) s")
SPEC = re.compile(r"drafted (\d+) tokens, accepted (\d+) .*; (\d+) of (\d+) steps")
LOOKUP_GEN = re.compile(r"decoded\s+(\d+) tokens in\s+([0-9.]+) seconds")
LOOKUP_DRAFTED = re.compile(r"n_drafted\s*=\s*(\d+)")
LOOKUP_ACCEPT = re.compile(r"n_accept\s*=\s*(\d+)")


def run_kiln(args, model, prompt, mode, draft=None):
    cmd = [args.kiln, "run", "-m", model, "-p", prompt, "-n", str(args.n), "--temp", "0", "-t", str(args.threads),
           "--spec", mode, "--draft-max", str(args.draft_max), "-v"]
    if draft:
        cmd += ["--draft-model", draft]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    g = GEN.search(r.stderr)
    s = SPEC.search(r.stderr)
    out = {"tokens": int(g.group(1)), "seconds": float(g.group(2)), "text": r.stdout}
    if s:
        out.update(drafted=int(s.group(1)), accepted=int(s.group(2)), draft_steps=int(s.group(3)), steps=int(s.group(4)))
    return out


def run_lookup(args, model, prompt):
    cmd = [args.lookup, "-m", model, "-p", prompt, "-n", str(args.n), "--temp", "0", "-t", str(args.threads),
           "--spec-draft-n-max", str(args.draft_max), "-c", "2048"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    log = r.stdout + r.stderr
    g = LOOKUP_GEN.search(log)
    if r.returncode != 0 or not g:
        raise RuntimeError("llama-lookup failed:\n" + log[-2000:])
    d, a = LOOKUP_DRAFTED.search(log), LOOKUP_ACCEPT.search(log)
    return {"tokens": int(g.group(1)), "seconds": float(g.group(2)),
            "drafted": int(d.group(1)) if d else 0, "accepted": int(a.group(1)) if a else 0}


def run_speculative(args, model, draft, prompt):
    cmd = [args.speculative, "-m", model, "-md", draft, "-p", prompt, "-n", str(args.n), "--temp", "0",
           "-t", str(args.threads), "--spec-draft-n-max", str(args.draft_max), "-c", "2048"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    log = r.stdout + r.stderr
    g = LOOKUP_GEN.search(log)
    if r.returncode != 0 or not g:
        raise RuntimeError("llama-speculative failed:\n" + log[-2000:])
    d, a = LOOKUP_DRAFTED.search(log), LOOKUP_ACCEPT.search(log)
    return {"tokens": int(g.group(1)), "seconds": float(g.group(2)),
            "drafted": int(d.group(1)) if d else 0, "accepted": int(a.group(1)) if a else 0}


def f16_target(args):
    """SmolLM2 re-encoded as F16 by kiln quantize (the draft tasks' target)."""
    if args.draft_target:
        return args.draft_target
    path = os.path.join(tempfile.gettempdir(), "spec-bench-smollm2-f16.gguf")
    if not os.path.exists(path):
        subprocess.run([args.kiln, "quantize", "--allow-requantize", SMOLLM2, path, "F16"], check=True,
                       capture_output=True)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-n", type=int, default=160)
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--draft-max", type=int, default=8)
    ap.add_argument("--kiln", default=os.path.join(ROOT, "build", "kiln"))
    ap.add_argument("--lookup", default="", help="llama.cpp's llama-lookup binary (optional)")
    ap.add_argument("--tasks", default="edit,free,gemma_edit,summary")
    ap.add_argument("--variants", default="off,ngram,auto", help="kiln's --spec values to run (off always runs)")
    ap.add_argument("--speculative", default="", help="llama.cpp's llama-speculative binary (optional)")
    ap.add_argument("--draft-target", default="", help="the draft tasks' target (default: SmolLM2 as F16)")
    args = ap.parse_args()
    print(f"| task | variant | t/s (median) | x kiln off (median of rounds) | acceptance | steps verifying a draft |")
    print("|---|---|---:|---:|---:|---:|")
    for task in args.tasks.split(","):
        model, prompt = TASKS[task]
        if not os.path.exists(SMOLLM2 if model is None else model):
            print(f"skipping {task}: {model or SMOLLM2} is not installed", file=sys.stderr)
            continue
        draft = None
        if model is None:  # a draft task
            model, draft = f16_target(args), SMOLLM2
            kiln_variants = ["off", "draft", "auto"]
            variants = kiln_variants + (["llama-speculative"] if args.speculative else [])
        else:
            kiln_variants = ["off"] + [v for v in args.variants.split(",") if v != "off"]
            variants = kiln_variants + (["llama-lookup"] if args.lookup else [])

        def run(v):
            if v == "llama-lookup":
                return run_lookup(args, model, prompt)
            if v == "llama-speculative":
                return run_speculative(args, model, draft, prompt)
            return run_kiln(args, model, prompt, v, draft if v != "off" else None)

        res = {v: [] for v in variants}
        for rnd in range(args.rounds):
            order = variants[rnd % len(variants):] + variants[:rnd % len(variants)]
            for v in order:
                res[v].append(run(v))
        # Lossless: every kiln variant printed the same text.
        texts = {r["text"] for v in kiln_variants for r in res[v]}
        if len(texts) != 1:
            print(f"{task}: kiln's texts differ between variants", file=sys.stderr)
            sys.exit(1)
        off_tps = [r["tokens"] / r["seconds"] for r in res["off"]]
        for v in variants:
            tps = [r["tokens"] / r["seconds"] for r in res[v]]
            ratio = statistics.median(t / o for t, o in zip(tps, off_tps))
            drafted = sum(r.get("drafted", 0) for r in res[v])
            accepted = sum(r.get("accepted", 0) for r in res[v])
            acc = f"{100.0 * accepted / drafted:.1f}%" if drafted else "-"
            steps = sum(r.get("steps", 0) for r in res[v])
            share = f"{100.0 * sum(r.get('draft_steps', 0) for r in res[v]) / steps:.0f}%" if steps and drafted else "-"
            print(f"| {task} ({res[v][0]['tokens']} tokens) | {v} | {statistics.median(tps):.1f} | {ratio:.2f} | {acc} | {share} |",
                  flush=True)


if __name__ == "__main__":
    main()
