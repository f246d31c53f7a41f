#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan + UBSan) and runs each for SECONDS
# (default 30: the CI smoke; use 600+ for a real campaign). Crashes land in
# build-fuzz/artifacts/ and fail the run.
#   fuzz/run.sh [SECONDS] [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_TARGET=${1:-30}
shift || true
BUILD=build-fuzz
if [ ! -f "$BUILD/build.ninja" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DKILN_FUZZ=ON -DKILN_TESTS=OFF -DKILN_BENCH=OFF >/dev/null
fi
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  mapfile -t TARGETS < <(sed -n 's/^kiln_fuzz_target(\([a-z_0-9]*\).*/\1/p' fuzz/CMakeLists.txt)
fi
cmake --build "$BUILD" --target "${TARGETS[@]}"
mkdir -p "$BUILD/artifacts"
for t in "${TARGETS[@]}"; do
  corpus="$BUILD/corpus-$t"
  mkdir -p "$corpus"
  seeds="fuzz/seeds/${t#fuzz_}"
  [ -d "$seeds" ] || seeds=""
  extra=()
  if [ "$t" = fuzz_jinja ]; then  # the real templates too, and the syntax dictionary
    seeds="$seeds tests/data/shared/templates"
    extra=(-dict=fuzz/jinja.dict)
  fi
  echo "== $t for ${SECONDS_PER_TARGET}s"
  log="$BUILD/$t.log"
  rc=0
  "$BUILD/fuzz/$t" "$corpus" $seeds -max_total_time="$SECONDS_PER_TARGET" -max_len=8192 -rss_limit_mb=2048 \
    -timeout=10 -artifact_prefix="$BUILD/artifacts/$t-" -print_final_stats=1 "${extra[@]}" >"$log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then  # the whole report: the stack and the input that failed
    sed -n '/==[0-9]*==\|ERROR:\|runtime error\|terminate called/,$p' "$log" | head -n 200
    echo "== $t failed (exit $rc); log in $log"
    exit "$rc"
  fi
  tail -n 12 "$log"
done
