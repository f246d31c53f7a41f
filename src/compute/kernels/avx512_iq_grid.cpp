// AVX-512 (F/BW/VL/DQ/VNNI) products of the grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S,
// IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) with Q8_K activations over packed panels. The
// panels keep each format's own fields, interleaved per row (layout.h), so they
// are the file's size; the kernels decode 16 rows at once: the grid rows of 16
// indices by one gather each (4 bytes per row: half an 8-element grid row, or a
// whole 4-element one), the signs as byte masks, then levels plus an offset
// (unsigned for vpdpbusd; the offset times the activations' sub-block sum starts
// each sub-block's sum), the sub-block scale applied by vpmulld, and the scalar
// reference's float steps lane by lane (quant/iq_quants.cpp states the order).
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <cstring>

#include "compute/kernels/avx512_common.h"
#include "compute/kernels/iq_grid_layout.h"
#include "compute/kernels/x86.h"
#include "quant/quant_tables.h"

namespace kiln::avx512 {

namespace {

KILN_TARGET_AVX512 inline __m512i u8x16(const uint8_t* p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
KILN_TARGET_AVX512 inline __m512i u16x16(const uint8_t* p) {
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// The 8 sign bits of each lane's group (low byte of each int32) as byte masks of
// its two chunks: bits 0-3 for the low chunk's bytes, 4-7 for the high one's.
KILN_TARGET_AVX512 inline void sign_masks(__m512i signs, __mmask64& k_lo, __mmask64& k_hi) {
    const __m512i spread = _mm512_shuffle_epi8(signs, _mm512_set4_epi32(0x0C0C0C0C, 0x08080808, 0x04040404, 0x00000000));
    k_lo = _mm512_test_epi8_mask(spread, _mm512_set1_epi32(0x08040201));
    k_hi = _mm512_test_epi8_mask(spread, _mm512_set1_epi32(static_cast<int>(0x80402010u)));
}

// The 7-bit sign index's 8 signs (the eighth makes the count of negatives even:
// ggml's ksigns_iq2xs table, computed).
KILN_TARGET_AVX512 inline __m512i signs_of_index(__m512i s7) {
    __m512i p = _mm512_xor_si512(s7, _mm512_srli_epi32(s7, 4));
    p = _mm512_xor_si512(p, _mm512_srli_epi32(p, 2));
    p = _mm512_xor_si512(p, _mm512_srli_epi32(p, 1));
    return _mm512_or_si512(s7, _mm512_slli_epi32(_mm512_and_si512(p, _mm512_set1_epi32(1)), 7));
}

// offset + (negative ? -g : g) for the unsigned grid magnitudes g.
KILN_TARGET_AVX512 inline __m512i signed_plus(__m512i g, __mmask64 neg, int offset) {
    const __m512i off = _mm512_set1_epi8(static_cast<char>(offset));
    return _mm512_mask_sub_epi8(_mm512_add_epi8(off, g), neg, off, g);
}

// 2 s + 1 of each lane's 4- or 3-bit field s.
KILN_TARGET_AVX512 inline __m512i odd_scale(__m512i field, int shift, int bits) {
    const __m512i s = _mm512_and_si512(_mm512_srli_epi32(field, static_cast<unsigned>(shift)), _mm512_set1_epi32((1 << bits) - 1));
    return _mm512_add_epi32(_mm512_slli_epi32(s, 1), _mm512_set1_epi32(1));
}

// Per format: group(w, ib, l, lo, hi) gives the unsigned levels (level + k_offset)
// of elements 8l .. 8l + 7 of sub-block ib of a panel block at w, lo the first
// four of each lane, hi the last; scale(w, ib, h) each lane's integer scale of
// sub-block ib (k_per16: of its half h).
using L = IqGridLayout;

struct Iq2xxs {
    static constexpr GgmlType k_type = GgmlType::IQ2_XXS;
    static constexpr int k_offset = 64;
    static constexpr bool k_per16 = false;
    static KILN_TARGET_AVX512 __m512i aux(const uint8_t* w, int ib) { return _mm512_loadu_si512(w + L::iq2xxs_aux(ib)); }
    static KILN_TARGET_AVX512 __m512i scale(const uint8_t* w, int ib, int) { return odd_scale(aux(w, ib), 28, 4); }
    static KILN_TARGET_AVX512 void group(const uint8_t* w, int ib, int l, __m512i& lo, __m512i& hi) {
        const __m512i idx = u8x16(w + L::iq2xxs_idx(ib, l));
        const auto* grid = reinterpret_cast<const int*>(quant::k_iq2xxs_grid);
        const __m512i glo = _mm512_i32gather_epi32(idx, grid, 8), ghi = _mm512_i32gather_epi32(idx, grid + 1, 8);
        __mmask64 klo, khi;
        sign_masks(signs_of_index(_mm512_and_si512(_mm512_srli_epi32(aux(w, ib), static_cast<unsigned>(7 * l)), _mm512_set1_epi32(127))),
                   klo, khi);
        lo = signed_plus(glo, klo, k_offset);
        hi = signed_plus(ghi, khi, k_offset);
    }
};

struct Iq2xs {
    static constexpr GgmlType k_type = GgmlType::IQ2_XS;
    static constexpr int k_offset = 64;
    static constexpr bool k_per16 = true;
    static KILN_TARGET_AVX512 __m512i scale(const uint8_t* w, int ib, int h) { return odd_scale(u8x16(w + L::iq2xs_scales(ib)), 4 * h, 4); }
    static KILN_TARGET_AVX512 void group(const uint8_t* w, int ib, int l, __m512i& lo, __m512i& hi) {
        const __m512i q = u16x16(w + L::iq2xs_q(ib, l));
        const __m512i idx = _mm512_and_si512(q, _mm512_set1_epi32(511));
        const auto* grid = reinterpret_cast<const int*>(quant::k_iq2xs_grid);
        const __m512i glo = _mm512_i32gather_epi32(idx, grid, 8), ghi = _mm512_i32gather_epi32(idx, grid + 1, 8);
        __mmask64 klo, khi;
        sign_masks(signs_of_index(_mm512_srli_epi32(q, 9)), klo, khi);
        lo = signed_plus(glo, klo, k_offset);
        hi = signed_plus(ghi, khi, k_offset);
    }
};

struct Iq2s {
    static constexpr GgmlType k_type = GgmlType::IQ2_S;
    static constexpr int k_offset = 64;
    static constexpr bool k_per16 = true;
    static KILN_TARGET_AVX512 __m512i scale(const uint8_t* w, int ib, int h) { return odd_scale(u8x16(w + L::iq2s_scales(ib)), 4 * h, 4); }
    static KILN_TARGET_AVX512 void group(const uint8_t* w, int ib, int l, __m512i& lo, __m512i& hi) {
        const __m512i high = _mm512_and_si512(_mm512_srli_epi32(u8x16(w + L::iq2s_qh(ib)), static_cast<unsigned>(2 * l)), _mm512_set1_epi32(3));
        const __m512i idx = _mm512_or_si512(u8x16(w + L::iq2s_qs(ib, l)), _mm512_slli_epi32(high, 8));
        const auto* grid = reinterpret_cast<const int*>(quant::k_iq2s_grid);
        const __m512i glo = _mm512_i32gather_epi32(idx, grid, 8), ghi = _mm512_i32gather_epi32(idx, grid + 1, 8);
        __mmask64 klo, khi;
        sign_masks(u8x16(w + L::iq2s_signs(ib, l)), klo, khi);
        lo = signed_plus(glo, klo, k_offset);
        hi = signed_plus(ghi, khi, k_offset);
    }
};

struct Iq3xxs {
    static constexpr GgmlType k_type = GgmlType::IQ3_XXS;
    static constexpr int k_offset = 64;
    static constexpr bool k_per16 = false;
    static KILN_TARGET_AVX512 __m512i aux(const uint8_t* w, int ib) { return _mm512_loadu_si512(w + L::iq3xxs_aux(ib)); }
    static KILN_TARGET_AVX512 __m512i scale(const uint8_t* w, int ib, int) { return odd_scale(aux(w, ib), 28, 4); }
    static KILN_TARGET_AVX512 void group(const uint8_t* w, int ib, int l, __m512i& lo, __m512i& hi) {
        const auto* grid = reinterpret_cast<const int*>(quant::k_iq3xxs_grid);
        const __m512i glo = _mm512_i32gather_epi32(u8x16(w + L::iq3xxs_qs(ib, 2 * l)), grid, 4);
        const __m512i ghi = _mm512_i32gather_epi32(u8x16(w + L::iq3xxs_qs(ib, 2 * l + 1)), grid, 4);
        __mmask64 klo, khi;
        sign_masks(signs_of_index(_mm512_and_si512(_mm512_srli_epi32(aux(w, ib), static_cast<unsigned>(7 * l)), _mm512_set1_epi32(127))),
                   klo, khi);
        lo = signed_plus(glo, klo, k_offset);
        hi = signed_plus(ghi, khi, k_offset);
    }
};

struct Iq3s {
    static constexpr GgmlType k_type = GgmlType::IQ3_S;
    static constexpr int k_offset = 64;
    static constexpr bool k_per16 = false;
    static KILN_TARGET_AVX512 __m512i scale(const uint8_t* w, int ib, int) { return odd_scale(u8x16(w + L::iq3s_scales(ib / 2)), 4 * (ib % 2), 4); }
    static KILN_TARGET_AVX512 void group(const uint8_t* w, int ib, int l, __m512i& lo, __m512i& hi) {
        const __m512i qh = u8x16(w + L::iq3s_qh(ib));
        const auto* grid = reinterpret_cast<const int*>(quant::k_iq3s_grid);
        __m512i g[2];
        for (int r = 0; r < 2; ++r) {
            const int k = 2 * l + r;
            const __m512i high = _mm512_and_si512(_mm512_srli_epi32(qh, static_cast<unsigned>(k)), _mm512_set1_epi32(1));
            g[r] = _mm512_i32gather_epi32(_mm512_or_si512(u8x16(w + L::iq3s_qs(ib, k)), _mm512_slli_epi32(high, 8)), grid, 4);
        }
        __mmask64 klo, khi;
        sign_masks(u8x16(w + L::iq3s_signs(ib, l)), klo, khi);
        lo = signed_plus(g[0], klo, k_offset);
        hi = signed_plus(g[1], khi, k_offset);
    }
};

// IQ1: levels 8 g + delta (g in {-1, 0, 1}, delta = +-1) plus 16: 8 (g + 2) + delta.
KILN_TARGET_AVX512 inline void iq1_levels(__m512i idx, __mmask16 minus, __m512i& lo, __m512i& hi) {
    const auto* grid = reinterpret_cast<const int*>(quant::k_iq1s_grid);
    const __m512i two = _mm512_set1_epi8(2);
    const __m512i delta = _mm512_mask_blend_epi32(minus, _mm512_set1_epi8(1), _mm512_set1_epi8(-1));
    // (g + 2) <= 3 per byte: a 16-bit shift by 3 keeps each byte's bits in it.
    lo = _mm512_add_epi8(_mm512_slli_epi16(_mm512_add_epi8(_mm512_i32gather_epi32(idx, grid, 8), two), 3), delta);
    hi = _mm512_add_epi8(_mm512_slli_epi16(_mm512_add_epi8(_mm512_i32gather_epi32(idx, grid + 1, 8), two), 3), delta);
}

struct Iq1s {
    static constexpr GgmlType k_type = GgmlType::IQ1_S;
    static constexpr int k_offset = 16;
    static constexpr bool k_per16 = false;
    static KILN_TARGET_AVX512 __m512i scale(const uint8_t* w, int ib, int) { return odd_scale(u16x16(w + L::iq1s_qh(ib)), 12, 3); }
    static KILN_TARGET_AVX512 void group(const uint8_t* w, int ib, int l, __m512i& lo, __m512i& hi) {
        const __m512i qh = u16x16(w + L::iq1s_qh(ib));
        const __m512i high = _mm512_and_si512(_mm512_srli_epi32(qh, static_cast<unsigned>(3 * l)), _mm512_set1_epi32(7));
        const __m512i idx = _mm512_or_si512(u8x16(w + L::iq1s_qs(ib, l)), _mm512_slli_epi32(high, 8));
        iq1_levels(idx, _mm512_test_epi32_mask(qh, _mm512_set1_epi32(0x8000)), lo, hi);
    }
};

struct Iq1m {
    static constexpr GgmlType k_type = GgmlType::IQ1_M;
    static constexpr int k_offset = 16;
    static constexpr bool k_per16 = true;
    static KILN_TARGET_AVX512 __m512i scale(const uint8_t* w, int ib, int h) {
        return odd_scale(u16x16(w + L::iq1m_scales(ib / 2)), 6 * (ib % 2) + 3 * h, 3);
    }
    static KILN_TARGET_AVX512 void group(const uint8_t* w, int ib, int l, __m512i& lo, __m512i& hi) {
        const __m512i nibble = _mm512_and_si512(_mm512_srli_epi32(u8x16(w + L::iq1m_qh(ib, l / 2)), static_cast<unsigned>(4 * (l % 2))),
                                                _mm512_set1_epi32(0xF));
        const __m512i idx = _mm512_or_si512(u8x16(w + L::iq1m_qs(ib, l)), _mm512_slli_epi32(_mm512_and_si512(nibble, _mm512_set1_epi32(7)), 8));
        iq1_levels(idx, _mm512_test_epi32_mask(nibble, _mm512_set1_epi32(8)), lo, hi);
    }
};

#define KILN_IQ_TARGET KILN_TARGET_AVX512
#include "compute/kernels/avx512_iq_tiles.h"
#undef KILN_IQ_TARGET

}  // namespace

void gemm_iq2_xxs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq2xxs>(w, a, p0, p1, y, ldy);
}
void gemm_iq2_xs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq2xs>(w, a, p0, p1, y, ldy);
}
void gemm_iq2_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq2s>(w, a, p0, p1, y, ldy);
}
void gemm_iq3_xxs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq3xxs>(w, a, p0, p1, y, ldy);
}
void gemm_iq3_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq3s>(w, a, p0, p1, y, ldy);
}
void gemm_iq1_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq1s>(w, a, p0, p1, y, ldy);
}
void gemm_iq1_m(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq1m>(w, a, p0, p1, y, ldy);
}

}  // namespace kiln::avx512

#endif  // KILN_HAVE_X86_KERNELS
