// AVX-512 (F/BW/VL/DQ/VNNI) products of the low-bit 256-element formats with Q8_K
// activations over packed panels (layout.h): Q2_K, Q3_K, TQ2_0 (2-bit chunks of
// 16-element sub-blocks), TQ1_0 (base-3 bytes) and IQ4_XS (nibble chunks of 32-element
// sub-blocks through the level table). Per super-block and token: exact integer
// sums per sub-block (vpdpbusd over unsigned levels), the sub-block scales applied
// as integers, the levels' offset removed through the activations' sub-block sums
// (vpdpwssd), then the scalar reference's float steps lane by lane (kiln/quant.h).
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <algorithm>
#include <cstring>

#include "compute/kernels/avx512_common.h"
#include "compute/kernels/iq_grid_layout.h"
#include "compute/kernels/x86.h"
#include "quant/quant_tables.h"

namespace kiln::avx512 {

namespace {

// The 2-bit formats. Q2_K: levels q with scale and min per sub-block (d sc q -
// dmin m); Q3_K: unsigned levels q + 4 with a signed scale; TQ2: unsigned levels
// q + 1, no scale (TQ2_0).
enum class K2 { Q2_K, Q3_K, TQ2 };

struct K2Layout {
    int sc;      // offset of the scale pairs [8][16][2] (Q2_K: u8 sc | m << 4; Q3_K: s8)
    int qs;      // 16 sub-block chunks of 2-bit levels
    int high;    // Q3_K: 8 chunks of third bits, one per sub-block pair
};

constexpr K2Layout k2_layout(K2 f) {
    switch (f) {
        case K2::Q2_K: return {64, 320, 0};
        case K2::Q3_K: return {32, 288, 1312};
        case K2::TQ2: return {0, 32, 0};
    }
    return {};
}

// v shifted left by n bits (right for negative n) in 16-bit lanes.
KILN_TARGET_AVX512 inline __m512i shift16(__m512i v, int n) {
    return n >= 0 ? _mm512_slli_epi16(v, static_cast<unsigned>(n)) : _mm512_srli_epi16(v, static_cast<unsigned>(-n));
}

// Unsigned levels of chunk k (elements 4k .. 4k + 3 of each lane's sub-block) of a
// sub-block's 2-bit chunk `raw`; Q3_K adds bit k + 4 half of `hb` as the third bit.
template <K2 F>
KILN_TARGET_AVX512 inline __m512i k2_levels(__m512i raw, __m512i hb, int half, int k) {
    const __m512i two = _mm512_set1_epi8(0x03);
    const __m512i lo = _mm512_srli_epi16(raw, static_cast<unsigned>(2 * k));
    if constexpr (F == K2::Q3_K) {
        // bits 0-1 from lo, bit 2 from the high chunk: (two ? lo : hi) & 7
        const __m512i hi = shift16(hb, 2 - k - 4 * half);
        return _mm512_and_si512(_mm512_ternarylogic_epi32(lo, hi, two, 0xE4), _mm512_set1_epi8(0x07));
    } else {
        return _mm512_and_si512(lo, two);
    }
}

// P panels x T tokens of a 2-bit format (see run_tiles; index k = p * T + t).
template <K2 F, int P, int T>
KILN_TARGET_AVX512 void k2_tile(const uint8_t* w, uint64_t panel_bytes, const uint8_t* a, int64_t nb, uint64_t w_stride,
                                uint64_t a_stride, float* y, int64_t ldy, const __mmask16* rows, int64_t y_step, bool stream) {
    constexpr K2Layout L = k2_layout(F);
    const __m512i low4_16 = _mm512_set1_epi16(0x0F);
    __m512 acc[P * T];
    for (int k = 0; k < P * T; ++k) acc[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (T > 1 && stream) prefetch_block(w + w_stride, w_stride);
        __m512i isum[P * T];
        for (int k = 0; k < P * T; ++k) isum[k] = _mm512_setzero_si512();
        // Q2_K, one token: the mins' sum taken from the scale bytes as they are
        // widened for the scales (several tokens: after the block, once for all of
        // them, where one register per token is not spare).
        __m512i msum1[P];
        for (int p = 0; p < P; ++p) msum1[p] = _mm512_setzero_si512();
        for (int s = 0; s < 8; ++s) {
            // One token: the next super-block's lines requested while this one is
            // summed (the hardware prefetcher alone keeps too few in flight).
            if constexpr (T == 1)
                for (int p = 0; p < P; ++p) {
                    const uint8_t* next = w + p * panel_bytes + w_stride;
                    prefetch_l1(next + L.qs + 128 * s);
                    prefetch_l1(next + L.qs + 128 * s + 64);
                    if (s < 5) prefetch_l1(next + 64 * s);  // header lines (at most 320 bytes)
                    if constexpr (F == K2::Q3_K) prefetch_l1(next + L.high + 64 * s);
                }
            // Scales of sub-blocks 2s, 2s + 1 as int16 pairs per lane; Q3_K and TQ2
            // fold their level offset into isum through the activation sums.
            __m512i sc[P];
            for (int p = 0; p < P; ++p) {
                const uint8_t* wp = w + p * panel_bytes;
                if constexpr (F == K2::Q2_K) {
                    const __m512i bytes = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + L.sc + 32 * s)));
                    sc[p] = _mm512_and_si512(bytes, low4_16);
                    if constexpr (T == 1)
                        msum1[p] = _mm512_dpwssd_epi32(msum1[p], _mm512_srli_epi16(bytes, 4), bcast_i32(a + act_aux_offset(256) + 4 * s));
                } else if constexpr (F == K2::Q3_K) {
                    sc[p] = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + L.sc + 32 * s)));
                    const __m512i bias = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(sc[p], 2));
                    for (int t = 0; t < T; ++t)
                        isum[p * T + t] = _mm512_dpwssd_epi32(isum[p * T + t], bias, bcast_i32(a + act_aux_offset(256) + 32 * t + 4 * s));
                } else {
                    const __m512i bias = _mm512_set1_epi16(-1);
                    for (int t = 0; t < T; ++t)
                        isum[p * T + t] = _mm512_dpwssd_epi32(isum[p * T + t], bias, bcast_i32(a + act_aux_offset(256) + 32 * t + 4 * s));
                }
            }
            // Even / odd sub-block sums; both fit int16 (|sum| <= 16 x 7 x 128), so
            // one vpdpwssd against the scale pairs applies both scales.
            __m512i de[P * T], dodd[P * T];
            for (int k = 0; k < P * T; ++k) de[k] = dodd[k] = _mm512_setzero_si512();
            for (int p = 0; p < P; ++p) {
                const uint8_t* wp = w + p * panel_bytes;
                const __m512i hb = F == K2::Q3_K ? _mm512_loadu_si512(wp + L.high + 64 * s) : _mm512_setzero_si512();
                for (int half = 0; half < 2; ++half) {
                    const int sb = 2 * s + half;
                    const __m512i raw = _mm512_loadu_si512(wp + L.qs + 64 * sb);
                    for (int k = 0; k < 4; ++k) {
                        const __m512i q = k2_levels<F>(raw, hb, half, k);
                        for (int t = 0; t < T; ++t) {
                            const __m512i av = bcast_i32(a + 256 * t + 16 * sb + 4 * k);
                            if constexpr (F == K2::TQ2)
                                (half ? dodd : de)[p * T + t] = _mm512_dpbusd_epi32((half ? dodd : de)[p * T + t], q, av);
                            else if (half)
                                dodd[p * T + t] = _mm512_dpbusd_epi32(dodd[p * T + t], q, av);
                            else
                                de[p * T + t] = _mm512_dpbusd_epi32(de[p * T + t], q, av);
                        }
                    }
                }
            }
            for (int p = 0; p < P; ++p)
                for (int t = 0; t < T; ++t) {
                    const int k = p * T + t;
                    if constexpr (F == K2::TQ2) {
                        isum[k] = _mm512_add_epi32(isum[k], _mm512_add_epi32(de[k], dodd[k]));
                    } else {
                        const __m512i both = _mm512_mask_blend_epi16(0xAAAAAAAAu, de[k], _mm512_slli_epi32(dodd[k], 16));
                        isum[k] = _mm512_dpwssd_epi32(isum[k], both, sc[p]);
                    }
                }
        }
        for (int p = 0; p < P; ++p) {
            const uint8_t* wp = w + p * panel_bytes;
            const __m512 dw = load_f16x16(wp);
            if constexpr (F == K2::Q2_K) {
                // The mins' sum: m (high nibbles) pairs against the sub-block sums.
                __m512i m[8];
                if constexpr (T > 1)
                    for (int s = 0; s < 8; ++s)
                        m[s] = _mm512_srli_epi16(_mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + L.sc + 32 * s))), 4);
                const __m512 dmw = load_f16x16(wp + 32);
                for (int t = 0; t < T; ++t) {
                    __m512i msum = msum1[p];
                    if constexpr (T > 1)
                        for (int s = 0; s < 8; ++s) msum = _mm512_dpwssd_epi32(msum, m[s], bcast_i32(a + act_aux_offset(256) + 32 * t + 4 * s));
                    const __m512 da = bcast_f32(a + act_d_offset(256) + 4 * t);
                    const __m512 dall = _mm512_mul_ps(da, dw);
                    const __m512 dmin = _mm512_mul_ps(da, dmw);
                    const __m512 scaled = _mm512_mul_ps(dall, _mm512_cvtepi32_ps(isum[p * T + t]));
                    const __m512 mins = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(msum));
                    acc[p * T + t] = _mm512_add_ps(acc[p * T + t], _mm512_sub_ps(scaled, mins));
                }
            } else {
                for (int t = 0; t < T; ++t) {
                    // Q3_K: d_a * d_w; TQ2: d_w * d_a (the references' operand order).
                    const __m512 da = bcast_f32(a + act_d_offset(256) + 4 * t);
                    const __m512 d = F == K2::Q3_K ? _mm512_mul_ps(da, dw) : _mm512_mul_ps(dw, da);
                    acc[p * T + t] = _mm512_add_ps(acc[p * T + t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[p * T + t])));
                }
            }
        }
    }
    for (int p = 0; p < P; ++p)
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy + p * y_step, rows[p], acc[p * T + t]);
}

#define KILN_IQ_TARGET KILN_TARGET_AVX512
#include "compute/kernels/avx512_iq_tiles.h"
#undef KILN_IQ_TARGET

// TQ1_0 (layout.h: d[16] | 13 chunks of base-3 bytes). A byte t's digit is
// (3t) >> 8 and the next digit's byte 3t mod 256, so 3t = 256 digit + next. One
// token sums t x a and next x a with vpdpbusd (P, Q): 3P - Q = 256 sum digit x a,
// exactly (|P| < 2^24 per block). Several tokens share each digit's extraction
// ((3t) >> 8 by vpmaddubsw on the even and odd bytes) and take one vpdpbusd each.
// The levels' offset (digit - 1) through the activations' sums, then TQ2_0's
// float steps: the same bits.
KILN_TARGET_AVX512 inline __m512i times3(__m512i t) { return _mm512_add_epi8(t, _mm512_add_epi8(t, t)); }

KILN_TARGET_AVX512 inline __m512i tq1_digit(__m512i t) {
    const __m512i even = _mm512_maddubs_epi16(t, _mm512_set1_epi16(0x0003)), odd = _mm512_maddubs_epi16(t, _mm512_set1_epi16(0x0300));
    return _mm512_ternarylogic_epi32(_mm512_srli_epi16(even, 8), odd, _mm512_set1_epi16(static_cast<int16_t>(0xFF00)), 0xF8);  // a | (b & c)
}

template <int P, int T>
KILN_TARGET_AVX512 void tq1_tile(const uint8_t* w, uint64_t panel_bytes, const uint8_t* a, int64_t nb, uint64_t w_stride,
                                 uint64_t a_stride, float* y, int64_t ldy, const __mmask16* rows, int64_t y_step, bool stream) {
    __m512 acc[P * T];
    for (int k = 0; k < P * T; ++k) acc[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (T > 1 && stream) prefetch_block(w + w_stride, w_stride);
        // -sum(a) per token: the levels' offset.
        __m512i bias[T];
        for (int t = 0; t < T; ++t) {
            bias[t] = _mm512_setzero_si512();
            for (int s = 0; s < 8; ++s)
                bias[t] = _mm512_dpwssd_epi32(bias[t], _mm512_set1_epi16(-1), bcast_i32(a + act_aux_offset(256) + 32 * t + 4 * s));
        }
        __m512i sp[P * T], sq[P * T];  // T == 1: P and Q; else two chains of digit x a
        for (int k = 0; k < P * T; ++k) sp[k] = sq[k] = _mm512_setzero_si512();
        for (int c = 0; c < k_tq1_chunks; ++c) {
            __m512i raw[P];
            for (int p = 0; p < P; ++p) {
                const uint8_t* wp = w + p * panel_bytes;
                if constexpr (T == 1) prefetch_l1(wp + w_stride + 32 + 64 * c);
                raw[p] = _mm512_loadu_si512(wp + 32 + 64 * c);
            }
            for (int n = 0; n < tq1_digits(c); ++n)
                for (int p = 0; p < P; ++p) {
                    const __m512i next = times3(raw[p]);
                    if constexpr (T == 1) {
                        const __m512i av = bcast_i32(a + tq1_element(c, n));
                        sp[p] = _mm512_dpbusd_epi32(sp[p], raw[p], av);
                        sq[p] = _mm512_dpbusd_epi32(sq[p], next, av);
                    } else {
                        const __m512i d = tq1_digit(raw[p]);
                        for (int t = 0; t < T; ++t) {
                            __m512i& s = (c + n) % 2 ? sq[p * T + t] : sp[p * T + t];
                            s = _mm512_dpbusd_epi32(s, d, bcast_i32(a + 256 * t + tq1_element(c, n)));
                        }
                    }
                    raw[p] = next;
                }
        }
        if constexpr (T == 1) prefetch_l1(w + w_stride);  // the next block's d line
        for (int p = 0; p < P; ++p) {
            const __m512 dw = load_f16x16(w + p * panel_bytes);
            for (int t = 0; t < T; ++t) {
                const int k = p * T + t;
                const __m512i dot = T == 1 ? _mm512_srai_epi32(_mm512_sub_epi32(_mm512_add_epi32(sp[k], _mm512_add_epi32(sp[k], sp[k])), sq[k]), 8)
                                           : _mm512_add_epi32(sp[k], sq[k]);
                const __m512i isum = _mm512_add_epi32(bias[t], dot);
                const __m512 d = _mm512_mul_ps(dw, bcast_f32(a + act_d_offset(256) + 4 * t));
                acc[k] = _mm512_add_ps(acc[k], _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum)));
            }
        }
    }
    for (int p = 0; p < P; ++p)
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy + p * y_step, rows[p], acc[p * T + t]);
}

constexpr TileFn tq1_tiles[9] = {tq1_tile<2, 1>, tq1_tile<1, 1>, tq1_tile<1, 2>, tq1_tile<1, 3>, tq1_tile<1, 4>,
                                 tq1_tile<1, 5>, tq1_tile<1, 6>, tq1_tile<1, 7>, tq1_tile<1, 8>};

// Prefill of several token groups: a panel's blocks decoded once, 8 at a time,
// into the grid i-quants' IqDecoded form (the digits as operand chunks, every
// scale 1), then every group's decoded_tile over them (avx512_iq_tiles.h): the
// integer sums and float steps of tq1_tile, so the same bits.
KILN_TARGET_AVX512 void tq1_decode_block(const uint8_t* w, uint8_t* out) {
    for (int c = 0; c < k_tq1_chunks; ++c) {
        __m512i raw = _mm512_loadu_si512(w + 32 + 64 * c);
        for (int n = 0; n < tq1_digits(c); ++n) {
            const int e = tq1_element(c, n);  // elements e .. e + 3: sub-block e / 32, group (e % 32) / 8, half (e % 8) / 4
            _mm512_store_si512(out + IqDecoded::levels(e / 32, (e % 32) / 8) + 64 * ((e % 8) / 4), tq1_digit(raw));
            raw = times3(raw);
        }
    }
    for (int ib = 0; ib < 8; ++ib)
        for (int h = 0; h < 2; ++h) _mm512_store_si512(out + IqDecoded::scales(ib, h, 2), _mm512_set1_epi32(1));
    std::memcpy(out + IqDecoded::d(2), w, 32);
}

KILN_TARGET_AVX512 void tq1_prefill(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    decoded_prefill<IqDecoded::bytes(2)>(w, a, p0, p1, y, ldy, 1.0f, tq1_decode_block, k_decoded_tiles<1, true>);
}

// IQ4_XS's level table plus 128 (unsigned for vpdpbusd; the activation sums remove
// 128 x sum(a) per sub-block, weighted by its scale).
KILN_TARGET_AVX512 inline __m512i iq4_lut() {
    alignas(16) uint8_t t[16];
    for (int i = 0; i < 16; ++i) t[i] = static_cast<uint8_t>(quant::k_values_iq4nl[i] + 128);
    return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}

// IQ4_XS (layout.h): d[16] | scale pairs s8 [4][16][2] at 32 | sub-block sb's 4
// nibble chunks at 160 + 256 sb. isum = sum sc (dot_u - 128 asum).
template <int P, int T>
KILN_TARGET_AVX512 void iq4xs_tile(const uint8_t* w, uint64_t panel_bytes, const uint8_t* a, int64_t nb, uint64_t w_stride,
                                   uint64_t a_stride, float* y, int64_t ldy, const __mmask16* rows, int64_t y_step, bool stream) {
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i lut = iq4_lut();
    __m512 acc[P * T];
    for (int k = 0; k < P * T; ++k) acc[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (T > 1 && stream) prefetch_block(w + w_stride, w_stride);
        __m512i isum[P * T];
        for (int k = 0; k < P * T; ++k) isum[k] = _mm512_setzero_si512();
        for (int q = 0; q < 4; ++q) {
            __m512i sc[P];
            for (int p = 0; p < P; ++p) {
                const uint8_t* wp = w + p * panel_bytes;
                if constexpr (T == 1) {
                    const uint8_t* next = wp + w_stride;
                    for (int off = 160 + 512 * q; off < 160 + 512 * (q + 1); off += 64) prefetch_l1(next + off);
                    if (q < 3) prefetch_l1(next + 64 * q);
                }
                sc[p] = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 32 + 32 * q)));
                const __m512i bias = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(sc[p], 7));
                for (int t = 0; t < T; ++t)
                    isum[p * T + t] = _mm512_dpwssd_epi32(isum[p * T + t], bias, bcast_i32(a + act_aux_offset(256) + 16 * t + 4 * q));
            }
            for (int half = 0; half < 2; ++half) {
                const int sb = 2 * q + half;
                __m512i dot[P * T];
                for (int k = 0; k < P * T; ++k) dot[k] = _mm512_setzero_si512();
                for (int p = 0; p < P; ++p) {
                    const uint8_t* qs = w + p * panel_bytes + 160 + 256 * sb;
                    for (int c = 0; c < 4; ++c) {
                        const __m512i raw = _mm512_loadu_si512(qs + 64 * c);
                        const __m512i lo = _mm512_shuffle_epi8(lut, _mm512_and_si512(raw, low4));
                        const __m512i hi = _mm512_shuffle_epi8(lut, _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4));
                        for (int t = 0; t < T; ++t) {
                            dot[p * T + t] = _mm512_dpbusd_epi32(dot[p * T + t], lo, bcast_i32(a + 256 * t + 32 * sb + 4 * c));
                            dot[p * T + t] = _mm512_dpbusd_epi32(dot[p * T + t], hi, bcast_i32(a + 256 * t + 32 * sb + 16 + 4 * c));
                        }
                    }
                }
                for (int p = 0; p < P; ++p) {
                    const __m512i s32 = half ? _mm512_srai_epi32(sc[p], 16) : _mm512_srai_epi32(_mm512_slli_epi32(sc[p], 16), 16);
                    for (int t = 0; t < T; ++t) isum[p * T + t] = _mm512_add_epi32(isum[p * T + t], _mm512_mullo_epi32(dot[p * T + t], s32));
                }
            }
        }
        for (int p = 0; p < P; ++p) {
            const __m512 dw = load_f16x16(w + p * panel_bytes);
            for (int t = 0; t < T; ++t) {
                const __m512 d = _mm512_mul_ps(bcast_f32(a + act_d_offset(256) + 4 * t), dw);
                acc[p * T + t] = _mm512_add_ps(acc[p * T + t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[p * T + t])));
            }
        }
    }
    for (int p = 0; p < P; ++p)
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy + p * y_step, rows[p], acc[p * T + t]);
}

template <K2 F>
constexpr TileFn k2_tiles[9] = {k2_tile<F, 2, 1>, k2_tile<F, 1, 1>, k2_tile<F, 1, 2>, k2_tile<F, 1, 3>, k2_tile<F, 1, 4>,
                                k2_tile<F, 1, 5>, k2_tile<F, 1, 6>, k2_tile<F, 1, 7>, k2_tile<F, 1, 8>};

constexpr TileFn iq4xs_tiles[9] = {iq4xs_tile<2, 1>, iq4xs_tile<1, 1>, iq4xs_tile<1, 2>, iq4xs_tile<1, 3>, iq4xs_tile<1, 4>,
                                   iq4xs_tile<1, 5>, iq4xs_tile<1, 6>, iq4xs_tile<1, 7>, iq4xs_tile<1, 8>};

}  // namespace

void gemm_q2_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    run_tiles(k2_tiles<K2::Q2_K>, w, a, p0, p1, y, ldy);
}
void gemm_q3_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    run_tiles(k2_tiles<K2::Q3_K>, w, a, p0, p1, y, ldy);
}
void gemm_tq2_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    run_tiles(k2_tiles<K2::TQ2>, w, a, p0, p1, y, ldy);
}
void gemm_tq1_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_groups() > 1) return tq1_prefill(w, a, p0, p1, y, ldy);
    run_tiles(tq1_tiles, w, a, p0, p1, y, ldy);
}
void gemm_iq4_xs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    run_tiles(iq4xs_tiles, w, a, p0, p1, y, ldy);
}

}  // namespace kiln::avx512

#endif  // KILN_HAVE_X86_KERNELS
