#!/usr/bin/env bash
# Installs the oracle tools (not needed by CI): the gguf package, jinja2, Hugging
# Face tokenizers/transformers, the openai client, and llama-cpp-python built from
# source with native CPU flags (for fair speed comparisons). Reuses .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r tools/requirements-oracle.txt
if ! .venv/bin/python -c "import llama_cpp" 2>/dev/null || [ "${REBUILD_LLAMA:-0}" = 1 ]; then
  echo "building llama-cpp-python from source (native CPU flags); this takes a while"
  CMAKE_ARGS="-DGGML_NATIVE=ON" .venv/bin/pip install --disable-pip-version-check --no-binary llama-cpp-python \
    --force-reinstall --no-deps --no-cache-dir llama-cpp-python==0.3.36
fi
.venv/bin/python -c "import gguf, jinja2, tokenizers, llama_cpp; print('oracle tools ready: llama-cpp-python', llama_cpp.__version__)"
