// AVX2 products of the low-bit 256-element formats (Q2_K, Q3_K, TQ2_0, TQ1_0,
// IQ4_XS) with Q8_K activations over packed panels, as avx512_lowbit.cpp but on
// 8-row tiles (a ymm is one half of a 64-byte chunk). Without AVX-VNNI a
// sub-block's products are summed by vpmaddubsw into int16 pairs (at most 4 chunks
// of 3-bit levels: 4 x 2 x 7 x 127 fits) and scaled by vpmaddwd against (scale,
// scale) pairs, exactly (TQ2_0's unscaled levels over 8 sub-blocks in the
// tiles); IQ4_XS takes signed levels by the sign trick. The `vnni` variants sum
// each sub-block with vpdpbusd in int32, as the AVX-512 kernels do. Decode (one
// token) takes the vpmaddubsw path on every CPU, as the k-quants do, both 8-row
// halves of a panel at once, except TQ1_0's, which with AVX-VNNI sums whole
// base-3 bytes (Tq1PanelVnni).
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <immintrin.h>

#include <cstring>

#include "compute/kernels/avx2_common.h"
#include "compute/kernels/x86.h"
#include "quant/quant_tables.h"

namespace kiln::avx2 {

namespace {

enum class K2 { Q2_K, Q3_K, TQ2 };  // as avx512_lowbit.cpp

struct K2Layout {
    int sc, qs, high;
};

constexpr K2Layout k2_layout(K2 f) {
    switch (f) {
        case K2::Q2_K: return {64, 320, 0};
        case K2::Q3_K: return {32, 288, 1312};
        case K2::TQ2: return {0, 32, 0};
    }
    return {};
}

KILN_TARGET_AVX2 inline __m256i shift16(__m256i v, int n) {
    return n >= 0 ? _mm256_slli_epi16(v, n) : _mm256_srli_epi16(v, -n);
}

// Unsigned levels of chunk k of a sub-block's 2-bit chunk half `raw` (rows 8h ..);
// Q3_K takes bit k + 4 half of `hb` as the third bit.
template <K2 F>
KILN_TARGET_AVX2 inline __m256i k2_levels(__m256i raw, __m256i hb, int half, int k) {
    const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(raw, 2 * k), _mm256_set1_epi8(0x03));
    if constexpr (F == K2::Q3_K)
        return _mm256_or_si256(lo, _mm256_and_si256(shift16(hb, 2 - k - 4 * half), _mm256_set1_epi8(0x04)));
    else
        return lo;
}

// (s, s) int16 pairs of the even (odd = false) or odd sub-block of each lane's
// scale pair.
KILN_TARGET_AVX2 inline __m256i dup_scale(__m256i pairs, bool odd) {
    const __m256i dup_even = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8,
                                              9, 12, 13, 12, 13);
    const __m256i dup_odd = _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15, 2, 3, 2, 3, 6, 7, 6, 7, 10,
                                             11, 10, 11, 14, 15, 14, 15);
    return _mm256_shuffle_epi8(pairs, odd ? dup_odd : dup_even);
}

// One block of a 2-bit format, rows 8h .. (NH = 2: both halves, h = 0) x T
// tokens of one group (t0 ..): its terms added to acc[NH x T] (half-major). Each
// activation broadcast serves the NH halves, each level vector the T tokens.
template <K2 F, int T, bool Vnni, int NH = 1>
KILN_TARGET_AVX2 inline void k2_block(const uint8_t* w, int h, const uint8_t* a, int t0, __m256* acc) {
    constexpr K2Layout L = k2_layout(F);
    const uint8_t* aq = a + 256 * t0;
    const uint8_t* ad = a + act_d_offset(256) + 4 * t0;
    const uint8_t* ax = a + act_aux_offset(256) + 32 * t0;
    __m256i isum[NH][T], msum[NH][T], s16[NH][T];  // s16: the int16 sums (without AVX-VNNI)
    for (int n = 0; n < NH; ++n)
        for (int t = 0; t < T; ++t) isum[n][t] = msum[n][t] = s16[n][t] = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s) {
        // Scale pairs of sub-blocks 2s, 2s + 1 (int16 per lane); the level offset
        // of Q3_K / TQ2 and Q2_K's mins through the activation sums.
        __m256i sc[NH], hb[NH];
        for (int n = 0; n < NH; ++n) {
            const int hn = h + n;
            sc[n] = _mm256_setzero_si256();
            if constexpr (F == K2::Q2_K) {
                const __m256i raw = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + L.sc + 32 * s + 16 * hn)));
                sc[n] = _mm256_and_si256(raw, _mm256_set1_epi16(0x0F));
                const __m256i m = _mm256_srli_epi16(raw, 4);
                for (int t = 0; t < T; ++t)
                    msum[n][t] = _mm256_add_epi32(msum[n][t], _mm256_madd_epi16(m, bcast_i32(ax + 32 * t + 4 * s)));
            } else {
                __m256i bias = _mm256_set1_epi16(-1);
                if constexpr (F == K2::Q3_K) {
                    sc[n] = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + L.sc + 32 * s + 16 * hn)));
                    bias = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc[n], 2));
                }
                for (int t = 0; t < T; ++t)
                    isum[n][t] = _mm256_add_epi32(isum[n][t], _mm256_madd_epi16(bias, bcast_i32(ax + 32 * t + 4 * s)));
            }
            hb[n] = F == K2::Q3_K ? load256(w + L.high + 64 * s + 32 * hn) : _mm256_setzero_si256();
        }
        if constexpr (Vnni) {
            __m256i de[NH][T], dodd[NH][T];
            for (int n = 0; n < NH; ++n)
                for (int t = 0; t < T; ++t) de[n][t] = dodd[n][t] = _mm256_setzero_si256();
            for (int half = 0; half < 2; ++half) {
                const int sb = 2 * s + half;
                __m256i raw[NH];
                for (int n = 0; n < NH; ++n) raw[n] = load256(w + L.qs + 64 * sb + 32 * (h + n));
                for (int k = 0; k < 4; ++k)
                    for (int n = 0; n < NH; ++n) {
                        const __m256i q = k2_levels<F>(raw[n], hb[n], half, k);
                        for (int t = 0; t < T; ++t) {
                            __m256i& d = half ? dodd[n][t] : de[n][t];
                            d = dpbusd(d, q, bcast_i32(aq + 256 * t + 16 * sb + 4 * k));
                        }
                    }
            }
            for (int n = 0; n < NH; ++n)
                for (int t = 0; t < T; ++t) {
                    if constexpr (F == K2::TQ2) {
                        isum[n][t] = _mm256_add_epi32(isum[n][t], _mm256_add_epi32(de[n][t], dodd[n][t]));
                    } else {
                        // Both sums fit int16 (|sum| <= 16 x 7 x 128): one vpmaddwd
                        // against the scale pairs applies both scales.
                        const __m256i both = _mm256_blend_epi16(de[n][t], _mm256_slli_epi32(dodd[n][t], 16), 0xAA);
                        isum[n][t] = _mm256_add_epi32(isum[n][t], _mm256_madd_epi16(both, sc[n]));
                    }
                }
        } else {
            for (int half = 0; half < 2; ++half) {
                const int sb = 2 * s + half;
                // An int16 run: one sub-block (scaled on widening), or in the
                // tiles TQ2_0's unscaled 2-bit levels over 8 (pairs <= 2 x 3 x
                // 127: 32 x 762 fits; in decode they measured slower).
                constexpr bool long_runs = F == K2::TQ2 && NH == 1;
                const bool run_start = long_runs ? sb % 8 == 0 : true, run_end = long_runs ? sb % 8 == 7 : true;
                __m256i raw[NH];
                for (int n = 0; n < NH; ++n) raw[n] = load256(w + L.qs + 64 * sb + 32 * (h + n));
                for (int k = 0; k < 4; ++k) {
                    __m256i q[NH];
                    for (int n = 0; n < NH; ++n) q[n] = k2_levels<F>(raw[n], hb[n], half, k);
                    for (int t = 0; t < T; ++t) {
                        const __m256i av = bcast_i32(aq + 256 * t + 16 * sb + 4 * k);
                        for (int n = 0; n < NH; ++n) {
                            const __m256i p = _mm256_maddubs_epi16(q[n], av);
                            s16[n][t] = run_start && k == 0 ? p : _mm256_add_epi16(s16[n][t], p);
                        }
                    }
                }
                if (run_end)
                    for (int n = 0; n < NH; ++n) {
                        const __m256i scd = F == K2::TQ2 ? _mm256_set1_epi16(1) : dup_scale(sc[n], half == 1);
                        for (int t = 0; t < T; ++t) isum[n][t] = _mm256_add_epi32(isum[n][t], _mm256_madd_epi16(s16[n][t], scd));
                    }
            }
        }
    }
    for (int n = 0; n < NH; ++n) {
        const __m256 dw = load_f16x8(w + 16 * (h + n));
        for (int t = 0; t < T; ++t) {
            __m256& out = acc[n * T + t];
            const __m256 da = bcast_f32(ad + 4 * t);
            if constexpr (F == K2::Q2_K) {
                const __m256 dall = _mm256_mul_ps(da, dw);
                const __m256 dmin = _mm256_mul_ps(da, load_f16x8(w + 32 + 16 * (h + n)));
                const __m256 scaled = _mm256_mul_ps(dall, _mm256_cvtepi32_ps(isum[n][t]));
                const __m256 mins = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(msum[n][t]));
                out = _mm256_add_ps(out, _mm256_sub_ps(scaled, mins));
            } else {
                const __m256 d = F == K2::Q3_K ? _mm256_mul_ps(da, dw) : _mm256_mul_ps(dw, da);
                out = _mm256_add_ps(out, _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum[n][t])));
            }
        }
    }
}

// TQ1_0 (layout.h: d[16] | 13 chunks of base-3 bytes), rows 8h ... A byte t's
// digit is (3t) >> 8 and the next digit's byte is 3t mod 256 (3t = 256 digit +
// next). The levels' offset (digit - 1) goes through the activations' sums, then
// TQ2_0's float steps: the same bits as the scalar reference and the AVX-512 kernels.
KILN_TARGET_AVX2 inline __m256i times3(__m256i t) { return _mm256_add_epi8(t, _mm256_add_epi8(t, t)); }

// The digits of 32 bytes, taken apart in 16-bit lanes: e holds 3 x the even
// bytes and o 3 x the odd ones (vpmaddubsw), each 256 digit + the next digit's
// byte, so the next step is 3 x their low bytes: one vpmaddubsw each, and no
// byte arithmetic for the next bytes.
struct Tq1Digits {
    __m256i e, o;

    static KILN_TARGET_AVX2 Tq1Digits of(__m256i raw) {
        return {_mm256_maddubs_epi16(raw, _mm256_set1_epi16(0x0003)), _mm256_maddubs_epi16(raw, _mm256_set1_epi16(0x0300))};
    }
    KILN_TARGET_AVX2 __m256i digits() const {
        return _mm256_or_si256(_mm256_srli_epi16(e, 8), _mm256_and_si256(o, _mm256_set1_epi16(static_cast<int16_t>(0xFF00))));
    }
    KILN_TARGET_AVX2 void advance() {
        e = _mm256_maddubs_epi16(e, _mm256_set1_epi16(0x0003));
        o = _mm256_maddubs_epi16(o, _mm256_set1_epi16(0x0003));
    }
};

// -sum(a) over token t's block (a: its group's activation block): the offset.
KILN_TARGET_AVX2 inline __m256i tq1_bias(const uint8_t* a, int t) {
    __m256i bias = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s)
        bias = _mm256_add_epi32(bias, _mm256_madd_epi16(_mm256_set1_epi16(-1), bcast_i32(a + act_aux_offset(256) + 32 * t + 4 * s)));
    return bias;
}

// One block's float term of token t: (d_w d_a) isum, as the reference rounds it.
KILN_TARGET_AVX2 inline __m256 tq1_term(const uint8_t* dw, const uint8_t* a, int t, __m256i isum) {
    return _mm256_mul_ps(_mm256_mul_ps(load_f16x8(dw), bcast_f32(a + act_d_offset(256) + 4 * t)), _mm256_cvtepi32_ps(isum));
}

// Rows 8h .. x T tokens of one group (t0 ..) without AVX-VNNI: each digit taken
// apart once for the T tokens and summed against them by vpmaddubsw, whose int16
// pairs (<= 2 x 2 x 128 each) are widened after chunks 0-5 (30 digits) and 6-12
// (34): < 2^15.
template <int T>
KILN_TARGET_AVX2 inline void tq1_block(const uint8_t* w, int h, const uint8_t* a, int t0, __m256* acc) {
    const uint8_t* aq = a + 256 * t0;
    __m256i isum[T], part[T];  // part: the int16 sums
    for (int t = 0; t < T; ++t) {
        isum[t] = tq1_bias(a, t0 + t);
        part[t] = _mm256_setzero_si256();
    }
    for (int c = 0; c < k_tq1_chunks; ++c) {
        Tq1Digits q = Tq1Digits::of(load256(w + 32 + 64 * c + 32 * h));
        for (int n = 0; n < tq1_digits(c); ++n) {
            const __m256i d = q.digits();
            if (n + 1 < tq1_digits(c)) q.advance();
            for (int t = 0; t < T; ++t)
                part[t] = _mm256_add_epi16(part[t], _mm256_maddubs_epi16(d, bcast_i32(aq + 256 * t + tq1_element(c, n))));
        }
        if (c == 5 || c == k_tq1_chunks - 1)
            for (int t = 0; t < T; ++t) {
                isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(part[t], _mm256_set1_epi16(1)));
                part[t] = _mm256_setzero_si256();
            }
    }
    for (int t = 0; t < T; ++t) acc[t] = _mm256_add_ps(acc[t], tq1_term(w + 16 * h, a, t0 + t, isum[t]));
}

// One chunk of a block against one token with AVX-VNNI, both 8-row halves: the
// sums P of t x a and Q of next x a (p0, q0: rows 0-7; p1, q1: rows 8-15), each
// activation broadcast serving both halves.
KILN_TARGET_AVX2 inline void tq1_chunk_vnni(const uint8_t* w, int c, const uint8_t* a, __m256i& p0, __m256i& q0, __m256i& p1,
                                            __m256i& q1) {
    __m256i r0 = load256(w + 32 + 64 * c), r1 = load256(w + 64 + 64 * c);
#pragma GCC unroll 5
    for (int n = 0; n < tq1_digits(c); ++n) {
        const __m256i av = bcast_i32(a + tq1_element(c, n));
        const __m256i n0 = times3(r0), n1 = times3(r1);
        p0 = dpbusd(p0, r0, av);
        q0 = dpbusd(q0, n0, av);
        p1 = dpbusd(p1, r1, av);
        q1 = dpbusd(q1, n1, av);
        r0 = n0;
        r1 = n1;
    }
}

// bias + (3P - Q) / 256 of one half's even and odd chunks (Tq1PanelVnni).
KILN_TARGET_AVX2 inline __m256i tq1_isum_vnni(__m256i bias, __m256i pe, __m256i po, __m256i qe, __m256i qo) {
    const __m256i p = _mm256_add_epi32(pe, po), q = _mm256_add_epi32(qe, qo);
    return _mm256_add_epi32(bias, _mm256_srai_epi32(_mm256_sub_epi32(_mm256_add_epi32(p, _mm256_add_epi32(p, p)), q), 8));
}

// Decode with AVX-VNNI (run_decode's add_panel): no digit is taken apart, as in
// the AVX-512 decode: 3P - Q = 256 sum(digit x a). Exact: each of a row's 256
// terms of P or Q is at most 255 x 128 in size, so |P|, |Q| < 2^23 and 3P - Q
// fits int32 (vpdpbusd never wraps here); it is a multiple of 256, so the
// arithmetic shift divides exactly. Even and odd chunks sum into separate
// registers (8 chains), which covers vpdpbusd's latency. The block `next` bytes
// on is requested a line per chunk.
struct Tq1PanelVnni {
    static KILN_TARGET_AVX2 void add_panel(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
        for (int l = 64 * (k_tq1_chunks - 1); l < 32 + 64 * k_tq1_chunks; l += 64) prefetch_l1(w + next + l);
        prefetch_l1(w + next + 32 + 64 * k_tq1_chunks - 1);  // the block's last byte
        __m256i pe0 = _mm256_setzero_si256(), qe0 = pe0, pe1 = pe0, qe1 = pe0;  // even chunks
        __m256i po0 = pe0, qo0 = pe0, po1 = pe0, qo1 = pe0;                     // odd chunks
#pragma GCC unroll 6
        for (int c = 0; c + 1 < k_tq1_chunks; c += 2) {
            prefetch_l1(w + next + 64 * c);
            prefetch_l1(w + next + 64 * c + 64);
            tq1_chunk_vnni(w, c, a, pe0, qe0, pe1, qe1);
            tq1_chunk_vnni(w, c + 1, a, po0, qo0, po1, qo1);
        }
        tq1_chunk_vnni(w, k_tq1_chunks - 1, a, pe0, qe0, pe1, qe1);
        const __m256i bias = tq1_bias(a, 0);
        acc0 = _mm256_add_ps(acc0, tq1_term(w, a, 0, tq1_isum_vnni(bias, pe0, po0, qe0, qo0)));
        acc1 = _mm256_add_ps(acc1, tq1_term(w + 16, a, 0, tq1_isum_vnni(bias, pe1, po1, qe1, qo1)));
    }
};

// IQ4_XS (layout.h: d[16] | scale pairs s8 [4][16][2] at 32 | sub-block sb's 4
// nibble chunks at 160 + 256 sb). Without VNNI: signed levels by the sign trick,
// each chunk's int16 pairs scaled by vpmaddwd; with VNNI: levels + 128, isum =
// sum sc (dot_u - 128 asum).
template <int T, bool Vnni>
KILN_TARGET_AVX2 inline void iq4xs_block(const uint8_t* w, int h, const uint8_t* a, int t0, __m256* acc) {
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::k_values_iq4nl)));
    if constexpr (Vnni) lut = _mm256_xor_si256(lut, _mm256_set1_epi8(static_cast<char>(0x80)));
    const uint8_t* aq = a + 256 * t0;
    const uint8_t* ad = a + act_d_offset(256) + 4 * t0;
    const uint8_t* ax = a + act_aux_offset(256) + 16 * t0;
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int q = 0; q < 4; ++q) {
        const __m256i sc = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 32 + 32 * q + 16 * h)));
        if constexpr (Vnni) {
            const __m256i bias = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc, 7));
            for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(bias, bcast_i32(ax + 16 * t + 4 * q)));
        }
        for (int half = 0; half < 2; ++half) {
            const int sb = 2 * q + half;
            const uint8_t* qs = w + 160 + 256 * sb + 32 * h;
            if constexpr (Vnni) {
                __m256i dot[T];
                for (int t = 0; t < T; ++t) dot[t] = _mm256_setzero_si256();
                for (int c = 0; c < 4; ++c) {
                    const __m256i raw = load256(qs + 64 * c);
                    const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(raw, low4));
                    const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4));
                    for (int t = 0; t < T; ++t) {
                        dot[t] = dpbusd(dot[t], lo, bcast_i32(aq + 256 * t + 32 * sb + 4 * c));
                        dot[t] = dpbusd(dot[t], hi, bcast_i32(aq + 256 * t + 32 * sb + 16 + 4 * c));
                    }
                }
                const __m256i s32 = half ? _mm256_srai_epi32(sc, 16) : _mm256_srai_epi32(_mm256_slli_epi32(sc, 16), 16);
                for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(dot[t], s32));
            } else {
                // |level x activation| pairs <= 2 x 127 x 127: one chunk per int16 sum.
                const __m256i scd = dup_scale(sc, half == 1);
                for (int c = 0; c < 4; ++c) {
                    const __m256i raw = load256(qs + 64 * c);
                    const __m256i lo = _mm256_shuffle_epi8(lut, _mm256_and_si256(raw, low4));
                    const __m256i hi = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4));
                    const __m256i alo = _mm256_abs_epi8(lo), ahi = _mm256_abs_epi8(hi);
                    for (int t = 0; t < T; ++t) {
                        const __m256i slo = _mm256_sign_epi8(bcast_i32(aq + 256 * t + 32 * sb + 4 * c), lo);
                        const __m256i shi = _mm256_sign_epi8(bcast_i32(aq + 256 * t + 32 * sb + 16 + 4 * c), hi);
                        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(alo, slo), scd));
                        isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(_mm256_maddubs_epi16(ahi, shi), scd));
                    }
                }
            }
        }
    }
    const __m256 dw = load_f16x8(w + 16 * h);
    for (int t = 0; t < T; ++t) {
        const __m256 d = _mm256_mul_ps(bcast_f32(ad + 4 * t), dw);
        acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum[t])));
    }
}

template <K2 F, int T, bool Vnni>
KILN_TARGET_AVX2 void k2_tile(const uint8_t* w, int h, const uint8_t* a, int t0, int64_t nb, uint64_t w_stride, uint64_t a_stride,
                              float* y, int64_t ldy, int n_rows, bool stream) {
    const uint64_t ahead = stream_ahead(w_stride);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (stream) prefetch_block(w + ahead, w_stride);
        k2_block<F, T, Vnni>(w, h, a, t0, acc);
    }
    for (int t = 0; t < T; ++t) store_rows(y + t * ldy, acc[t], n_rows);
}

template <int T, bool Vnni>
KILN_TARGET_AVX2 void iq4xs_tile(const uint8_t* w, int h, const uint8_t* a, int t0, int64_t nb, uint64_t w_stride, uint64_t a_stride,
                                 float* y, int64_t ldy, int n_rows, bool stream) {
    const uint64_t ahead = stream_ahead(w_stride);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (stream) prefetch_block(w + ahead, w_stride);
        iq4xs_block<T, Vnni>(w, h, a, t0, acc);
    }
    for (int t = 0; t < T; ++t) store_rows(y + t * ldy, acc[t], n_rows);
}

// Decode (run_decode's add_panel): k2_block for both halves at once, the next
// block requested a line at a time before this one is summed.
template <K2 F>
struct K2Panel {
    static KILN_TARGET_AVX2 void add_panel(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
        prefetch_block(w + next, next);
        __m256 acc[2] = {acc0, acc1};
        k2_block<F, 1, false, 2>(w, 0, a, 0, acc);
        acc0 = acc[0];
        acc1 = acc[1];
    }
};

// Decode without AVX-VNNI (run_decode's add_panel): tq1_block's sums for both
// 8-row halves in one pass, each activation broadcast and the offset serving 16
// rows; the next block requested a line per chunk, as Tq1PanelVnni.
struct Tq1Panel {
    static KILN_TARGET_AVX2 void add_panel(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
        for (int l = 64 * (k_tq1_chunks - 1); l < 32 + 64 * k_tq1_chunks; l += 64) prefetch_l1(w + next + l);
        prefetch_l1(w + next + 32 + 64 * k_tq1_chunks - 1);
        const __m256i bias = tq1_bias(a, 0);
        __m256i isum0 = bias, isum1 = bias, s0 = _mm256_setzero_si256(), s1 = s0;
        for (int c = 0; c < k_tq1_chunks; ++c) {
            prefetch_l1(w + next + 64 * c);
            Tq1Digits q0 = Tq1Digits::of(load256(w + 32 + 64 * c)), q1 = Tq1Digits::of(load256(w + 64 + 64 * c));
            for (int n = 0; n < tq1_digits(c); ++n) {
                const __m256i av = bcast_i32(a + tq1_element(c, n));
                const __m256i d0 = q0.digits(), d1 = q1.digits();
                if (n + 1 < tq1_digits(c)) {
                    q0.advance();
                    q1.advance();
                }
                s0 = pinned(_mm256_add_epi16(s0, _mm256_maddubs_epi16(d0, av)));
                s1 = pinned(_mm256_add_epi16(s1, _mm256_maddubs_epi16(d1, av)));
            }
            if (c == 5 || c == k_tq1_chunks - 1) {  // as tq1_block
                isum0 = _mm256_add_epi32(isum0, _mm256_madd_epi16(s0, _mm256_set1_epi16(1)));
                isum1 = _mm256_add_epi32(isum1, _mm256_madd_epi16(s1, _mm256_set1_epi16(1)));
                s0 = s1 = _mm256_setzero_si256();
            }
        }
        acc0 = _mm256_add_ps(acc0, tq1_term(w, a, 0, isum0));
        acc1 = _mm256_add_ps(acc1, tq1_term(w + 16, a, 0, isum1));
    }
};

template <int T>
KILN_TARGET_AVX2 void tq1_tile(const uint8_t* w, int h, const uint8_t* a, int t0, int64_t nb, uint64_t w_stride, uint64_t a_stride,
                               float* y, int64_t ldy, int n_rows, bool stream) {
    const uint64_t ahead = stream_ahead(w_stride);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (stream) prefetch_block(w + ahead, w_stride);
        tq1_block<T>(w, h, a, t0, acc);
    }
    for (int t = 0; t < T; ++t) store_rows(y + t * ldy, acc[t], n_rows);
}

constexpr TileFn k_tq1_tiles[5] = {nullptr, tq1_tile<1>, tq1_tile<2>, tq1_tile<3>, tq1_tile<4>};

// ---- TQ1_0 prefill: each panel block's digits taken apart once for every token group ----

// A panel block's digits in element order: chunk k (elements 4k .. 4k + 3 of
// each row; rows 8h .. at byte 32h) at 64k, then d[16] f16. Made in a per-thread
// scratch, never stored in a panel (the weights keep their 54 bytes a row).
constexpr uint64_t k_tq1_digit_bytes = 64 * 64;
constexpr uint64_t k_tq1_decoded_bytes = k_tq1_digit_bytes + 32;
// Blocks decoded at a time (33 KB): as IqDecoded::k_blocks, they stay in L1 / L2
// while every token group reads them.
constexpr int k_tq1_decoded_blocks = 8;

KILN_TARGET_AVX2 void tq1_decode_block(const uint8_t* w, uint8_t* out) {
    for (int c = 0; c < k_tq1_chunks; ++c)
        for (int h = 0; h < 2; ++h) {
            Tq1Digits q = Tq1Digits::of(load256(w + 32 + 64 * c + 32 * h));
            for (int n = 0; n < tq1_digits(c); ++n) {
                _mm256_store_si256(reinterpret_cast<__m256i*>(out + 16 * tq1_element(c, n) + 32 * h), q.digits());
                q.advance();
            }
        }
    std::memcpy(out + k_tq1_digit_bytes, w, 32);
}

// nb decoded blocks at dw, rows 8h .., x T tokens of one group (t0 ..; a: the
// group's activations of the first block): tq1_block's integer sums (exact, in
// any order) and its float steps in its order. The row sums continue those left
// in y by the blocks before (first: none): the bits of tq1_tile's single pass.
// VNNI: three chains a token (chunks 3j, 3j + 1, 3j + 2; the last chunk in the
// first), for vpdpbusd's latency (two leave it exposed, four spill); without:
// vpmaddubsw's int16 pairs (<= 2 x 2 x 128 each) summed over 32 chunks (<= 16384)
// before one vpmaddwd widens them.
template <int T, bool Vnni>
KILN_TARGET_AVX2 void tq1_decoded_tile(const uint8_t* dw, int h, const uint8_t* a, int t0, int64_t nb, uint64_t a_stride, float* y,
                                       int64_t ldy, int n_rows, bool first) {
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = first ? _mm256_setzero_ps() : load_rows(y + t * ldy, n_rows);
    for (int64_t b = 0; b < nb; ++b, dw += k_tq1_decoded_bytes, a += a_stride) {
        const uint8_t* aq = a + 256 * t0;
        __m256i isum[T], rest[T];  // rest: VNNI the second chain, else the widened int16 sums
        for (int t = 0; t < T; ++t) {
            isum[t] = tq1_bias(a, t0 + t);
            rest[t] = _mm256_setzero_si256();
        }
        if constexpr (Vnni) {
            __m256i third[T];
            for (int t = 0; t < T; ++t) third[t] = _mm256_setzero_si256();
            for (int k = 0; k + 3 <= 64; k += 3) {
                const __m256i d0 = load256(dw + 64 * k + 32 * h), d1 = load256(dw + 64 * k + 64 + 32 * h),
                              d2 = load256(dw + 64 * k + 128 + 32 * h);
                for (int t = 0; t < T; ++t) {
                    isum[t] = dpbusd(isum[t], d0, bcast_i32(aq + 256 * t + 4 * k));
                    rest[t] = dpbusd(rest[t], d1, bcast_i32(aq + 256 * t + 4 * k + 4));
                    third[t] = dpbusd(third[t], d2, bcast_i32(aq + 256 * t + 4 * k + 8));
                }
            }
            const __m256i last = load256(dw + 64 * 63 + 32 * h);
            for (int t = 0; t < T; ++t) {
                isum[t] = dpbusd(isum[t], last, bcast_i32(aq + 256 * t + 4 * 63));
                rest[t] = _mm256_add_epi32(rest[t], third[t]);
            }
        } else {
            for (int k0 = 0; k0 < 64; k0 += 32) {
                __m256i s16[T];
                for (int t = 0; t < T; ++t) s16[t] = _mm256_setzero_si256();
                for (int k = k0; k < k0 + 32; ++k) {
                    const __m256i d = load256(dw + 64 * k + 32 * h);
                    for (int t = 0; t < T; ++t) s16[t] = _mm256_add_epi16(s16[t], _mm256_maddubs_epi16(d, bcast_i32(aq + 256 * t + 4 * k)));
                }
                for (int t = 0; t < T; ++t) rest[t] = _mm256_add_epi32(rest[t], _mm256_madd_epi16(s16[t], _mm256_set1_epi16(1)));
            }
        }
        for (int t = 0; t < T; ++t)
            acc[t] = _mm256_add_ps(acc[t], tq1_term(dw + k_tq1_digit_bytes + 16 * h, a, t0 + t, _mm256_add_epi32(isum[t], rest[t])));
    }
    for (int t = 0; t < T; ++t) store_rows(y + t * ldy, acc[t], n_rows);
}

using Tq1DecodedTileFn = void (*)(const uint8_t*, int, const uint8_t*, int, int64_t, uint64_t, float*, int64_t, int, bool);

template <bool Vnni>
constexpr Tq1DecodedTileFn k_tq1_decoded_tiles[5] = {nullptr, tq1_decoded_tile<1, Vnni>, tq1_decoded_tile<2, Vnni>,
                                                     tq1_decoded_tile<3, Vnni>, tq1_decoded_tile<4, Vnni>};

// Several tokens: per panel, k_tq1_decoded_blocks blocks decoded at a time, then
// every half, group and 4-token tile over them (as avx2_iq_grid.cpp's iq_prefill).
template <bool Vnni>
KILN_TARGET_AVX2 void tq1_prefill(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    run_decoded_prefill<k_tq1_decoded_blocks, k_tq1_decoded_bytes>(
        w, a, p0, p1, y, ldy, tq1_decode_block,
        [&](int n, const uint8_t* dw, int h, const uint8_t* ag, int t0, int64_t nb, float* yt, int rows, bool first, bool) {
            k_tq1_decoded_tiles<Vnni>[n](dw, h, ag, t0, nb, a.format.block_stride, yt, ldy, rows, first);
        });
}

template <bool Vnni>
void tq1_gemm(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_tokens == 1) {
        if constexpr (Vnni)
            return run_decode<Tq1PanelVnni>(w, a, p0, p1, y);
        else
            return run_decode<Tq1Panel>(w, a, p0, p1, y);
    }
    // 2-4 tokens without AVX-VNNI: one tile a half takes each digit apart once
    // anyway, and skips the scratch; with AVX-VNNI the decoded tiles' chains pay.
    if (!Vnni && a.n_tokens <= 4) return run_tiles(k_tq1_tiles, w, a, p0, p1, y, ldy);
    tq1_prefill<Vnni>(w, a, p0, p1, y, ldy);
}

// IQ4_XS decode (run_decode's add_panel): iq4xs_block's sums without AVX-VNNI
// for both 8-row halves at once, each activation broadcast serving 16 rows and
// one 32-byte load the scale pairs of both; four int32 chains (low / high nibbles
// x half); the next block (34 lines) requested a line per chunk. On every CPU, as
// the k-quants' decode.
struct Iq4xsPanel {
    static KILN_TARGET_AVX2 void add_panel(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
        const __m256i low4 = _mm256_set1_epi8(0x0F);
        const __m256i lut = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(quant::k_values_iq4nl)));
        for (int l = 0; l < 160; l += 64) prefetch_l1(w + next + l);
        __m256i lo0 = _mm256_setzero_si256(), hi0 = lo0, lo1 = lo0, hi1 = lo0;
        for (int q = 0; q < 4; ++q) {
            const __m256i sc_raw = load256(w + 32 + 32 * q);
            const __m256i sc0 = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(sc_raw));
            const __m256i sc1 = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(sc_raw, 1));
#pragma GCC unroll 2
            for (int half = 0; half < 2; ++half) {
                const int sb = 2 * q + half;
                const uint8_t* qs = w + 160 + 256 * sb;
                const __m256i scd0 = dup_scale(sc0, half == 1), scd1 = dup_scale(sc1, half == 1);
#pragma GCC unroll 4
                for (int c = 0; c < 4; ++c) {
                    prefetch_l1(w + next + 160 + 256 * sb + 64 * c);
                    const __m256i r0 = load256(qs + 64 * c), r1 = load256(qs + 64 * c + 32);
                    const __m256i bl = bcast_i32(a + 32 * sb + 4 * c), bh = bcast_i32(a + 32 * sb + 16 + 4 * c);
                    const __m256i l0 = _mm256_shuffle_epi8(lut, _mm256_and_si256(r0, low4));
                    const __m256i h0 = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(r0, 4), low4));
                    const __m256i l1 = _mm256_shuffle_epi8(lut, _mm256_and_si256(r1, low4));
                    const __m256i h1 = _mm256_shuffle_epi8(lut, _mm256_and_si256(_mm256_srli_epi16(r1, 4), low4));
                    // |level x activation| pairs <= 2 x 127 x 127: each chunk widened by its scale.
                    const __m256i pl0 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(l0), _mm256_sign_epi8(bl, l0)), scd0);
                    const __m256i ph0 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(h0), _mm256_sign_epi8(bh, h0)), scd0);
                    const __m256i pl1 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(l1), _mm256_sign_epi8(bl, l1)), scd1);
                    const __m256i ph1 = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_abs_epi8(h1), _mm256_sign_epi8(bh, h1)), scd1);
                    lo0 = pinned(_mm256_add_epi32(lo0, pl0));
                    hi0 = pinned(_mm256_add_epi32(hi0, ph0));
                    lo1 = pinned(_mm256_add_epi32(lo1, pl1));
                    hi1 = pinned(_mm256_add_epi32(hi1, ph1));
                }
            }
        }
        const __m256 da = bcast_f32(a + act_d_offset(256));
        acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(_mm256_mul_ps(da, load_f16x8(w)), _mm256_cvtepi32_ps(_mm256_add_epi32(lo0, hi0))));
        acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(_mm256_mul_ps(da, load_f16x8(w + 16)), _mm256_cvtepi32_ps(_mm256_add_epi32(lo1, hi1))));
    }
};

template <K2 F, bool Vnni>
constexpr TileFn k_k2_tiles[5] = {nullptr, k2_tile<F, 1, Vnni>, k2_tile<F, 2, Vnni>, k2_tile<F, 3, Vnni>, k2_tile<F, 4, Vnni>};
template <bool Vnni>
constexpr TileFn k_iq4xs_tiles[5] = {nullptr, iq4xs_tile<1, Vnni>, iq4xs_tile<2, Vnni>, iq4xs_tile<3, Vnni>, iq4xs_tile<4, Vnni>};

template <K2 F, bool Vnni>
void k2_gemm(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_tokens == 1) return run_decode<K2Panel<F>>(w, a, p0, p1, y);
    run_tiles(k_k2_tiles<F, Vnni>, w, a, p0, p1, y, ldy);
}

template <bool Vnni>
void iq4xs_gemm(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_tokens == 1) return run_decode<Iq4xsPanel>(w, a, p0, p1, y);
    run_tiles(k_iq4xs_tiles<Vnni>, w, a, p0, p1, y, ldy);
}

}  // namespace

void gemm_q2_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    k2_gemm<K2::Q2_K, false>(w, a, p0, p1, y, ldy);
}
void gemm_q3_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    k2_gemm<K2::Q3_K, false>(w, a, p0, p1, y, ldy);
}
void gemm_tq2_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    k2_gemm<K2::TQ2, false>(w, a, p0, p1, y, ldy);
}
void gemm_tq1_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    tq1_gemm<false>(w, a, p0, p1, y, ldy);
}
void gemm_iq4_xs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq4xs_gemm<false>(w, a, p0, p1, y, ldy);
}

namespace vnni {
const PackedGemmFn gemm_q2_K = k2_gemm<K2::Q2_K, true>;
const PackedGemmFn gemm_q3_K = k2_gemm<K2::Q3_K, true>;
const PackedGemmFn gemm_tq2_0 = k2_gemm<K2::TQ2, true>;
const PackedGemmFn gemm_tq1_0 = tq1_gemm<true>;
const PackedGemmFn gemm_iq4_xs = iq4xs_gemm<true>;
}  // namespace vnni

}  // namespace kiln::avx2

#endif  // KILN_HAVE_X86_KERNELS
