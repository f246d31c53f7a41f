#!/usr/bin/env bash
# In-process A/B of the AVX2 attention kernels (see attention_ab.cpp): builds
# COMMIT's src/compute/kernels/avx2_ops.cpp (with that commit's avx2_common.h)
# under the namespace kiln::avx2_old, links it beside the working tree's
# kiln_compute library (built first in $KILN_BUILD, default build/), and runs
# the comparison. Same compiler flags as the Release library's.
#
#   bench/attention_ab/run.sh COMMIT [depth [heads [reps [f16|f32|q8_0 [rows]]]]]
#   e.g. bench/attention_ab/run.sh HEAD 32768 4 3 q8_0
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,9p' "$0"; exit 2; }
root=$(git rev-parse --show-toplevel)
build=${KILN_BUILD:-$root/build}
commit=$1
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git -C "$root" show "$commit:src/compute/kernels/avx2_ops.cpp" > "$work/old_ops.cpp"
git -C "$root" show "$commit:src/compute/kernels/avx2_common.h" > "$work/avx2_common_old.h"
sed -i 's#"compute/kernels/avx2_common.h"#"avx2_common_old.h"#' "$work/old_ops.cpp"
# The old file's ALiBi calls (renamed with it) go to the scalar reference.
cat >> "$work/old_ops.cpp" <<'CPP'
namespace kiln::avx2_old {
void alibi_bias(float* s, int64_t n, int64_t first, int64_t q_pos, float slope) { kiln::alibi_bias(s, n, first, q_pos, slope); }
}
CPP
ninja -C "$build" src/libkiln_compute.a src/libkiln_quant.a src/libkiln_gguf.a > /dev/null
flags=(-std=c++20 -O3 -DNDEBUG -ffp-contract=off -I"$root/include" -I"$root/src")
c++ "${flags[@]}" -I"$work" -Davx2=avx2_old -c "$work/old_ops.cpp" -o "$work/old_ops.o"
c++ "${flags[@]}" "$root/bench/attention_ab/attention_ab.cpp" "$work/old_ops.o" "$build/src/libkiln_compute.a" \
    "$build/src/libkiln_quant.a" "$build/src/libkiln_gguf.a" -lpthread -o "$work/attention_ab"
"$work/attention_ab" "$@"
