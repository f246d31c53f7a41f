#!/usr/bin/env python3
"""Golden fixtures for the tokenizer tests (tests/golden/tokenizer/).

    tools/tokenizer_fixtures.py [--only NAME ...]

Writes
  corpus.json              the corpus of tools/tokenizer_corpus.py (text, or hex for invalid UTF-8)
  vocabs/hf-NAME.gguf.xz   vocab-only GGUFs converted from tests/data/shared/hf-tokenizers/NAME
                           by tools/hf_to_gguf_vocab.py (xz: the tests decompress them)
  llamacpp/KEY.json        llama.cpp's answers (llama-cpp-python, vocab_only) for every vocabulary
                           found: ids with add_special+parse_special and with neither, detokenized
                           text, end-of-generation ids, special ids, token attributes
  hf/NAME.json             Hugging Face tokenizers' ids for the hf-tokenizers families
  pre/NAME.json            llama.cpp's ids for every pre-tokenizer family: the committed GPT-2
                           vocabulary with tokenizer.ggml.pre set to NAME (the first name of each
                           row of kiln's table), so every expression is checked, PCRE2 ones included

Vocabularies: tests/data/shared/tokenizer/ggml-vocab-*.gguf (key ggml-vocab-X),
$KILN_VOCABS or ~/.cache/kiln/vocabs/ggml-vocab-*.gguf (tools/fetch_llamacpp_vocabs.sh),
the two installed models (model-smollm2, model-gemma3) and the converted hf-NAME.
Run with the oracle environment (llama-cpp-python, tokenizers, transformers, gguf).
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import lzma
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "tokenizer"
sys.path.insert(0, str(ROOT / "tools"))
from tokenizer_corpus import CORPUS  # noqa: E402

HF_DIR = ROOT / "tests" / "data" / "shared" / "hf-tokenizers"
HF_NAMES = ["llama-3.1", "qwen3", "gpt-oss", "gemma-3"]
# First name of each row of kiln's pre-tokenizer table (src/tokenizer/pretokenizer.cpp);
# the tokenizer test fails for a row without its fixture.
PRE_FAMILIES = [
    "default", "llama3", "dbrx", "jais-2", "deepseek-llm", "deepseek-v3", "spark2_5", "youtu", "deepseek-coder",
    "falcon", "starcoder", "command-r", "gpt-2", "trillion", "jina-v1-en", "gemma4", "sarvam-moe", "whitespace",
    "qwen2", "stablelm2", "qwen35", "bloom", "poro-chat", "chatglm-bpe", "glm4", "viking", "tekken", "chameleon",
    "gpt-4o", "granite-embed-multi-97m", "tiny_aya", "kimi-k2", "superbpe", "bailingmoe", "seed-coder", "ufakzeka",
    "afmoe", "laguna", "exaone-moe", "minicpm5",
]
GPT2_VOCAB = ROOT / "tests" / "data" / "shared" / "tokenizer" / "ggml-vocab-gpt-2.gguf"


def as_bytes(text) -> bytes:
    return text if isinstance(text, bytes) else text.encode("utf-8")


def text_field(b: bytes) -> dict:
    try:
        return {"text": b.decode("utf-8")}
    except UnicodeDecodeError:
        return {"hex": b.hex()}


def write_json(path: Path, obj) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")


def write_corpus() -> None:
    ids = [c[0] for c in CORPUS]
    assert len(ids) == len(set(ids)), "duplicate corpus ids"
    write_json(GOLDEN / "corpus.json", [{"id": cid, **text_field(as_bytes(t))} for cid, t in CORPUS])


def convert_hf_vocabs(tmp: Path) -> dict[str, Path]:
    out = {}
    for name in HF_NAMES:
        gguf_path = tmp / f"hf-{name}.gguf"
        subprocess.run([sys.executable, str(ROOT / "tools" / "hf_to_gguf_vocab.py"), str(HF_DIR / name),
                        str(gguf_path)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        xz_path = GOLDEN / "vocabs" / f"hf-{name}.gguf.xz"
        xz_path.parent.mkdir(parents=True, exist_ok=True)
        data = gguf_path.read_bytes()
        xz_path.write_bytes(lzma.compress(data, preset=9 | lzma.PRESET_EXTREME))
        out[f"hf-{name}"] = gguf_path
    return out


def find_vocabs(hf: dict[str, Path]) -> dict[str, Path]:
    vocabs: dict[str, Path] = {}
    cache = Path(os.environ.get("KILN_VOCABS") or Path.home() / ".cache" / "kiln" / "vocabs")
    for d in (cache, ROOT / "tests" / "data" / "shared" / "tokenizer"):  # committed copies win
        for p in sorted(d.glob("ggml-vocab-*.gguf")):
            vocabs[p.name[: -len(".gguf")]] = p
    models = Path(os.environ.get("KILN_MODELS") or Path.home() / ".cache" / "kiln" / "models")
    for key, fname in (("model-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"), ("model-gemma3", "gemma-3-270m-q4_k_m.gguf")):
        if (models / fname).exists():
            vocabs[key] = models / fname
    vocabs.update(hf)
    return vocabs


def llamacpp_fixture(key: str, path: Path) -> dict:
    import llama_cpp
    from llama_cpp import Llama

    llm = Llama(model_path=str(path), vocab_only=True, verbose=False)
    vocab = llama_cpp.llama_model_get_vocab(llm._model.model)
    n_vocab = llama_cpp.llama_vocab_n_tokens(vocab)

    def detok(ids, unparse_special):
        arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
        size = 256 + 64 * len(ids)
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, size, False, unparse_special)
        assert n >= 0, "detokenize buffer too small"
        return buf.raw[:n]

    cases = []
    for cid, text in CORPUS:
        b = as_bytes(text)
        try:
            special = llm.tokenize(b, add_bos=True, special=True)
            plain = llm.tokenize(b, add_bos=False, special=False)
        except Exception as e:  # llama.cpp refuses some inputs (codepoints past U+10FFFF)
            cases.append({"id": cid, "error": str(e)})
            continue
        case = {"id": cid, "special": special, "plain": plain}
        dec = text_field(detok(plain, False))
        case["decode_plain"] = dec.get("text", dec)
        dec = text_field(detok(special, True))
        case["decode_special"] = dec.get("text", dec)
        cases.append(case)

    attrs = []
    for i in range(n_vocab):
        a = llama_cpp.llama_vocab_get_attr(vocab, i)
        if a != 4:  # LLAMA_TOKEN_ATTR_NORMAL
            attrs.append([i, a])
    eog = [i for i in range(n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, i)]
    return {
        "vocab": key,
        "file": path.name,
        "file_sha256": hashlib.sha256(path.read_bytes()).hexdigest() if path.stat().st_size < (64 << 20) else None,
        "oracle": f"llama-cpp-python {llama_cpp.__version__} (llama.cpp built from source), vocab_only; "
                  "special = tokenize(add_special=True, parse_special=True), plain = (False, False); "
                  "decode_* = llama_detokenize(remove_special=False, unparse_special=False/True)",
        "n_vocab": n_vocab,
        "bos": llama_cpp.llama_vocab_bos(vocab),
        "eos": llama_cpp.llama_vocab_eos(vocab),
        "sep": llama_cpp.llama_vocab_sep(vocab),
        "pad": llama_cpp.llama_vocab_pad(vocab),
        "add_bos": bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
        "add_eos": bool(llama_cpp.llama_vocab_get_add_eos(vocab)),
        "eog": eog,
        "attrs_not_normal": attrs,
        "cases": cases,
    }


def with_pre(src: Path, dst: Path, pre: str) -> None:
    """A copy of a GGUF (no tensors) with tokenizer.ggml.pre replaced."""
    import gguf

    r = gguf.GGUFReader(str(src))
    w = gguf.GGUFWriter(str(dst), str(r.fields["general.architecture"].contents()))
    for name, field in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        if name == "tokenizer.ggml.pre":
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(name, field.contents(), vtype, sub_type=sub)
    w.add_tokenizer_pre(pre)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def tokenize_cases(path: Path, ids: list[str]) -> list[dict] | None:
    """llama.cpp's ids for corpus entries, in a child process: some pre-tokenizers
    make it abort (an assertion on spaces inside BPE pieces). None if the child died."""
    code = (
        "import json, sys\n"
        f"sys.path.insert(0, {str(ROOT / 'tools')!r})\n"
        "from tokenizer_corpus import CORPUS\n"
        "from llama_cpp import Llama\n"
        f"llm = Llama(model_path={str(path)!r}, vocab_only=True, verbose=False)\n"
        f"want = set({ids!r})\n"
        "out = []\n"
        "for cid, text in CORPUS:\n"
        "    if cid not in want: continue\n"
        "    b = text if isinstance(text, bytes) else text.encode()\n"
        "    out.append({'id': cid, 'special': llm.tokenize(b, add_bos=True, special=True),\n"
        "                'plain': llm.tokenize(b, add_bos=False, special=False)})\n"
        "print(json.dumps(out))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def pre_fixture(name: str, tmp: Path) -> dict:
    import llama_cpp

    path = tmp / f"gpt-2-{name}.gguf"
    with_pre(GPT2_VOCAB, path, name)
    ids = [cid for cid, _ in CORPUS]
    cases = tokenize_cases(path, ids)
    if cases is None:
        cases = []
        for cid in ids:
            one = tokenize_cases(path, [cid])
            cases.append(one[0] if one else {"id": cid, "error": "llama.cpp aborts on this input"})
    return {
        "pre": name,
        "vocab": GPT2_VOCAB.name + " with tokenizer.ggml.pre = " + name,
        "oracle": f"llama-cpp-python {llama_cpp.__version__}, vocab_only; special = (add_special, parse_special), "
                  "plain = neither",
        "cases": cases,
    }


def hf_fixture(name: str) -> dict:
    from tokenizers import Tokenizer
    import tokenizers

    tok = Tokenizer.from_str(lzma.open(HF_DIR / name / "tokenizer.json.xz").read().decode("utf-8"))
    cases = []
    for cid, text in CORPUS:
        if isinstance(text, bytes):
            continue  # Hugging Face tokenizers take str only
        cases.append({
            "id": cid,
            "plain": tok.encode(text, add_special_tokens=False).ids,
            "special": tok.encode(text, add_special_tokens=True).ids,
        })
    return {
        "tokenizer": name,
        "oracle": f"tokenizers {tokenizers.__version__}: plain = encode(text, add_special_tokens=False), "
                  "special = encode(text, add_special_tokens=True); added tokens in the text are always parsed",
        "cases": cases,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="*", help="vocabulary keys to regenerate (default: all)")
    a = ap.parse_args()
    write_corpus()
    with tempfile.TemporaryDirectory() as tmp:
        hf = convert_hf_vocabs(Path(tmp))
        vocabs = find_vocabs(hf)
        for key, path in sorted(vocabs.items()):
            if a.only and key not in a.only:
                continue
            print(f"llama.cpp: {key} ({path})", file=sys.stderr)
            write_json(GOLDEN / "llamacpp" / f"{key}.json", llamacpp_fixture(key, path))
        for name in PRE_FAMILIES:
            if a.only and f"pre-{name}" not in a.only:
                continue
            print(f"llama.cpp pre-tokenizer: {name}", file=sys.stderr)
            write_json(GOLDEN / "pre" / f"{name}.json", pre_fixture(name, Path(tmp)))
    for name in HF_NAMES:
        if a.only and f"hf-{name}" not in a.only:
            continue
        print(f"tokenizers: {name}", file=sys.stderr)
        write_json(GOLDEN / "hf" / f"{name}.json", hf_fixture(name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
