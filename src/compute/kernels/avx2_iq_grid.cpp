// AVX2 products of the grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M) with Q8_K activations over packed panels, as avx512_iq_grid.cpp
// but on 8-row tiles (rows 8h ..). Sign masks by compare and blend; without
// AVX-VNNI the products go through vpmaddubsw (at most 2 x 126 x 127 per int16
// pair: exact), summed in int16 over as many chunks as the levels allow, then
// vpmaddwd to int32; the `vnni` variants take vpdpbusd. Decode (one token) takes
// the vpmaddubsw path on every CPU, both halves of a panel at once
// (iq_block_decode; the types with sign bits put the signs on the activations);
// prefill looks each panel block up once (decode_block, decoded_tile). Grid
// entries come from scalar loads (lookup8, lookup4), not gathers.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "compute/kernels/avx2_common.h"
#include "compute/kernels/iq_grid_layout.h"
#include "compute/kernels/x86.h"
#include "quant/quant_tables.h"

namespace kiln::avx2 {

namespace {

// Rows 8h .. of a u8 / u16 lane field as int32.
KILN_TARGET_AVX2 inline __m256i u8x8(const uint8_t* p, int h) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * h)));
}
KILN_TARGET_AVX2 inline __m128i u8x8_16(const uint8_t* p, int h) {
    return _mm_cvtepu8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * h)));
}
KILN_TARGET_AVX2 inline __m128i u16x8_16(const uint8_t* p, int h) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * h)); }
// low | (field >> shift & mask) << 8 in 16-bit lanes: a 9-11-bit grid index.
KILN_TARGET_AVX2 inline __m128i index16(__m128i low, __m128i field, int shift, int mask) {
    return _mm_or_si128(low, _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(field, shift), _mm_set1_epi16(static_cast<int16_t>(mask))), 8));
}
KILN_TARGET_AVX2 inline __m256i u16x8(const uint8_t* p, int h) {
    return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * h)));
}

// The negation masks (0 / -1 bytes) of the two chunks of each lane's group of 8
// (sign bits 0-3: the low chunk's bytes, 4-7: the high one's).
KILN_TARGET_AVX2 inline void sign_masks(__m256i signs, __m256i& neg_lo, __m256i& neg_hi) {
    const __m256i spread = _mm256_shuffle_epi8(signs, _mm256_setr_epi8(0, 0, 0, 0, 4, 4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12, 0, 0, 0, 0, 4,
                                                                       4, 4, 4, 8, 8, 8, 8, 12, 12, 12, 12));
    const __m256i bits_lo = _mm256_set1_epi32(0x08040201), bits_hi = _mm256_set1_epi32(static_cast<int>(0x80402010u));
    neg_lo = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bits_lo), bits_lo);
    neg_hi = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bits_hi), bits_hi);
}

// offset + (sign bit set ? -g : g) for the two chunks of each lane's group of 8.
KILN_TARGET_AVX2 inline void apply_signs(__m256i signs, __m256i glo, __m256i ghi, int offset, __m256i& lo, __m256i& hi) {
    __m256i neg_lo, neg_hi;
    sign_masks(signs, neg_lo, neg_hi);
    const __m256i off = _mm256_set1_epi8(static_cast<char>(offset));
    lo = _mm256_blendv_epi8(_mm256_add_epi8(off, glo), _mm256_sub_epi8(off, glo), neg_lo);
    hi = _mm256_blendv_epi8(_mm256_add_epi8(off, ghi), _mm256_sub_epi8(off, ghi), neg_hi);
}

// The 7-bit sign index's 8 signs (the eighth: the parity of the seven).
KILN_TARGET_AVX2 inline __m256i signs_of_index(__m256i s7) {
    __m256i p = _mm256_xor_si256(s7, _mm256_srli_epi32(s7, 4));
    p = _mm256_xor_si256(p, _mm256_srli_epi32(p, 2));
    p = _mm256_xor_si256(p, _mm256_srli_epi32(p, 1));
    return _mm256_or_si256(s7, _mm256_slli_epi32(_mm256_and_si256(p, _mm256_set1_epi32(1)), 7));
}

KILN_TARGET_AVX2 inline __m256i odd_scale(__m256i field, int shift, int bits) {
    const __m256i s = _mm256_and_si256(_mm256_srli_epi32(field, shift), _mm256_set1_epi32((1 << bits) - 1));
    return _mm256_add_epi32(_mm256_slli_epi32(s, 1), _mm256_set1_epi32(1));
}

KILN_TARGET_AVX2 inline __m256i bits_of(__m256i v, int shift, int mask) {
    return _mm256_and_si256(_mm256_srli_epi32(v, shift), _mm256_set1_epi32(mask));
}

inline uint32_t u16_at(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}

// Grid lookups by scalar loads, not vpgatherdd: gathers are microcoded and slow
// on AMD before Zen 4. Measured on a Zen 3 (docs/perf.md), one-token products in
// cache: 1.3-1.9x faster. The indices are read straight from the weights into
// scalar registers (IQ2_XXS, IQ2_XS, IQ3_XXS), or built in 16-bit vector lanes and
// taken out 4 at a time (IQ2_S, IQ3_S, IQ1_S, IQ1_M: cheaper than gluing their
// high bits on in scalar registers).

// The 8-byte grid entries at lane r's index(r): lane r's bytes 0-3 in lo, 4-7 in hi.
template <typename Index>
KILN_TARGET_AVX2 inline void lookup8(const uint8_t* grid, Index index, __m256i& lo, __m256i& hi) {
    const auto entry = [&](int r) {
        int64_t v;
        std::memcpy(&v, grid + 8 * static_cast<size_t>(index(r)), 8);
        return v;
    };
    // 128-bit lanes [e0 e1 | e4 e5] and [e2 e3 | e6 e7]; the even dwords of both
    // are the entries' bytes 0-3 in row order, the odd ones bytes 4-7.
    const __m256 a = _mm256_castsi256_ps(_mm256_setr_epi64x(entry(0), entry(1), entry(4), entry(5)));
    const __m256 b = _mm256_castsi256_ps(_mm256_setr_epi64x(entry(2), entry(3), entry(6), entry(7)));
    lo = _mm256_castps_si256(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
    hi = _mm256_castps_si256(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

// The 4-byte grid entries at lane r's index(r).
template <typename Index>
KILN_TARGET_AVX2 inline __m256i lookup4(const uint8_t* grid, Index index) {
    const auto entry = [&](int r) {
        int v;
        std::memcpy(&v, grid + 4 * static_cast<size_t>(index(r)), 4);
        return v;
    };
    return _mm256_setr_epi32(entry(0), entry(1), entry(2), entry(3), entry(4), entry(5), entry(6), entry(7));
}

// The indices in a vector's 16-bit lanes, taken out as two 64-bit scalars
// (cheaper than vpextrd per lane or a store and reloads, measured): lane r's index
// is (*this)(r), for lookup8 / lookup4.
struct Lanes16 {
    uint64_t i03, i47;
    KILN_TARGET_AVX2 explicit Lanes16(__m128i idx)
        : i03(static_cast<uint64_t>(_mm_cvtsi128_si64(idx))), i47(static_cast<uint64_t>(_mm_extract_epi64(idx, 1))) {}
    uint32_t operator()(int r) const { return static_cast<uint32_t>((r < 4 ? i03 : i47) >> (16 * (r & 3)) & 0xFFFF); }
};

using L = IqGridLayout;

// As avx512_iq_grid.cpp, each type gives scale(w, h, ib, half) and its levels:
// the types with sign bits (SignedGrid) by parts(w, h, ib, l, glo, ghi), the
// unsigned grid entries and the sign bytes returned; the others (IQ1) by
// group(w, h, ib, l, lo, hi). levels<F> gives every type's offset levels.
template <typename F>
concept SignedGrid = requires(const uint8_t* w, __m256i& g) { F::parts(w, 0, 0, 0, g, g); };

template <typename F>
KILN_TARGET_AVX2 inline void levels(const uint8_t* w, int h, int ib, int l, __m256i& lo, __m256i& hi) {
    if constexpr (SignedGrid<F>) {
        __m256i glo, ghi;
        const __m256i signs = F::parts(w, h, ib, l, glo, ghi);
        apply_signs(signs, glo, ghi, F::k_offset, lo, hi);
    } else {
        F::group(w, h, ib, l, lo, hi);
    }
}

struct Iq2xxs {
    static constexpr GgmlType k_type = GgmlType::IQ2_XXS;
    static constexpr int k_offset = 64;
    static constexpr int k_grid_max = 43;  // grid values 8, 25, 43
    static constexpr int k_max_level = k_offset + k_grid_max;
    static constexpr bool k_per16 = false;
    static KILN_TARGET_AVX2 __m256i scale(const uint8_t* w, int h, int ib, int) { return odd_scale(load256(w + L::iq2xxs_aux(ib) + 32 * h), 28, 4); }
    static KILN_TARGET_AVX2 __m256i parts(const uint8_t* w, int h, int ib, int l, __m256i& glo, __m256i& ghi) {
        const uint8_t* q = w + L::iq2xxs_idx(ib, l) + 8 * h;
        const __m256i aux = load256(w + L::iq2xxs_aux(ib) + 32 * h);
        lookup8(quant::k_iq2xxs_grid[0], [&](int r) { return uint32_t{q[r]}; }, glo, ghi);
        return signs_of_index(bits_of(aux, 7 * l, 127));
    }
};

struct Iq2xs {
    static constexpr GgmlType k_type = GgmlType::IQ2_XS;
    static constexpr int k_offset = 64;
    static constexpr int k_grid_max = 43;  // grid values 8, 25, 43
    static constexpr int k_max_level = k_offset + k_grid_max;
    static constexpr bool k_per16 = true;
    static KILN_TARGET_AVX2 __m256i scale(const uint8_t* w, int h, int ib, int half) { return odd_scale(u8x8(w + L::iq2xs_scales(ib), h), 4 * half, 4); }
    static KILN_TARGET_AVX2 __m256i parts(const uint8_t* w, int h, int ib, int l, __m256i& glo, __m256i& ghi) {
        const uint8_t* qp = w + L::iq2xs_q(ib, l) + 16 * h;
        lookup8(quant::k_iq2xs_grid[0], [&](int r) { return u16_at(qp + 2 * r) & 511; }, glo, ghi);
        return signs_of_index(_mm256_srli_epi32(u16x8(w + L::iq2xs_q(ib, l), h), 9));
    }
};

struct Iq2s {
    static constexpr GgmlType k_type = GgmlType::IQ2_S;
    static constexpr int k_offset = 64;
    static constexpr int k_grid_max = 43;  // grid values 8, 25, 43
    static constexpr int k_max_level = k_offset + k_grid_max;
    static constexpr bool k_per16 = true;
    static KILN_TARGET_AVX2 __m256i scale(const uint8_t* w, int h, int ib, int half) { return odd_scale(u8x8(w + L::iq2s_scales(ib), h), 4 * half, 4); }
    static KILN_TARGET_AVX2 __m256i parts(const uint8_t* w, int h, int ib, int l, __m256i& glo, __m256i& ghi) {
        lookup8(quant::k_iq2s_grid[0], Lanes16(index16(u8x8_16(w + L::iq2s_qs(ib, l), h), u8x8_16(w + L::iq2s_qh(ib), h), 2 * l, 3)), glo, ghi);
        return u8x8(w + L::iq2s_signs(ib, l), h);
    }
};

// IQ3_XXS's grid halved (its values are all even): levels 32 +- g / 2 <= 63
// let the prefill tiles and decode sum two groups' products in int16; its
// scales are doubled to match.
const auto k_iq3xxs_half = [] {
    std::array<std::array<uint8_t, 4>, 256> t{};
    for (size_t i = 0; i < t.size(); ++i)
        for (size_t j = 0; j < 4; ++j) t[i][j] = static_cast<uint8_t>(quant::k_iq3xxs_grid[i][j] / 2);
    return t;
}();

struct Iq3xxs {
    static constexpr GgmlType k_type = GgmlType::IQ3_XXS;
    static constexpr int k_offset = 32;
    static constexpr int k_grid_max = 31;  // the grid's 4, 12, .., 62 halved; the scales doubled
    static constexpr int k_max_level = k_offset + k_grid_max;
    static constexpr bool k_per16 = false;
    static KILN_TARGET_AVX2 __m256i scale(const uint8_t* w, int h, int ib, int) {
        return _mm256_slli_epi32(odd_scale(load256(w + L::iq3xxs_aux(ib) + 32 * h), 28, 4), 1);
    }
    static KILN_TARGET_AVX2 __m256i parts(const uint8_t* w, int h, int ib, int l, __m256i& glo, __m256i& ghi) {
        const uint8_t* q0 = w + L::iq3xxs_qs(ib, 2 * l) + 8 * h;
        const uint8_t* q1 = w + L::iq3xxs_qs(ib, 2 * l + 1) + 8 * h;
        glo = lookup4(k_iq3xxs_half[0].data(), [&](int r) { return q0[r]; });
        ghi = lookup4(k_iq3xxs_half[0].data(), [&](int r) { return q1[r]; });
        return signs_of_index(bits_of(load256(w + L::iq3xxs_aux(ib) + 32 * h), 7 * l, 127));
    }
};

struct Iq3s {
    static constexpr GgmlType k_type = GgmlType::IQ3_S;
    static constexpr int k_offset = 16;
    static constexpr int k_grid_max = 15;  // grid values 1, 3, .., 15
    static constexpr int k_max_level = k_offset + k_grid_max;
    static constexpr bool k_per16 = false;
    static KILN_TARGET_AVX2 __m256i scale(const uint8_t* w, int h, int ib, int) { return odd_scale(u8x8(w + L::iq3s_scales(ib / 2), h), 4 * (ib % 2), 4); }
    static KILN_TARGET_AVX2 __m256i parts(const uint8_t* w, int h, int ib, int l, __m256i& glo, __m256i& ghi) {
        const __m128i qh = u8x8_16(w + L::iq3s_qh(ib), h);
        glo = lookup4(quant::k_iq3s_grid[0], Lanes16(index16(u8x8_16(w + L::iq3s_qs(ib, 2 * l), h), qh, 2 * l, 1)));
        ghi = lookup4(quant::k_iq3s_grid[0], Lanes16(index16(u8x8_16(w + L::iq3s_qs(ib, 2 * l + 1), h), qh, 2 * l + 1, 1)));
        return u8x8(w + L::iq3s_signs(ib, l), h);
    }
};

// IQ1: 8 (g + 2) + delta, the level 8 g + delta plus 16. The grid is kept here
// as the unsigned 8 (g + 2) (the same 16 KB as the grid), so a lookup leaves
// only the delta (+-1: 1 | the minus mask) to add.
const auto k_iq1_levels = [] {
    std::array<std::array<uint8_t, 8>, 2048> t{};
    for (size_t i = 0; i < t.size(); ++i)
        for (size_t j = 0; j < 8; ++j) t[i][j] = static_cast<uint8_t>(8 * (quant::k_iq1s_grid[i][j] + 2));
    return t;
}();

KILN_TARGET_AVX2 inline void iq1_levels(__m128i idx, __m256i minus, __m256i& lo, __m256i& hi) {
    const __m256i delta = _mm256_or_si256(minus, _mm256_set1_epi8(1));
    lookup8(k_iq1_levels[0].data(), Lanes16(idx), lo, hi);
    lo = _mm256_add_epi8(lo, delta);
    hi = _mm256_add_epi8(hi, delta);
}

// The minus masks (0 / -1 per row) come from sign-extending loads: bit 15 of
// IQ1_S's qh, bit 3 or 7 of IQ1_M's qh byte.
struct Iq1s {
    static constexpr GgmlType k_type = GgmlType::IQ1_S;
    static constexpr int k_offset = 16;
    static constexpr int k_grid_max = 9;  // |8 g + delta|
    static constexpr int k_max_level = k_offset + k_grid_max;
    static constexpr bool k_per16 = false;
    static KILN_TARGET_AVX2 __m256i scale(const uint8_t* w, int h, int ib, int) { return odd_scale(u16x8(w + L::iq1s_qh(ib), h), 12, 3); }
    static KILN_TARGET_AVX2 void group(const uint8_t* w, int h, int ib, int l, __m256i& lo, __m256i& hi) {
        const __m128i qh = u16x8_16(w + L::iq1s_qh(ib), h);
        iq1_levels(index16(u8x8_16(w + L::iq1s_qs(ib, l), h), qh, 3 * l, 7), _mm256_srai_epi32(_mm256_cvtepi16_epi32(qh), 31), lo, hi);
    }
};

struct Iq1m {
    static constexpr GgmlType k_type = GgmlType::IQ1_M;
    static constexpr int k_offset = 16;
    static constexpr int k_grid_max = 9;  // |8 g + delta|
    static constexpr int k_max_level = k_offset + k_grid_max;
    static constexpr bool k_per16 = true;
    static KILN_TARGET_AVX2 __m256i scale(const uint8_t* w, int h, int ib, int half) {
        return odd_scale(u16x8(w + L::iq1m_scales(ib / 2), h), 6 * (ib % 2) + 3 * half, 3);
    }
    static KILN_TARGET_AVX2 void group(const uint8_t* w, int h, int ib, int l, __m256i& lo, __m256i& hi) {
        const uint8_t* qh = w + L::iq1m_qh(ib, l / 2) + 8 * h;
        const __m256i qh32 = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qh)));
        const __m256i minus = _mm256_srai_epi32(l % 2 ? qh32 : _mm256_slli_epi32(qh32, 28), 31);
        iq1_levels(index16(u8x8_16(w + L::iq1m_qs(ib, l), h), u8x8_16(w + L::iq1m_qh(ib, l / 2), h), 4 * (l % 2), 7), minus, lo, hi);
    }
};

// Bytes of a token's int16 activation sums: one per sub-block part (8 parts,
// or 16 for the formats with per-16 scales).
constexpr int act_sums_stride(int parts) { return 2 * 8 * parts; }

// -offset x token t's activation sum of sub-block ib's part: where a part's
// products of the offset levels start.
template <typename F>
KILN_TARGET_AVX2 inline __m256i sum_start(const uint8_t* a, int t, int ib, int half) {
    constexpr int parts = F::k_per16 ? 2 : 1;
    int16_t s;
    std::memcpy(&s, a + act_aux_offset(256) + act_sums_stride(parts) * t + 2 * (parts * ib + half), 2);
    return _mm256_set1_epi32(-F::k_offset * static_cast<int32_t>(s));
}

// dot + the products of one chunk of unsigned levels with the 4 broadcast
// activation bytes at `at` (vpdpbusd, or vpmaddubsw + vpmaddwd: exact, see above).
template <bool Vnni>
KILN_TARGET_AVX2 inline __m256i chunk_dot(__m256i dot, __m256i levels, const uint8_t* at) {
    if constexpr (Vnni)
        return dpbusd(dot, levels, bcast_i32(at));
    else
        return _mm256_add_epi32(dot, _mm256_madd_epi16(_mm256_maddubs_epi16(levels, bcast_i32(at)), _mm256_set1_epi16(1)));
}

// One block of rows 8h .. x T tokens of one group (t0 ..): its terms added to acc[t].
template <typename F, int T, bool Vnni>
KILN_TARGET_AVX2 inline void iq_block(const uint8_t* w, int h, const uint8_t* a, int t0, __m256* acc) {
    constexpr int halves = F::k_per16 ? 2 : 1;
    constexpr int groups = 4 / halves;
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    // Unrolled but for the ib pairs, so every field offset and shift is a constant.
#pragma GCC unroll 1
    for (int ib2 = 0; ib2 < 8; ib2 += 2)
#pragma GCC unroll 2
        for (int odd = 0; odd < 2; ++odd)
#pragma GCC unroll 2
        for (int half = 0; half < halves; ++half) {
            const int ib = ib2 + odd;
            __m256i dot[T];
            for (int t = 0; t < T; ++t) dot[t] = sum_start<F>(a, t0 + t, ib, half);
#pragma GCC unroll 4
            for (int l = groups * half; l < groups * (half + 1); ++l) {
                __m256i lo, hi;
                levels<F>(w, h, ib, l, lo, hi);
                for (int t = 0; t < T; ++t) {
                    const uint8_t* at = a + 256 * (t0 + t) + 32 * ib + 8 * l;
                    dot[t] = chunk_dot<Vnni>(dot[t], lo, at);
                    dot[t] = chunk_dot<Vnni>(dot[t], hi, at + 4);
                }
            }
            const __m256i ls = F::scale(w, h, ib, half);
            for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(dot[t], ls));
        }
    const __m256 dw = load_f16x8(w + 16 * h);
    for (int t = 0; t < T; ++t) {
        const __m256 d = _mm256_mul_ps(dw, bcast_f32(a + act_d_offset(256) + 4 * (t0 + t)));
        acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum[t])));
    }
}

// A group's products for rows 8h .., as int16 pairs (vpmaddubsw) of its two
// chunks summed: the types with sign bits put the signs on the activations
// ((a ^ m) - m, m the negation mask; Q8_K activations are within +-127, so none
// overflows) and multiply the unsigned grid entries (<= k_grid_max) directly,
// with no offset; IQ1 multiplies its offset levels (<= k_max_level).
template <typename F>
KILN_TARGET_AVX2 inline __m256i group_products(const uint8_t* w, int h, int ib, int l, __m256i a_lo, __m256i a_hi) {
    __m256i lo, hi;
    if constexpr (SignedGrid<F>) {
        __m256i neg_lo, neg_hi;
        sign_masks(F::parts(w, h, ib, l, lo, hi), neg_lo, neg_hi);
        a_lo = _mm256_sub_epi8(_mm256_xor_si256(a_lo, neg_lo), neg_lo);
        a_hi = _mm256_sub_epi8(_mm256_xor_si256(a_hi, neg_hi), neg_hi);
    } else {
        F::group(w, h, ib, l, lo, hi);
    }
    return _mm256_add_epi16(_mm256_maddubs_epi16(lo, a_lo), _mm256_maddubs_epi16(hi, a_hi));
}

// The groups whose vpmaddubsw pairs fit int16 together when the unsigned
// operand is at most max_multiplier (4 x 127 x max_multiplier per group and lane).
constexpr int int16_groups(int max_multiplier) { return 32767 / (4 * 127 * max_multiplier); }

// The unsigned operand's largest value in decode: the grid entries of the types
// with sign bits, IQ1's offset levels.
template <typename F>
constexpr int largest_multiplier() {
    if constexpr (SignedGrid<F>)
        return F::k_grid_max;
    else
        return F::k_max_level;
}

// One token, both 8-row halves of a panel block: each activation broadcast
// serves both halves, and the groups' products are summed in int16 over as many
// groups as fit (4 x 127 x the largest multiplier per group and lane) before one
// vpmaddwd. Unrolled but for the ib pairs, so every field offset and shift is a
// constant. The same integer sums as iq_block's.
template <typename F>
KILN_TARGET_AVX2 inline void iq_block_decode(const uint8_t* w, const uint8_t* a, __m256* acc) {
    constexpr int halves = F::k_per16 ? 2 : 1;
    constexpr int groups = 4 / halves;
    constexpr int step = std::min(groups, int16_groups(largest_multiplier<F>()));  // groups per vpmaddwd
    static_assert(step >= 1 && groups % step == 0);
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i isum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 1
    for (int ib2 = 0; ib2 < 8; ib2 += 2)
#pragma GCC unroll 2
        for (int odd = 0; odd < 2; ++odd)
#pragma GCC unroll 2
            for (int half = 0; half < halves; ++half) {
                const int ib = ib2 + odd;
                const __m256i start = SignedGrid<F> ? _mm256_setzero_si256() : sum_start<F>(a, 0, ib, half);
                __m256i dot[2] = {start, start};
#pragma GCC unroll 4
                for (int l0 = groups * half; l0 < groups * (half + 1); l0 += step) {
                    __m256i p[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
#pragma GCC unroll 4
                    for (int l = l0; l < l0 + step; ++l) {
                        const __m256i a_lo = bcast_i32(a + 32 * ib + 8 * l), a_hi = bcast_i32(a + 32 * ib + 8 * l + 4);
#pragma GCC unroll 2
                        for (int h = 0; h < 2; ++h) p[h] = _mm256_add_epi16(p[h], group_products<F>(w, h, ib, l, a_lo, a_hi));
                    }
                    for (int h = 0; h < 2; ++h) dot[h] = _mm256_add_epi32(dot[h], _mm256_madd_epi16(p[h], ones));
                }
                for (int h = 0; h < 2; ++h) isum[h] = _mm256_add_epi32(isum[h], _mm256_mullo_epi32(dot[h], F::scale(w, h, ib, half)));
            }
    for (int h = 0; h < 2; ++h) {
        const __m256 d = _mm256_mul_ps(load_f16x8(w + 16 * h), bcast_f32(a + act_d_offset(256)));
        acc[h] = _mm256_add_ps(acc[h], _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum[h])));
    }
}

// The row's sums times the format's power of two (iq_grid_layout.h), stored.
KILN_TARGET_AVX2 inline void store_scaled(float* y, __m256 acc, int n, GgmlType type) {
    store_rows(y, _mm256_mul_ps(_mm256_set1_ps(iq_grid_factor(type)), acc), n);
}

template <typename F, int T, bool Vnni>
KILN_TARGET_AVX2 void iq_tile(const uint8_t* w, int h, const uint8_t* a, int t0, int64_t nb, uint64_t w_stride, uint64_t a_stride,
                              float* y, int64_t ldy, int n_rows, bool stream) {
    const uint64_t ahead = stream_ahead(w_stride);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (stream) prefetch_block(w + ahead, w_stride);
        iq_block<F, T, Vnni>(w, h, a, t0, acc);
    }
    for (int t = 0; t < T; ++t) store_scaled(y + t * ldy, acc[t], n_rows, F::k_type);
}

// Decode of panels [p0, p1), one token: each panel's two halves block by block,
// the next block's lines requested while this one is summed (as run_decode; the
// row's sum is scaled before it is stored, so this walk is its own).
template <typename F>
KILN_TARGET_AVX2 void iq_decode(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y) {
    for (int64_t p = p0; p < p1; ++p) {
        const uint8_t* wb = w.panel(p);
        const uint8_t* ab = a.group(0);
        __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
        for (int64_t b = 0; b < w.n_blocks; ++b, wb += w.block_bytes, ab += a.format.block_stride) {
            prefetch_block(wb + w.block_bytes, w.block_bytes);
            iq_block_decode<F>(wb, ab, acc);
        }
        const int rows = static_cast<int>(std::min<int64_t>(k_panel_rows, w.n_out - p * k_panel_rows));
        store_scaled(y + p * k_panel_rows, acc[0], std::min(rows, 8), F::k_type);
        if (rows > 8) store_scaled(y + p * k_panel_rows + 8, acc[1], rows - 8, F::k_type);
    }
}

template <typename F, bool Vnni>
constexpr TileFn k_iq_tiles[5] = {nullptr, iq_tile<F, 1, Vnni>, iq_tile<F, 2, Vnni>, iq_tile<F, 3, Vnni>, iq_tile<F, 4, Vnni>};

// ---- prefill: each panel block's grid lookups once for every token group ----

// At AVX2 a decoded block is IqDecoded's levels and d, its scales stored as (s,
// s) int16 pairs, the vpmaddwd operand that applies them to the tiles' int16
// sums, and after them the offset terms: per word j of the activations' int16
// sums (two parts, or two sub-blocks for formats of one part) the pairs (-offset
// s) that one vpmaddwd against that word turns into the offset's share of the
// row sum. So no part costs a token a vpmulld or a broadcast offset.
constexpr int offset_words(int parts) { return 8 * parts / 2; }  // two parts a word
constexpr int offset_terms(int parts, int j) { return static_cast<int>(IqDecoded::bytes(parts)) + 64 * j; }
constexpr uint64_t decoded_bytes(int parts) { return IqDecoded::bytes(parts) + 64 * static_cast<uint64_t>(offset_words(parts)); }

// Lanes lo (low half) and hi (high half) as int16 pairs.
KILN_TARGET_AVX2 inline __m256i int16_pairs(__m256i lo, __m256i hi) {
    return _mm256_or_si256(_mm256_and_si256(lo, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(hi, 16));
}

// One panel block at w in the AVX2 decoded form at out (32-byte aligned): both
// 8-row halves of every chunk.
template <typename F>
KILN_TARGET_AVX2 void decode_block(const uint8_t* w, uint8_t* out) {
    constexpr int parts = F::k_per16 ? 2 : 1;
    const __m256i minus_offset = _mm256_set1_epi32(-F::k_offset);
    for (int h = 0; h < 2; ++h) {
        __m256i sc[8 * parts];  // every part's scale; sub-block ib's from parts * ib
        for (int ib = 0; ib < 8; ++ib) {
            for (int l = 0; l < 4; ++l) {
                __m256i lo, hi;
                levels<F>(w, h, ib, l, lo, hi);
                _mm256_store_si256(reinterpret_cast<__m256i*>(out + IqDecoded::levels(ib, l) + 32 * h), lo);
                _mm256_store_si256(reinterpret_cast<__m256i*>(out + IqDecoded::levels(ib, l) + 64 + 32 * h), hi);
            }
            for (int part = 0; part < parts; ++part) {
                const __m256i s = sc[parts * ib + part] = F::scale(w, h, ib, part);
                _mm256_store_si256(reinterpret_cast<__m256i*>(out + IqDecoded::scales(ib, part, parts) + 32 * h), int16_pairs(s, s));
            }
        }
        for (int j = 0; j < offset_words(parts); ++j)  // word j: the sums of parts 2j, 2j + 1
            _mm256_store_si256(reinterpret_cast<__m256i*>(out + offset_terms(parts, j) + 32 * h),
                               int16_pairs(_mm256_mullo_epi32(sc[2 * j], minus_offset), _mm256_mullo_epi32(sc[2 * j + 1], minus_offset)));
    }
    std::memcpy(out + IqDecoded::d(parts), w, 32);
}

// nb decoded blocks at dw, rows 8h.., x T tokens of one group (t0 ..; a: the
// group's activations of the first block): the same integer row sums as
// iq_block's. The row sums continue those left in y by the blocks before (first:
// none), and the last chunk of a row stores them scaled: the bits of iq_tile's
// single pass. Without AVX-VNNI, the vpmaddubsw pairs of SumGroups groups (levels
// <= max: 4 x 127 x max per group and lane) are summed in int16 before the
// vpmaddwd that scales them (vpmaddubsw and vpmaddwd share the multiply ports,
// which bound these tiles); with it, vpdpbusd sums a part in int32 and vpmulld
// scales it.

template <bool Per16, int SumGroups, int T, bool Vnni>
KILN_TARGET_AVX2 void decoded_tile(const uint8_t* dw, int h, const uint8_t* a, int t0, int64_t nb, uint64_t a_stride, float* y,
                                   int64_t ldy, int n_rows, bool first, bool last, float factor) {
    constexpr int parts = Per16 ? 2 : 1;
    constexpr int groups = 4 / parts;
    constexpr int step = SumGroups > 0 ? SumGroups : 1;  // groups per vpmaddwd (SumGroups 0: per chunk)
    static_assert(groups % step == 0);
    constexpr uint64_t bytes = decoded_bytes(parts);
    constexpr int aux_stride = act_sums_stride(parts);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = first ? _mm256_setzero_ps() : load_rows(y + t * ldy, n_rows);
    for (int64_t b = 0; b < nb; ++b, dw += bytes, a += a_stride) {
        const uint8_t* at0 = a + 256 * t0;
        const uint8_t* ax0 = a + act_aux_offset(256) + aux_stride * t0;
        __m256i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
        for (int j = 0; j < offset_words(parts); ++j) {
            const __m256i m = load256(dw + offset_terms(parts, j) + 32 * h);
            for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(bcast_i32(ax0 + aux_stride * t + 4 * j), m));
        }
        // Unrolled but for ib, so every offset is a constant or linear in ib.
#pragma GCC unroll 1
        for (int ib = 0; ib < 8; ++ib)
#pragma GCC unroll 2
            for (int part = 0; part < parts; ++part) {
                const __m256i sc = load256(dw + IqDecoded::scales(ib, part, parts) + 32 * h);
                if constexpr (Vnni) {
                    __m256i dot[T];
                    for (int t = 0; t < T; ++t) dot[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
                    for (int l = groups * part; l < groups * (part + 1); ++l) {
                        const __m256i lo = load256(dw + IqDecoded::levels(ib, l) + 32 * h);
                        const __m256i hi = load256(dw + IqDecoded::levels(ib, l) + 64 + 32 * h);
                        for (int t = 0; t < T; ++t) {
                            const uint8_t* at = at0 + 256 * t + 32 * ib + 8 * l;
                            dot[t] = dpbusd(dpbusd(dot[t], lo, bcast_i32(at)), hi, bcast_i32(at + 4));
                        }
                    }
                    const __m256i s = _mm256_srli_epi32(sc, 16);
                    for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(dot[t], s));
                } else {
#pragma GCC unroll 4
                    for (int l0 = groups * part; l0 < groups * (part + 1); l0 += step) {
                        __m256i p[T];
                        for (int t = 0; t < T; ++t) p[t] = _mm256_setzero_si256();
#pragma GCC unroll 4
                        for (int l = l0; l < l0 + step; ++l) {
                            const __m256i lo = load256(dw + IqDecoded::levels(ib, l) + 32 * h);
                            const __m256i hi = load256(dw + IqDecoded::levels(ib, l) + 64 + 32 * h);
                            for (int t = 0; t < T; ++t) {
                                const uint8_t* at = at0 + 256 * t + 32 * ib + 8 * l;
                                const __m256i plo = _mm256_maddubs_epi16(lo, bcast_i32(at)), phi = _mm256_maddubs_epi16(hi, bcast_i32(at + 4));
                                if constexpr (SumGroups > 0)
                                    p[t] = _mm256_add_epi16(p[t], _mm256_add_epi16(plo, phi));
                                else  // a pair of chunks may not fit int16
                                    isum[t] = _mm256_add_epi32(isum[t], _mm256_add_epi32(_mm256_madd_epi16(plo, sc), _mm256_madd_epi16(phi, sc)));
                            }
                        }
                        if constexpr (SumGroups > 0)
                            for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(p[t], sc));
                    }
                }
            }
        const __m256 dwf = load_f16x8(dw + IqDecoded::d(parts) + 16 * h);
        for (int t = 0; t < T; ++t) {
            const __m256 d = _mm256_mul_ps(dwf, bcast_f32(a + act_d_offset(256) + 4 * (t0 + t)));
            acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum[t])));
        }
    }
    const __m256 f = _mm256_set1_ps(factor);
    for (int t = 0; t < T; ++t) store_rows(y + t * ldy, last ? _mm256_mul_ps(f, acc[t]) : acc[t], n_rows);
}

using DecodedTileFn = void (*)(const uint8_t*, int, const uint8_t*, int, int64_t, uint64_t, float*, int64_t, int, bool, bool, float);

template <bool Per16, int SumGroups, bool Vnni>
constexpr DecodedTileFn k_decoded_tiles[5] = {nullptr, decoded_tile<Per16, SumGroups, 1, Vnni>, decoded_tile<Per16, SumGroups, 2, Vnni>,
                                              decoded_tile<Per16, SumGroups, 3, Vnni>, decoded_tile<Per16, SumGroups, 4, Vnni>};

// Several token groups: per panel, IqDecoded::k_blocks blocks decoded at a time,
// then every half, group and 4-token tile over them (a batch of one group:
// run_tiles' direct path).
template <typename F, bool Vnni>
KILN_TARGET_AVX2 void iq_prefill(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    constexpr uint64_t bytes = decoded_bytes(F::k_per16 ? 2 : 1);
    run_decoded_prefill<IqDecoded::k_blocks, bytes>(
        w, a, p0, p1, y, ldy, decode_block<F>,
        [&](int n, const uint8_t* dw, int h, const uint8_t* ag, int t0, int64_t nb, float* yt, int rows, bool first, bool last) {
            k_decoded_tiles<F::k_per16, Vnni ? 0 : int16_groups(F::k_max_level), Vnni>[n](dw, h, ag, t0, nb, a.format.block_stride, yt, ldy, rows, first, last,
                                                             iq_grid_factor(F::k_type));
        });
}

template <typename F, bool Vnni>
KILN_TARGET_AVX2 void iq_gemm(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_tokens == 1) return iq_decode<F>(w, a, p0, p1, y);
    // Past one 4-token tile the lookups are worth doing once (8 tokens: 1.3-2x,
    // docs/perf.md); up to 4 the direct tiles are as fast.
    if (a.n_groups() > 1 || a.n_tokens > 4) return iq_prefill<F, Vnni>(w, a, p0, p1, y, ldy);
    run_tiles(k_iq_tiles<F, Vnni>, w, a, p0, p1, y, ldy);
}

}  // namespace

void gemm_iq2_xxs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) { iq_gemm<Iq2xxs, false>(w, a, p0, p1, y, ldy); }
void gemm_iq2_xs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) { iq_gemm<Iq2xs, false>(w, a, p0, p1, y, ldy); }
void gemm_iq2_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) { iq_gemm<Iq2s, false>(w, a, p0, p1, y, ldy); }
void gemm_iq3_xxs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) { iq_gemm<Iq3xxs, false>(w, a, p0, p1, y, ldy); }
void gemm_iq3_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) { iq_gemm<Iq3s, false>(w, a, p0, p1, y, ldy); }
void gemm_iq1_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) { iq_gemm<Iq1s, false>(w, a, p0, p1, y, ldy); }
void gemm_iq1_m(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) { iq_gemm<Iq1m, false>(w, a, p0, p1, y, ldy); }

namespace vnni {
const PackedGemmFn gemm_iq2_xxs = iq_gemm<Iq2xxs, true>;
const PackedGemmFn gemm_iq2_xs = iq_gemm<Iq2xs, true>;
const PackedGemmFn gemm_iq2_s = iq_gemm<Iq2s, true>;
const PackedGemmFn gemm_iq3_xxs = iq_gemm<Iq3xxs, true>;
const PackedGemmFn gemm_iq3_s = iq_gemm<Iq3s, true>;
const PackedGemmFn gemm_iq1_s = iq_gemm<Iq1s, true>;
const PackedGemmFn gemm_iq1_m = iq_gemm<Iq1m, true>;
}  // namespace vnni

}  // namespace kiln::avx2

#endif  // KILN_HAVE_X86_KERNELS
