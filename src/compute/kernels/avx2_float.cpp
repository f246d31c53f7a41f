// AVX2 products of float weights (F32, F16, BF16) used in place: the reference's
// 16 lanes (kiln/quant.h) are two ymm accumulators per output, folded pairwise
// at the end (lane l += lane l + 8 is the add of the two registers, then 4, 2, 1
// inside one). As avx512_float.cpp: F16 products are exact, so fused multiply-add
// rounds as the reference; F32 and BF16 multiply then add. Tiles of 2 rows x 2
// tokens (8 accumulators; AVX2 has 16 registers).
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <immintrin.h>

#include <algorithm>

#include "compute/kernels/avx2_common.h"
#include "compute/kernels/x86.h"

namespace kiln::avx2 {

namespace {

enum class Wt { F32, F16, BF16 };

// 8 weights starting at element i of a row, as f32.
template <Wt W>
KILN_TARGET_AVX2 inline __m256 load_w8(const uint8_t* row, int64_t i) {
    if constexpr (W == Wt::F32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
    } else if constexpr (W == Wt::F16) {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
    } else {
        const __m256i u = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
        return _mm256_castsi256_ps(_mm256_slli_epi32(u, 16));
    }
}

template <Wt W>
KILN_TARGET_AVX2 inline __m256 step(__m256 acc, __m256 w, __m256 x) {
    if constexpr (W == Wt::F16)
        return _mm256_fmadd_ps(w, x, acc);
    else
        return _mm256_add_ps(acc, _mm256_mul_ps(w, x));
}

KILN_TARGET_AVX2 inline float fold16(__m256 lo, __m256 hi) {
    const __m256 v8 = _mm256_add_ps(lo, hi);
    const __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
    const __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
    const __m128 v1 = _mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1));
    return _mm_cvtss_f32(v1);
}

// Converts elements [i, n) of a row (fewer than 16) into a zero-padded buffer.
template <Wt W>
KILN_TARGET_AVX2 inline void tail16(const uint8_t* row, int64_t i, int64_t n, float* out) {
    for (int k = 0; k < 16; ++k) {
        float v = 0.0f;
        if (i + k < n) {
            if constexpr (W == Wt::F32) {
                std::memcpy(&v, row + 4 * (i + k), 4);
            } else {
                uint16_t h;
                std::memcpy(&h, row + 2 * (i + k), 2);
                if constexpr (W == Wt::F16) {
                    v = _cvtsh_ss(h);
                } else {
                    const uint32_t u = static_cast<uint32_t>(h) << 16;
                    std::memcpy(&v, &u, 4);
                }
            }
        }
        out[k] = v;
    }
}

template <Wt W, int R, int T>
KILN_TARGET_AVX2 void float_tile(const uint8_t* w, uint64_t row_bytes, int64_t n_in, const float* x, int64_t ldx, float* y,
                                 int64_t ldy) {
    __m256 lo[R * T], hi[R * T];
#pragma GCC unroll 16
    for (int k = 0; k < R * T; ++k) lo[k] = hi[k] = _mm256_setzero_ps();
    int64_t i = 0;
    // Each step's low 8 lanes for every row, then its high 8: T activation
    // vectors are loaded once and reused for R rows (3 x 2 tiles: 12
    // accumulators + 2 activations + 1 weight vector = 15 of the 16 registers).
    for (; i + 16 <= n_in; i += 16) {
        __m256 xv[T];
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) xv[t] = _mm256_loadu_ps(x + t * ldx + i);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const __m256 w0 = load_w8<W>(w + r * row_bytes, i);
#pragma GCC unroll 4
            for (int t = 0; t < T; ++t) lo[r * T + t] = step<W>(lo[r * T + t], w0, xv[t]);
        }
#pragma GCC unroll 4
        for (int t = 0; t < T; ++t) xv[t] = _mm256_loadu_ps(x + t * ldx + i + 8);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
            const __m256 w1 = load_w8<W>(w + r * row_bytes, i + 8);
#pragma GCC unroll 4
            for (int t = 0; t < T; ++t) hi[r * T + t] = step<W>(hi[r * T + t], w1, xv[t]);
        }
    }
    if (i < n_in) {
        // The last partial step: lanes past the row's end must not be touched
        // (adding a zero product could turn an accumulator's -0 into +0).
        const int left = static_cast<int>(n_in - i);
        alignas(32) int32_t mask_bits[16];
        for (int k = 0; k < 16; ++k) mask_bits[k] = k < left ? -1 : 0;
        const __m256 m0 = _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(mask_bits)));
        const __m256 m1 = _mm256_castsi256_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(mask_bits + 8)));
        alignas(32) float wt[16], xt[16];
        for (int r = 0; r < R; ++r) {
            tail16<W>(w + r * row_bytes, i, n_in, wt);
            for (int t = 0; t < T; ++t) {
                for (int k = 0; k < 16; ++k) xt[k] = k < left ? x[t * ldx + i + k] : 0.0f;
                const __m256 n0 = step<W>(lo[r * T + t], _mm256_load_ps(wt), _mm256_load_ps(xt));
                const __m256 n1 = step<W>(hi[r * T + t], _mm256_load_ps(wt + 8), _mm256_load_ps(xt + 8));
                lo[r * T + t] = _mm256_blendv_ps(lo[r * T + t], n0, m0);
                hi[r * T + t] = _mm256_blendv_ps(hi[r * T + t], n1, m1);
            }
        }
    }
    for (int r = 0; r < R; ++r)
        for (int t = 0; t < T; ++t) y[t * ldy + r] = fold16(lo[r * T + t], hi[r * T + t]);
}

template <Wt W, int R>
KILN_TARGET_AVX2 void float_rows(const uint8_t* w, uint64_t row_bytes, int64_t n_in, const float* x, int64_t n_tokens, float* y,
                                 int64_t ldy) {
    int64_t t = 0;
    for (; t + 2 <= n_tokens; t += 2) float_tile<W, R, 2>(w, row_bytes, n_in, x + t * n_in, n_in, y + t * ldy, ldy);
    if (t < n_tokens) float_tile<W, R, 1>(w, row_bytes, n_in, x + t * n_in, n_in, y + t * ldy, ldy);
}

// Decode (one token): rows [r0, r1) as 4 long sequential streams, the range's
// quarters (as avx512_float.cpp); returns the first row left.
template <Wt W>
KILN_TARGET_AVX2 int64_t float_decode(const uint8_t* w, uint64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float* x,
                                      float* y) {
    const int64_t quarter = (r1 - r0) / 4;
    const uint64_t stride = static_cast<uint64_t>(quarter) * row_bytes;
    for (int64_t q = r0; q < r0 + quarter; ++q) {
        float out[4];
        float_tile<W, 4, 1>(w + q * row_bytes, stride, n_in, x, n_in, out, 0);
        for (int k = 0; k < 4; ++k) y[q + k * quarter] = out[k];
    }
    return r0 + 4 * quarter;
}

// Tokens in blocks whose activations stay in L2 (64 tokens x 2048 f32 = 512 KB)
// while every row of the range passes over them (as avx512_float.cpp); without
// the blocks every row pair streamed all the prompt's activations from L3.
template <Wt W>
KILN_TARGET_AVX2 void float_gemm(const uint8_t* w, uint64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float* x,
                                 int64_t n_tokens, float* y, int64_t ldy) {
    // Rows [r, r1) against tokens xt (nt of them), 3 rows at a time.
    auto rows_from = [&](int64_t r, const float* xt, int64_t nt, float* yt) {
        for (; r + 3 <= r1; r += 3) float_rows<W, 3>(w + r * row_bytes, row_bytes, n_in, xt, nt, yt + r, ldy);
        for (; r + 2 <= r1; r += 2) float_rows<W, 2>(w + r * row_bytes, row_bytes, n_in, xt, nt, yt + r, ldy);
        if (r < r1) float_rows<W, 1>(w + r * row_bytes, row_bytes, n_in, xt, nt, yt + r, ldy);
    };
    if (n_tokens == 1) return rows_from(float_decode<W>(w, row_bytes, n_in, r0, r1, x, y), x, 1, y);
    const int64_t block = std::max<int64_t>(4, (int64_t{1} << 19) / (4 * n_in) / 2 * 2);
    for (int64_t t0 = 0; t0 < n_tokens; t0 += block)
        rows_from(r0, x + t0 * n_in, std::min(block, n_tokens - t0), y + t0 * ldy);
}

}  // namespace

void gemm_float(GgmlType type, const uint8_t* w, uint64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float* x,
                int64_t n_tokens, float* y, int64_t ldy) {
    switch (type) {
        case GgmlType::F32: float_gemm<Wt::F32>(w, row_bytes, n_in, r0, r1, x, n_tokens, y, ldy); return;
        case GgmlType::F16: float_gemm<Wt::F16>(w, row_bytes, n_in, r0, r1, x, n_tokens, y, ldy); return;
        case GgmlType::BF16: float_gemm<Wt::BF16>(w, row_bytes, n_in, r0, r1, x, n_tokens, y, ldy); return;
        default: return;
    }
}

}  // namespace kiln::avx2

#endif  // KILN_HAVE_X86_KERNELS
