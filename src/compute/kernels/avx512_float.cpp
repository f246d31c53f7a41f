// AVX-512 products of float weights (F32, F16, BF16) used in place from the file.
//
// The reference (kiln/quant.h) adds element i's product to lane i % 16 and folds
// the lanes pairwise at the end: exactly one zmm accumulator per output, so every
// output here is one register updated element block by element block, then folded
// the same way. Register blocking over 8 rows x 3 tokens reuses each loaded weight
// vector for 3 tokens and each activation vector for 8 rows.
//
// F16 products are exact in f32, so a fused multiply-add rounds exactly as the
// reference's separate multiply and add; F32 and BF16 (whose products can be
// subnormal, hence rounded) use a multiply then an add.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include "compute/kernels/avx512_intrinsics.h"

#include <algorithm>

#include "compute/kernels/x86.h"

namespace kiln::avx512 {

namespace {

enum class Wt { F32, F16, BF16 };

template <Wt W>
KILN_TARGET_AVX512 inline __m512 load_w(const uint8_t* p, __mmask16 m) {
    if constexpr (W == Wt::F32) {
        return _mm512_maskz_loadu_ps(m, p);
    } else if constexpr (W == Wt::F16) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
    } else {
        const __m512i u = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
        return _mm512_castsi512_ps(_mm512_slli_epi32(u, 16));
    }
}

// Lane l += lane l + width for width 8, 4, 2, 1; lane 0.
KILN_TARGET_AVX512 inline float fold16(__m512 v) {
    const __m256 v8 = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    const __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(v8), _mm256_extractf128_ps(v8, 1));
    const __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
    const __m128 v1 = _mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1));
    return _mm_cvtss_f32(v1);
}

// One step of 16 elements for R rows x T tokens (masked on the last, partial step:
// masked lanes keep their value, so they never see a product, as in the reference).
// W is how the weights are stored where they are read; `fused` whether each
// product is exact (F16 x F16 values), so a fused multiply-add rounds as the
// reference's separate multiply and add.
template <Wt W, bool fused, int R, int T, bool masked>
KILN_TARGET_AVX512 inline void float_step(const uint8_t* w, uint64_t row_bytes, const float* x, int64_t ldx, int64_t i,
                                          __mmask16 m, __m512* acc) {
    constexpr int esize = W == Wt::F32 ? 4 : 2;
    __m512 xv[T];
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) xv[t] = masked ? _mm512_maskz_loadu_ps(m, x + t * ldx + i) : _mm512_loadu_ps(x + t * ldx + i);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
        const __m512 wv = load_w<W>(w + r * row_bytes + i * esize, masked ? m : static_cast<__mmask16>(0xFFFF));
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) {
            __m512& a = acc[r * T + t];
            if constexpr (fused) {
                a = masked ? _mm512_mask3_fmadd_ps(wv, xv[t], a, m) : _mm512_fmadd_ps(wv, xv[t], a);
            } else {
                const __m512 p = _mm512_mul_ps(wv, xv[t]);
                a = masked ? _mm512_mask_add_ps(a, m, a, p) : _mm512_add_ps(a, p);
            }
        }
    }
}

template <Wt W, bool fused, int R, int T>
KILN_TARGET_AVX512 void float_tile(const uint8_t* w, uint64_t row_bytes, int64_t n_in, const float* x, int64_t ldx, float* y,
                                   int64_t ldy) {
    __m512 acc[R * T];
#pragma GCC unroll 24
    for (int k = 0; k < R * T; ++k) acc[k] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n_in; i += 16) float_step<W, fused, R, T, false>(w, row_bytes, x, ldx, i, 0xFFFF, acc);
    if (i < n_in) float_step<W, fused, R, T, true>(w, row_bytes, x, ldx, i, static_cast<__mmask16>((1u << (n_in - i)) - 1), acc);
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
        for (int t = 0; t < T; ++t) y[t * ldy + r] = fold16(acc[r * T + t]);
}

// R rows x n_tokens in tiles of R x TT (24 accumulators: 8 rows x 3 tokens, the
// best of the shapes measured for f16 weights; 4 x 6 for the last rows).
template <Wt W, int R>
KILN_TARGET_AVX512 void float_rows(const uint8_t* w, uint64_t row_bytes, int64_t n_in, const float* x, int64_t n_tokens, float* y,
                                   int64_t ldy) {
    constexpr bool fused = W == Wt::F16;
    constexpr int TT = R >= 8 ? 3 : 6;
    int64_t t = 0;
    for (; t + TT <= n_tokens; t += TT) float_tile<W, fused, R, TT>(w, row_bytes, n_in, x + t * n_in, n_in, y + t * ldy, ldy);
    switch (n_tokens - t) {
        case 5: float_tile<W, fused, R, 5>(w, row_bytes, n_in, x + t * n_in, n_in, y + t * ldy, ldy); break;
        case 4: float_tile<W, fused, R, 4>(w, row_bytes, n_in, x + t * n_in, n_in, y + t * ldy, ldy); break;
        case 3: float_tile<W, fused, R, 3>(w, row_bytes, n_in, x + t * n_in, n_in, y + t * ldy, ldy); break;
        case 2: float_tile<W, fused, R, 2>(w, row_bytes, n_in, x + t * n_in, n_in, y + t * ldy, ldy); break;
        case 1: float_tile<W, fused, R, 1>(w, row_bytes, n_in, x + t * n_in, n_in, y + t * ldy, ldy); break;
        default: break;
    }
}

// Decode (one token): rows [r0, r1) as 4 long sequential streams, the range's
// quarters, row i of each together, with one accumulator per row as float_tile.
// (Tiles of 8 adjacent rows are 8 streams of one row each that restart every
// tile; measured 20-40% slower on a 1B F16 model.) Returns the first row left
// (the remainder after the quarters).
template <Wt W>
KILN_TARGET_AVX512 int64_t float_decode(const uint8_t* w, uint64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float* x,
                                        float* y) {
    constexpr bool fused = W == Wt::F16;
    const int64_t quarter = (r1 - r0) / 4;
    const uint64_t stride = static_cast<uint64_t>(quarter) * row_bytes;
    for (int64_t q = r0; q < r0 + quarter; ++q) {
        const uint8_t* wq = w + q * row_bytes;
        __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
        int64_t i = 0;
        for (; i + 16 <= n_in; i += 16) float_step<W, fused, 4, 1, false>(wq, stride, x, n_in, i, 0xFFFF, acc);
        if (i < n_in) float_step<W, fused, 4, 1, true>(wq, stride, x, n_in, i, static_cast<__mmask16>((1u << (n_in - i)) - 1), acc);
        for (int k = 0; k < 4; ++k) y[q + k * quarter] = fold16(acc[k]);
    }
    return r0 + 4 * quarter;
}

// Tokens in blocks whose activations stay in L2 (64 tokens x 2048 f32 = 512 KB)
// while every row of the range passes over them; each row block's weights stay
// in L1 across the block's token tiles. For one token (decode) the 8 rows of a
// tile are 8 memory streams.
template <Wt W>
KILN_TARGET_AVX512 void float_gemm(const uint8_t* w, uint64_t row_bytes, int64_t n_in, int64_t r0, int64_t r1, const float* x,
                                   int64_t n_tokens, float* y, int64_t ldy) {
    const int64_t block = std::max<int64_t>(6, (int64_t{1} << 19) / (4 * n_in) / 6 * 6);
    for (int64_t t0 = 0; t0 < n_tokens; t0 += block) {
        const int64_t nt = std::min(block, n_tokens - t0);
        const float* xt = x + t0 * n_in;
        float* yt = y + t0 * ldy;
        int64_t r = nt == 1 ? float_decode<W>(w, row_bytes, n_in, r0, r1, xt, yt) : r0;
        for (; r + 8 <= r1; r += 8) float_rows<W, 8>(w + r * row_bytes, row_bytes, n_in, xt, nt, yt + r, ldy);
        for (; r + 4 <= r1; r += 4) float_rows<W, 4>(w + r * row_bytes, row_bytes, n_in, xt, nt, yt + r, ldy);
        switch (r1 - r) {
            case 3: float_rows<W, 3>(w + r * row_bytes, row_bytes, n_in, xt, nt, yt + r, ldy); break;
            case 2: float_rows<W, 2>(w + r * row_bytes, row_bytes, n_in, xt, nt, yt + r, ldy); break;
            case 1: float_rows<W, 1>(w + r * row_bytes, row_bytes, n_in, xt, nt, yt + r, ldy); break;
            default: break;
        }
    }
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

}  // namespace kiln::avx512

#endif  // KILN_HAVE_X86_KERNELS
