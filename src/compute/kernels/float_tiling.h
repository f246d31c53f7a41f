// The prefill loop nest of the float kernels (every level): slices of up to 1024
// panel blocks (AVX-512: 2048; elements, BF16 element pairs); per slice, groups
// of panels whose slices fill ~256 KB stay in L2 while every token block passes
// over them. The sums wait in y between slices (an exact f32 store and load), so
// each output still gets one sum in element order. Without slices, long rows
// push a panel's blocks out of L2 before the next token block comes (docs/perf.md).
#pragma once

#include <algorithm>
#include <cstdint>

#include "compute/kernels/layout.h"

namespace kiln {

// tile(panel, k0, nk, acts, nt, y_block): panel's blocks [k0, k0 + nk) x the nt
// tokens of one token block (acts: that block's value-major activations from k0;
// y_block: y at the block's first token). The sums start at zero when k0 == 0.
// max_slice: the AVX-512 tile, which requests its lines ahead, takes 2,048-wide
// rows in one pass (no sums waiting in y); the AVX2 tile keeps 1,024.
template <typename Tile>
inline void for_each_float_tile(const PackedMatrix& m, const FloatActs& a, int64_t p0, int64_t p1, float* y, int64_t ldy, Tile&& tile,
                                int64_t max_slice = 1024) {
    const int64_t slice = std::min<int64_t>(m.n_blocks, max_slice);
    const int64_t group = std::max<int64_t>(1, (int64_t{256} << 10) / (slice * static_cast<int64_t>(m.block_bytes)));
    for (int64_t k0 = 0; k0 < m.n_blocks; k0 += slice) {
        const int64_t nk = std::min(slice, m.n_blocks - k0);
        for (int64_t g0 = p0; g0 < p1; g0 += group) {
            const int64_t g1 = std::min(p1, g0 + group);
            for (int64_t b = 0; b < a.n_blocks(); ++b) {
                const int nt = a.block_tokens(b);
                const float* ab = a.block(b) + k0 * nt * a.value_floats;
                float* yb = y + b * k_float_block_tokens * ldy;
                for (int64_t p = g0; p < g1; ++p) tile(p, k0, nk, ab, nt, yb);
            }
        }
    }
}

}  // namespace kiln
