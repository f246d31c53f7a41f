#!/usr/bin/env bash
# The larger vocab-only GGUFs of llama.cpp's test set (llama-bpe, qwen2, qwen35,
# command-r, gemma-4, nomic-bert-moe, aquila, ...) are too big to commit. The
# llama-cpp-python source distribution on PyPI carries them in
# vendor/llama.cpp/models/; this copies them (with their .inp/.out vectors)
# into $KILN_VOCABS (default ~/.cache/kiln/vocabs), where the tokenizer tests
# look for them. Idempotent.
#
#   tools/fetch_llamacpp_vocabs.sh [PYTHON]     (PYTHON: a python with pip, default .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
VERSION=0.3.36
DEST=${KILN_VOCABS:-$HOME/.cache/kiln/vocabs}
if [ -f "$DEST/.llama-cpp-python-$VERSION" ]; then
  echo "vocabs already in $DEST"
  exit 0
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$PY" -m pip download -q --disable-pip-version-check --no-binary :all: --no-deps \
  -d "$TMP" "llama-cpp-python==$VERSION"
mkdir -p "$DEST"
tar -xzf "$TMP"/llama_cpp_python-$VERSION.tar.gz -C "$TMP" --wildcards "*/vendor/llama.cpp/models/ggml-vocab-*"
cp "$TMP"/llama_cpp_python-$VERSION/vendor/llama.cpp/models/ggml-vocab-* "$DEST"/
touch "$DEST/.llama-cpp-python-$VERSION"
ls -l "$DEST"
