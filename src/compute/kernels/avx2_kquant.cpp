// AVX2 products of the k-quants (Q4_K, Q5_K, Q6_K) with Q8_K activations over
// packed panels, as avx512_kquant.cpp but on 8-row tiles. The sub-block scale is
// applied by the int16 -> int32 step itself: vpmaddwd of the int16 partial sums
// with (scale, scale) pairs gives scale x (sum of the pair), exactly. Int16 sums
// span at most 8 chunks of 4-bit levels, 4 of 5-bit and 2 of 6-bit levels (the
// largest that cannot overflow against activation levels in [-128, 127]). The
// `vnni` variants (CPUs with AVX-VNNI) sum each sub-block in int32 with vpdpbusd
// and scale it with vpmulld, as the AVX-512 kernels do, in tiles of 2-4 tokens; one
// token (decode) takes the vpmaddubsw path on every CPU, since there the vpmulld
// per sub-block costs more than vpdpbusd saves (docs/perf.md). Q5_K panels are in
// the bit-plane layout (layout.h, PanelLayout::BitPlanes): a chunk's fifth bits
// are one shift and one AND of a plane, where u64 masks took a broadcast, a
// shuffle, an AND, a compare and an AND. A prefill of several token groups first
// unpacks each panel block's levels into bytes (KqDecoded, below), once for all
// the groups, as the grid i-quants do.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <immintrin.h>

#include "compute/kernels/avx2_common.h"
#include "compute/kernels/x86.h"

namespace kiln::avx2 {

namespace {

// 8 unsigned 8-bit scales as int32.
KILN_TARGET_AVX2 inline __m256i scales_u8(const uint8_t* p) {
    return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

// (s, s) int16 pairs of 8 unsigned 8-bit scales.
KILN_TARGET_AVX2 inline __m256i scale_pairs_u8(const uint8_t* p) {
    const __m256i s = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    return _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
}

// The fifth-bit plane of sub-block sb of a Q5_K block (bit planes, layout.h),
// rows 8h ..: bit c of each byte belongs to chunk c.
KILN_TARGET_AVX2 inline const uint8_t* q5k_plane(const uint8_t* w, int sb, int h) { return w + 320 + 128 * (sb / 2) + 64 * (sb % 2) + 32 * h; }

// 0x10 in each byte of chunk c's 32 levels whose fifth bit is set, from their
// plane: bit c of each byte to bit 4 by one 16-bit shift (at most 4 places, so no
// bit crosses into bit 4 of the other byte of a lane) and an AND.
KILN_TARGET_AVX2 inline __m256i plane_bits(__m256i plane, int c) {
    const __m256i at4 = c < 4 ? _mm256_slli_epi16(plane, 4 - c) : c > 4 ? _mm256_srli_epi16(plane, c - 4) : plane;
    return _mm256_and_si256(at4, _mm256_set1_epi8(0x10));
}

// One Q4_K / Q5_K block of 8 rows (rows 8h..) against one token (index t0 of the
// activation group at a): the integer sum of the block. Both sub-blocks of a byte
// pair (low and high nibbles) come from one load of each chunk; isum gets the same
// integer terms as k4_tile's several-token path in another order (wrapping int32
// adds: the same sum). Only for one token: with T of them the doubled int16 sums
// spill.
// Chunk c of byte pair pr of a Q4_K / Q5_K block, rows 8h ..: the levels of
// sub-block 2 pr (qe, the low nibbles) and 2 pr + 1 (qo), fifth bits included.
template <bool fifth_bit>
KILN_TARGET_AVX2 inline void k4_pair_levels(const uint8_t* w, int h, int pr, int c, __m256i& qe, __m256i& qo) {
    constexpr int qs_off = fifth_bit ? 832 : 320;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    const __m256i raw = load256(w + qs_off + 512 * pr + 32 * h + 64 * c);
    qe = _mm256_and_si256(raw, low4);
    qo = _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4);
    if constexpr (fifth_bit) {
        qe = _mm256_or_si256(qe, plane_bits(load256(q5k_plane(w, 2 * pr, h)), c));
        qo = _mm256_or_si256(qo, plane_bits(load256(q5k_plane(w, 2 * pr + 1, h)), c));
    }
}

template <bool fifth_bit>
KILN_TARGET_AVX2 inline __m256i k4_isum1(const uint8_t* w, int h, const uint8_t* aq) {
    constexpr int per_sum = fifth_bit ? 4 : 8;
    __m256i isum = _mm256_setzero_si256();
    for (int pr = 0; pr < 4; ++pr) {
        const __m256i sc_e = scale_pairs_u8(w + 64 + 16 * (2 * pr) + 8 * h);
        const __m256i sc_o = scale_pairs_u8(w + 64 + 16 * (2 * pr + 1) + 8 * h);
        __m256i se = _mm256_setzero_si256(), so = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int c = 0; c < 8; ++c) {
            __m256i qe, qo;
            k4_pair_levels<fifth_bit>(w, h, pr, c, qe, qo);
            const __m256i pe = _mm256_maddubs_epi16(qe, bcast_i32(aq + 32 * (2 * pr) + 4 * c));
            const __m256i po = _mm256_maddubs_epi16(qo, bcast_i32(aq + 32 * (2 * pr + 1) + 4 * c));
            se = c % per_sum == 0 ? pe : _mm256_add_epi16(se, pe);
            so = c % per_sum == 0 ? po : _mm256_add_epi16(so, po);
            if (c % per_sum == per_sum - 1) {
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(se, sc_e));
                isum = _mm256_add_epi32(isum, _mm256_madd_epi16(so, sc_o));
            }
        }
    }
    return isum;
}

// The block's float term for token t of the group: d_a d_w isum - d_a dmin_w msum.
KILN_TARGET_AVX2 inline __m256 k4_term(const uint8_t* w, int h, const uint8_t* ad, const uint8_t* ax, __m256i isum) {
    const __m256 dw = load_f16x8(w + 16 * h);
    const __m256 dmw = load_f16x8(w + 32 + 16 * h);
    __m256i msum = _mm256_setzero_si256();
    for (int p = 0; p < 4; ++p) {
        const __m256i m = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 192 + 32 * p + 16 * h)));
        msum = _mm256_add_epi32(msum, _mm256_madd_epi16(m, bcast_i32(ax + 4 * p)));
    }
    const __m256 da = bcast_f32(ad);
    const __m256 dall = _mm256_mul_ps(da, dw);
    const __m256 dmin = _mm256_mul_ps(da, dmw);
    const __m256 scaled = _mm256_mul_ps(dall, _mm256_cvtepi32_ps(isum));
    const __m256 mins = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(msum));
    return _mm256_sub_ps(scaled, mins);
}

// Q4_K / Q5_K (layout.h): 8 sub-blocks of 32 = 8 chunks each.
template <bool fifth_bit, int T, bool Vnni>
KILN_TARGET_AVX2 void k4_tile(const uint8_t* w, int h, const uint8_t* a, int t0, int64_t nb, uint64_t w_stride,
                              uint64_t a_stride, float* y, int64_t ldy, int n_rows, bool stream) {
    constexpr int qs_off = fifth_bit ? 832 : 320;
    const uint64_t ahead = stream_ahead(w_stride);
    constexpr int per_sum = fifth_bit ? 4 : 8;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (stream) prefetch_block(w + ahead, w_stride);
        const uint8_t* aq = a + 256 * t0;
        const uint8_t* ad = a + act_d_offset(256) + 4 * t0;
        const uint8_t* ax = a + act_aux_offset(256) + 16 * t0;
        __m256i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
        if constexpr (T == 1) {
            isum[0] = k4_isum1<fifth_bit>(w, h, aq);
        } else if constexpr (Vnni) {
            for (int sb = 0; sb < 8; ++sb) {
                const uint8_t* qs = w + qs_off + 512 * (sb / 2) + 32 * h;
                const __m256i plane = fifth_bit ? load256(q5k_plane(w, sb, h)) : _mm256_setzero_si256();
                __m256i dot[T];
                for (int t = 0; t < T; ++t) dot[t] = _mm256_setzero_si256();
                for (int c = 0; c < 8; ++c) {
                    const __m256i raw = load256(qs + 64 * c);
                    __m256i q = (sb % 2) ? _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4) : _mm256_and_si256(raw, low4);
                    if constexpr (fifth_bit) q = _mm256_or_si256(q, plane_bits(plane, c));
                    for (int t = 0; t < T; ++t) dot[t] = dpbusd(dot[t], q, bcast_i32(aq + 256 * t + 32 * sb + 4 * c));
                }
                const __m256i sc = scales_u8(w + 64 + 16 * sb + 8 * h);
                for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(dot[t], sc));
            }
        } else {
            for (int sb = 0; sb < 8; ++sb) {
                const __m256i sc = scale_pairs_u8(w + 64 + 16 * sb + 8 * h);
                const uint8_t* qs = w + qs_off + 512 * (sb / 2) + 32 * h;
                const __m256i plane = fifth_bit ? load256(q5k_plane(w, sb, h)) : _mm256_setzero_si256();
                __m256i s16[T] = {};  // (set at c = 0; initialized for GCC 12's -Wmaybe-uninitialized)
                // Unrolled: GCC leaves this loop rolled, with its sums moving between
                // registers every chunk; the VNNI loop above is no faster unrolled.
#pragma GCC unroll 8
                for (int c = 0; c < 8; ++c) {
                    const __m256i raw = load256(qs + 64 * c);
                    __m256i q = (sb % 2) ? _mm256_and_si256(_mm256_srli_epi16(raw, 4), low4) : _mm256_and_si256(raw, low4);
                    if constexpr (fifth_bit) q = _mm256_or_si256(q, plane_bits(plane, c));
                    for (int t = 0; t < T; ++t) {
                        const __m256i p = _mm256_maddubs_epi16(q, bcast_i32(aq + 256 * t + 32 * sb + 4 * c));
                        s16[t] = c % per_sum == 0 ? p : _mm256_add_epi16(s16[t], p);
                        if (c % per_sum == per_sum - 1) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[t], sc));
                    }
                }
            }
        }
        for (int t = 0; t < T; ++t) acc[t] = _mm256_add_ps(acc[t], k4_term(w, h, ad + 4 * t, ax + 16 * t, isum[t]));
    }
    for (int t = 0; t < T; ++t) store_rows(y + t * ldy, acc[t], n_rows);
}

// (s, s) int16 pairs of the 8 unsigned 8-bit scales of rows 0-7 (lo) and 8-15
// (hi) of one sub-block (16 bytes, row order): two unpacks and two extensions.
KILN_TARGET_AVX2 inline void scale_pairs_u8x16(const uint8_t* p, __m256i& lo, __m256i& hi) {
    const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    lo = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(s, s));
    hi = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(s, s));
}

// Both 8-row halves of one Q4_K / Q5_K block against one token (decode): the
// integer sums of rows 0-7 and 8-15 at once, each activation broadcast serving
// both halves; the block `next` bytes on is requested a line per chunk as it goes
// (its header and fifth-bit planes first, no separate prefetch loop). Then k4_term
// per half. The int16 chains are pinned: unpinned, GCC regroups them into a tree
// and spills the products.
template <bool fifth_bit>
KILN_TARGET_AVX2 inline void k4_panel1(const uint8_t* w, uint64_t next, const uint8_t* aq, __m256& acc0, __m256& acc1) {
    constexpr int qs_off = fifth_bit ? 832 : 320;
    constexpr int per_sum = fifth_bit ? 4 : 8;  // chunks one int16 sum holds (see the top)
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int l = 0; l < qs_off; l += 64) prefetch_l1(w + next + l);
    __m256i isum0 = _mm256_setzero_si256(), isum1 = _mm256_setzero_si256();
#pragma GCC unroll 1
    for (int pr = 0; pr < 4; ++pr) {
        const uint8_t* qs = w + qs_off + 512 * pr;
        const uint8_t* ae = aq + 64 * pr;
        __m256i se0 = _mm256_setzero_si256(), so0 = se0, se1 = se0, so1 = se0;
#pragma GCC unroll 8
        for (int c = 0; c < 8; ++c) {
            prefetch_l1(qs + next + 64 * c);
            const __m256i r0 = load256(qs + 64 * c), r1 = load256(qs + 64 * c + 32);
            const __m256i be = bcast_i32(ae + 4 * c), bo = bcast_i32(ae + 32 + 4 * c);
            __m256i qe0 = _mm256_and_si256(r0, low4), qe1 = _mm256_and_si256(r1, low4);
            __m256i qo0 = _mm256_and_si256(_mm256_srli_epi16(r0, 4), low4), qo1 = _mm256_and_si256(_mm256_srli_epi16(r1, 4), low4);
            if constexpr (fifth_bit) {  // the pair's 4 planes (128 bytes, 2 lines) are in L1 after c = 0
                qe0 = _mm256_or_si256(qe0, plane_bits(load256(q5k_plane(w, 2 * pr, 0)), c));
                qe1 = _mm256_or_si256(qe1, plane_bits(load256(q5k_plane(w, 2 * pr, 1)), c));
                qo0 = _mm256_or_si256(qo0, plane_bits(load256(q5k_plane(w, 2 * pr + 1, 0)), c));
                qo1 = _mm256_or_si256(qo1, plane_bits(load256(q5k_plane(w, 2 * pr + 1, 1)), c));
            }
            se0 = pinned(_mm256_add_epi16(se0, _mm256_maddubs_epi16(qe0, be)));
            se1 = pinned(_mm256_add_epi16(se1, _mm256_maddubs_epi16(qe1, be)));
            so0 = pinned(_mm256_add_epi16(so0, _mm256_maddubs_epi16(qo0, bo)));
            so1 = pinned(_mm256_add_epi16(so1, _mm256_maddubs_epi16(qo1, bo)));
            if (c % per_sum == per_sum - 1) {
                __m256i sc0, sc1;
                scale_pairs_u8x16(w + 64 + 16 * (2 * pr), sc0, sc1);
                isum0 = pinned(_mm256_add_epi32(isum0, _mm256_madd_epi16(se0, pinned(sc0))));
                isum1 = pinned(_mm256_add_epi32(isum1, _mm256_madd_epi16(se1, pinned(sc1))));
                scale_pairs_u8x16(w + 64 + 16 * (2 * pr + 1), sc0, sc1);
                isum0 = pinned(_mm256_add_epi32(isum0, _mm256_madd_epi16(so0, pinned(sc0))));
                isum1 = pinned(_mm256_add_epi32(isum1, _mm256_madd_epi16(so1, pinned(sc1))));
                se0 = so0 = se1 = so1 = _mm256_setzero_si256();
            }
        }
    }
    const uint8_t* ad = aq + act_d_offset(256);
    const uint8_t* ax = aq + act_aux_offset(256);
    acc0 = _mm256_add_ps(acc0, k4_term(w, 0, ad, ax, isum0));
    acc1 = _mm256_add_ps(acc1, k4_term(w, 1, ad, ax, isum1));
}

// Q4_K / Q5_K decode (run_decode): whole panels, k4_panel1.
template <bool fifth_bit>
struct K4Panel {
    static KILN_TARGET_AVX2 void add_panel(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
        k4_panel1<fifth_bit>(w, next, a, acc0, acc1);
    }
};

// Chunk k of one half of a Q6_K sub-block pair (layout.h), rows 8h ..: the
// unsigned 6-bit levels, low nibble | two high bits from hb (the half's H chunk).
KILN_TARGET_AVX2 inline __m256i q6k_levels(const uint8_t* pair, __m256i hb, int h, int half, int k) {
    __m256i nib = load256(pair + 64 * k + 32 * h);
    if (half) nib = _mm256_srli_epi16(nib, 4);
    const __m256i hs = k < 3 ? _mm256_slli_epi16(hb, 4 - 2 * k) : _mm256_srli_epi16(hb, 2);
    return _mm256_or_si256(_mm256_and_si256(nib, _mm256_set1_epi8(0x0F)), _mm256_and_si256(hs, _mm256_set1_epi8(0x30)));
}

// Q6_K (layout.h): 8 pairs of sub-blocks of 16; unsigned levels, the -32 offset
// through the activation sums (see avx512_kquant.cpp). One block of rows 8h ..
// x T tokens of one group (t0 ..): its terms added to acc[t].
template <int T, bool Vnni>
KILN_TARGET_AVX2 inline void q6k_block(const uint8_t* w, int h, const uint8_t* a, int t0, __m256* acc) {
    const __m256i dup_even = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8,
                                              9, 12, 13, 12, 13);
    const __m256i dup_odd = _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15, 2, 3, 2, 3, 6, 7, 6, 7, 10,
                                             11, 10, 11, 14, 15, 14, 15);
    const uint8_t* aq = a + 256 * t0;
    const uint8_t* ad = a + act_d_offset(256) + 4 * t0;
    const uint8_t* ax = a + act_aux_offset(256) + 32 * t0;
    __m256i isum[T];
    for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
    for (int s = 0; s < 8; ++s) {
        const uint8_t* pair = w + 288 + 384 * s;
        const __m256i sc_pair = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 32 + 32 * s + 16 * h)));
        const __m256i sc_bias = _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc_pair, 5));
        for (int t = 0; t < T; ++t)
            isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(sc_bias, bcast_i32(ax + 32 * t + 4 * s)));
        for (int half = 0; half < 2; ++half) {
            const __m256i hb = load256(pair + 256 + 64 * half + 32 * h);
            const uint8_t* ah = aq + 32 * s + 16 * half;
            if constexpr (Vnni) {
                __m256i dot[T];
                for (int t = 0; t < T; ++t) dot[t] = _mm256_setzero_si256();
                for (int k = 0; k < 4; ++k) {
                    const __m256i q = q6k_levels(pair, hb, h, half, k);
                    for (int t = 0; t < T; ++t) dot[t] = dpbusd(dot[t], q, bcast_i32(ah + 256 * t + 4 * k));
                }
                // The half's scale: the low or high 16 bits of each pair, sign-extended.
                const __m256i sc32 = half ? _mm256_srai_epi32(sc_pair, 16) : _mm256_srai_epi32(_mm256_slli_epi32(sc_pair, 16), 16);
                for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(dot[t], sc32));
            } else {
                const __m256i sc = _mm256_shuffle_epi8(sc_pair, half ? dup_odd : dup_even);
                __m256i s16[T];
                for (int k = 0; k < 4; ++k) {
                    const __m256i q = q6k_levels(pair, hb, h, half, k);
                    for (int t = 0; t < T; ++t) {
                        const __m256i p = _mm256_maddubs_epi16(q, bcast_i32(ah + 256 * t + 4 * k));
                        s16[t] = k % 2 == 0 ? p : _mm256_add_epi16(s16[t], p);
                        if (k % 2 == 1) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[t], sc));
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

template <int T, bool Vnni>
KILN_TARGET_AVX2 void q6k_tile(const uint8_t* w, int h, const uint8_t* a, int t0, int64_t nb, uint64_t w_stride,
                               uint64_t a_stride, float* y, int64_t ldy, int n_rows, bool stream) {
    const uint64_t ahead = stream_ahead(w_stride);
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (stream) prefetch_block(w + ahead, w_stride);
        q6k_block<T, Vnni>(w, h, a, t0, acc);
    }
    for (int t = 0; t < T; ++t) store_rows(y + t * ldy, acc[t], n_rows);
}

// Both 8-row halves of one Q6_K block against one token (decode): q6k_block's
// integer sums for rows 0-7 and 8-15 at once, each activation broadcast serving
// both halves, the block `next` bytes on requested a line at a time as it goes,
// the int16 chains pinned (as k4_panel1).
KILN_TARGET_AVX2 inline void q6k_panel1(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
    const __m256i dup_even = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8,
                                              9, 12, 13, 12, 13);
    const __m256i dup_odd = _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15, 2, 3, 2, 3, 6, 7, 6, 7, 10,
                                             11, 10, 11, 14, 15, 14, 15);
    const uint8_t* ax = a + act_aux_offset(256);
    for (int l = 0; l < 288; l += 64) prefetch_l1(w + next + l);
    __m256i isum0 = _mm256_setzero_si256(), isum1 = _mm256_setzero_si256();
#pragma GCC unroll 1
    for (int s = 0; s < 8; ++s) {
        const uint8_t* pair = w + 288 + 384 * s;
        const __m256i sc_pair0 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 32 + 32 * s)));
        const __m256i sc_pair1 = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 32 + 32 * s + 16)));
        const __m256i bias = bcast_i32(ax + 4 * s);
        isum0 = _mm256_add_epi32(isum0, _mm256_madd_epi16(_mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc_pair0, 5)), bias));
        isum1 = _mm256_add_epi32(isum1, _mm256_madd_epi16(_mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc_pair1, 5)), bias));
#pragma GCC unroll 2
        for (int half = 0; half < 2; ++half) {
            const __m256i hb0 = load256(pair + 256 + 64 * half), hb1 = load256(pair + 256 + 64 * half + 32);
            const uint8_t* ah = a + 32 * s + 16 * half;
            __m256i s0 = _mm256_setzero_si256(), s1 = s0;
#pragma GCC unroll 4
            for (int k = 0; k < 4; ++k) {
                if (4 * half + k < 6) prefetch_l1(pair + next + 64 * (4 * half + k));  // the pair's 6 lines
                const __m256i b = bcast_i32(ah + 4 * k);
                s0 = pinned(_mm256_add_epi16(s0, _mm256_maddubs_epi16(q6k_levels(pair, hb0, 0, half, k), b)));
                s1 = pinned(_mm256_add_epi16(s1, _mm256_maddubs_epi16(q6k_levels(pair, hb1, 1, half, k), b)));
                if (k % 2 == 1) {  // two chunks of 6-bit levels per int16 sum
                    isum0 = _mm256_add_epi32(isum0, _mm256_madd_epi16(s0, _mm256_shuffle_epi8(sc_pair0, half ? dup_odd : dup_even)));
                    isum1 = _mm256_add_epi32(isum1, _mm256_madd_epi16(s1, _mm256_shuffle_epi8(sc_pair1, half ? dup_odd : dup_even)));
                    s0 = s1 = _mm256_setzero_si256();
                }
            }
        }
    }
    const __m256 da = bcast_f32(a + act_d_offset(256));
    acc0 = _mm256_add_ps(acc0, _mm256_mul_ps(_mm256_mul_ps(da, load_f16x8(w)), _mm256_cvtepi32_ps(isum0)));
    acc1 = _mm256_add_ps(acc1, _mm256_mul_ps(_mm256_mul_ps(da, load_f16x8(w + 16)), _mm256_cvtepi32_ps(isum1)));
}

// Q6_K decode (run_decode): whole panels, q6k_panel1.
struct Q6kPanel {
    static KILN_TARGET_AVX2 void add_panel(const uint8_t* w, uint64_t next, const uint8_t* a, __m256& acc0, __m256& acc1) {
        q6k_panel1(w, next, a, acc0, acc1);
    }
};

// ---- prefill: each panel block's levels unpacked once for every token group ----

// Prefill's decoded form of one Q4_K / Q5_K (Six false) or Q6_K (Six true) panel
// block, as IqDecoded is for the grid i-quants: made once per panel block in a
// per-thread scratch, then read by every token group of the batch, whose tiles
// then do no nibble, plane or high-bit work (the direct tiles repeat it for every
// group: docs/perf.md). Never stored in a panel. Per 8-row half h, from
// h x half_bytes:
//   levels  u8 chunks [sub-block][chunk][8 rows][4]: the unsigned levels (Q5_K
//           with its fifth bit, Q6_K's 6 bits) of elements 4 chunk .. + 3 of the
//           sub-block of each row: the operand of vpdpbusd / vpmaddubsw
//   scales  [sub-block][8 rows]: the sub-block's scale as the tile multiplies it,
//           int32 (vpmulld, with AVX-VNNI) or an (s, s) int16 pair (vpmaddwd)
//   pairs   int16 [pair][8 rows][2]: Q4_K / Q5_K the mins of sub-blocks 2p, 2p + 1
//           (zero-extended); Q6_K -32 x the scales of sub-blocks 2p, 2p + 1
//   d       f32 [8] (the panel's f16 d); Q4_K / Q5_K then dmin f32 [8]
template <bool Six>
struct KqDecoded {
    static constexpr int k_sub = Six ? 16 : 8;    // sub-blocks of a block
    static constexpr int k_chunks = Six ? 4 : 8;  // chunks of 4 levels per sub-block
    static constexpr int k_pairs = Six ? 8 : 4;
    // vpdpbusd chains per token and sub-block in the AVX-VNNI tiles: two (even and
    // odd chunks) for the 8 chunks of Q4_K / Q5_K, one for Q6_K's 4 (measured:
    // docs/perf.md).
    static constexpr int k_chains = Six ? 1 : 2;
    static constexpr int levels(int s, int c) { return 32 * (k_chunks * s + c); }
    static constexpr int scales(int s) { return 2048 + 32 * s; }
    static constexpr int pairs(int p) { return 2048 + 32 * k_sub + 32 * p; }
    static constexpr int d = 2048 + 32 * k_sub + 32 * k_pairs;
    static constexpr int half_bytes = d + (Six ? 32 : 64);
    static constexpr uint64_t bytes = 2 * half_bytes;
    // Blocks decoded at a time (40-45 KB of stack), as IqDecoded::k_blocks.
    static constexpr int k_blocks = 8;
};

KILN_TARGET_AVX2 inline void store256(uint8_t* p, __m256i v) { _mm256_store_si256(reinterpret_cast<__m256i*>(p), v); }

// One Q4_K / Q5_K panel block at w in KqDecoded<false>'s form at out (32-byte aligned).
template <bool fifth_bit, bool Vnni>
KILN_TARGET_AVX2 void k4_decode(const uint8_t* w, uint8_t* out) {
    using D = KqDecoded<false>;
    for (int h = 0; h < 2; ++h) {
        uint8_t* o = out + h * D::half_bytes;
        for (int pr = 0; pr < 4; ++pr)
            for (int c = 0; c < 8; ++c) {
                __m256i qe, qo;
                k4_pair_levels<fifth_bit>(w, h, pr, c, qe, qo);
                store256(o + D::levels(2 * pr, c), qe);
                store256(o + D::levels(2 * pr + 1, c), qo);
            }
        for (int sb = 0; sb < 8; ++sb) {
            const uint8_t* sc = w + 64 + 16 * sb + 8 * h;
            store256(o + D::scales(sb), Vnni ? scales_u8(sc) : scale_pairs_u8(sc));
        }
        for (int p = 0; p < 4; ++p)
            store256(o + D::pairs(p), _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 192 + 32 * p + 16 * h))));
        _mm256_store_ps(reinterpret_cast<float*>(o + D::d), load_f16x8(w + 16 * h));
        _mm256_store_ps(reinterpret_cast<float*>(o + D::d + 32), load_f16x8(w + 32 + 16 * h));
    }
}

// One Q6_K panel block at w in KqDecoded<true>'s form at out (32-byte aligned).
template <bool Vnni>
KILN_TARGET_AVX2 void q6k_decode(const uint8_t* w, uint8_t* out) {
    using D = KqDecoded<true>;
    const __m256i dup_even = _mm256_setr_epi8(0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8, 9, 12, 13, 12, 13, 0, 1, 0, 1, 4, 5, 4, 5, 8, 9, 8,
                                              9, 12, 13, 12, 13);
    const __m256i dup_odd = _mm256_setr_epi8(2, 3, 2, 3, 6, 7, 6, 7, 10, 11, 10, 11, 14, 15, 14, 15, 2, 3, 2, 3, 6, 7, 6, 7, 10,
                                             11, 10, 11, 14, 15, 14, 15);
    for (int h = 0; h < 2; ++h) {
        uint8_t* o = out + h * D::half_bytes;
        for (int s = 0; s < 8; ++s) {
            const uint8_t* pair = w + 288 + 384 * s;
            const __m256i sc_pair = _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 32 + 32 * s + 16 * h)));
            store256(o + D::pairs(s), _mm256_sub_epi16(_mm256_setzero_si256(), _mm256_slli_epi16(sc_pair, 5)));
            for (int half = 0; half < 2; ++half) {
                const __m256i hb = load256(pair + 256 + 64 * half + 32 * h);
                for (int k = 0; k < 4; ++k) store256(o + D::levels(2 * s + half, k), q6k_levels(pair, hb, h, half, k));
                // As q6k_block: the half's scale sign-extended to int32, or duplicated into an int16 pair.
                const __m256i sc = Vnni ? (half ? _mm256_srai_epi32(sc_pair, 16) : _mm256_srai_epi32(_mm256_slli_epi32(sc_pair, 16), 16))
                                        : _mm256_shuffle_epi8(sc_pair, half ? dup_odd : dup_even);
                store256(o + D::scales(2 * s + half), sc);
            }
        }
        _mm256_store_ps(reinterpret_cast<float*>(o + D::d), load_f16x8(w + 16 * h));
    }
}

// nb decoded blocks at dw, rows 8h.., x T tokens of one group (t0 ..; a: the
// group's activations of the first block): the integer sums of k4_tile /
// q6k_block (exact, in another order) and their float steps in their order. The
// row sums continue those left in y by the blocks before (first: none): the bits
// of the direct tiles' single pass. per_sum: the chunks one int16 sum holds
// without AVX-VNNI (4-bit levels 8, 5-bit 4, 6-bit 2; see the top). With AVX-VNNI
// each token has KqDecoded::k_chains vpdpbusd chains per sub-block, summed before
// the scale multiply.
template <bool Six, int per_sum, int T, bool Vnni>
KILN_TARGET_AVX2 void kq_decoded_tile(const uint8_t* dw, int h, const uint8_t* a, int t0, int64_t nb, uint64_t a_stride, float* y,
                                      int64_t ldy, int n_rows, bool first, bool /*last*/) {
    using D = KqDecoded<Six>;
    constexpr int aux_bytes = Six ? 32 : 16;  // per token: KSums16 / KPairs (layout.h)
    __m256 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = first ? _mm256_setzero_ps() : load_rows(y + t * ldy, n_rows);
    dw += h * D::half_bytes;
    for (int64_t b = 0; b < nb; ++b, dw += D::bytes, a += a_stride) {
        const uint8_t* aq = a + 256 * t0;
        const uint8_t* ad = a + act_d_offset(256) + 4 * t0;
        const uint8_t* ax = a + act_aux_offset(256) + aux_bytes * t0;
        __m256i isum[T];
        for (int t = 0; t < T; ++t) isum[t] = _mm256_setzero_si256();
        if constexpr (Six)
            for (int s = 0; s < 8; ++s) {
                const __m256i bias = load256(dw + D::pairs(s));
                for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(bias, bcast_i32(ax + aux_bytes * t + 4 * s)));
            }
#pragma GCC unroll 1
        for (int sb = 0; sb < D::k_sub; ++sb) {
            const uint8_t* lv = dw + D::levels(sb, 0);
            const uint8_t* as = aq + 4 * D::k_chunks * sb;
            const __m256i sc = load256(dw + D::scales(sb));
            if constexpr (Vnni) {
                __m256i d0[T], d1[T];
                for (int t = 0; t < T; ++t) d0[t] = d1[t] = _mm256_setzero_si256();
#pragma GCC unroll 8
                for (int c = 0; c < D::k_chunks; ++c) {
                    const __m256i q = load256(lv + 32 * c);
                    for (int t = 0; t < T; ++t) {
                        if (c % D::k_chains == 0) d0[t] = dpbusd(d0[t], q, bcast_i32(as + 256 * t + 4 * c));
                        else d1[t] = dpbusd(d1[t], q, bcast_i32(as + 256 * t + 4 * c));
                    }
                }
                for (int t = 0; t < T; ++t) isum[t] = _mm256_add_epi32(isum[t], _mm256_mullo_epi32(D::k_chains == 1 ? d0[t] : _mm256_add_epi32(d0[t], d1[t]), sc));
            } else {
                __m256i s16[T] = {};  // (set at c = 0; initialized for GCC 12's -Wmaybe-uninitialized)
#pragma GCC unroll 8
                for (int c = 0; c < D::k_chunks; ++c) {
                    const __m256i q = load256(lv + 32 * c);
                    for (int t = 0; t < T; ++t) {
                        const __m256i p = _mm256_maddubs_epi16(q, bcast_i32(as + 256 * t + 4 * c));
                        s16[t] = pinned(c % per_sum == 0 ? p : _mm256_add_epi16(s16[t], p));
                        if (c % per_sum == per_sum - 1) isum[t] = _mm256_add_epi32(isum[t], _mm256_madd_epi16(s16[t], sc));
                    }
                }
            }
        }
        const __m256 dwf = _mm256_load_ps(reinterpret_cast<const float*>(dw + D::d));
        if constexpr (Six) {
            for (int t = 0; t < T; ++t) {
                const __m256 d = _mm256_mul_ps(bcast_f32(ad + 4 * t), dwf);
                acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum[t])));
            }
        } else {
            // k4_term's steps, the mins' pairs and dmin from the decoded block.
            const __m256 dmw = _mm256_load_ps(reinterpret_cast<const float*>(dw + D::d + 32));
            for (int t = 0; t < T; ++t) {
                __m256i msum = _mm256_setzero_si256();
                for (int p = 0; p < 4; ++p)
                    msum = _mm256_add_epi32(msum, _mm256_madd_epi16(load256(dw + D::pairs(p)), bcast_i32(ax + aux_bytes * t + 4 * p)));
                const __m256 da = bcast_f32(ad + 4 * t);
                const __m256 dall = _mm256_mul_ps(da, dwf);
                const __m256 dmin = _mm256_mul_ps(da, dmw);
                const __m256 scaled = _mm256_mul_ps(dall, _mm256_cvtepi32_ps(isum[t]));
                const __m256 mins = _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(msum));
                acc[t] = _mm256_add_ps(acc[t], _mm256_sub_ps(scaled, mins));
            }
        }
    }
    for (int t = 0; t < T; ++t) store_rows(y + t * ldy, acc[t], n_rows);
}

using KqDecodedTileFn = void (*)(const uint8_t*, int, const uint8_t*, int, int64_t, uint64_t, float*, int64_t, int, bool, bool);

template <bool Six, int per_sum, bool Vnni>
constexpr KqDecodedTileFn k_kq_decoded_tiles[5] = {nullptr, kq_decoded_tile<Six, per_sum, 1, Vnni>, kq_decoded_tile<Six, per_sum, 2, Vnni>,
                                                   kq_decoded_tile<Six, per_sum, 3, Vnni>, kq_decoded_tile<Six, per_sum, 4, Vnni>};

// Several token groups: per panel, KqDecoded::k_blocks blocks decoded at a time,
// then every half, group and 4-token tile over them (a batch of one group keeps
// run_tiles' direct path, which streams the panel from memory once).
template <bool Six, int per_sum, bool Vnni, typename Decode>
KILN_TARGET_AVX2 void kq_prefill(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy, Decode decode) {
    run_decoded_prefill<KqDecoded<Six>::k_blocks, KqDecoded<Six>::bytes>(
        w, a, p0, p1, y, ldy, decode,
        [&](int n, const uint8_t* dw, int h, const uint8_t* ag, int t0, int64_t nb, float* yt, int rows, bool first, bool last) {
            k_kq_decoded_tiles<Six, per_sum, Vnni>[n](dw, h, ag, t0, nb, a.format.block_stride, yt, ldy, rows, first, last);
        });
}

template <bool fifth_bit, bool Vnni>
constexpr TileFn k_k4_tiles[5] = {nullptr, k4_tile<fifth_bit, 1, Vnni>, k4_tile<fifth_bit, 2, Vnni>, k4_tile<fifth_bit, 3, Vnni>,
                                  k4_tile<fifth_bit, 4, Vnni>};
template <bool Vnni>
constexpr TileFn k_q6k_tiles[5] = {nullptr, q6k_tile<1, Vnni>, q6k_tile<2, Vnni>, q6k_tile<3, Vnni>, q6k_tile<4, Vnni>};

template <bool fifth_bit, bool Vnni>
void k4_gemm(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_tokens == 1) return run_decode<K4Panel<fifth_bit>>(w, a, p0, p1, y);
    if (a.n_groups() > 1) return kq_prefill<false, fifth_bit ? 4 : 8, Vnni>(w, a, p0, p1, y, ldy, k4_decode<fifth_bit, Vnni>);
    run_tiles(k_k4_tiles<fifth_bit, Vnni>, w, a, p0, p1, y, ldy);
}

template <bool Vnni>
void q6k_gemm(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_tokens == 1) return run_decode<Q6kPanel>(w, a, p0, p1, y);
    if (a.n_groups() > 1) return kq_prefill<true, 2, Vnni>(w, a, p0, p1, y, ldy, q6k_decode<Vnni>);
    run_tiles(k_q6k_tiles<Vnni>, w, a, p0, p1, y, ldy);
}

}  // namespace

void gemm_q4_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    k4_gemm<false, false>(w, a, p0, p1, y, ldy);
}
void gemm_q5_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    k4_gemm<true, false>(w, a, p0, p1, y, ldy);
}
void gemm_q6_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) { q6k_gemm<false>(w, a, p0, p1, y, ldy); }

namespace vnni {
const PackedGemmFn gemm_q4_K = k4_gemm<false, true>;
const PackedGemmFn gemm_q5_K = k4_gemm<true, true>;
const PackedGemmFn gemm_q6_K = q6k_gemm<true>;
}  // namespace vnni

}  // namespace kiln::avx2

#endif  // KILN_HAVE_X86_KERNELS
