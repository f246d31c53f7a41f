// AVX2 (+ FMA, F16C): activation quantization into the grouped layout and the
// products of the legacy 32-element formats over packed panels.
//
// The panel layouts are the AVX-512 ones (layout.h); a ymm holds one half of a
// chunk (rows 0-7 or 8-15), so a panel is processed as two 8-row tiles. Integer
// sums use vpmaddubsw (unsigned weight level x signed activation, pairs summed to
// int16) and vpmaddwd (to int32). vpmaddubsw saturates, so int16 partial sums
// are only accumulated as far as they provably fit: 8 chunks of 4-bit levels, 4
// of 5-bit ones; 8-bit weights (Q8_0, IQ4_NL) use the sign trick (|w| x sign(a, w))
// one chunk at a time; MXFP4's levels plus 12 (0 .. 24) are unsigned and need
// none. On CPUs with AVX-VNNI the `vnni` variants take one vpdpbusd per chunk
// instead, as the AVX-512 kernels do (8-bit weights flipped to unsigned, the
// activations' bias removing the offset). The sums are exact either way, and the
// float steps are the scalar reference's, lane by lane (kiln/quant.h).
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <immintrin.h>

#include <algorithm>
#include <cstring>

#include "compute/kernels/avx2_common.h"
#include "compute/kernels/x86.h"
#include "quant/quant_tables.h"

namespace kiln::avx2 {

namespace {

// ---- activation quantization (see avx512_quant.cpp for the rules) --------------------

KILN_TARGET_AVX2 void quantize_block32(const float* x, const ActFormat& f, uint8_t* blk, int t) {
    __m256 v[4];
    __m256 a = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
        v[k] = _mm256_loadu_ps(x + 8 * k);
        a = _mm256_max_ps(a, abs_ps(v[k]));
    }
    const float amax = hmax_ps(a);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const __m256 vid = _mm256_set1_ps(id);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) q[k] = _mm256_cvtps_epi32(_mm256_mul_ps(v[k], vid));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(blk + act_qs_offset(t, 32)), pack_i32_to_i8(q[0], q[1], q[2], q[3]));
    const float dr = round_f16(d);
    std::memcpy(blk + act_d_offset(32) + 4 * t, &dr, 4);
    const int32_t sum = hsum_epi32(_mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3])));
    if (f.aux == ActAux::Sum32) {
        const float s = round_f16(d * static_cast<float>(sum));
        std::memcpy(blk + act_aux_offset(32) + 4 * t, &s, 4);
    } else {
        const int32_t bias = -f.offset * sum;
        std::memcpy(blk + act_aux_offset(32) + 4 * t, &bias, 4);
    }
}

KILN_TARGET_AVX2 void quantize_block256(const float* x, const ActFormat& f, uint8_t* blk, int t) {
    __m256 a = _mm256_setzero_ps();
    for (int k = 0; k < 32; ++k) a = _mm256_max_ps(a, abs_ps(_mm256_loadu_ps(x + 8 * k)));
    const float amax = hmax_ps(a);
    int8_t* qs = reinterpret_cast<int8_t*>(blk + act_qs_offset(t, 256));
    uint8_t* aux = blk + act_aux_offset(256);
    if (amax == 0.0f) {
        std::memset(qs, 0, 256);
        const float zero = 0.0f;
        std::memcpy(blk + act_d_offset(256) + 4 * t, &zero, 4);
        std::memset(aux + (f.aux == ActAux::KPairs ? 16 : 32) * t, 0, f.aux == ActAux::KPairs ? 16 : 32);
        return;
    }
    float max = 0.0f;
    const __m256 va = _mm256_set1_ps(amax);
    for (int k = 0; k < 32; ++k) {
        const int m = _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + 8 * k)), va, _CMP_EQ_OQ));
        if (m) {
            max = x[8 * k + __builtin_ctz(static_cast<unsigned>(m))];
            break;
        }
    }
    const float iscale = -127.0f / max;
    const __m256 vs = _mm256_set1_ps(iscale);
    int32_t sums[16];
    for (int k = 0; k < 8; ++k) {
        __m256i q[4];
        for (int j = 0; j < 4; ++j) q[j] = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_loadu_ps(x + 32 * k + 8 * j), vs));
        // Saturating packs clamp to [-128, 127] as the reference does.
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + 32 * k), pack_i32_to_i8(q[0], q[1], q[2], q[3]));
    }
    for (int j = 0; j < 16; ++j) {
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs + 16 * j));
        sums[j] = hsum_epi32(_mm256_add_epi32(_mm256_cvtepi8_epi32(b), _mm256_cvtepi8_epi32(_mm_srli_si128(b, 8))));
    }
    const float d = 1.0f / iscale;
    std::memcpy(blk + act_d_offset(256) + 4 * t, &d, 4);
    if (f.aux == ActAux::KPairs) {
        int16_t pairs[8];
        for (int j = 0; j < 8; ++j) pairs[j] = static_cast<int16_t>(sums[2 * j] + sums[2 * j + 1]);
        std::memcpy(aux + 16 * t, pairs, 16);
    } else {
        int16_t s16[16];
        for (int j = 0; j < 16; ++j) s16[j] = static_cast<int16_t>(sums[j]);
        std::memcpy(aux + 32 * t, s16, 32);
    }
}

// ---- legacy formats ------------------------------------------------------------------

enum class Legacy { Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4 };

struct LegacyLayout {
    bool has_min, fifth_bit;
    int qs;
};

constexpr LegacyLayout legacy_layout(Legacy f) {
    switch (f) {
        case Legacy::Q4_0: return {false, false, 32};
        case Legacy::IQ4_NL: return {false, false, 32};
        case Legacy::MXFP4: return {false, false, 16};  // e[16] E8M0 instead of d[16] f16
        case Legacy::Q4_1: return {true, false, 64};
        case Legacy::Q5_0: return {false, true, 96};
        case Legacy::Q5_1: return {true, true, 128};
        case Legacy::Q8_0: return {false, false, 32};
    }
    return {};
}

// Formats whose 4-bit codes select levels from a table (IQ4_NL, MXFP4).
constexpr bool table_levels(Legacy f) { return f == Legacy::IQ4_NL || f == Legacy::MXFP4; }

// The level table of IQ4_NL or MXFP4 (E2M1 doubled); for vpdpbusd plus 128
// (unsigned; the bias removes 128 x sum(a)).
template <Legacy F, bool Vnni>
KILN_TARGET_AVX2 inline __m256i level_lut() {
    if constexpr (!table_levels(F)) return _mm256_setzero_si256();
    const int8_t* levels = F == Legacy::MXFP4 ? quant::k_values_e2m1x2 : quant::k_values_iq4nl;
    const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(levels)));
    return Vnni ? _mm256_xor_si256(lut, _mm256_set1_epi8(static_cast<char>(0x80))) : lut;
}

// MXFP4 without AVX-VNNI: the E2M1 levels plus 12 (0 .. 24), unsigned for
// vpmaddubsw with no sign trick; chunk `raw`'s low-nibble (lo) and high-nibble
// (hi) levels.
KILN_TARGET_AVX2 inline __m256i mxfp4_offset_lut() { return _mm256_add_epi8(level_lut<Legacy::MXFP4, false>(), _mm256_set1_epi8(12)); }

KILN_TARGET_AVX2 inline void mxfp4_offset_levels(const uint8_t* raw_at, __m256i lut, __m256i& lo, __m256i& hi) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i raw = load256(raw_at);
    lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(raw, low4));
    hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4));
}

// The table legacy_block takes for format F.
template <Legacy F, bool Vnni>
KILN_TARGET_AVX2 inline __m256i block_lut() {
    if constexpr (F == Legacy::MXFP4 && !Vnni) return mxfp4_offset_lut();
    else return level_lut<F, Vnni>();
}

// A block's integer sum from the offset levels' int16 sums: the activations'
// bias is -128 sum(a) (act_format: offset 128, for the vpdpbusd path), so the
// offset's -12 sum(a) is 3 bias / 32, exactly (bias is a multiple of 128).
KILN_TARGET_AVX2 inline __m256i mxfp4_isum(__m256i bias, __m256i slo, __m256i shi) {
    const __m256i ones = _mm256_set1_epi16(1);
    const __m256i offset = _mm256_srai_epi32(_mm256_add_epi32(bias, _mm256_add_epi32(bias, bias)), 5);
    return _mm256_add_epi32(offset, _mm256_add_epi32(_mm256_madd_epi16(slo, ones), _mm256_madd_epi16(shi, ones)));
}

// Rows 8h ..'s weight scales: f16, or MXFP4's E8M0 bytes halved (2^(e - 128);
// e = 0 and 1 give the subnormals 0x00200000 << e), as quant's e8m0_to_fp32_half.
template <Legacy F>
KILN_TARGET_AVX2 inline __m256 load_scales(const uint8_t* w, int h) {
    if constexpr (F == Legacy::MXFP4) {
        const __m256i e = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(w + 8 * h)));
        const __m256i normal = _mm256_slli_epi32(_mm256_sub_epi32(e, _mm256_set1_epi32(1)), 23);
        const __m256i tiny = _mm256_sllv_epi32(_mm256_set1_epi32(0x00200000), e);
        const __m256i is_tiny = _mm256_cmpgt_epi32(_mm256_set1_epi32(2), e);
        return _mm256_castsi256_ps(_mm256_blendv_epi8(normal, tiny, is_tiny));
    } else {
        return load_f16x8(w + 16 * h);
    }
}

// Chunk c of rows 8h .. 8h + 7 of a 4- or 5-bit block: the levels of elements
// 4c .. 4c + 3 (lo, the low nibbles) and 16 + 4c .. (hi), fifth bits included.
template <Legacy F>
KILN_TARGET_AVX2 inline void nibble_levels(const uint8_t* w, int h, int c, __m256i& lo, __m256i& hi) {
    constexpr LegacyLayout L = legacy_layout(F);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i raw = load256(w + L.qs + 64 * c + 32 * h);
    lo = _mm256_and_si256(raw, low4);
    hi = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
    if constexpr (L.fifth_bit) {
        const uint8_t* masks = w + (L.has_min ? 64 : 32);
        lo = _mm256_or_si256(lo, fifth_bits(load_u32(masks + 16 * c + 4 * h)));
        hi = _mm256_or_si256(hi, fifth_bits(load_u32(masks + 16 * c + 8 + 4 * h)));
    }
}

// One block of rows 8h .. 8h + 7 of one panel x T tokens of one group (tokens
// t0 ..): its terms added to acc[t].
template <Legacy F, int T, bool Vnni>
KILN_TARGET_AVX2 inline void legacy_block(const uint8_t* w, int h, const uint8_t* a, int t0, __m256i lut, __m256* acc) {
    constexpr LegacyLayout L = legacy_layout(F);
    constexpr bool unsigned_levels = F == Legacy::Q4_1 || F == Legacy::Q5_1;
    constexpr bool signed_bytes = !Vnni && (F == Legacy::Q8_0 || table_levels(F));
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i ones = _mm256_set1_epi16(1);
    // This tile's tokens t0 .. t0 + T - 1 of the group.
    const uint8_t* aq = a + 32 * t0;
    const uint8_t* ad = a + act_d_offset(32) + 4 * t0;
    const uint8_t* ax = a + act_aux_offset(32) + 4 * t0;
    __m256i isum[T];
    for (int t = 0; t < T; ++t)
        isum[t] = unsigned_levels || signed_bytes ? _mm256_setzero_si256() : bcast_i32(ax + 4 * t);
    if constexpr (Vnni) {
        // Two chains per token (even / odd chunks, low / high nibbles) overlap the
        // instruction's latency; integer sums, exact in any order.
        __m256i isum2[T];
        for (int t = 0; t < T; ++t) isum2[t] = _mm256_setzero_si256();
        if constexpr (F == Legacy::Q8_0) {
            const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
            for (int c = 0; c < 8; c += 2) {
                const __m256i q0 = _mm256_xor_si256(load256(w + L.qs + 64 * c + 32 * h), flip);
                const __m256i q1 = _mm256_xor_si256(load256(w + L.qs + 64 * c + 64 + 32 * h), flip);
                for (int t = 0; t < T; ++t) {
                    isum[t] = dpbusd(isum[t], q0, bcast_i32(aq + 32 * t + 4 * c));
                    isum2[t] = dpbusd(isum2[t], q1, bcast_i32(aq + 32 * t + 4 * c + 4));
                }
            }
        } else {
            for (int c = 0; c < 4; ++c) {
                __m256i lo, hi;
                nibble_levels<F>(w, h, c, lo, hi);
                if constexpr (table_levels(F)) {
                    lo = _mm256_shuffle_epi8(lut, lo);
                    hi = _mm256_shuffle_epi8(lut, hi);
                }
                for (int t = 0; t < T; ++t) {
                    isum[t] = dpbusd(isum[t], lo, bcast_i32(aq + 32 * t + 4 * c));
                    isum2[t] = dpbusd(isum2[t], hi, bcast_i32(aq + 32 * t + 16 + 4 * c));
                }
            }
        }
        for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], isum2[t]);
    } else if constexpr (F == Legacy::Q8_0) {
        for (int c = 0; c < 8; ++c) {
            const __m256i q = load256(w + L.qs + 64 * c + 32 * h);
            const __m256i absq = _mm256_abs_epi8(q);
            for (int t = 0; t < T; ++t) {
                const __m256i s = _mm256_sign_epi8(bcast_i32(aq + 32 * t + 4 * c), q);
                isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(absq, s), ones));
            }
        }
    } else if constexpr (F == Legacy::MXFP4) {
        // Levels + 12 (0 .. 24: unsigned, no sign trick); the offset through the
        // bias. A vpmaddubsw pair <= 2 x 24 x 127 = 6096: the low and the high
        // nibbles' 4 chunks each fit an int16 sum (<= 24384), widened once.
        __m256i slo[T], shi[T];
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
            __m256i lo, hi;
            mxfp4_offset_levels(w + L.qs + 64 * c + 32 * h, lut, lo, hi);
            for (int t = 0; t < T; ++t) {
                const __m256i pl = _mm256_maddubs_epi16(lo, bcast_i32(aq + 32 * t + 4 * c));
                const __m256i ph = _mm256_maddubs_epi16(hi, bcast_i32(aq + 32 * t + 16 + 4 * c));
                slo[t] = c == 0 ? pl : _mm256_add_epi16(slo[t], pl);
                shi[t] = c == 0 ? ph : _mm256_add_epi16(shi[t], ph);
            }
        }
        for (int t = 0; t < T; ++t) isum[t] = mxfp4_isum(bcast_i32(ax + 4 * t), slo[t], shi[t]);
    } else if constexpr (table_levels(F)) {
        for (int c = 0; c < 4; ++c) {
            const __m256i raw = load256(w + L.qs + 64 * c + 32 * h);
            const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(raw, low4));
            const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4));
            const __m256i alo = _mm256_abs_epi8(lo), ahi = _mm256_abs_epi8(hi);
            for (int t = 0; t < T; ++t) {
                const __m256i slo = _mm256_sign_epi8(bcast_i32(aq + 32 * t + 4 * c), lo);
                const __m256i shi = _mm256_sign_epi8(bcast_i32(aq + 32 * t + 16 + 4 * c), hi);
                isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(alo, slo), ones));
                isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(ahi, shi), ones));
            }
        }
    } else {
        // 4-bit levels: the 8 chunks of a block fit one int16 sum; 5-bit: 4.
        constexpr int per_sum = L.fifth_bit ? 2 : 4;
        __m256i s16[T];
        // Unrolled: GCC left this loop rolled in decode, its sums in memory (docs/perf.md).
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) {
            __m256i lo, hi;
            nibble_levels<F>(w, h, c, lo, hi);
            for (int t = 0; t < T; ++t) {
                const __m256i p = _mm256_add_epi16(_mm256_maddubs_epi16(lo, bcast_i32(aq + 32 * t + 4 * c)),
                                                   _mm256_maddubs_epi16(hi, bcast_i32(aq + 32 * t + 16 + 4 * c)));
                s16[t] = c % per_sum == 0 ? p : _mm256_add_epi16(s16[t], p);
                if (c % per_sum == per_sum - 1) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[t], ones));
            }
        }
    }
    const __m256 dw = load_scales<F>(w, h);
    if constexpr (L.has_min) {
        const __m256 mw = load_f16x8(w + 32 + 16 * h);
        for (int t = 0; t < T; ++t) {
            const __m256 d = _mm256_mul_ps(dw, bcast_f32(ad + 4 * t));
            const __m256 scaled = _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum[t]));
            const __m256 min_term = _mm256_mul_ps(mw, bcast_f32(ax + 4 * t));
            acc[t] = _mm256_add_ps(acc[t], _mm256_add_ps(scaled, min_term));
        }
    } else {
        for (int t = 0; t < T; ++t) {
            const __m256 d = _mm256_mul_ps(dw, bcast_f32(ad + 4 * t));
            acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum[t])));
        }
    }
}

// Rows 8h .. 8h + 7 of one panel x T tokens of one group, over all blocks.
template <Legacy F, int T, bool Vnni>
KILN_TARGET_AVX2 void legacy_tile(const uint8_t* w, int h, const uint8_t* a, int t0, int64_t nb, uint64_t w_stride,
                                  uint64_t a_stride, float* y, int64_t ldy, int n_rows, bool stream) {
    const __m256i lut = block_lut<F, Vnni>();
    const uint64_t ahead = stream_ahead(w_stride);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (stream) prefetch_block(w + ahead, w_stride);
        legacy_block<F, T, Vnni>(w, h, a, t0, lut, acc);
    }
    for (int t = 0; t < T; ++t) store_rows(y + t * ldy, acc[t], n_rows);
}

// One block's terms for decode (run_decode).
template <Legacy F, bool Vnni>
struct LegacyBlock {
    static KILN_TARGET_AVX2 void add(const uint8_t* w, int h, const uint8_t* a, __m256& acc) {
        legacy_block<F, 1, Vnni>(w, h, a, 0, block_lut<F, Vnni>(), &acc);
    }
};

// How many blocks ahead the one-token Q4_0 kernel asks for weight lines (a
// block is 288 bytes, 4.5 lines: the next one is already on its way by the time
// it is asked for).
constexpr int k_q4_0_ahead_blocks = 16;

// Both 8-row halves of one Q4_0 block against one token (decode): legacy_block's
// integer sums for h = 0 and 1 at once (the same terms, exact in any order), each
// activation broadcast serving 16 rows; a line of the block k_q4_0_ahead_blocks on
// is requested per chunk. Four chains (low / high nibbles x half); the int16 ones
// pinned, as q4k_panel1's, so that GCC keeps them chains; the vpdpbusd ones take
// the high nibbles unshifted. Then legacy_block's float steps per half.
template <bool Vnni>
KILN_TARGET_AVX2 inline void q4_0_panel1(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const uint8_t* ahead = w + k_q4_0_ahead_blocks * next;
    const uint8_t* qs = w + 32;
    const __m256i bias = bcast_i32(a + act_aux_offset(32));
    // With vpdpbusd the int32 chains start at the bias; the int16 ones at chunk 0.
    __m256i lo0 = Vnni ? bias : _mm256_setzero_si256(), lo1 = lo0;
    __m256i hi0 = _mm256_setzero_si256(), hi1 = hi0;
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
        prefetch_l1(ahead + 64 * c);
        const __m256i r0 = load256(qs + 64 * c), r1 = load256(qs + 64 * c + 32);
        const __m256i bl = bcast_i32(a + 4 * c), bh = bcast_i32(a + 16 + 4 * c);
        const __m256i l0 = _mm256_and_si256(r0, low4), l1 = _mm256_and_si256(r1, low4);
        if constexpr (Vnni) {
            // The high nibbles in place (16 x the level, no shift): int32 holds
            // 16 x their sum exactly.
            lo0 = dpbusd(lo0, l0, bl);
            hi0 = dpbusd(hi0, _mm256_andnot_si256(low4, r0), bh);
            lo1 = dpbusd(lo1, l1, bl);
            hi1 = dpbusd(hi1, _mm256_andnot_si256(low4, r1), bh);
        } else {
            const __m256i h0 = _mm256_and_si256(_mm256_srli_epi16(r0, 4), low4), h1 = _mm256_and_si256(_mm256_srli_epi16(r1, 4), low4);
            const __m256i pl0 = _mm256_maddubs_epi16(l0, bl), ph0 = _mm256_maddubs_epi16(h0, bh);
            const __m256i pl1 = _mm256_maddubs_epi16(l1, bl), ph1 = _mm256_maddubs_epi16(h1, bh);
            lo0 = pinned(c == 0 ? pl0 : _mm256_add_epi16(lo0, pl0));
            hi0 = pinned(c == 0 ? ph0 : _mm256_add_epi16(hi0, ph0));
            lo1 = pinned(c == 0 ? pl1 : _mm256_add_epi16(lo1, pl1));
            hi1 = pinned(c == 0 ? ph1 : _mm256_add_epi16(hi1, ph1));
        }
    }
    prefetch_l1(ahead + 256);
    __m256i isum0, isum1;
    if constexpr (Vnni) {
        isum0 = _mm256_add_epi32(lo0, _mm256_srai_epi32(hi0, 4));
        isum1 = _mm256_add_epi32(lo1, _mm256_srai_epi32(hi1, 4));
    } else {
        // 8 products of 4-bit levels per lane fit int16, as in legacy_block.
        const __m256i ones = _mm256_set1_epi16(1);
        isum0 = _mm256_add_epi32(bias, _mm256_madd_epi16(_mm256_add_epi16(lo0, hi0), ones));
        isum1 = _mm256_add_epi32(bias, _mm256_madd_epi16(_mm256_add_epi16(lo1, hi1), ones));
    }
    const __m256 da = bcast_f32(a + act_d_offset(32));
    acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(_mm256_mul_ps(load_f16x8(w), da), _mm256_cvtepi32_ps(isum0)));
    acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(_mm256_mul_ps(load_f16x8(w + 16), da), _mm256_cvtepi32_ps(isum1)));
}

// Q4_0 decode (run_decode): whole panels, q4_0_panel1, two streams of panels as
// the old per-half path had: from memory 1 thread 26.8 -> 28.3 GB/s against one
// stream (docs/perf.md).
template <bool Vnni>
struct Q4_0Panel {
    static constexpr int k_streams = 2;
    static KILN_TARGET_AVX2 void add_panel(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
        q4_0_panel1<Vnni>(w, next, a, acc0, acc1);
    }
};

// Both 8-row halves of one Q8_0 block against one token (decode), as q4_0_panel1:
// legacy_block's integer sums for h = 0 and 1 at once, each broadcast serving 16
// rows, two int32 chains per half (even / odd chunks), a line of the block
// k_q4_0_ahead_blocks on requested per chunk (a block is 544 bytes, 8.5 lines).
template <bool Vnni>
KILN_TARGET_AVX2 inline void q8_0_panel1(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
    const uint8_t* ahead = w + k_q4_0_ahead_blocks * next;
    const uint8_t* qs = w + 32;
    // With vpdpbusd the levels are flipped to unsigned and the sums start at the
    // bias; the sign trick needs neither.
    const __m256i start = Vnni ? bcast_i32(a + act_aux_offset(32)) : _mm256_setzero_si256();
    __m256i s0[2] = {start, _mm256_setzero_si256()}, s1[2] = {start, _mm256_setzero_si256()};
#pragma GCC unroll 8
    for (int c = 0; c < 8; ++c) {
        prefetch_l1(ahead + 64 * c);
        const __m256i r0 = load256(qs + 64 * c), r1 = load256(qs + 64 * c + 32);
        const __m256i b = bcast_i32(a + 4 * c);
        if constexpr (Vnni) {
            const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
            s0[c % 2] = dpbusd(s0[c % 2], _mm256_xor_si256(r0, flip), b);
            s1[c % 2] = dpbusd(s1[c % 2], _mm256_xor_si256(r1, flip), b);
        } else {
            const __m256i ones = _mm256_set1_epi16(1);
            const __m256i p0 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(r0), _mm256_sign_epi8(b, r0)), ones);
            const __m256i p1 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(r1), _mm256_sign_epi8(b, r1)), ones);
            s0[c % 2] = pinned(_mm256_add_epi32(s0[c % 2], p0));
            s1[c % 2] = pinned(_mm256_add_epi32(s1[c % 2], p1));
        }
    }
    prefetch_l1(ahead + 512);
    const __m256i isum0 = _mm256_add_epi32(s0[0], s0[1]), isum1 = _mm256_add_epi32(s1[0], s1[1]);
    const __m256 da = bcast_f32(a + act_d_offset(32));
    acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(_mm256_mul_ps(load_f16x8(w), da), _mm256_cvtepi32_ps(isum0)));
    acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(_mm256_mul_ps(load_f16x8(w + 16), da), _mm256_cvtepi32_ps(isum1)));
}

// Q8_0 decode (run_decode): whole panels, q8_0_panel1, two streams (the whole 1B
// model decoded faster so than with one: docs/perf.md).
template <bool Vnni>
struct Q8_0Panel {
    static constexpr int k_streams = 2;
    static KILN_TARGET_AVX2 void add_panel(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
        q8_0_panel1<Vnni>(w, next, a, acc0, acc1);
    }
};

// Both 8-row halves of one MXFP4 block against one token (decode) without
// AVX-VNNI, as q4_0_panel1: legacy_block's offset levels and int16 sums for h =
// 0 and 1 at once, each activation broadcast serving 16 rows, four int16 chains
// (low / high nibbles x half), a line of the block k_q4_0_ahead_blocks on
// requested per chunk (a block is 272 bytes). Then legacy_block's float steps.
KILN_TARGET_AVX2 inline void mxfp4_panel1(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
    const __m256i lut = mxfp4_offset_lut();
    const uint8_t* ahead = w + k_q4_0_ahead_blocks * next;
    const uint8_t* qs = w + legacy_layout(Legacy::MXFP4).qs;
    __m256i lo0 = _mm256_setzero_si256(), lo1 = lo0, hi0 = lo0, hi1 = lo0;
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) {
        prefetch_l1(ahead + 64 * c);
        const __m256i bl = bcast_i32(a + 4 * c), bh = bcast_i32(a + 16 + 4 * c);
        __m256i l0, h0, l1, h1;
        mxfp4_offset_levels(qs + 64 * c, lut, l0, h0);
        mxfp4_offset_levels(qs + 64 * c + 32, lut, l1, h1);
        const __m256i pl0 = _mm256_maddubs_epi16(l0, bl), ph0 = _mm256_maddubs_epi16(h0, bh);
        const __m256i pl1 = _mm256_maddubs_epi16(l1, bl), ph1 = _mm256_maddubs_epi16(h1, bh);
        lo0 = pinned(c == 0 ? pl0 : _mm256_add_epi16(lo0, pl0));
        hi0 = pinned(c == 0 ? ph0 : _mm256_add_epi16(hi0, ph0));
        lo1 = pinned(c == 0 ? pl1 : _mm256_add_epi16(lo1, pl1));
        hi1 = pinned(c == 0 ? ph1 : _mm256_add_epi16(hi1, ph1));
    }
    const __m256i bias = bcast_i32(a + act_aux_offset(32));
    const __m256i isum0 = mxfp4_isum(bias, lo0, hi0), isum1 = mxfp4_isum(bias, lo1, hi1);
    const __m256 da = bcast_f32(a + act_d_offset(32));
    acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(_mm256_mul_ps(load_scales<Legacy::MXFP4>(w, 0), da), _mm256_cvtepi32_ps(isum0)));
    acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(_mm256_mul_ps(load_scales<Legacy::MXFP4>(w, 1), da), _mm256_cvtepi32_ps(isum1)));
}

struct Mxfp4Panel {
    static KILN_TARGET_AVX2 void add_panel(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
        mxfp4_panel1(w, next, a, acc0, acc1);
    }
};

template <Legacy F, bool Vnni>
constexpr TileFn k_legacy_tiles[5] = {nullptr, legacy_tile<F, 1, Vnni>, legacy_tile<F, 2, Vnni>, legacy_tile<F, 3, Vnni>,
                                      legacy_tile<F, 4, Vnni>};

template <Legacy F, bool Vnni>
void legacy_gemm(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_tokens == 1) {
        if constexpr (F == Legacy::Q4_0) return run_decode<Q4_0Panel<Vnni>>(w, a, p0, p1, y);
        else if constexpr (F == Legacy::Q8_0) return run_decode<Q8_0Panel<Vnni>>(w, a, p0, p1, y);
        else if constexpr (F == Legacy::MXFP4 && !Vnni) return run_decode<Mxfp4Panel>(w, a, p0, p1, y);
        else return run_decode<LegacyBlock<F, Vnni>>(w, a, p0, p1, y);
    }
    run_tiles(k_legacy_tiles<F, Vnni>, w, a, p0, p1, y, ldy);
}

}  // namespace

KILN_TARGET_AVX2 void prep_act(const float* x, int64_t n_in, int64_t g0, int64_t g1, ActPack& a) {
    const ActFormat& f = a.format;
    const int64_t nb = n_in / f.block;
    for (int64_t g = g0; g < g1; ++g) {
        uint8_t* grp = a.group(g);
        const int n = static_cast<int>(std::min<int64_t>(k_act_group, a.n_tokens - g * k_act_group));
        for (int t = 0; t < n; ++t) {
            const float* xt = x + (g * k_act_group + t) * n_in;
            for (int64_t b = 0; b < nb; ++b) {
                uint8_t* blk = grp + static_cast<uint64_t>(b) * f.block_stride;
                if (f.block == 32)
                    quantize_block32(xt + 32 * b, f, blk, t);
                else
                    quantize_block256(xt + 256 * b, f, blk, t);
            }
        }
    }
}

void gemm_q4_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::Q4_0, false>(w, a, p0, p1, y, ldy);
}
void gemm_q4_1(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::Q4_1, false>(w, a, p0, p1, y, ldy);
}
void gemm_q5_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::Q5_0, false>(w, a, p0, p1, y, ldy);
}
void gemm_q5_1(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::Q5_1, false>(w, a, p0, p1, y, ldy);
}
void gemm_q8_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::Q8_0, false>(w, a, p0, p1, y, ldy);
}
void gemm_iq4_nl(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::IQ4_NL, false>(w, a, p0, p1, y, ldy);
}
void gemm_mxfp4(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::MXFP4, false>(w, a, p0, p1, y, ldy);
}

namespace vnni {
const PackedGemmFn gemm_q4_0 = legacy_gemm<Legacy::Q4_0, true>;
const PackedGemmFn gemm_q4_1 = legacy_gemm<Legacy::Q4_1, true>;
const PackedGemmFn gemm_q5_0 = legacy_gemm<Legacy::Q5_0, true>;
const PackedGemmFn gemm_q5_1 = legacy_gemm<Legacy::Q5_1, true>;
const PackedGemmFn gemm_q8_0 = legacy_gemm<Legacy::Q8_0, true>;
const PackedGemmFn gemm_iq4_nl = legacy_gemm<Legacy::IQ4_NL, true>;
const PackedGemmFn gemm_mxfp4 = legacy_gemm<Legacy::MXFP4, true>;
}  // namespace vnni

}  // namespace kiln::avx2

#endif  // KILN_HAVE_X86_KERNELS
