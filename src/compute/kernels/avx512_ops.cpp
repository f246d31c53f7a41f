// AVX-512 element-wise and row kernels: exp-based activations, the GELU table,
// RMSNorm, softmax and the attention of one query row over f32 keys and values.
//
// Every element-wise kernel treats a partial last vector with masks, so each
// element's result depends on its value only, never on where a row was split
// (batch invariance). Reference and tolerance of each: tests/compute.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include "compute/kernels/avx512_intrinsics.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compute/alibi.h"
#include "compute/attention.h"
#include "compute/kernels/kv_rows.h"
#include "compute/kernels/x86.h"
#include "compute/ops.h"
#include "kiln/quant.h"

namespace kiln::avx512 {

namespace {

// Lanes [0, left) of 16 (none when left <= 0).
KILN_TARGET_AVX512 inline __mmask16 tail_mask(int64_t left) {
    if (left <= 0) return 0;
    return left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1);
}

// e^x within about 1 ulp: x = n ln2 + r with |r| <= ln2 / 2 (ln2 split in two so n
// ln2 is exact), e^r by Cephes' degree-6 polynomial, times 2^n by vscalefps (which
// saturates to inf and flushes to 0 like the libm function).
KILN_TARGET_AVX512 inline __m512 exp_ps(__m512 x) {
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(89.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
    const __m512 y = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(y, n);
}

KILN_TARGET_AVX512 inline __m512 round_f16(__m512 v) {
    return _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// 16 vectors -> one vector of their 16 horizontal sums.
KILN_TARGET_AVX512 inline __m512 sum4_per_lane(__m512 a, __m512 b, __m512 c, __m512 d) {
    const __m512 s1 = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
    const __m512 s2 = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
    return _mm512_add_ps(_mm512_shuffle_ps(s1, s2, _MM_SHUFFLE(1, 0, 1, 0)), _mm512_shuffle_ps(s1, s2, _MM_SHUFFLE(3, 2, 3, 2)));
}

KILN_TARGET_AVX512 inline __m512 reduce16(const __m512* v) {
    const __m512 w0 = sum4_per_lane(v[0], v[1], v[2], v[3]);
    const __m512 w1 = sum4_per_lane(v[4], v[5], v[6], v[7]);
    const __m512 w2 = sum4_per_lane(v[8], v[9], v[10], v[11]);
    const __m512 w3 = sum4_per_lane(v[12], v[13], v[14], v[15]);
    const __m512 y01 = _mm512_add_ps(_mm512_shuffle_f32x4(w0, w1, 0x44), _mm512_shuffle_f32x4(w0, w1, 0xEE));
    const __m512 y23 = _mm512_add_ps(_mm512_shuffle_f32x4(w2, w3, 0x44), _mm512_shuffle_f32x4(w2, w3, 0xEE));
    return _mm512_add_ps(_mm512_shuffle_f32x4(y01, y23, 0x88), _mm512_shuffle_f32x4(y01, y23, 0xDD));
}

using kv_rows::Fmt;
using kv_rows::q8_scale;
using kv_rows::row_bytes_of;

// 16 elements of a cached row as f32 (masked), starting at element i (for Q8 a
// multiple of 16: half of a 34-byte block, its quants times its f16 scale as
// q8_0_to_f32 computes them, so reading in place gives the converted rows' bits).
template <Fmt F>
KILN_TARGET_AVX512 inline __m512 load_row16(const uint8_t* row, int i, __mmask16 m) {
    if constexpr (F == Fmt::F16) {
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * i));
    } else if constexpr (F == Fmt::F32) {
        return _mm512_maskz_loadu_ps(m, row + 4 * i);
    } else {
        if (m == 0) return _mm512_setzero_ps();  // the block may lie past the row
        const uint8_t* b = row + static_cast<uint64_t>(i / 32) * 34;
        const __m512i q = _mm512_cvtepi8_epi32(_mm_maskz_loadu_epi8(m, b + 2 + i % 32));
        return _mm512_maskz_mul_ps(m, _mm512_cvtepi32_ps(q), _mm512_set1_ps(q8_scale(b)));
    }
}

// Partial products of q and a cached row (n elements) in 16 lanes.
template <Fmt F>
KILN_TARGET_AVX512 inline __m512 dot_lanes(const float* q, const uint8_t* k, int n) {
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), load_row16<F>(k, i, m), acc);
    }
    return acc;
}

// sink: a logit in the normalisation without a value (-inf: none), as ops::softmax_with_sink.
KILN_TARGET_AVX512 void softmax_row(float* x, int64_t n, bool f16, float sink = -INFINITY) {
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t i = 0; i < n; i += 16) mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail_mask(n - i), x + i));
    const float m = std::max(_mm512_reduce_max_ps(mx), sink);
    if (m == -INFINITY) {
        for (int64_t i = 0; i < n; i += 16) _mm512_mask_storeu_ps(x + i, tail_mask(n - i), _mm512_setzero_ps());
        return;
    }
    const __m512 vm = _mm512_set1_ps(m);
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        const __m512 e = _mm512_maskz_mov_ps(k, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, x + i), vm)));
        _mm512_mask_storeu_ps(x + i, k, e);
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
        s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
    }
    const double sum = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1)) + (sink == -INFINITY ? 0.0 : static_cast<double>(std::exp(sink - m)));
    const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), inv);
        if (f16) v = round_f16(v);
        _mm512_mask_storeu_ps(x + i, k, v);
    }
}

// Where value_tile's walk over cached value rows stands.
struct ValueWalk {
    // Rows k_prefetch keys ahead are requested early: a long cache streams from
    // memory, and the loop's work per key is too short to hide the latency.
    static constexpr int64_t k_prefetch = 16;
    const KvRows& kv;
    uint64_t width_bytes, col_bytes;
    int64_t slot, ahead;  // ring indices, advanced without a division per key
    int64_t p0;           // key j's weight is p[h * p_stride + j - p0]
};

// Key j's value row into the NH queries' accumulators (`every`: all of them take
// key j, else those with nk[h] > j).
template <int NH, Fmt F, bool every, bool fused>
KILN_TARGET_AVX512 __attribute__((always_inline)) inline void value_key(__m512 (&acc)[NH * 4], ValueWalk& w,
                                                                       const __mmask16* masks, const float* p,
                                                                       int64_t p_stride, const int64_t* nk, int64_t j) {
    const KvRows& kv = w.kv;
    const uint8_t* vr = kv.v + static_cast<uint64_t>(w.slot) * kv.v_row_bytes + w.col_bytes;
    if (++w.slot == kv.capacity) w.slot = 0;
    const char* pf = reinterpret_cast<const char*>(kv.v + static_cast<uint64_t>(w.ahead) * kv.v_row_bytes + w.col_bytes);
    if (++w.ahead == kv.capacity) w.ahead = 0;
    for (uint64_t b = 0; b < w.width_bytes; b += 64) _mm_prefetch(pf + b, _MM_HINT_T0);
    __m512 vv[4];
#pragma GCC unroll 4
    for (int c = 0; c < 4; ++c) vv[c] = load_row16<F>(vr, 16 * c, masks[c]);
#pragma GCC unroll 6
    for (int h = 0; h < NH; ++h) {
        if (!every && j >= nk[h]) continue;
        const __m512 wt = _mm512_set1_ps(p[h * p_stride + j - w.p0]);
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c)
            acc[4 * h + c] = fused ? _mm512_fmadd_ps(wt, vv[c], acc[4 * h + c]) : _mm512_add_ps(acc[4 * h + c], _mm512_mul_ps(wt, vv[c]));
    }
}

// out[h][d] += sum over keys j in [j0, nk[h]) of p[h][j] * v[j][d] for NH
// queries (a row and head each) and up to 64 elements, keys in order (attend()'s
// order for every element); out[h] holds the sum of the keys before j0 (j0 > 0)
// or is overwritten (j0 == 0). Stopping at j1 and going on from there later
// gives the same bits (a float stored and loaded is unchanged), so a block of
// queries walks the values in chunks that stay in L1. With an f16 cache both
// factors are f16 values, so a fused multiply-add rounds exactly as attend()'s
// separate multiply and add; `fused` (F16, and the streaming form, which keeps
// no reference order for the sums) multiplies and adds in one rounding.
template <int NH, Fmt F, bool fused>
KILN_TARGET_AVX512 void value_tile(const float* p, int64_t p_stride, int64_t p0, const int64_t* nk, const KvRows& kv,
                                   int64_t first, int64_t j0, int64_t j1, int64_t col, int width, float* const* out) {
    __mmask16 masks[4];
    for (int c = 0; c < 4; ++c) masks[c] = tail_mask(width - 16 * c);
    int64_t all = j1, any = j0;  // keys every query takes, keys some query takes
#pragma GCC unroll 6
    for (int h = 0; h < NH; ++h) all = std::min(all, nk[h]), any = std::max(any, std::min(j1, nk[h]));
    __m512 acc[NH * 4];
    // Every loop over acc fully unrolled: one left rolled makes GCC keep the array
    // in memory and store all NH x 4 accumulators on every key.
#pragma GCC unroll 6
    for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) acc[4 * h + c] = j0 == 0 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(masks[c], out[h] + 16 * c);
    const uint64_t width_bytes = row_bytes_of<F>(static_cast<uint64_t>(width)), col_bytes = row_bytes_of<F>(static_cast<uint64_t>(col));
    ValueWalk walk{kv, width_bytes, col_bytes, kv.slot(first + j0), 0, p0};
    walk.ahead = (walk.slot + ValueWalk::k_prefetch) % kv.capacity;
    int64_t j = j0;
    for (; j < all; ++j) value_key<NH, F, true, fused>(acc, walk, masks, p, p_stride, nk, j);
    for (; j < any; ++j) value_key<NH, F, false, fused>(acc, walk, masks, p, p_stride, nk, j);  // the last keys of the later rows
#pragma GCC unroll 6
    for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
        for (int c = 0; c < 4; ++c) _mm512_mask_storeu_ps(out[h] + 16 * c, masks[c], acc[4 * h + c]);
}

using ValueTileFn = void (*)(const float*, int64_t, int64_t, const int64_t*, const KvRows&, int64_t, int64_t, int64_t, int64_t,
                             int, float* const*);
// The exact order's tiles (fused only for F16) and the streaming form's (always fused).
template <Fmt F, bool stream = false>
constexpr ValueTileFn k_value_tiles[7] = {nullptr,
                                          value_tile<1, F, stream || F == Fmt::F16>,
                                          value_tile<2, F, stream || F == Fmt::F16>,
                                          value_tile<3, F, stream || F == Fmt::F16>,
                                          value_tile<4, F, stream || F == Fmt::F16>,
                                          value_tile<5, F, stream || F == Fmt::F16>,
                                          value_tile<6, F, stream || F == Fmt::F16>};

// Scores of 16 keys for every head of a group, head size 16 NC: each key row is
// loaded and converted once, then multiplied with every head's q. Keys go four
// at a time: their rows stay in registers while each head's q is loaded once
// for the four, and the four partial sums are folded at once (sum4_per_lane,
// reduce16's first step) into one vector kept until the 16 keys are done, so no
// head holds 16 partial sums (which spilled). The same operations in the same
// order as reduce16 over the 16 partial sums: the same bits.
template <Fmt F, int NC>
KILN_TARGET_AVX512 void score_block(const float* q, int group, const uint8_t* const* rows, __m512 scale, float* scores,
                                    int64_t stride) {
    constexpr int dk = 16 * NC;
    for (int h0 = 0; h0 < group; h0 += 8) {
        const int nh = std::min(8, group - h0);
        __m512 w[8][4];  // per head: the folded sums of keys 4k .. 4k + 3
        for (int k4 = 0; k4 < 4; ++k4) {
            __m512 k[4][NC];
            for (int jj = 0; jj < 4; ++jj)
                for (int c = 0; c < NC; ++c) k[jj][c] = load_row16<F>(rows[4 * k4 + jj], 16 * c, 0xFFFF);
            for (int h = 0; h < nh; ++h) {
                const float* qh = q + (h0 + h) * dk;
                __m512 acc[4];
                __m512 qc = _mm512_loadu_ps(qh);
                for (int jj = 0; jj < 4; ++jj) acc[jj] = _mm512_mul_ps(qc, k[jj][0]);
                for (int c = 1; c < NC; ++c) {
                    qc = _mm512_loadu_ps(qh + 16 * c);
                    for (int jj = 0; jj < 4; ++jj) acc[jj] = _mm512_fmadd_ps(qc, k[jj][c], acc[jj]);
                }
                w[h][k4] = sum4_per_lane(acc[0], acc[1], acc[2], acc[3]);
            }
        }
        for (int h = 0; h < nh; ++h) {
            const __m512 y01 = _mm512_add_ps(_mm512_shuffle_f32x4(w[h][0], w[h][1], 0x44), _mm512_shuffle_f32x4(w[h][0], w[h][1], 0xEE));
            const __m512 y23 = _mm512_add_ps(_mm512_shuffle_f32x4(w[h][2], w[h][3], 0x44), _mm512_shuffle_f32x4(w[h][2], w[h][3], 0xEE));
            const __m512 sum = _mm512_add_ps(_mm512_shuffle_f32x4(y01, y23, 0x88), _mm512_shuffle_f32x4(y01, y23, 0xDD));
            _mm512_storeu_ps(scores + (h0 + h) * stride, _mm512_mul_ps(sum, scale));
        }
    }
}

using ScoreFn = void (*)(const float*, int, const uint8_t* const*, __m512, float*, int64_t);

// q of KV head g's nq queries (row-major (row, head)) into qb, prescaled and
// rounded as attend() does.
KILN_TARGET_AVX512 void load_queries(const AttentionShape& s, const float* q, int64_t q_stride, int g, int nq, bool round, float* qb) {
    const int group = s.n_head / s.n_head_kv, dk = s.head_dim_k;
    for (int i = 0; i < nq; ++i) {
        const float* qh = q + (i / group) * q_stride + static_cast<int64_t>(g * group + i % group) * dk;
        float* qi = qb + static_cast<size_t>(i) * dk;
        for (int e = 0; e < dk; e += 16) {
            const __mmask16 k = tail_mask(dk - e);
            __m512 v = _mm512_maskz_loadu_ps(k, qh + e);
            if (s.prescale_q) v = _mm512_mul_ps(v, _mm512_set1_ps(s.scale));
            if (round) v = round_f16(v);
            _mm512_mask_storeu_ps(qi + e, k, v);
        }
    }
}

template <Fmt F>
ScoreFn score_block_for(int dk) {
    switch (dk) {
        case 32: return score_block<F, 2>;
        case 64: return score_block<F, 4>;
        case 128: return score_block<F, 8>;
        case 256: return score_block<F, 16>;
        default: return nullptr;
    }
}

// The queries of n_rows rows of one sequence (row r at position pos[r],
// ascending, q at q + r q_stride, out at out + r out_stride, ALiBi distances from
// q_pos[r]), all seeing keys from `first` to their own position, for every KV
// head of the call. Each query's operations are those it has alone (n_rows 1,
// one KV head): the scores' 16-key blocks start at `first` for every row, a
// row's last partial block is its own tail, and the weighted sums run over its
// keys in order. A block of rows shares each key and value row's loads (one load
// from memory or L3 for all its queries), and the KV heads of a call (contiguous
// in each cached row) walk the keys together, 16 keys of every head for the
// scores and 64 of every head for the values at a time, so the rows are read in
// runs rather than in head-sized pieces.
template <Fmt F>
KILN_TARGET_AVX512 void attend_impl(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                                    const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                                    AttentionScratch& sc) {
    const int group = s.n_head / s.n_head_kv, n_kv = s.n_head_kv;
    const int dk = s.head_dim_k, dv = s.head_dim_v;
    const int nq = n_rows * group;  // queries per KV head: row-major (row, head)
    const size_t all = static_cast<size_t>(nq) * static_cast<size_t>(n_kv);
    const int64_t n_max = pos[n_rows - 1] - first + 1;
    const int64_t stride = (n_max + 15) / 16 * 16;
    sc.scores.resize(static_cast<size_t>(stride) * all);
    sc.qbuf.resize(all * static_cast<size_t>(dk));
    sc.nk.resize(static_cast<size_t>(nq));
    sc.outs.resize(static_cast<size_t>(nq));
    for (int i = 0; i < nq; ++i) sc.nk[static_cast<size_t>(i)] = pos[i / group] - first + 1;
    const int64_t* nk = sc.nk.data();
    const bool round = kv.f16_rounding;
    const float score_scale = s.prescale_q ? 1.0f : s.scale;
    const __m512 vscale = _mm512_set1_ps(score_scale);
    for (int g = 0; g < n_kv; ++g) load_queries(s, q, q_stride, g, nq, round, sc.qbuf.data() + static_cast<size_t>(g) * nq * dk);
    // Scores, 16 keys at a time; each key row is converted once for all the
    // queries when the head size is one the fixed-size kernels take.
    const ScoreFn fixed = score_block_for<F>(dk);
    const uint64_t k_bytes = row_bytes_of<F>(static_cast<uint64_t>(dk));
    int64_t slot = kv.slot(first);
    int64_t ahead = (slot + 32) % kv.capacity;  // keys two blocks ahead, requested early
    for (int64_t j = 0; j < n_max; j += 16) {
        const int n_in = static_cast<int>(std::min<int64_t>(16, n_max - j));
        int64_t slots[16], aheads[16];
        for (int jj = 0; jj < n_in; ++jj) {
            slots[jj] = slot;
            aheads[jj] = ahead;
            if (++slot == kv.capacity) slot = 0;
            if (++ahead == kv.capacity) ahead = 0;
        }
        int full = 0;  // the first query whose keys cover the block (nk ascends)
        while (full < nq && nk[full] < j + 16) ++full;
        for (int g = 0; g < n_kv; ++g) {
            const uint64_t k_col = row_bytes_of<F>(static_cast<uint64_t>(g) * dk);
            const float* qb = sc.qbuf.data() + static_cast<size_t>(g) * nq * dk;
            float* scores = sc.scores.data() + static_cast<size_t>(g) * nq * stride;
            const uint8_t* rows[16];
            for (int jj = 0; jj < n_in; ++jj) {
                rows[jj] = kv.k + static_cast<uint64_t>(slots[jj]) * kv.k_row_bytes + k_col;
                const char* pf = reinterpret_cast<const char*>(kv.k + static_cast<uint64_t>(aheads[jj]) * kv.k_row_bytes + k_col);
                for (uint64_t b = 0; b < k_bytes; b += 64) _mm_prefetch(pf + b, _MM_HINT_T0);
            }
            if (full < nq) {  // queries [full, nq) take the whole block
                if (fixed) {
                    fixed(qb + static_cast<size_t>(full) * dk, nq - full, rows, vscale, scores + full * stride + j, stride);
                } else {
                    for (int i = full; i < nq; ++i) {
                        __m512 part[16];
                        for (int jj = 0; jj < 16; ++jj) part[jj] = dot_lanes<F>(qb + static_cast<size_t>(i) * dk, rows[jj], dk);
                        _mm512_storeu_ps(scores + i * stride + j, _mm512_mul_ps(reduce16(part), vscale));
                    }
                }
            }
            for (int i = 0; i < full; ++i)  // queries whose last keys are in this block: one key at a time
                for (int64_t jj = j; jj < nk[i]; ++jj)
                    scores[i * stride + jj] = _mm512_reduce_add_ps(dot_lanes<F>(qb + static_cast<size_t>(i) * dk, rows[jj - j], dk)) * score_scale;
        }
    }
    for (int g = 0; g < n_kv; ++g)
        for (int i = 0; i < nq; ++i) {
            const int hq = i % group;
            float* sp = sc.scores.data() + (static_cast<size_t>(g) * nq + i) * stride;
            if (s.softcap > 0.0f)
                for (int64_t jj = 0; jj < nk[i]; ++jj) sp[jj] = std::tanh(sp[jj] / s.softcap) * s.softcap;
            if (s.alibi) alibi_bias(sp, nk[i], first, q_pos[i / group], s.alibi[g * group + hq]);
            softmax_row(sp, nk[i], round, s.sinks ? s.sinks[g * group + hq] : -INFINITY);
        }
    // Weighted sums of values, in chunks of 64 keys that stay in L1 while every
    // tile of queries of every KV head walks them.
    constexpr int64_t chunk = 64;
    for (int64_t j0 = 0; j0 < n_max; j0 += chunk)
        for (int g = 0; g < n_kv; ++g) {
            const float* scores = sc.scores.data() + static_cast<size_t>(g) * nq * stride;
            for (int d0 = 0; d0 < dv; d0 += 64) {
                for (int i = 0; i < nq; ++i)
                    sc.outs[static_cast<size_t>(i)] = out + (i / group) * out_stride + static_cast<int64_t>(g * group + i % group) * dv + d0;
                for (int i0 = 0; i0 < nq; i0 += 6) {
                    const int np = std::min(6, nq - i0);
                    k_value_tiles<F>[np](scores + i0 * stride, stride, 0, nk + i0, kv, first, j0, std::min(n_max, j0 + chunk),
                                         static_cast<int64_t>(g) * dv + d0, std::min(64, dv - d0), sc.outs.data() + i0);
                }
            }
        }
}

// attend_impl's streaming form (attend_rows_stream), blocks of k_stream_block
// keys, every KV head of the call within one block before the next block (a
// task's heads are contiguous in each cached row: the rows are read in runs, and
// a block's rows stay in cache from one head to the next). Per block: the scores
// of every query of every head, as attend_impl computes them, 16 keys of every
// head at a time (each key row's span read in one run, converted once per head
// for the group's queries); then per head each query's online softmax step (the
// block's maximum, its sum and accumulator rescaled when the running maximum
// rises, the block's weights) and the block's values into the accumulators
// (value_tile, fused multiply-adds for every cache type, goes on from what they
// hold). While the scores walk the keys, the key and value spans one block ahead
// are requested. A query's operations are the same whatever the other heads and
// rows of the call.
template <Fmt F>
KILN_TARGET_AVX512 void stream_impl(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                                    const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                                    AttentionScratch& sc) {
    constexpr int B = k_stream_block;
    const int group = s.n_head / s.n_head_kv, n_kv = s.n_head_kv;
    const int dk = s.head_dim_k, dv = s.head_dim_v;
    const int nq = n_rows * group;  // queries per KV head
    const size_t all = static_cast<size_t>(nq) * static_cast<size_t>(n_kv);
    const int64_t n_max = pos[n_rows - 1] - first + 1;
    sc.scores.resize(static_cast<size_t>(B) * all);
    sc.qbuf.resize(all * static_cast<size_t>(dk));
    sc.nk.resize(static_cast<size_t>(nq));
    sc.outs.resize(static_cast<size_t>(nq));
    sc.run_max.resize(all);
    sc.run_sum.resize(all);
    sc.acc.assign(all * static_cast<size_t>(dv), 0.0f);
    for (int i = 0; i < nq; ++i) sc.nk[static_cast<size_t>(i)] = pos[i / group] - first + 1;
    const int64_t* nk = sc.nk.data();
    const bool round = kv.f16_rounding;
    const float score_scale = s.prescale_q ? 1.0f : s.scale;
    const __m512 vscale = _mm512_set1_ps(score_scale);
    const ScoreFn fixed = score_block_for<F>(dk);
    for (int g = 0; g < n_kv; ++g) {
        load_queries(s, q, q_stride, g, nq, round, sc.qbuf.data() + static_cast<size_t>(g) * nq * dk);
        for (int i = 0; i < nq; ++i) {  // a sink is a first key whose value is zero
            const size_t x = static_cast<size_t>(g) * nq + i;
            sc.run_max[x] = s.sinks ? s.sinks[g * group + i % group] : -INFINITY;
            sc.run_sum[x] = s.sinks ? 1.0f : 0.0f;
        }
    }
    const uint64_t k_span = row_bytes_of<F>(static_cast<uint64_t>(n_kv) * dk), v_span = row_bytes_of<F>(static_cast<uint64_t>(n_kv) * dv);
    for (int64_t j0 = 0; j0 < n_max; j0 += B) {
        const int64_t j1 = std::min<int64_t>(n_max, j0 + B);
        // Scores of every head of the call, 16 keys at a time: the heads are
        // contiguous in each key row, so each row's span is read in one run.
        // The key and value spans one block ahead are requested meanwhile.
        int64_t slot = kv.slot(first + j0), ahead = (slot + B) % kv.capacity;
        for (int64_t j = j0; j < j1; j += 16) {
            const uint8_t* key_rows[16];
            const int n_in = static_cast<int>(std::min<int64_t>(16, j1 - j));
            for (int jj = 0; jj < n_in; ++jj) {
                key_rows[jj] = kv.k + static_cast<uint64_t>(slot) * kv.k_row_bytes;
                if (++slot == kv.capacity) slot = 0;
                const char* pk = reinterpret_cast<const char*>(kv.k + static_cast<uint64_t>(ahead) * kv.k_row_bytes);
                const char* pv = reinterpret_cast<const char*>(kv.v + static_cast<uint64_t>(ahead) * kv.v_row_bytes);
                if (++ahead == kv.capacity) ahead = 0;
                for (uint64_t b = 0; b < k_span; b += 64) _mm_prefetch(pk + b, _MM_HINT_T0);
                for (uint64_t b = 0; b < v_span; b += 64) _mm_prefetch(pv + b, _MM_HINT_T0);
            }
            int full = 0;  // queries [full, nq) take all 16 keys (nk ascends)
            while (full < nq && nk[full] < j + 16) ++full;
            for (int g = 0; g < n_kv; ++g) {
                const float* qb = sc.qbuf.data() + static_cast<size_t>(g) * nq * dk;
                float* scores = sc.scores.data() + static_cast<size_t>(g) * nq * B;
                const uint64_t k_col = row_bytes_of<F>(static_cast<uint64_t>(g) * dk);
                const uint8_t* rows[16];
                for (int jj = 0; jj < n_in; ++jj) rows[jj] = key_rows[jj] + k_col;
                float* sb = scores + (j - j0);
                if (full < nq) {
                    if (fixed) {
                        fixed(qb + static_cast<size_t>(full) * dk, nq - full, rows, vscale, sb + full * B, B);
                    } else {
                        for (int i = full; i < nq; ++i) {
                            __m512 part[16];
                            for (int jj = 0; jj < 16; ++jj) part[jj] = dot_lanes<F>(qb + static_cast<size_t>(i) * dk, rows[jj], dk);
                            _mm512_storeu_ps(sb + i * B, _mm512_mul_ps(reduce16(part), vscale));
                        }
                    }
                }
                for (int i = 0; i < full; ++i)  // queries whose last keys are in these 16
                    for (int64_t jj = j; jj < nk[i]; ++jj)
                        scores[i * B + (jj - j0)] = _mm512_reduce_add_ps(dot_lanes<F>(qb + static_cast<size_t>(i) * dk, rows[jj - j], dk)) * score_scale;
            }
        }
        for (int g = 0; g < n_kv; ++g) {
            float* scores = sc.scores.data() + static_cast<size_t>(g) * nq * B;
            float* acc = sc.acc.data() + static_cast<size_t>(g) * nq * dv;
            float* run_max = sc.run_max.data() + static_cast<size_t>(g) * nq;
            float* run_sum = sc.run_sum.data() + static_cast<size_t>(g) * nq;
            for (int i = 0; i < nq; ++i) {
                if (nk[i] <= j0) continue;
                const int n = static_cast<int>(std::min(j1, nk[i]) - j0);
                float* sp = scores + i * B;
                if (s.softcap > 0.0f)
                    for (int jj = 0; jj < n; ++jj) sp[jj] = std::tanh(sp[jj] / s.softcap) * s.softcap;
                if (s.alibi) alibi_bias(sp, n, first + j0, q_pos[i / group], s.alibi[g * group + i % group]);
                __m512 mx = _mm512_set1_ps(-INFINITY);
                for (int c = 0; c < n; c += 16) mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail_mask(n - c), sp + c));
                const float m_old = run_max[i];
                const float m_new = std::max(m_old, _mm512_reduce_max_ps(mx));
                if (m_new == -INFINITY) {  // nothing seen yet has any weight
                    for (int c = 0; c < n; c += 16) _mm512_mask_storeu_ps(sp + c, tail_mask(n - c), _mm512_setzero_ps());
                    continue;
                }
                const __m512 vm = _mm512_set1_ps(m_new);
                __m512 sum = _mm512_setzero_ps();
                for (int c = 0; c < n; c += 16) {
                    const __mmask16 k = tail_mask(n - c);
                    const __m512 e = _mm512_maskz_mov_ps(k, exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, sp + c), vm)));
                    _mm512_mask_storeu_ps(sp + c, k, e);
                    sum = _mm512_add_ps(sum, e);
                }
                const float rescale = m_old == -INFINITY ? 0.0f : _mm512_cvtss_f32(exp_ps(_mm512_set1_ps(m_old - m_new)));
                run_sum[i] = run_sum[i] * rescale + _mm512_reduce_add_ps(sum);
                run_max[i] = m_new;
                if (rescale != 1.0f) {
                    float* a = acc + static_cast<size_t>(i) * dv;
                    for (int d = 0; d < dv; d += 16) {
                        const __mmask16 k = tail_mask(dv - d);
                        _mm512_mask_storeu_ps(a + d, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, a + d), _mm512_set1_ps(rescale)));
                    }
                }
            }
            for (int d0 = 0; d0 < dv; d0 += 64) {
                for (int i = 0; i < nq; ++i) sc.outs[static_cast<size_t>(i)] = acc + static_cast<size_t>(i) * dv + d0;
                for (int i0 = 0; i0 < nq; i0 += 6) {
                    const int np = std::min(6, nq - i0);
                    k_value_tiles<F, true>[np](scores + i0 * B, B, j0, nk + i0, kv, first, j0, j1, static_cast<int64_t>(g) * dv + d0,
                                         std::min(64, dv - d0), sc.outs.data() + i0);
                }
            }
        }
    }
    for (int g = 0; g < n_kv; ++g)
        for (int i = 0; i < nq; ++i) {
            const size_t x = static_cast<size_t>(g) * nq + i;
            const float* a = sc.acc.data() + x * dv;
            float* o = out + (i / group) * out_stride + static_cast<int64_t>(g * group + i % group) * dv;
            const __m512 inv = _mm512_set1_ps(sc.run_sum[x] > 0.0f ? 1.0f / sc.run_sum[x] : 0.0f);
            for (int d = 0; d < dv; d += 16) {
                const __mmask16 k = tail_mask(dv - d);
                _mm512_mask_storeu_ps(o + d, k, _mm512_mul_ps(_mm512_maskz_loadu_ps(k, a + d), inv));
            }
        }
}

}  // namespace

// F16C rounds to nearest even like quant::fp32_to_fp16; only NaNs differ (the
// hardware keeps payload bits), so they are replaced by the canonical quiet NaN.
KILN_TARGET_AVX512 void f32_to_f16(const float* src, uint16_t* dst, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        const __m512 v = _mm512_maskz_loadu_ps(k, src + i);
        __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        if (nan) {
            const __m256i sign = _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(v), 16));
            const __m256i qnan = _mm256_or_si256(_mm256_and_si256(sign, _mm256_set1_epi16(static_cast<short>(0x8000))), _mm256_set1_epi16(0x7E00));
            h = _mm256_mask_mov_epi16(h, nan, qnan);
        }
        _mm256_mask_storeu_epi16(dst + i, k, h);
    }
}

// The scale as load_row16 converts it (q8_scale), so reading in place and
// converting give the same bits.
KILN_TARGET_AVX512 void q8_0_to_f32(const uint8_t* row, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b, row += 34, dst += 32) {
        const __m512 d = _mm512_set1_ps(q8_scale(row));
        for (int c = 0; c < 2; ++c) {
            const __m512i q = _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 + 16 * c)));
            _mm512_storeu_ps(dst + 16 * c, _mm512_mul_ps(_mm512_cvtepi32_ps(q), d));
        }
    }
}

// Through f16 and back: F16C both ways (exact on the way up); NaNs become the
// canonical quiet NaN with their sign, as fp32_to_f16 gives.
KILN_TARGET_AVX512 void round_to_f16(const float* src, float* dst, int64_t n) {
    const __m512i sign_bit = _mm512_set1_epi32(static_cast<int>(0x80000000u));
    const __m512i qnan = _mm512_set1_epi32(0x7FC00000);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        const __m512 v = _mm512_maskz_loadu_ps(k, src + i);
        __m512 r = _mm512_cvtph_ps(_mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
        if (nan) {
            const __m512i s = _mm512_or_si512(_mm512_and_si512(_mm512_castps_si512(v), sign_bit), qnan);
            r = _mm512_mask_mov_ps(r, nan, _mm512_castsi512_ps(s));
        }
        _mm512_mask_storeu_ps(dst + i, k, r);
    }
}

// Round to nearest even on the upper 16 bits; NaNs keep their upper bits and are
// made quiet (fp32_to_bf16).
KILN_TARGET_AVX512 void round_to_bf16(const float* src, float* dst, int64_t n) {
    const __m512i abs_mask = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000);
    const __m512i bias = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x00400000);
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        const __m512i x = _mm512_castps_si512(_mm512_maskz_loadu_ps(k, src + i));
        const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), one);
        __m512i r = _mm512_and_si512(_mm512_add_epi32(x, _mm512_add_epi32(bias, lsb)), high);
        const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(x, abs_mask), inf);
        r = _mm512_mask_mov_epi32(r, nan, _mm512_and_si512(_mm512_or_si512(x, quiet), high));
        _mm512_mask_storeu_ps(dst + i, k, _mm512_castsi512_ps(r));
    }
}

// ops::rope_apply with the same multiplies and adds per element (no fused
// multiply-add): bit-identical. Norm layout: 8 (x0, x1) pairs per vector against
// the cache's 8 (cos, sin) pairs; NeoX: 16 first-half and 16 second-half elements
// against 16 cos and 16 sin deinterleaved from the cache.
KILN_TARGET_AVX512 void rope_apply(const ops::RopeParams& p, const float* cache, float* x, int64_t n_heads, int64_t head_dim) {
    const int n_dims = p.n_dims;
    const __mmask16 even = 0x5555;
    const __m512i idx_cos = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    const __m512i idx_sin = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
    for (int64_t h = 0; h < n_heads; ++h) {
        float* v = x + h * head_dim;
        if (p.layout == ops::RopeLayout::Norm) {
            for (int i = 0; i < n_dims; i += 16) {
                const __mmask16 k = tail_mask(n_dims - i);
                const __m512 xv = _mm512_maskz_loadu_ps(k, v + i);
                const __m512 cs = _mm512_maskz_loadu_ps(k, cache + i);
                const __m512 t1 = _mm512_mul_ps(xv, _mm512_moveldup_ps(cs));                            // x0 c, x1 c
                const __m512 t2 = _mm512_mul_ps(_mm512_permute_ps(xv, 0xB1), _mm512_movehdup_ps(cs));  // x1 s, x0 s
                _mm512_mask_storeu_ps(v + i, k, _mm512_mask_sub_ps(_mm512_add_ps(t1, t2), even, t1, t2));
            }
        } else {
            const int half = n_dims / 2;
            for (int a = 0; a < half; a += 16) {
                const __mmask16 k = tail_mask(half - a);
                const __mmask16 k2 = tail_mask(2 * (half - a)), k2h = tail_mask(2 * (half - a) - 16);
                const __m512 lo = _mm512_maskz_loadu_ps(k2, cache + 2 * a), hi = _mm512_maskz_loadu_ps(k2h, cache + 2 * a + 16);
                const __m512 c = _mm512_permutex2var_ps(lo, idx_cos, hi), s = _mm512_permutex2var_ps(lo, idx_sin, hi);
                const __m512 x0 = _mm512_maskz_loadu_ps(k, v + a), x1 = _mm512_maskz_loadu_ps(k, v + a + half);
                _mm512_mask_storeu_ps(v + a, k, _mm512_sub_ps(_mm512_mul_ps(x0, c), _mm512_mul_ps(x1, s)));
                _mm512_mask_storeu_ps(v + a + half, k, _mm512_add_ps(_mm512_mul_ps(x0, s), _mm512_mul_ps(x1, c)));
            }
        }
    }
}

KILN_TARGET_AVX512 void silu_mul(float* gate, const float* up, int64_t n) {
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        const __m512 x = _mm512_maskz_loadu_ps(k, gate + i);
        const __m512 s = _mm512_div_ps(x, _mm512_add_ps(one, exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), x))));
        _mm512_mask_storeu_ps(gate + i, k, _mm512_mul_ps(s, _mm512_maskz_loadu_ps(k, up + i)));
    }
}

// Exactly ops::gelu_mul: the f16 table looked up with a gather.
KILN_TARGET_AVX512 void gelu_mul(float* gate, const float* up, int64_t n) {
    const uint16_t* table = ops::gelu_f16_table();
    const __m512 lo = _mm512_set1_ps(-10.0f), hi = _mm512_set1_ps(10.0f);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        const __m512 x = _mm512_maskz_loadu_ps(k, gate + i);
        const __m512i h = _mm512_cvtepu16_epi32(_mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        const __m512i g = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), k, h, table, 2);
        __m512 v = _mm512_cvtph_ps(_mm512_cvtepi32_epi16(g));
        v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(x, hi, _CMP_GE_OQ), x);
        v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(x, lo, _CMP_LE_OQ), _mm512_setzero_ps());
        _mm512_mask_storeu_ps(gate + i, k, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(k, up + i)));
    }
}

// ops::rms_norm with the sum of squares in 16 double lanes (the reference adds in
// one double, in order: the two agree to the last bit of the float mean almost
// always; tests/compute bounds the rest).
KILN_TARGET_AVX512 void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
    __m512d s0 = _mm512_setzero_pd(), s1 = _mm512_setzero_pd();
    for (int64_t i = 0; i < n; i += 16) {
        const __m512 v = _mm512_maskz_loadu_ps(tail_mask(n - i), x + i);
        const __m512 sq = _mm512_mul_ps(v, v);
        s0 = _mm512_add_pd(s0, _mm512_cvtps_pd(_mm512_castps512_ps256(sq)));
        s1 = _mm512_add_pd(s1, _mm512_cvtps_pd(_mm512_extractf32x8_ps(sq, 1)));
    }
    const double sum = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    const __m512 s = _mm512_set1_ps(1.0f / std::sqrt(mean + eps));
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), s);
        if (w) v = _mm512_mul_ps(v, _mm512_maskz_loadu_ps(k, w + i));
        _mm512_mask_storeu_ps(y + i, k, v);
    }
}

KILN_TARGET_AVX512 void softmax(float* x, int64_t n) { softmax_row(x, n, false); }

void attend_block(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                  const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride, AttentionScratch& sc) {
    if (kv.type == GgmlType::F16)
        attend_impl<Fmt::F16>(s, q, q_stride, first, pos, q_pos, n_rows, kv, out, out_stride, sc);
    else if (kv.type == GgmlType::Q8_0)
        attend_impl<Fmt::Q8>(s, q, q_stride, first, pos, q_pos, n_rows, kv, out, out_stride, sc);
    else
        attend_impl<Fmt::F32>(s, q, q_stride, first, pos, q_pos, n_rows, kv, out, out_stride, sc);
}

void attend_row(const AttentionShape& s, const float* q, int64_t first, int64_t pos, const KvRows& kv, float* out,
                AttentionScratch& sc) {
    attend_block(s, q, 0, first, &pos, &s.q_pos, 1, kv, out, 0, sc);
}

void attend_stream(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                   const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride, AttentionScratch& sc) {
    if (kv.type == GgmlType::F16)
        stream_impl<Fmt::F16>(s, q, q_stride, first, pos, q_pos, n_rows, kv, out, out_stride, sc);
    else if (kv.type == GgmlType::Q8_0)
        stream_impl<Fmt::Q8>(s, q, q_stride, first, pos, q_pos, n_rows, kv, out, out_stride, sc);
    else
        stream_impl<Fmt::F32>(s, q, q_stride, first, pos, q_pos, n_rows, kv, out, out_stride, sc);
}

}  // namespace kiln::avx512

#endif  // KILN_HAVE_X86_KERNELS
