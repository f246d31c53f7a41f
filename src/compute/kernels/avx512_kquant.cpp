// AVX-512 (F/BW/VL/DQ/VNNI) products of the k-quants (Q4_K, Q5_K, Q6_K) with Q8_K
// activations over packed panels: per 256-element super-block and token, exact
// integer sums per sub-block (vpdpbusd), scaled by the sub-block's integer scale
// (vpmulld) into isum, the mins' sum through a 16-bit dot product (vpdpwssd), then
// the scalar reference's float steps lane by lane (kiln/quant.h).
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <algorithm>
#include <cstring>

#include "compute/kernels/avx512_common.h"
#include "compute/kernels/iq_grid_layout.h"
#include "compute/kernels/x86.h"

namespace kiln::avx512 {

namespace {

// A tile is P panels x T tokens (P > 1 only for decode, T = 1: see run_tiles).
// Panel p is at w + p * panel_bytes, its outputs at y + p * y_step. Index k = p * T + t.

// Chunk c of sub-block sb (Q4_K / Q5_K, several tokens): its levels times each
// token's activations, added to dot[p T + t].
// The levels of chunk c (elements 4c .. 4c + 3 of each row) of sub-block sb of
// the Q4_K / Q5_K panel block at wp, fifth bits included.
template <bool fifth_bit>
KILN_TARGET_AVX512 inline __m512i k4_levels(const uint8_t* wp, int sb, int c) {
    constexpr int qs_off = fifth_bit ? 832 : 320;
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i raw = _mm512_loadu_si512(wp + qs_off + 512 * (sb / 2) + 64 * c);
    __m512i q = (sb % 2) ? _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4) : _mm512_and_si512(raw, low4);
    if constexpr (fifth_bit) q = _mm512_mask_add_epi8(q, load_mask64(wp + 320 + 8 * (8 * sb + c)), q, _mm512_set1_epi8(0x10));
    return q;
}

template <bool fifth_bit, int P, int T>
KILN_TARGET_AVX512 inline void k4_chunk(const uint8_t* w, uint64_t panel_bytes, const uint8_t* a, int sb, int c, __m512i* dot) {
    for (int p = 0; p < P; ++p) {
        const __m512i q = k4_levels<fifth_bit>(w + p * panel_bytes, sb, c);
        for (int t = 0; t < T; ++t) dot[p * T + t] = _mm512_dpbusd_epi32(dot[p * T + t], q, bcast_i32(a + 256 * t + 32 * sb + 4 * c));
    }
}

// A Q4_K / Q5_K block's float terms for T tokens, added to acc[t]: with the mins
// m (int16, 4 x 16 rows x 2 sub-blocks), d and dmin of its rows, each token's
// integer sum isum[t] and mins' sum, the scalar reference's steps lane by lane.
template <int T>
KILN_TARGET_AVX512 inline void k4_block_terms(const __m512i (&m)[4], __m512 dw, __m512 dmw, const uint8_t* a, const __m512i* isum, __m512* acc) {
    for (int t = 0; t < T; ++t) {
        __m512i msum = _mm512_setzero_si512();
        for (int q = 0; q < 4; ++q) msum = _mm512_dpwssd_epi32(msum, m[q], bcast_i32(a + act_aux_offset(256) + 16 * t + 4 * q));
        const __m512 da = bcast_f32(a + act_d_offset(256) + 4 * t);
        const __m512 dall = _mm512_mul_ps(da, dw);
        const __m512 dmin = _mm512_mul_ps(da, dmw);
        const __m512 scaled = _mm512_mul_ps(dall, _mm512_cvtepi32_ps(isum[t]));
        const __m512 mins = _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(msum));
        acc[t] = _mm512_add_ps(acc[t], _mm512_sub_ps(scaled, mins));
    }
}

// Q4_K / Q5_K: 8 sub-blocks of 32. Offsets as layout.h.
template <bool fifth_bit, int P, int T>
KILN_TARGET_AVX512 void k4_tile(const uint8_t* w, uint64_t panel_bytes, const uint8_t* a, int64_t nb, uint64_t w_stride,
                                uint64_t a_stride, float* y, int64_t ldy, const __mmask16* rows, int64_t y_step, bool stream) {
    constexpr int qs_off = fifth_bit ? 832 : 320;
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i bit = _mm512_set1_epi8(0x10);
    __m512 acc[P * T];
    for (int k = 0; k < P * T; ++k) acc[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (T > 1 && stream) prefetch_block(w + w_stride, w_stride);  // see TileFn
        __m512i isum[P * T];
        for (int k = 0; k < P * T; ++k) isum[k] = _mm512_setzero_si512();
        if constexpr (P * T <= 4) {
            // Decode: the two sub-blocks of a byte pair (low and high nibbles) at
            // once: each chunk is loaded once, and 2 P T independent vpdpbusd chains
            // overlap their latency. One token streams the weights from memory; the
            // next super-block's lines are requested while this one is summed (the
            // hardware prefetcher alone keeps too few in flight: docs/perf.md).
            if constexpr (T == 1)
                for (int p = 0; p < P; ++p)
                    for (int off = 0; off < qs_off; off += 64) prefetch_l1(w + p * panel_bytes + w_stride + off);
            for (int pr = 0; pr < 4; ++pr) {
                __m512i de[P * T], dodd[P * T];
                for (int k = 0; k < P * T; ++k) de[k] = dodd[k] = _mm512_setzero_si512();
                for (int c = 0; c < 8; ++c)
                    for (int p = 0; p < P; ++p) {
                        const uint8_t* wp = w + p * panel_bytes;
                        const __m512i raw = _mm512_loadu_si512(wp + qs_off + 512 * pr + 64 * c);
                        if constexpr (T == 1) prefetch_l1(wp + w_stride + qs_off + 512 * pr + 64 * c);
                        __m512i lo = _mm512_and_si512(raw, low4);
                        __m512i hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
                        if constexpr (fifth_bit) {
                            lo = _mm512_mask_add_epi8(lo, load_mask64(wp + 320 + 8 * (8 * (2 * pr) + c)), lo, bit);
                            hi = _mm512_mask_add_epi8(hi, load_mask64(wp + 320 + 8 * (8 * (2 * pr + 1) + c)), hi, bit);
                        }
                        for (int t = 0; t < T; ++t) {
                            de[p * T + t] = _mm512_dpbusd_epi32(de[p * T + t], lo, bcast_i32(a + 256 * t + 64 * pr + 4 * c));
                            dodd[p * T + t] = _mm512_dpbusd_epi32(dodd[p * T + t], hi, bcast_i32(a + 256 * t + 64 * pr + 32 + 4 * c));
                        }
                    }
                for (int p = 0; p < P; ++p) {
                    const uint8_t* wp = w + p * panel_bytes;
                    const __m512i sce = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wp + 64 + 16 * (2 * pr))));
                    const __m512i sco = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wp + 64 + 16 * (2 * pr + 1))));
                    for (int t = 0; t < T; ++t)
                        isum[p * T + t] = _mm512_add_epi32(_mm512_add_epi32(isum[p * T + t], _mm512_mullo_epi32(de[p * T + t], sce)),
                                                           _mm512_mullo_epi32(dodd[p * T + t], sco));
                }
            }
        } else
        for (int sb = 0; sb < 8; ++sb) {
            __m512i dot[P * T];
            for (int k = 0; k < P * T; ++k) dot[k] = _mm512_setzero_si512();
            // GCC leaves the Q5_K loop rolled (its body is larger), with the nibble
            // select as a branch and the sums copied between registers every chunk;
            // Q4_K keeps GCC's choice, which is faster for it (docs/perf.md).
            if constexpr (fifth_bit) {
#pragma GCC unroll 8
                for (int c = 0; c < 8; ++c) k4_chunk<true, P, T>(w, panel_bytes, a, sb, c, dot);
            } else {
                for (int c = 0; c < 8; ++c) k4_chunk<false, P, T>(w, panel_bytes, a, sb, c, dot);
            }
            for (int p = 0; p < P; ++p) {
                const __m512i sc = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + p * panel_bytes + 64 + 16 * sb)));
                for (int t = 0; t < T; ++t) isum[p * T + t] = _mm512_add_epi32(isum[p * T + t], _mm512_mullo_epi32(dot[p * T + t], sc));
            }
        }
        for (int p = 0; p < P; ++p) {
            const uint8_t* wp = w + p * panel_bytes;
            __m512i m[4];
            for (int q = 0; q < 4; ++q)
                m[q] = _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(wp + 192 + 32 * q)));
            k4_block_terms<T>(m, load_f16x16(wp), load_f16x16(wp + 32), a, isum + p * T, acc + p * T);
        }
    }
    for (int p = 0; p < P; ++p)
        for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy + p * y_step, rows[p], acc[p * T + t]);
}

// Chunk k (elements 16 half + 4k .. + 3 of each row) of one half of a Q6_K
// sub-block pair (layout.h) at pair, h its half's high-bit chunk: the unsigned
// 6-bit levels q + 32.
KILN_TARGET_AVX512 inline __m512i q6k_levels(const uint8_t* pair, __m512i h, int half, int k) {
    __m512i nib = _mm512_loadu_si512(pair + 64 * k);
    if (half) nib = _mm512_srli_epi16(nib, 4);
    const __m512i hs = _mm512_and_si512(k < 3 ? _mm512_slli_epi16(h, 4 - 2 * k) : _mm512_srli_epi16(h, 2), _mm512_set1_epi8(0x30));
    return _mm512_ternarylogic_epi32(nib, hs, _mm512_set1_epi8(0x0F), 0xE4);  // (nib & 0x0F) | hs: bit-select by the low-nibble mask
}

// Q6_K: 16 sub-blocks of 16, processed as 8 pairs (layout.h). Levels are stored
// unsigned (q + 32): isum = sum sc (dot_u - 32 asum) = sum sc dot_u + sum (-32 sc) asum,
// the second part by a 16-bit dot product of the scale pairs with the activation sums.
template <int P, int T>
KILN_TARGET_AVX512 void q6k_tile(const uint8_t* w, uint64_t panel_bytes, const uint8_t* a, int64_t nb, uint64_t w_stride,
                                 uint64_t a_stride, float* y, int64_t ldy, const __mmask16* rows, int64_t y_step, bool stream) {
    __m512 acc[P * T];
    for (int k = 0; k < P * T; ++k) acc[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (T > 1 && stream) prefetch_block(w + w_stride, w_stride);
        __m512i isum[P * T];
        for (int k = 0; k < P * T; ++k) isum[k] = _mm512_setzero_si512();
        for (int s = 0; s < 8; ++s) {
            // One token: the next super-block's lines requested while this one is
            // summed (as k4_tile), its header with the first pair.
            if constexpr (T == 1)
                for (int p = 0; p < P; ++p)
                    for (int off = s == 0 ? 0 : 288 + 384 * s; off < 288 + 384 * (s + 1); off += 64)
                        prefetch_l1(w + p * panel_bytes + w_stride + off);
            __m512i sc_pair[P];
            for (int p = 0; p < P; ++p) {
                sc_pair[p] = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + p * panel_bytes + 32 + 32 * s)));
                const __m512i sc_bias = _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(sc_pair[p], 5));
                for (int t = 0; t < T; ++t)
                    isum[p * T + t] = _mm512_dpwssd_epi32(isum[p * T + t], sc_bias, bcast_i32(a + act_aux_offset(256) + 32 * t + 4 * s));
            }
            for (int half = 0; half < 2; ++half) {
                __m512i dot[P * T];
                for (int k = 0; k < P * T; ++k) dot[k] = _mm512_setzero_si512();
                for (int p = 0; p < P; ++p) {
                    const uint8_t* pair = w + p * panel_bytes + 288 + 384 * s;
                    const __m512i h = _mm512_loadu_si512(pair + 256 + 64 * half);
                    for (int k = 0; k < 4; ++k) {
                        const __m512i q = q6k_levels(pair, h, half, k);
                        for (int t = 0; t < T; ++t)
                            dot[p * T + t] = _mm512_dpbusd_epi32(dot[p * T + t], q, bcast_i32(a + 256 * t + 32 * s + 16 * half + 4 * k));
                    }
                }
                for (int p = 0; p < P; ++p) {
                    // The half's scale: the low or high 16 bits of each pair, sign-extended.
                    const __m512i sc = half ? _mm512_srai_epi32(sc_pair[p], 16) : _mm512_srai_epi32(_mm512_slli_epi32(sc_pair[p], 16), 16);
                    for (int t = 0; t < T; ++t) isum[p * T + t] = _mm512_add_epi32(isum[p * T + t], _mm512_mullo_epi32(dot[p * T + t], sc));
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

#define KILN_IQ_TARGET KILN_TARGET_AVX512
#include "compute/kernels/avx512_iq_tiles.h"
#undef KILN_IQ_TARGET

// Prefill of several token groups: a panel's Q6_K blocks unpacked once, 8 at a
// time, into Q6kDecoded (below), then every group's q6k_decoded_tile over them:
// q6k_tile took the levels apart again for every group of 8 tokens.
// A decoded block: the levels q + 32 and the int32 scales of each half sub-block
// in IqDecoded's places, d at IqDecoded::d(2), then per pair s the (-32 sc) int16
// pairs of its two halves for the activation sums (q6k_tile's sc_bias).
struct Q6kDecoded {
    static constexpr int bias(int s) { return IqDecoded::bytes(2) + 64 * s; }
    static constexpr uint64_t bytes = IqDecoded::bytes(2) + 512;
};

KILN_TARGET_AVX512 void q6k_decode_block(const uint8_t* w, uint8_t* out) {
    for (int s = 0; s < 8; ++s) {
        const uint8_t* pair = w + 288 + 384 * s;
        const __m512i sc_pair = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 32 + 32 * s)));
        _mm512_store_si512(out + IqDecoded::scales(s, 0, 2), _mm512_srai_epi32(_mm512_slli_epi32(sc_pair, 16), 16));
        _mm512_store_si512(out + IqDecoded::scales(s, 1, 2), _mm512_srai_epi32(sc_pair, 16));
        _mm512_store_si512(out + Q6kDecoded::bias(s), _mm512_sub_epi16(_mm512_setzero_si512(), _mm512_slli_epi16(sc_pair, 5)));
        for (int half = 0; half < 2; ++half) {
            const __m512i h = _mm512_loadu_si512(pair + 256 + 64 * half);
            for (int k = 0; k < 4; ++k)  // elements 32 s + 16 half + 4 k: group 2 half + k / 2, its chunk k % 2
                _mm512_store_si512(out + IqDecoded::levels(s, 2 * half + k / 2) + 64 * (k % 2), q6k_levels(pair, h, half, k));
        }
    }
    std::memcpy(out + IqDecoded::d(2), w, 32);
}

// nb decoded Q6_K blocks at dw x T tokens of one group: q6k_tile's integer sums and
// float steps with the levels, scales and bias pairs loaded, so the same bits. The
// row sums continue those left in y by the blocks before (first: none).
template <int T>
KILN_TARGET_AVX512 void q6k_decoded_tile(const uint8_t* dw, const uint8_t* a, int64_t nb, uint64_t a_stride, float* y, int64_t ldy,
                                         __mmask16 rows, bool first, bool /*last*/, float /*factor: 1*/) {
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(rows, y + t * ldy);
    for (int64_t b = 0; b < nb; ++b, dw += Q6kDecoded::bytes, a += a_stride) {
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        for (int s = 0; s < 8; ++s) {
            const __m512i sc_bias = _mm512_load_si512(dw + Q6kDecoded::bias(s));
            for (int t = 0; t < T; ++t)
                isum[t] = _mm512_dpwssd_epi32(isum[t], sc_bias, bcast_i32(a + act_aux_offset(256) + 32 * t + 4 * s));
            for (int half = 0; half < 2; ++half) {
                __m512i dot[T];
                for (int t = 0; t < T; ++t) dot[t] = _mm512_setzero_si512();
                add_decoded_part<T>(dw, a, s, 2 * half, 2 * half + 2, dw + IqDecoded::scales(s, half, 2), dot, isum);
            }
        }
        const __m512 dwf = load_f16x16(dw + IqDecoded::d(2));
        for (int t = 0; t < T; ++t) {
            const __m512 d = _mm512_mul_ps(bcast_f32(a + act_d_offset(256) + 4 * t), dwf);
            acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[t])));
        }
    }
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, rows, acc[t]);
}

constexpr DecodedTileFn q6k_decoded_tiles[9] = {nullptr,
                                                q6k_decoded_tile<1>,
                                                q6k_decoded_tile<2>,
                                                q6k_decoded_tile<3>,
                                                q6k_decoded_tile<4>,
                                                q6k_decoded_tile<5>,
                                                q6k_decoded_tile<6>,
                                                q6k_decoded_tile<7>,
                                                q6k_decoded_tile<8>};

// Q4_K / Q5_K the same way: a decoded block holds the levels (fifth bits
// included) and each sub-block's int32 scale in IqDecoded's places, then the
// mins widened to int16 and d, dmin: k4_tile's operands, so its bits.
struct K4Decoded {
    static constexpr int mins(int q) { return IqDecoded::d(1) + 64 * q; }  // where IqDecoded's d would be, and on
    static constexpr int d = IqDecoded::d(1) + 256;                        // d[16] and dmin[16], f16
    static constexpr uint64_t bytes = IqDecoded::d(1) + 320;
};

template <bool fifth_bit>
KILN_TARGET_AVX512 void k4_decode_block(const uint8_t* w, uint8_t* out) {
    for (int sb = 0; sb < 8; ++sb) {
        _mm512_store_si512(out + IqDecoded::scales(sb, 0, 1),
                           _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 64 + 16 * sb))));
        for (int c = 0; c < 8; ++c)  // elements 32 sb + 4 c: group c / 2, its chunk c % 2
            _mm512_store_si512(out + IqDecoded::levels(sb, c / 2) + 64 * (c % 2), k4_levels<fifth_bit>(w, sb, c));
    }
    for (int q = 0; q < 4; ++q)
        _mm512_store_si512(out + K4Decoded::mins(q), _mm512_cvtepu8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 192 + 32 * q))));
    std::memcpy(out + K4Decoded::d, w, 64);
}

template <int T>
KILN_TARGET_AVX512 void k4_decoded_tile(const uint8_t* dw, const uint8_t* a, int64_t nb, uint64_t a_stride, float* y, int64_t ldy,
                                        __mmask16 rows, bool first, bool /*last*/, float /*factor: 1*/) {
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = first ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(rows, y + t * ldy);
    for (int64_t b = 0; b < nb; ++b, dw += K4Decoded::bytes, a += a_stride) {
        __m512i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm512_setzero_si512();
        for (int sb = 0; sb < 8; ++sb) {
            __m512i dot[T];
            for (int t = 0; t < T; ++t) dot[t] = _mm512_setzero_si512();
            add_decoded_part<T>(dw, a, sb, 0, 4, dw + IqDecoded::scales(sb, 0, 1), dot, isum);
        }
        __m512i m[4];
        for (int q = 0; q < 4; ++q) m[q] = _mm512_load_si512(dw + K4Decoded::mins(q));
        k4_block_terms<T>(m, load_f16x16(dw + K4Decoded::d), load_f16x16(dw + K4Decoded::d + 32), a, isum, acc);
    }
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, rows, acc[t]);
}

constexpr DecodedTileFn k4_decoded_tiles[9] = {nullptr,
                                               k4_decoded_tile<1>,
                                               k4_decoded_tile<2>,
                                               k4_decoded_tile<3>,
                                               k4_decoded_tile<4>,
                                               k4_decoded_tile<5>,
                                               k4_decoded_tile<6>,
                                               k4_decoded_tile<7>,
                                               k4_decoded_tile<8>};

template <bool fifth_bit>
constexpr TileFn k4_tiles[9] = {k4_tile<fifth_bit, 2, 1>, k4_tile<fifth_bit, 1, 1>, k4_tile<fifth_bit, 1, 2>,
                                k4_tile<fifth_bit, 1, 3>, k4_tile<fifth_bit, 1, 4>, k4_tile<fifth_bit, 1, 5>,
                                k4_tile<fifth_bit, 1, 6>, k4_tile<fifth_bit, 1, 7>, k4_tile<fifth_bit, 1, 8>};

constexpr TileFn q6k_tiles[9] = {q6k_tile<2, 1>, q6k_tile<1, 1>, q6k_tile<1, 2>, q6k_tile<1, 3>, q6k_tile<1, 4>,
                                 q6k_tile<1, 5>, q6k_tile<1, 6>, q6k_tile<1, 7>, q6k_tile<1, 8>};

}  // namespace

void gemm_q4_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_groups() > 1) return decoded_prefill<K4Decoded::bytes>(w, a, p0, p1, y, ldy, 1.0f, k4_decode_block<false>, k4_decoded_tiles);
    run_tiles(k4_tiles<false>, w, a, p0, p1, y, ldy);
}
void gemm_q5_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_groups() > 1) return decoded_prefill<K4Decoded::bytes>(w, a, p0, p1, y, ldy, 1.0f, k4_decode_block<true>, k4_decoded_tiles);
    run_tiles(k4_tiles<true>, w, a, p0, p1, y, ldy);
}
void gemm_q6_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_groups() > 1) return decoded_prefill<Q6kDecoded::bytes>(w, a, p0, p1, y, ldy, 1.0f, q6k_decode_block, q6k_decoded_tiles);
    run_tiles(q6k_tiles, w, a, p0, p1, y, ldy);
}

}  // namespace kiln::avx512

#endif  // KILN_HAVE_X86_KERNELS
