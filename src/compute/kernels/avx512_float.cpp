// AVX-512 products of float weights (F32, F16, BF16) in 32-row panels (layout.h).
//
// The reference (kiln/quant.h) adds each output's products to one sum in element
// order. Here a register holds that sum for 16 rows of one token: one load of a
// panel's element k (16 rows) times one broadcast activation advances 16 sums, so
// every output goes through exactly the reference's operations and no horizontal
// reduction is needed. Prefill tiles are 32 rows x up to 12 tokens (24 sums), each
// weight vector used 12 times and each activation 32 times per load, in the loop
// nest of float_tiling.h. Decode walks 4 panels from the range's quarters at
// once: 8 independent sums and 4 long memory streams.
// Every step is a fused multiply-add, as the reference's; BF16 panels hold element
// pairs and run the BF16 dot-product instruction (two products per lane), whose
// arithmetic the reference spells out, or the AVX2 emulation of it on CPUs without.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include "compute/kernels/avx512_intrinsics.h"

#include <algorithm>

#include "compute/kernels/float_tiling.h"
#include "compute/kernels/x86.h"

namespace kiln::avx512 {

namespace {

enum class Wt { F32, F16, BF16 };

// Bytes of one panel block of one row (an element; BF16 an element pair).
template <Wt W>
constexpr int64_t value_bytes = W == Wt::F16 ? 2 : 4;
// Bytes of one panel block (32 rows).
template <Wt W>
constexpr int64_t line_bytes = k_float_panel_rows * value_bytes<W>;

// 16 consecutive values at p as f32 (BF16: 16 pairs as they are).
template <Wt W>
KILN_TARGET_AVX512 inline __m512 load16(const uint8_t* p) {
    if constexpr (W == Wt::F16) return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_loadu_ps(p);
}

// The reference's step for one value: sum + w * x with one rounding; BF16 the
// instruction the reference spells out, both of a pair's products (the odd one
// first). Written as assembly so that only the BF16 path needs the BF16 extension
// (the dispatch table takes gemm_float_bf16_emulated on CPUs without it); the
// intrinsic would need the extension for the whole file.
template <Wt W>
KILN_TARGET_AVX512 inline __m512 mac(__m512 sum, __m512 w, __m512 x) {
    if constexpr (W == Wt::BF16) {
        __asm__("vdpbf16ps %2, %1, %0" : "+v"(sum) : "v"(w), "v"(x));
        return sum;
    } else {
        return _mm512_fmadd_ps(w, x, sum);
    }
}

// Rows of panel p below n_out, as masks of its two 16-row halves.
inline void row_masks(int64_t p, int64_t n_out, __mmask16& lo, __mmask16& hi) {
    const int64_t valid = std::min<int64_t>(k_float_panel_rows, n_out - p * k_float_panel_rows);
    lo = static_cast<__mmask16>(valid >= 16 ? 0xFFFF : (1u << valid) - 1);
    hi = static_cast<__mmask16>(valid >= 32 ? 0xFFFF : valid <= 16 ? 0 : (1u << (valid - 16)) - 1);
}

// Prefill tiles ask for the weight and activation lines this many elements
// ahead: the L2 prefetcher alone leaves both streams' latency showing.
// Activations further: wide rows' activations come from L3 or memory
// (docs/perf.md has the distances tried).
constexpr int64_t k_tile_prefetch_ahead = 16;
constexpr int64_t k_tile_act_prefetch_ahead = 64;

// Elements [0, nk) of one panel (w at the slice's first element) x NT tokens
// (a: element-major, `stride` floats per element). The sums start at zero when
// `first`, else continue from y; masked rows are neither read nor written.
template <Wt W, int NT>
KILN_TARGET_AVX512 void panel_tile(const uint8_t* w, const float* a, int64_t stride, int64_t nk, float* y, int64_t ldy, bool first,
                                   __mmask16 lo, __mmask16 hi) {
    __m512 sum[2 * NT];
#pragma GCC unroll 12
    for (int t = 0; t < NT; ++t) {
        sum[2 * t] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(lo, y + t * ldy);
        sum[2 * t + 1] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(hi, y + t * ldy + 16);
    }
    for (int64_t k = 0; k < nk; ++k) {
        const uint8_t* line = w + k * line_bytes<W>;
        const __m512 w0 = load16<W>(line), w1 = load16<W>(line + 16 * value_bytes<W>);
        const float* ak = a + k * stride;
        prefetch_l1(line + k_tile_prefetch_ahead * line_bytes<W>);
        prefetch_l1(reinterpret_cast<const uint8_t*>(ak + k_tile_act_prefetch_ahead * stride));
#pragma GCC unroll 12
        for (int t = 0; t < NT; ++t) {
            const __m512 x = _mm512_set1_ps(ak[t]);
            sum[2 * t] = mac<W>(sum[2 * t], w0, x);
            sum[2 * t + 1] = mac<W>(sum[2 * t + 1], w1, x);
        }
    }
#pragma GCC unroll 12
    for (int t = 0; t < NT; ++t) {
        _mm512_mask_storeu_ps(y + t * ldy, lo, sum[2 * t]);
        _mm512_mask_storeu_ps(y + t * ldy + 16, hi, sum[2 * t + 1]);
    }
}

template <Wt W>
KILN_TARGET_AVX512 void panel_tile_n(int nt, const uint8_t* w, const float* a, int64_t nk, float* y, int64_t ldy, bool first, __mmask16 lo,
                                     __mmask16 hi) {
    switch (nt) {
        case 12: return panel_tile<W, 12>(w, a, nt, nk, y, ldy, first, lo, hi);
        case 11: return panel_tile<W, 11>(w, a, nt, nk, y, ldy, first, lo, hi);
        case 10: return panel_tile<W, 10>(w, a, nt, nk, y, ldy, first, lo, hi);
        case 9: return panel_tile<W, 9>(w, a, nt, nk, y, ldy, first, lo, hi);
        case 8: return panel_tile<W, 8>(w, a, nt, nk, y, ldy, first, lo, hi);
        case 7: return panel_tile<W, 7>(w, a, nt, nk, y, ldy, first, lo, hi);
        case 6: return panel_tile<W, 6>(w, a, nt, nk, y, ldy, first, lo, hi);
        case 5: return panel_tile<W, 5>(w, a, nt, nk, y, ldy, first, lo, hi);
        case 4: return panel_tile<W, 4>(w, a, nt, nk, y, ldy, first, lo, hi);
        case 3: return panel_tile<W, 3>(w, a, nt, nk, y, ldy, first, lo, hi);
        case 2: return panel_tile<W, 2>(w, a, nt, nk, y, ldy, first, lo, hi);
        default: return panel_tile<W, 1>(w, a, nt, nk, y, ldy, first, lo, hi);
    }
}

// How far ahead one token's decode asks for each panel's lines (bytes), as the
// AVX2 kernels (k_float_decode_ahead there): with the hardware prefetcher alone
// F16 read memory at about 80% of the bound on an Intel Xeon (docs/perf.md,
// 2026-12-06).
constexpr int64_t k_float_decode_ahead = 4096;

// One token (x[k * stride]) against NP panels at once (2 NP independent sums).
template <Wt W, int NP>
KILN_TARGET_AVX512 void decode_panels(const PackedMatrix& m, const int64_t* panels, const float* x, int64_t stride, float* y) {
    const uint8_t* w[NP];
    __m512 sum[2 * NP];
#pragma GCC unroll 4
    for (int j = 0; j < NP; ++j) {
        w[j] = m.panel(panels[j]);
        sum[2 * j] = sum[2 * j + 1] = _mm512_setzero_ps();
    }
    for (int64_t k = 0; k < m.n_blocks; ++k) {
        const __m512 xv = _mm512_set1_ps(x[k * stride]);
#pragma GCC unroll 4
        for (int j = 0; j < NP; ++j) {
            const uint8_t* line = w[j] + k * line_bytes<W>;
            for (int l = 0; l < line_bytes<W>; l += 64) prefetch_l1(line + l + k_float_decode_ahead);
            sum[2 * j] = mac<W>(sum[2 * j], load16<W>(line), xv);
            sum[2 * j + 1] = mac<W>(sum[2 * j + 1], load16<W>(line + 16 * value_bytes<W>), xv);
        }
    }
#pragma GCC unroll 4
    for (int j = 0; j < NP; ++j) {
        __mmask16 lo, hi;
        row_masks(panels[j], m.n_out, lo, hi);
        float* yp = y + panels[j] * k_float_panel_rows;
        _mm512_mask_storeu_ps(yp, lo, sum[2 * j]);
        _mm512_mask_storeu_ps(yp + 16, hi, sum[2 * j + 1]);
    }
}

// Panels [p0, p1) for one token: the range's quarters side by side (4 streams),
// then the 0-3 panels left over together.
template <Wt W>
KILN_TARGET_AVX512 void float_decode(const PackedMatrix& m, const float* x, int64_t stride, int64_t p0, int64_t p1, float* y) {
    const int64_t quarter = (p1 - p0) / 4;
    for (int64_t i = 0; i < quarter; ++i) {
        const int64_t panels[4] = {p0 + i, p0 + quarter + i, p0 + 2 * quarter + i, p0 + 3 * quarter + i};
        decode_panels<W, 4>(m, panels, x, stride, y);
    }
    const int64_t left[3] = {p0 + 4 * quarter, p0 + 4 * quarter + 1, p0 + 4 * quarter + 2};
    switch (p1 - (p0 + 4 * quarter)) {
        case 3: decode_panels<W, 3>(m, left, x, stride, y); break;
        case 2: decode_panels<W, 2>(m, left, x, stride, y); break;
        case 1: decode_panels<W, 1>(m, left, x, stride, y); break;
        default: break;
    }
}

template <Wt W>
KILN_TARGET_AVX512 void float_gemm(const PackedMatrix& m, const FloatActs& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    // A few tokens: each on its own, 8 sums at a time, rather than tiles of 2-6 sums.
    if (a.n_tokens <= 3) {
        for (int t = 0; t < a.n_tokens; ++t) float_decode<W>(m, a.data + t, a.n_tokens, p0, p1, y + t * ldy);
        return;
    }
    for_each_float_tile(m, a, p0, p1, y, ldy, [&](int64_t p, int64_t k0, int64_t nk, const float* ab, int nt, float* yb) {
        __mmask16 lo, hi;
        row_masks(p, m.n_out, lo, hi);
        panel_tile_n<W>(nt, m.panel(p) + k0 * line_bytes<W>, ab, nk, yb + p * k_float_panel_rows, ldy, k0 == 0, lo, hi);
    }, 2048);
}

}  // namespace

void gemm_float(const PackedMatrix& w, const FloatActs& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    switch (w.type) {
        case GgmlType::F32: float_gemm<Wt::F32>(w, a, p0, p1, y, ldy); return;
        case GgmlType::F16: float_gemm<Wt::F16>(w, a, p0, p1, y, ldy); return;
        case GgmlType::BF16: float_gemm<Wt::BF16>(w, a, p0, p1, y, ldy); return;
        default: return;
    }
}

void gemm_float_bf16_emulated(const PackedMatrix& w, const FloatActs& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (w.type == GgmlType::BF16)
        avx2::gemm_float(w, a, p0, p1, y, ldy);  // the same panels, the instruction emulated (two f32 per pair)
    else
        gemm_float(w, a, p0, p1, y, ldy);
}

}  // namespace kiln::avx512

#endif  // KILN_HAVE_X86_KERNELS
