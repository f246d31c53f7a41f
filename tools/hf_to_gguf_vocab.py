#!/usr/bin/env python3
"""Convert a Hugging Face tokenizer (tokenizer.json[.xz] + tokenizer_config.json)
into a vocab-only GGUF with the keys llama.cpp's converter writes.

    tools/hf_to_gguf_vocab.py SRC_DIR OUT.gguf [--pre NAME] [--model gpt2|gemma4]
    tools/hf_to_gguf_vocab.py --tekken TEKKEN.json OUT.gguf

SRC_DIR is one of tests/data/shared/hf-tokenizers/*. The pre-tokenizer name is
the one llama.cpp's convert_hf_to_gguf_update.py list assigns to that tokenizer
family (it identifies tokenizers by hashing their output on a probe text; the
families here are known): Llama 3.x -> llama-bpe, Qwen 2/3 -> qwen2,
gpt-oss (o200k) -> gpt-4o. Defaults come from the folder name.

Byte-level BPE tokenizers take the converter's "gpt2" path (get_vocab_base +
SpecialVocab): token types from the added tokens (special, or looking special,
-> control; other added tokens -> user-defined), merges and special ids from
the tokenizer files. Gemma 3 ships no tokenizer.model here, so it takes the path
llama.cpp uses for a tokenizer.json-only Gemma (model "gemma4": BPE over raw
UTF-8 with U+2581 for spaces and <0xHH> byte fallback, which is what the
tokenizer.json describes), with the same token typing.

A Mistral Tekken file (tekken_*.json, as the mistral-common package ships them)
takes llama.cpp's Mistral-format path instead (gguf's MistralVocab, which needs
mistral-common): the tokens with their types and scores, the merges rebuilt
from the tiktoken ranks, pre-tokenizer "tekken", BOS / EOS / UNK / PAD ids, BOS
added.

The GGUF also carries a minimal "llama" hyperparameter set so that llama.cpp
accepts it with vocab_only (for the fixtures in tools/tokenizer_fixtures.py).
Needs the oracle environment (transformers, gguf).
"""
from __future__ import annotations

import argparse
import lzma
import re
import shutil
import sys
import tempfile
from pathlib import Path

import gguf

FAMILIES = {
    "llama-3.1": ("gpt2", "llama-bpe"),
    "qwen3": ("gpt2", "qwen2"),
    "gpt-oss": ("gpt2", "gpt-4o"),
    "gemma-3": ("gemma4", None),
}

# Added tokens that some models forget to flag as special (the converter's list).
def looks_special(text: str) -> bool:
    return (
        text in ("<pad>", "<mask>", "<2mass>", "[@BOS@]")
        or (text.startswith("<|") and text.endswith("|>"))
        or (text.startswith("<\uff5c") and text.endswith("\uff5c>"))
        or (text.startswith("<unused") and text.endswith(">"))
    )


def materialize(src: Path, dst: Path) -> None:
    """Copy the tokenizer files into dst, decompressing tokenizer.json.xz."""
    if (src / "tokenizer.json").is_file():
        shutil.copy(src / "tokenizer.json", dst / "tokenizer.json")
    else:
        with lzma.open(src / "tokenizer.json.xz") as f:
            (dst / "tokenizer.json").write_bytes(f.read())
    shutil.copy(src / "tokenizer_config.json", dst / "tokenizer_config.json")


def vocab_and_types(model_dir: Path, raw_bpe: bool):
    """Token texts and types as get_vocab_base writes them; with raw_bpe (the
    "gemma4" path) texts stay as the vocabulary spells them and <0xHH> tokens are
    byte tokens, as LlamaHfVocab writes them for that path."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(model_dir))
    vocab = tok.get_vocab()
    n = max(vocab.values()) + 1
    reverse = {i: t for t, i in vocab.items()}
    added = tok.get_added_vocab()
    decoder = tok.added_tokens_decoder
    tokens, types = [], []
    for i in range(n):
        if i not in reverse:
            tokens.append(f"[PAD{i}]")
            types.append(gguf.TokenType.UNUSED)
            continue
        text = reverse[i]
        if text in added:
            if not decoder[i].normalized and not raw_bpe:
                # llama.cpp expects control / user-defined tokens pre-normalized
                text = tok.decode(tok.encode(text, add_special_tokens=False))
            if decoder[i].special or looks_special(text):
                types.append(gguf.TokenType.CONTROL)
            else:
                if not raw_bpe:
                    text = text.replace("\u2581", " ")
                types.append(gguf.TokenType.USER_DEFINED)
        elif raw_bpe and re.fullmatch(r"<0x[0-9A-Fa-f]{2}>", text):
            types.append(gguf.TokenType.BYTE)
        else:
            types.append(gguf.TokenType.NORMAL)
        tokens.append(text)
    return tokens, types


def minimal_llama(w, n_vocab: int) -> None:
    # Minimal hyperparameters: llama.cpp reads these even for a vocab-only load.
    w.add_context_length(4096)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(1)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)


def convert_tekken(src: Path, out: Path) -> None:
    """A tekken_*.json as llama.cpp's converter writes a Mistral-format tokenizer."""
    from gguf.vocab import MistralTokenizerType, MistralVocab

    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(src, Path(tmp) / "tekken.json")
        vocab = MistralVocab(Path(tmp))
        assert vocab.tokenizer_type == MistralTokenizerType.tekken
        tokens, scores, types = [], [], []
        for text, score, toktype in vocab.all_tokens():
            tokens.append(text)
            scores.append(score)
            types.append(toktype)
        w = gguf.GGUFWriter(str(out), "llama")
        w.add_name(f"{src.stem} tokenizer")
        minimal_llama(w, len(tokens))
        w.add_tokenizer_model(vocab.gguf_tokenizer_model)
        w.add_tokenizer_pre("tekken")
        w.add_token_merges(vocab.extract_vocab_merges_from_model())
        w.add_bos_token_id(vocab.bos_id)
        w.add_eos_token_id(vocab.eos_id)
        w.add_unk_token_id(vocab.unk_id)
        w.add_pad_token_id(vocab.pad_id)
        w.add_token_list(tokens)
        w.add_token_scores(scores)
        w.add_token_types(types)
        w.add_add_bos_token(True)
        w.add_add_eos_token(False)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()


def convert(src: Path, out: Path, model: str, pre: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmpdir = Path(tmp)
        materialize(src, tmpdir)
        # get_vocab_base respells added tokens through decode() and writes U+2581 in
        # user-defined ones as spaces (for Gemma's SentencePiece path). On the
        # raw-UTF-8 BPE path ("gemma4") the merges produce those tokens spelled
        # with U+2581, so there they keep the vocabulary's spelling.
        tokens, types = vocab_and_types(tmpdir, raw_bpe=model == "gemma4")
        w = gguf.GGUFWriter(str(out), "llama")
        w.add_name(f"{src.name} tokenizer")
        minimal_llama(w, len(tokens))
        w.add_tokenizer_model(model)
        if pre:
            w.add_tokenizer_pre(pre)
        w.add_token_list(tokens)
        w.add_token_types(types)
        if model == "gemma4":
            w.add_add_space_prefix(False)
        special = gguf.SpecialVocab(tmpdir, load_merges=True)
        special.add_to_gguf(w)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--model", choices=["gpt2", "gemma4"])
    ap.add_argument("--pre")
    ap.add_argument("--tekken", action="store_true", help="SRC is a Mistral tekken_*.json (needs mistral-common)")
    a = ap.parse_args()
    if a.tekken:
        convert_tekken(a.src, a.out)
        print(f"{a.out}: {a.out.stat().st_size} bytes", file=sys.stderr)
        return 0
    model, pre = FAMILIES.get(a.src.name, (None, None))
    model = a.model or model
    pre = a.pre or pre
    if model is None:
        print(f"unknown tokenizer family '{a.src.name}': give --model and --pre", file=sys.stderr)
        return 1
    convert(a.src, a.out, model, pre)
    print(f"{a.out}: {a.out.stat().st_size} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
