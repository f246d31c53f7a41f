#!/usr/bin/env python3
"""Token-by-token comparison of two log-probability files in llama-perplexity's
format (written by `kiln perplexity --kl-divergence-base F` or by
`llama-perplexity --kl-divergence-base F`) over the same tokens.

Where `--kl-divergence` summarises how far one model's distributions are from a
base's, this asks whether two runs of (nearly) the same model differ in a
systematic way or only by scatter: the mean difference of the true token's
negative log-likelihood with its standard error (a systematic difference shows
as a mean several standard errors from 0), the per-token spread, the chunks whose
mean stands out, and how often the most likely token is the same.

Usage: tools/compare_logprob_files.py A.kld B.kld [--chunks N] [--per-chunk]
"""
import argparse
import sys

import numpy as np


def read_file(path, max_chunks=None):
    """(n_ctx, tokens, nll [chunks, scored], argmax [chunks, scored]) of one file."""
    with open(path, "rb") as f:
        if f.read(8) != b"_logits_":
            raise SystemExit(f"{path}: not a log-probability file (no _logits_ header)")
        n_ctx, n_vocab, n_chunk = (int(v) for v in np.frombuffer(f.read(12), dtype=np.int32))
        tokens = np.frombuffer(f.read(4 * n_chunk * n_ctx), dtype=np.int32)
        if tokens.size != n_chunk * n_ctx:
            raise SystemExit(f"{path}: truncated token list")
        nv = 2 * ((n_vocab + 1) // 2) + 4  # two floats (scale, min) then the levels, padded to even
        first = n_ctx // 2
        n_scored = n_ctx - 1 - first
        if max_chunks is not None:
            n_chunk = min(n_chunk, max_chunks)
        nll = np.zeros((n_chunk, n_scored))
        top = np.zeros((n_chunk, n_scored), dtype=np.int64)
        for c in range(n_chunk):
            raw = f.read(2 * n_scored * nv)
            if len(raw) != 2 * n_scored * nv:
                raise SystemExit(f"{path}: chunk {c + 1} is truncated")
            rows = np.frombuffer(raw, dtype=np.uint16).reshape(n_scored, nv)
            head = rows[:, :4].copy().view(np.float32)  # [scale, min_log_prob] per row
            levels = rows[:, 4:4 + n_vocab]
            nxt = tokens[c * n_ctx + first + 1:c * n_ctx + first + 1 + n_scored]
            nll[c] = -(head[:, 0] * levels[np.arange(n_scored), nxt] + head[:, 1])
            top[c] = levels.argmax(axis=1)
    return n_ctx, tokens[:n_chunk * n_ctx], nll, top


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--chunks", type=int, default=None, help="compare only the first N chunks")
    ap.add_argument("--per-chunk", action="store_true", help="print every chunk's mean difference")
    args = ap.parse_args()
    ctx_a, tok_a, nll_a, top_a = read_file(args.a, args.chunks)
    ctx_b, tok_b, nll_b, top_b = read_file(args.b, args.chunks)
    if ctx_a != ctx_b:
        raise SystemExit(f"the files have different chunk sizes ({ctx_a}, {ctx_b})")
    k = min(len(nll_a), len(nll_b))
    n = k * ctx_a
    if not np.array_equal(tok_a[:n], tok_b[:n]):
        raise SystemExit("the files were made from different tokens")
    d = nll_b[:k] - nll_a[:k]
    sd = d.std()
    se = sd / np.sqrt(d.size)
    print(f"chunks {k}, scored tokens {d.size}")
    print(f"mean(nll B - nll A) = {d.mean():+.6f} +- {se:.6f} nats ({d.mean() / se if se else 0:+.2f} standard errors)")
    print(f"  as a perplexity ratio B/A: {np.exp(d.mean()):.5f} (1 standard error: {se * 100:.3f}%)")
    print(f"per-token sd of the difference {sd:.4f} nats; |difference| > 0.1 at {np.mean(np.abs(d) > 0.1) * 100:.1f}% of tokens")
    per_chunk = d.mean(axis=1)
    bound = 3 * sd / np.sqrt(d.shape[1])
    print(f"per-chunk means: sd {per_chunk.std():.5f} (independent tokens would give {sd / np.sqrt(d.shape[1]):.5f}), "
          f"{int(np.sum(np.abs(per_chunk) > bound))} of {k} beyond 3 sd")
    print(f"same most likely token: {np.mean(top_a[:k] == top_b[:k]) * 100:.2f}%")
    if args.per_chunk:
        for c, v in enumerate(per_chunk):
            print(f"[{c + 1}] {v:+.5f}{'  *' if abs(v) > bound else ''}")


if __name__ == "__main__":
    sys.exit(main())
