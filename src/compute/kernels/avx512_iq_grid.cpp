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

// The activation sum of sub-block ib (k_per16: of its half h) of token t, times
// -offset: the start of that sub-block's sum (it removes the levels' offset).
template <int Offset, bool Per16>
KILN_TARGET_AVX512 inline __m512i sum_start(const uint8_t* a, int t, int ib, int h) {
    int16_t s;
    if constexpr (Per16)
        std::memcpy(&s, a + act_aux_offset(256) + 32 * t + 2 * (2 * ib + h), 2);
    else
        std::memcpy(&s, a + act_aux_offset(256) + 16 * t + 2 * ib, 2);
    return _mm512_set1_epi32(-Offset * static_cast<int32_t>(s));
}
template <typename F>
KILN_TARGET_AVX512 inline __m512i sum_start(const uint8_t* a, int t, int ib, int h) {
    return sum_start<F::k_offset, F::k_per16>(a, t, ib, h);
}

// P panels x T tokens (see run_tiles; index k = p * T + t).
template <typename F, int P, int T>
KILN_TARGET_AVX512 void iq_tile(const uint8_t* w, uint64_t panel_bytes, const uint8_t* a, int64_t nb, uint64_t w_stride,
                                uint64_t a_stride, float* y, int64_t ldy, const __mmask16* rows, int64_t y_step, bool stream) {
    constexpr int halves = F::k_per16 ? 2 : 1;
    constexpr int groups = 4 / halves;  // groups of 8 per sub-block part
    __m512 acc[P * T];
    for (int k = 0; k < P * T; ++k) acc[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (T > 1 && stream) prefetch_block(w + w_stride, w_stride);
        __m512i isum[P * T];
        for (int k = 0; k < P * T; ++k) isum[k] = _mm512_setzero_si512();
        for (int ib = 0; ib < 8; ++ib) {
            // One token: an eighth of the next block's lines per sub-block.
            if constexpr (T == 1)
                for (int p = 0; p < P; ++p)
                    for (uint64_t off = (w_stride * ib / 8) & ~uint64_t{63}; off < w_stride * (ib + 1) / 8; off += 64)
                        prefetch_l1(w + p * panel_bytes + w_stride + off);
            for (int h = 0; h < halves; ++h) {
                __m512i dot[P * T];
                for (int t = 0; t < T; ++t) {
                    const __m512i start = sum_start<F>(a, t, ib, h);
                    for (int p = 0; p < P; ++p) dot[p * T + t] = start;
                }
                for (int p = 0; p < P; ++p) {
                    const uint8_t* wp = w + p * panel_bytes;
                    for (int l = groups * h; l < groups * (h + 1); ++l) {
                        __m512i lo, hi;
                        F::group(wp, ib, l, lo, hi);
                        for (int t = 0; t < T; ++t) {
                            const uint8_t* at = a + 256 * t + 32 * ib + 8 * l;
                            dot[p * T + t] = _mm512_dpbusd_epi32(dot[p * T + t], lo, bcast_i32(at));
                            dot[p * T + t] = _mm512_dpbusd_epi32(dot[p * T + t], hi, bcast_i32(at + 4));
                        }
                    }
                }
                for (int p = 0; p < P; ++p) {
                    const __m512i ls = F::scale(w + p * panel_bytes, ib, h);
                    for (int t = 0; t < T; ++t) isum[p * T + t] = _mm512_add_epi32(isum[p * T + t], _mm512_mullo_epi32(dot[p * T + t], ls));
                }
            }
        }
        for (int p = 0; p < P; ++p) {
            const __m512 dw = load_f16x16(w + p * panel_bytes);
            for (int t = 0; t < T; ++t) {
                const __m512 d = _mm512_mul_ps(dw, bcast_f32(a + act_d_offset(256) + 4 * t));
                acc[p * T + t] = _mm512_add_ps(acc[p * T + t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[p * T + t])));
            }
        }
    }
    const __m512 factor = _mm512_set1_ps(iq_grid_factor(F::k_type));
    for (int p = 0; p < P; ++p)
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy + p * y_step, rows[p], _mm512_mul_ps(factor, acc[p * T + t]));
}

template <typename F>
constexpr TileFn iq_tiles[9] = {iq_tile<F, 2, 1>, iq_tile<F, 1, 1>, iq_tile<F, 1, 2>, iq_tile<F, 1, 3>, iq_tile<F, 1, 4>,
                                iq_tile<F, 1, 5>, iq_tile<F, 1, 6>, iq_tile<F, 1, 7>, iq_tile<F, 1, 8>};

// ---- prefill: each panel block's grid lookups once for every token group ----

// One panel block at w in IqDecoded's form at out (64-byte aligned).
template <typename F>
KILN_TARGET_AVX512 void decode_block(const uint8_t* w, uint8_t* out) {
    constexpr int parts = F::k_per16 ? 2 : 1;
    for (int ib = 0; ib < 8; ++ib) {
        for (int l = 0; l < 4; ++l) {
            __m512i lo, hi;
            F::group(w, ib, l, lo, hi);
            _mm512_store_si512(out + IqDecoded::levels(ib, l), lo);
            _mm512_store_si512(out + IqDecoded::levels(ib, l) + 64, hi);
        }
        for (int h = 0; h < parts; ++h) _mm512_store_si512(out + IqDecoded::scales(ib, h, parts), F::scale(w, ib, h));
    }
    std::memcpy(out + IqDecoded::d(parts), w, 32);
}

// nb decoded blocks at dw x T tokens of one group (a: the group's activations of
// the first of them): iq_tile's operations in its order, with the levels and
// scales loaded. The row sums continue those left in y by the blocks before
// (first: none), and the last chunk of a row stores them times the format's
// power of two: the bits of iq_tile's single pass.
template <int Offset, bool Per16, int T>
KILN_TARGET_AVX512 void decoded_tile(const uint8_t* dw, const uint8_t* a, int64_t nb, uint64_t a_stride, float* y, int64_t ldy,
                                     __mmask16 rows, bool first, bool last, float factor) {
    constexpr int parts = Per16 ? 2 : 1;
    constexpr int groups = 4 / parts;
    constexpr uint64_t bytes = IqDecoded::bytes(parts);
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(rows, y + t * ldy);
    for (int64_t b = 0; b < nb; ++b, dw += bytes, a += a_stride) {
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        for (int ib = 0; ib < 8; ++ib)
            for (int h = 0; h < parts; ++h) {
                __m512i dot[T];
                for (int t = 0; t < T; ++t) dot[t] = sum_start<Offset, Per16>(a, t, ib, h);
                for (int l = groups * h; l < groups * (h + 1); ++l) {
                    const __m512i lo = _mm512_load_si512(dw + IqDecoded::levels(ib, l));
                    const __m512i hi = _mm512_load_si512(dw + IqDecoded::levels(ib, l) + 64);
                    for (int t = 0; t < T; ++t) {
                        const uint8_t* at = a + 256 * t + 32 * ib + 8 * l;
                        dot[t] = _mm512_dpbusd_epi32(dot[t], lo, bcast_i32(at));
                        dot[t] = _mm512_dpbusd_epi32(dot[t], hi, bcast_i32(at + 4));
                    }
                }
                const __m512i ls = _mm512_load_si512(dw + IqDecoded::scales(ib, h, parts));
                for (int t = 0; t < T; ++t) isum[t] = _mm512_add_epi32(isum[t], _mm512_mullo_epi32(dot[t], ls));
            }
        const __m512 dwf = load_f16x16(dw + IqDecoded::d(parts));
        for (int t = 0; t < T; ++t) {
            const __m512 d = _mm512_mul_ps(dwf, bcast_f32(a + act_d_offset(256) + 4 * t));
            acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[t])));
        }
    }
    const __m512 f = _mm512_set1_ps(factor);
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, rows, last ? _mm512_mul_ps(f, acc[t]) : acc[t]);
}

using DecodedTileFn = void (*)(const uint8_t*, const uint8_t*, int64_t, uint64_t, float*, int64_t, __mmask16, bool, bool, float);

// Indexed by the group's token count (1 .. 8); shared by the formats of one offset and scale shape.
template <int Offset, bool Per16>
constexpr DecodedTileFn k_decoded_tiles[9] = {nullptr,
                                              decoded_tile<Offset, Per16, 1>,
                                              decoded_tile<Offset, Per16, 2>,
                                              decoded_tile<Offset, Per16, 3>,
                                              decoded_tile<Offset, Per16, 4>,
                                              decoded_tile<Offset, Per16, 5>,
                                              decoded_tile<Offset, Per16, 6>,
                                              decoded_tile<Offset, Per16, 7>,
                                              decoded_tile<Offset, Per16, 8>};

// Several token groups: per panel, IqDecoded::k_blocks blocks decoded at a time,
// then every group's tile over them. (A batch of one group reads each block once:
// run_tiles' direct path, which streams the panel from memory.)
template <typename F>
KILN_TARGET_AVX512 void iq_prefill(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    constexpr int parts = F::k_per16 ? 2 : 1;
    constexpr uint64_t bytes = IqDecoded::bytes(parts);
    alignas(64) uint8_t decoded[IqDecoded::k_blocks * bytes];  // [k_blocks] IqDecoded blocks
    const uint64_t a_stride = a.format.block_stride;
    for (int64_t p = p0; p < p1; ++p) {
        const __mmask16 rows = panel_rows(w, p);
        for (int64_t b0 = 0; b0 < w.n_blocks; b0 += IqDecoded::k_blocks) {
            const int64_t nb = std::min<int64_t>(IqDecoded::k_blocks, w.n_blocks - b0);
            for (int64_t b = 0; b < nb; ++b) decode_block<F>(w.panel(p) + static_cast<uint64_t>(b0 + b) * w.block_bytes, decoded + b * bytes);
            for (int64_t g = 0; g < a.n_groups(); ++g) {
                const int n = static_cast<int>(std::min<int64_t>(k_act_group, a.n_tokens - g * k_act_group));
                k_decoded_tiles<F::k_offset, F::k_per16>[n](decoded, a.group(g) + static_cast<uint64_t>(b0) * a_stride, nb, a_stride,
                                                            y + g * k_act_group * ldy + p * k_panel_rows, ldy, rows, b0 == 0,
                                                            b0 + nb == w.n_blocks, iq_grid_factor(F::k_type));
            }
        }
    }
}

template <typename F>
KILN_TARGET_AVX512 void iq_gemm(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_groups() > 1) return iq_prefill<F>(w, a, p0, p1, y, ldy);
    run_tiles(iq_tiles<F>, w, a, p0, p1, y, ldy);
}

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
