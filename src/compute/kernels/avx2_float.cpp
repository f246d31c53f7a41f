// AVX2 products of float weights (F32, F16, BF16) in 32-row panels (layout.h),
// the scheme of avx512_float.cpp with 8-row registers: one sum per output in
// element order, a register holding 8 rows' sums for one token. With 16
// registers a prefill tile is one half panel (16 rows) x up to 6 tokens: 12 sums,
// 2 weight vectors and the broadcast. Decode walks 2 panels from the range's
// halves at once (8 sums). Every step is a fused multiply-add, as the reference's.
//
// BF16 (element pairs, layout.h) emulates the BF16 dot-product instruction the
// reference follows: each pair's odd product, then its even one, as two FMAs on
// the pair's halves widened to f32, under MXCSR's denormals-are-zero and
// flush-to-zero (gemm_float), which make each step round and flush as the
// instruction does. Its activations come as two f32 per pair (FloatActs), so a
// tile only splits the weights.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <immintrin.h>

#include <algorithm>

#include "compute/kernels/avx2_common.h"
#include "compute/kernels/float_tiling.h"
#include "compute/kernels/x86.h"

namespace kiln::avx2 {

namespace {

enum class Wt { F32, F16, BF16 };

// Bytes of one panel block of one row (an element; BF16 an element pair).
template <Wt W>
constexpr int64_t value_bytes = W == Wt::F16 ? 2 : 4;
template <Wt W>
constexpr int64_t line_bytes = k_float_panel_rows * value_bytes<W>;
// Floats per activation value: BF16 pairs come as their odd and even element
// (FloatActs).
template <Wt W>
constexpr int act_floats = W == Wt::BF16 ? 2 : 1;

// 8 consecutive values at p as f32 (BF16: 8 pairs as they are).
template <Wt W>
KILN_TARGET_AVX2 inline __m256 load8(const uint8_t* p) {
    if constexpr (W == Wt::F16) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
}

// The high and the low bfloat16 of each 32-bit lane as f32.
KILN_TARGET_AVX2 inline __m256 odd_half(__m256 pairs) {
    return _mm256_and_ps(pairs, _mm256_castsi256_ps(_mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}
KILN_TARGET_AVX2 inline __m256 even_half(__m256 pairs) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(pairs), 16));
}

// A broadcast activation value (decode); BF16 as its pair's odd and even element.
struct Act {
    __m256 v, even;
};

template <Wt W>
KILN_TARGET_AVX2 inline Act broadcast(const float* p) {
    if constexpr (W == Wt::BF16) return {_mm256_broadcast_ss(p), _mm256_broadcast_ss(p + 1)};
    const __m256 v = _mm256_broadcast_ss(p);
    return {v, v};
}

// The reference's step for one value: sum + w * x with one rounding; BF16 the
// pair's odd product, then its even one.
template <Wt W>
KILN_TARGET_AVX2 inline __m256 mac(__m256 sum, __m256 w, const Act& x) {
    if constexpr (W == Wt::BF16) {
        sum = _mm256_fmadd_ps(odd_half(w), x.v, sum);
        return _mm256_fmadd_ps(even_half(w), x.even, sum);
    } else {
        return _mm256_fmadd_ps(w, x.v, sum);
    }
}

// Lane masks of the first `valid` rows of 8 (all ones = every row).
KILN_TARGET_AVX2 inline __m256i rows_mask(int64_t valid) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(std::clamp<int64_t>(valid, 0, 8))),
                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// The sums of 16 rows (`valid` of them real) x one token, from or to y.
struct RowMasks {
    __m256i lo, hi;
    bool full;
};

KILN_TARGET_AVX2 inline RowMasks row_masks(int64_t valid) { return {rows_mask(valid), rows_mask(valid - 8), valid >= 16}; }

// Elements [0, nk) of one half panel (w at the slice's first element, 16 rows) x
// NT tokens (a: element-major, `stride` floats per element); sums from zero when
// `first`, else continued from y.
template <Wt W, int NT>
KILN_TARGET_AVX2 void half_tile(const uint8_t* w, const float* a, int64_t stride, int64_t nk, float* y, int64_t ldy, bool first,
                                const RowMasks& m) {
    __m256 sum[2 * NT];
#pragma GCC unroll 6
    for (int t = 0; t < NT; ++t) {
        sum[2 * t] = first ? _mm256_setzero_ps() : load_ps_masked(y + t * ldy, m.lo, m.full);
        sum[2 * t + 1] = first ? _mm256_setzero_ps() : load_ps_masked(y + t * ldy + 8, m.hi, m.full);
    }
    // Both row halves' sums of every token advanced by one weight vector each (a
    // value's broadcast at ak + t * act_floats).
    auto step = [&](__m256 w0, __m256 w1, const float* ak) KILN_TARGET_AVX2 {
#pragma GCC unroll 6
        for (int t = 0; t < NT; ++t) {
            const __m256 x = _mm256_broadcast_ss(ak + t * act_floats<W>);
            sum[2 * t] = _mm256_fmadd_ps(w0, x, sum[2 * t]);
            sum[2 * t + 1] = _mm256_fmadd_ps(w1, x, sum[2 * t + 1]);
        }
    };
    for (int64_t k = 0; k < nk; ++k) {
        const uint8_t* line = w + k * line_bytes<W>;
        const __m256 w0 = load8<W>(line), w1 = load8<W>(line + 8 * value_bytes<W>);
        const float* ak = a + k * stride;
        if constexpr (W == Wt::BF16) {  // every sum's odd product, then every sum's even one
            step(odd_half(w0), odd_half(w1), ak);
            step(even_half(w0), even_half(w1), ak + 1);
        } else {
            step(w0, w1, ak);
        }
    }
#pragma GCC unroll 6
    for (int t = 0; t < NT; ++t) {
        store_ps_masked(y + t * ldy, m.lo, m.full, sum[2 * t]);
        store_ps_masked(y + t * ldy + 8, m.hi, m.full, sum[2 * t + 1]);
    }
}

template <Wt W>
KILN_TARGET_AVX2 void half_tile_n(int nt, const uint8_t* w, const float* a, int64_t stride, int64_t nk, float* y, int64_t ldy, bool first,
                                  const RowMasks& m) {
    switch (nt) {
        case 6: return half_tile<W, 6>(w, a, stride, nk, y, ldy, first, m);
        case 5: return half_tile<W, 5>(w, a, stride, nk, y, ldy, first, m);
        case 4: return half_tile<W, 4>(w, a, stride, nk, y, ldy, first, m);
        case 3: return half_tile<W, 3>(w, a, stride, nk, y, ldy, first, m);
        case 2: return half_tile<W, 2>(w, a, stride, nk, y, ldy, first, m);
        default: return half_tile<W, 1>(w, a, stride, nk, y, ldy, first, m);
    }
}

// How far ahead F16 and BF16 decode ask for each panel's lines (bytes): the
// hardware prefetcher alone left them from memory at about 13 GB/s a thread
// (docs/perf.md, 2026-12-05, later, and 2026-12-06; 2, 4 and 8 KB measured equal
// for BF16).
constexpr int64_t k_float_decode_ahead = 4096;

// One token (x[k * stride]) against NP panels at once (4 NP sums).
template <Wt W, int NP>
KILN_TARGET_AVX2 void decode_panels(const PackedMatrix& m, const int64_t* panels, const float* x, int64_t stride, float* y) {
    const uint8_t* w[NP];
    __m256 sum[4 * NP];
#pragma GCC unroll 2
    for (int j = 0; j < NP; ++j) {
        w[j] = m.panel(panels[j]);
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) sum[4 * j + q] = _mm256_setzero_ps();
    }
    for (int64_t k = 0; k < m.n_blocks; ++k) {
        const Act xv = broadcast<W>(x + k * stride);
#pragma GCC unroll 2
        for (int j = 0; j < NP; ++j) {
            const uint8_t* line = w[j] + k * line_bytes<W>;
            if constexpr (W == Wt::F16) prefetch_l1(line + k_float_decode_ahead);
            if constexpr (W == Wt::BF16) {  // an element pair's block is two lines
                prefetch_l1(line + k_float_decode_ahead);
                prefetch_l1(line + 64 + k_float_decode_ahead);
            }
#pragma GCC unroll 4
            for (int q = 0; q < 4; ++q) sum[4 * j + q] = mac<W>(sum[4 * j + q], load8<W>(line + 8 * q * value_bytes<W>), xv);
        }
    }
#pragma GCC unroll 2
    for (int j = 0; j < NP; ++j) {
        const int64_t valid = m.n_out - panels[j] * k_float_panel_rows;
        float* yp = y + panels[j] * k_float_panel_rows;
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) store_ps_masked(yp + 8 * q, rows_mask(valid - 8 * q), valid >= 8 * (q + 1), sum[4 * j + q]);
    }
}

// Panels [p0, p1) for one token: the range's halves side by side, then the panel
// left over.
template <Wt W>
KILN_TARGET_AVX2 void float_decode(const PackedMatrix& m, const float* x, int64_t stride, int64_t p0, int64_t p1, float* y) {
    const int64_t half = (p1 - p0) / 2;
    for (int64_t i = 0; i < half; ++i) {
        const int64_t panels[2] = {p0 + i, p0 + half + i};
        decode_panels<W, 2>(m, panels, x, stride, y);
    }
    if (p0 + 2 * half < p1) {
        const int64_t last = p1 - 1;
        decode_panels<W, 1>(m, &last, x, stride, y);
    }
}

template <Wt W>
KILN_TARGET_AVX2 void float_gemm(const PackedMatrix& m, const FloatActs& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_tokens <= 2) {
        for (int t = 0; t < a.n_tokens; ++t) float_decode<W>(m, a.data + t * act_floats<W>, a.n_tokens * act_floats<W>, p0, p1, y + t * ldy);
        return;
    }
    for_each_float_tile(m, a, p0, p1, y, ldy, [&](int64_t p, int64_t k0, int64_t nk, const float* ab, int nt, float* yb) {
        for (int h = 0; h < 2; ++h) {
            const int64_t valid = m.n_out - p * k_float_panel_rows - 16 * h;
            if (valid <= 0) break;
            const RowMasks rm = row_masks(valid);
            const uint8_t* w = m.panel(p) + k0 * line_bytes<W> + 16 * h * value_bytes<W>;
            float* yp = yb + p * k_float_panel_rows + 16 * h;
            for (int t0 = 0; t0 < nt; t0 += 6)
                half_tile_n<W>(std::min(6, nt - t0), w, ab + t0 * act_floats<W>, nt * act_floats<W>, nk, yp + t0 * ldy, ldy, k0 == 0, rm);
        }
    });
}

// MXCSR with denormals-are-zero and flush-to-zero while it lives (this thread).
// gemm_float is baseline code, so the AVX2 kernels it calls are never inlined
// across the change.
class FlushDenormals {
public:
    FlushDenormals() : saved_(_mm_getcsr()) { _mm_setcsr(saved_ | 0x8040u); }
    ~FlushDenormals() { _mm_setcsr(saved_); }
    FlushDenormals(const FlushDenormals&) = delete;
    FlushDenormals& operator=(const FlushDenormals&) = delete;

private:
    unsigned saved_;
};

}  // namespace

void gemm_float(const PackedMatrix& w, const FloatActs& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    switch (w.type) {
        case GgmlType::F32: float_gemm<Wt::F32>(w, a, p0, p1, y, ldy); return;
        case GgmlType::F16: float_gemm<Wt::F16>(w, a, p0, p1, y, ldy); return;
        case GgmlType::BF16: {
            const FlushDenormals flush;
            float_gemm<Wt::BF16>(w, a, p0, p1, y, ldy);
            return;
        }
        default: return;
    }
}

}  // namespace kiln::avx2

#endif  // KILN_HAVE_X86_KERNELS
