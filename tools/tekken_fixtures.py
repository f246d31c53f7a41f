#!/usr/bin/env python3
"""Tekken (Mistral's tiktoken-style tokenizer) fixtures for the tokenizer tests.

    tools/tekken_fixtures.py

Takes the tekken_240911.json that the PyPI package mistral-common ships (Mistral
Nemo's / Mistral Small 3's 131k vocabulary), converts it with
tools/hf_to_gguf_vocab.py --tekken (llama.cpp's Mistral-format path) and writes
  vocabs/hf-tekken.gguf.xz   the vocab-only GGUF (xz: the tests decompress it)
  hf/tekken.json             mistral-common's own ids (Tekkenizer.encode) for the corpus:
                             plain = no BOS, special = with BOS; corpus texts that spell one
                             of its special tokens are left out (mistral-common never parses
                             them from text, Hugging Face-mode kiln and the test always do)
  llamacpp/hf-tekken.json    llama.cpp's answers on the GGUF, as tools/tokenizer_fixtures.py
Needs the oracle environment plus mistral-common (tools/requirements-oracle.txt).
"""
from __future__ import annotations

import json
import lzma
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from tokenizer_corpus import CORPUS  # noqa: E402
from tokenizer_fixtures import GOLDEN, llamacpp_fixture, write_json  # noqa: E402

TEKKEN_FILE = "tekken_240911.json"


def main() -> int:
    import mistral_common
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    src = Path(mistral_common.__file__).parent / "data" / TEKKEN_FILE
    tok = Tekkenizer.from_file(str(src))
    specials = [tok.id_to_piece(i) for i in range(tok.num_special_tokens)]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "hf-tekken.gguf"
        subprocess.run([sys.executable, str(ROOT / "tools" / "hf_to_gguf_vocab.py"), "--tekken", str(src), str(path)],
                       check=True, stdout=subprocess.DEVNULL)
        xz = GOLDEN / "vocabs" / "hf-tekken.gguf.xz"
        xz.write_bytes(lzma.compress(path.read_bytes(), preset=9 | lzma.PRESET_EXTREME))
        cases = []
        for cid, text in CORPUS:
            if isinstance(text, bytes) or any(s in text for s in specials):
                continue
            plain = tok.encode(text, bos=False, eos=False)
            cases.append({"id": cid, "plain": plain, "special": [tok.bos_id] + plain})
        write_json(GOLDEN / "hf" / "tekken.json", {
            "tokenizer": f"tekken ({TEKKEN_FILE})",
            "oracle": f"mistral-common {mistral_common.__version__}: plain = Tekkenizer.encode(text, bos=False, eos=False), "
                      "special = with bos=True; texts spelling a special token left out",
            "cases": cases,
        })
        write_json(GOLDEN / "llamacpp" / "hf-tekken.json", llamacpp_fixture("hf-tekken", path))
    print(f"{len(cases)} corpus texts", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
