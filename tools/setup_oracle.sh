#!/usr/bin/env bash
# Installs the oracle tools (not needed by CI): the gguf package, jinja2, Hugging
# Face tokenizers/transformers, the openai client, and llama-cpp-python built from
# source with native CPU flags (for fair speed comparisons). Reuses .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --disable-pip-version-check -r tools/requirements-oracle.txt
# XGrammar (structured-output reference) without its torch + CUDA dependency (several GB),
# which only its GPU kernels use; bench/constrain_vs_engines.py stands in for torch.
.venv/bin/pip install -q --disable-pip-version-check --no-deps xgrammar==0.2.8
if ! .venv/bin/python -c "import llama_cpp" 2>/dev/null || [ "${REBUILD_LLAMA:-0}" = 1 ]; then
  echo "building llama-cpp-python from source (native CPU flags); this takes a while"
  CMAKE_ARGS="-DGGML_NATIVE=ON" .venv/bin/pip install --disable-pip-version-check --no-binary llama-cpp-python \
    --force-reinstall --no-deps --no-cache-dir llama-cpp-python==0.3.36
fi
.venv/bin/python -c "import gguf, jinja2, tokenizers, llama_cpp; print('oracle tools ready: llama-cpp-python', llama_cpp.__version__)"

# --batched-bench: llama.cpp's llama-batched-bench, llama-bench, llama-server, llama-perplexity, llama-quantize,
# llama-imatrix, llama-lookup and llama-speculative built natively from the
# llama.cpp sources in the same llama-cpp-python source distribution, into
# .oracle/llama.cpp/build/bin (bench/batched_vs_llamacpp.py, bench/serve_vs_llamacpp.py,
# tools/perplexity_fixtures.py, tools/imatrix_fixtures.py, tools/lowbit_fixtures.py, bench/spec_vs_llamacpp.py).
if [ "${1:-}" = --batched-bench ]; then
  src=.oracle/llama.cpp
  if [ ! -x $src/build/bin/llama-batched-bench ] || [ ! -x $src/build/bin/llama-server ] || [ ! -x $src/build/bin/llama-perplexity ] \
     || [ ! -x $src/build/bin/llama-quantize ] || [ ! -x $src/build/bin/llama-imatrix ] \
     || [ ! -x $src/build/bin/llama-lookup ] || [ ! -x $src/build/bin/llama-speculative ]; then
    mkdir -p .oracle
    .venv/bin/pip download -q --disable-pip-version-check --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d .oracle
    rm -rf $src && mkdir -p $src
    tar xzf .oracle/llama_cpp_python-0.3.36.tar.gz -C .oracle
    cp -r .oracle/llama_cpp_python-0.3.36/vendor/llama.cpp/. $src/
    cmake -S $src -B $src/build -G Ninja -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF
    cmake --build $src/build --target llama-batched-bench llama-bench llama-server llama-perplexity llama-quantize llama-imatrix \
      llama-lookup llama-speculative
  fi
  echo "llama.cpp tools: $src/build/bin"
  exit 0
fi

# --avx2: a second llama-cpp-python in .venv-avx2 built for AVX2 + FMA + F16C only (no
# AVX-512, no AVX-VNNI), for the side by side on the instruction set of CPUs without AVX-512:
#   KILN_ISA=avx2-novnni .venv-avx2/bin/python bench/vs_llamacpp.py
# --avx-vnni: the same plus AVX-VNNI (Intel's AVX2-only desktop CPUs since Alder Lake) in
# .venv-avxvnni:
#   KILN_ISA=avx2 .venv-avxvnni/bin/python bench/vs_llamacpp.py
if [ "${1:-}" = --avx2 ] || [ "${1:-}" = --avx-vnni ]; then
  venv=.venv-avx2 vnni=OFF
  [ "$1" = --avx-vnni ] && venv=.venv-avxvnni vnni=ON
  [ -x $venv/bin/python ] || python3 -m venv $venv
  $venv/bin/pip install -q --disable-pip-version-check numpy typing_extensions diskcache jinja2
  if ! $venv/bin/python -c "import llama_cpp" 2>/dev/null || [ "${REBUILD_LLAMA:-0}" = 1 ]; then
    echo "building llama-cpp-python for AVX2 (AVX-VNNI $vnni); this takes a while"
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
-DGGML_AVX512=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_BF16=OFF -DGGML_AVX_VNNI=$vnni" \
      $venv/bin/pip install --disable-pip-version-check --no-binary llama-cpp-python --force-reinstall --no-deps \
      --no-cache-dir llama-cpp-python==0.3.36
  fi
  $venv/bin/python -c "import llama_cpp; print('AVX2 llama.cpp:', llama_cpp.llama_print_system_info().decode())"
fi
