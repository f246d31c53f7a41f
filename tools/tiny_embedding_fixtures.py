#!/usr/bin/env python3
"""llama.cpp's pooled embeddings for kiln's tiny random encoders.

The encoders are written by kiln's own GGUF writer (build/tests/make_tiny_encoder,
fixed seed, the bert-bge WordPiece vocabulary of the shared test data copied
in, or for the XLM-R one llama.cpp's nomic-bert-moe Unigram vocabulary from
$KILN_VOCABS: tools/fetch_llamacpp_vocabs.sh); the tests rebuild the same files byte for byte and compare with these
vectors. Per encoder: the model file's sha256, and per text of
`make_tiny_encoder --list` llama.cpp's tokens (CLS ... SEP) and its pooled,
unnormalized output (llama-cpp-python `embed(normalize=False)`: the mean of the
token vectors, or for rank pooling the classifier's score), each text alone
and all texts in one batch (different lengths, separate sequences). For a
reranker (rank pooling) also llama.cpp's scores of query / document pairs:
fed as kiln's Embedder::tokenize_pair joins them ([CLS] q [SEP] d [SEP], as
Hugging Face does; llama.cpp's graph gives every token type 0) and as
llama-server's /v1/rerank joins them (format_prompt_rerank: BOS q, EOS if the
vocabulary adds one, SEP if it adds one, d, EOS if it adds one).

The decoder-based ones (qwen3_embed, llama-embed, qwen3_rerank, gemma-embedding:
tiny decoders rewritten with an embedding file's keys, Qwen2 / Llama 3 /
llama-spm vocabularies from $KILN_VOCABS; gemma-embedding's pooled vector is
after its dense_2 / dense_3 projections) are scored the same way; a decoder reranker's pairs are its file's
rerank prompt with {query} and {document} filled in, as llama-server's
format_prompt_rerank writes them (kiln's tokenize_pair does the same). Rank
scores keep every classifier label (llama_model_n_cls_out: a Qwen3 reranker's
softmaxed yes / no).

Usage: tools/tiny_embedding_fixtures.py [--build build] [--only NAME ...]
"""
import argparse
import hashlib
import json
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import llama_cpp
from llama_cpp import Llama

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "embedding" / "tiny"
VOCAB = ROOT.parent / "shared" / "testdata" / "tokenizer" / "ggml-vocab-bert-bge.gguf"
QUERY = "which animal is fast?"
DOCUMENTS = ["The cheetah is the fastest land animal.", "a slow tortoise", "Paris is the capital of France.", "x"]


def score_tokens(llm, tokens, width):
    """llama.cpp's pooled output of one token sequence (sequence 0)."""
    llm._batch.reset()
    llm._batch.add_sequence(tokens, 0, True)
    llm._ctx.kv_cache_clear()
    llm._ctx.decode(llm._batch)
    out = llama_cpp.llama_get_embeddings_seq(llm._ctx.ctx, 0)
    vals = [float(out[i]) for i in range(width)]
    llm._batch.reset()
    llm._ctx.kv_cache_clear()
    return vals


def pair_fixture(llm):
    vocab = llama_cpp.llama_model_get_vocab(llm.model)
    bos, eos, sep = (llama_cpp.llama_vocab_bos(vocab), llama_cpp.llama_vocab_eos(vocab), llama_cpp.llama_vocab_sep(vocab))
    add_bos, add_eos, add_sep = (llama_cpp.llama_vocab_get_add_bos(vocab), llama_cpp.llama_vocab_get_add_eos(vocab),
                                 llama_cpp.llama_vocab_get_add_sep(vocab))
    if eos < 0:
        eos = sep
    q = llm.tokenize(QUERY.encode(), add_bos=False, special=False)
    kiln_tokens, server_tokens = [], []
    for d in DOCUMENTS:
        dt = llm.tokenize(d.encode(), add_bos=False, special=False)
        # Embedder::tokenize_pair: a vocabulary that closes texts with EOS (XLM-R) as
        # Hugging Face's RoBERTa tokenizers pair them, <s> q </s></s> d </s>.
        if add_eos:
            kiln_tokens.append([bos] + q + [eos, sep] + dt + [eos])
        else:
            kiln_tokens.append([bos] + q + [sep] + dt + [sep])
        server_tokens.append(([bos] if add_bos else []) + q + ([eos] if add_eos else []) + ([sep] if add_sep else []) + dt +
                             ([eos] if add_eos else []))
    return {"query": QUERY, "documents": DOCUMENTS,
            "kiln_tokens": kiln_tokens, "kiln_scores": [score_tokens(llm, t, 1)[0] for t in kiln_tokens],
            "server_tokens": server_tokens, "server_scores": [score_tokens(llm, t, 1)[0] for t in server_tokens]}


def template_pair_fixture(llm, template):
    """A decoder reranker's pairs as llama-server's format_prompt_rerank writes them:
    the file's rerank prompt with {query} and {document} filled in, special tokens
    parsed, none added (kiln's Embedder::tokenize_pair does the same)."""
    tokens = []
    for d in DOCUMENTS:
        text = template.replace("{query}", QUERY).replace("{document}", d)
        tokens.append(llm.tokenize(text.encode(), add_bos=False, special=True))
    scores = [score_tokens(llm, t, 1)[0] for t in tokens]
    return {"query": QUERY, "documents": DOCUMENTS, "kiln_tokens": tokens, "kiln_scores": scores,
            "server_tokens": tokens, "server_scores": scores}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=str(ROOT / "build"))
    ap.add_argument("--vocab", default=str(VOCAB))
    ap.add_argument("--only", nargs="*", help="these encoders only (default: all)")
    args = ap.parse_args()
    tool = Path(args.build) / "tests" / "make_tiny_encoder"
    listing = subprocess.run([str(tool), "--list"], check=True, capture_output=True, text=True).stdout.split("\n")
    cut = listing.index("texts")
    names = [line.split("\t")[0] for line in listing[:cut]]
    vocabs = {line.split("\t")[0]: line.split("\t")[2] for line in listing[:cut]}
    texts = [t for t in listing[cut + 1:] if t]
    OUT.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            if args.only and name not in args.only:
                continue
            path = Path(tmp) / f"tiny-{name}.gguf"
            vocab = args.vocab if vocabs[name].endswith("ggml-vocab-bert-bge.gguf") else vocabs[name]
            subprocess.run([str(tool), name, vocab, str(path)], check=True)
            sha = hashlib.sha256(path.read_bytes()).hexdigest()
            llm = Llama(model_path=str(path), embedding=True, n_ctx=512, n_batch=512, n_seq_max=8,
                        verbose=False, n_threads=2)
            rank = llm.pooling_type() == 4
            # rank pooling: one score per classifier label (a Qwen3 reranker's yes / no, softmaxed)
            width = llama_cpp.llama_model_n_cls_out(llm.model) if rank else llm.n_embd()

            def pooled(vs):
                return [list(map(float, v[:width])) for v in vs]

            tokens = [llm.tokenize(t.encode(), add_bos=True, special=False) for t in texts]
            alone = [pooled([llm.embed(t, normalize=False)])[0] for t in texts]
            batch = pooled(llm.embed(texts, normalize=False))
            data = {"name": name, "sha256": sha, "pooling": llm.pooling_type(), "texts": texts,
                    "tokens": tokens, "alone": alone, "batch": batch}
            arch = llm.metadata.get("general.architecture", "")
            causal = llm.metadata.get(f"{arch}.attention.causal", "true") == "true"
            template = llm.metadata.get("tokenizer.chat_template.rerank")
            if rank and template:
                data["pairs"] = template_pair_fixture(llm, template)
            elif rank and not causal:  # an encoder's [CLS] q [SEP] d [SEP]
                data["pairs"] = pair_fixture(llm)
            (OUT / f"{name}.json").write_text(json.dumps(data) + "\n")
            a, b = np.array(alone), np.array(batch)
            print(f"{name}: sha256 {sha[:16]}..., batch vs alone max diff {np.abs(a - b).max():.2e}")
            del llm


if __name__ == "__main__":
    main()
