// Helpers shared by the AVX-512 quantized-product files (all inline, all
// AVX-512-targeted), as avx2_common.h is for AVX2.
#pragma once

#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include "compute/kernels/avx512_intrinsics.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "compute/kernels/layout.h"

namespace kiln::avx512 {

KILN_TARGET_AVX512 inline __m512i bcast_i32(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

KILN_TARGET_AVX512 inline __m512 bcast_f32(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_ps(v);
}

KILN_TARGET_AVX512 inline __m512 load_f16x16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

KILN_TARGET_AVX512 inline __mmask64 load_mask64(const uint8_t* p) {
    uint64_t m;
    std::memcpy(&m, p, 8);
    return _cvtu64_mask64(m);
}

// load_mask64 through a general register, for the decode of the 32-element
// formats with fifth bits (Q5_0, Q5_1): there the mask register loaded straight
// from memory (kmovq k, m64, what the compiler makes of load_mask64) ran two
// threads at half of one thread's speed on Zen 5 (docs/perf.md). The assembly
// keeps the compiler from folding the two instructions back into one. Prefill,
// and the Q5_K decode, which showed no such loss, keep load_mask64.
KILN_TARGET_AVX512 inline __mmask64 load_mask64_via_gpr(const uint8_t* p) {
    uint64_t m;
    __asm__("movq %1, %0" : "=r"(m) : "m"(*reinterpret_cast<const uint64_t*>(p)));
    return _cvtu64_mask64(m);
}

// Rows of 16-row panel p below w.n_out, as a lane mask.
inline __mmask16 panel_rows(const PackedMatrix& w, int64_t p) {
    const int64_t left = w.n_out - p * k_panel_rows;
    return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

// The decode walk (one token) of panels [p0, p1): two long sequential streams,
// the range's halves side by side (pair(q, half): panels q and q + half in one
// tile), then the panel left over (single(p)). Two streams keep more memory
// requests in flight than one, and than adjacent panels, whose short streams
// restart every panel; four (the quarters) competed for the memory
// (docs/perf.md).
template <typename Pair, typename Single>
KILN_TARGET_AVX512 inline void decode_halves(int64_t p0, int64_t p1, Pair&& pair, Single&& single) {
    const int64_t half = (p1 - p0) / 2;
    for (int64_t i = 0; i < half; ++i) pair(p0 + i, half);
    for (int64_t p = p0 + 2 * half; p < p1; ++p) single(p);
}

// A tile of the 256-element formats (avx512_kquant.cpp, avx512_lowbit.cpp):
// tile(w, panel_bytes, a, n_blocks, w_stride, a_stride, y, ldy, rows, y_step, stream)
// runs P panels x T tokens (see run_tiles). The last argument: stream (a batch of one group of several tokens, batched
// decode: the panel is read once, from memory, so the next super-block's lines,
// 37-53 of them, are requested while this one is summed, as one token's decode
// does; in prefill the panel stays in cache for the next groups).
using TileFn = void (*)(const uint8_t*, uint64_t, const uint8_t*, int64_t, uint64_t, uint64_t, float*, int64_t, const __mmask16*,
                        int64_t, bool);

// tiles[0] decodes 2 panels x 1 token (decode_halves); tiles[T] is 1 panel x T tokens.
KILN_TARGET_AVX512 inline void run_tiles(const TileFn (&tiles)[9], const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1,
                                  float* y, int64_t ldy) {
    const bool stream = a.n_groups() == 1;
    auto tokens = [&](int64_t p) KILN_TARGET_AVX512 {
        const __mmask16 rows[1] = {panel_rows(w, p)};
        for (int64_t g = 0; g < a.n_groups(); ++g) {
            const int n = static_cast<int>(std::min<int64_t>(k_act_group, a.n_tokens - g * k_act_group));
            tiles[n](w.panel(p), w.panel_bytes, a.group(g), w.n_blocks, w.block_bytes, a.format.block_stride,
                     y + g * k_act_group * ldy + p * k_panel_rows, ldy, rows, k_panel_rows, stream);
        }
    };
    if (a.n_tokens == 1) {
        auto pair = [&](int64_t q, int64_t half) KILN_TARGET_AVX512 {
            const __mmask16 rows[2] = {panel_rows(w, q), panel_rows(w, q + half)};
            tiles[0](w.panel(q), half * w.panel_bytes, a.group(0), w.n_blocks, w.block_bytes, a.format.block_stride,
                     y + q * k_panel_rows, ldy, rows, half * k_panel_rows, false);
        };
        return decode_halves(p0, p1, pair, tokens);
    }
    for (int64_t p = p0; p < p1; ++p) tokens(p);
}

}  // namespace kiln::avx512

#endif  // KILN_HAVE_X86_KERNELS
