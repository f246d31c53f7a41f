// AVX2 element-wise and row kernels (as avx512_ops.cpp, 8 lanes). Partial last
// vectors go through masked loads and stores, so each element's result depends on
// its value only.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compute/alibi.h"
#include "compute/attention.h"
#include "compute/kernels/avx2_common.h"
#include "compute/kernels/kv_rows.h"
#include "compute/kernels/x86.h"
#include "compute/ops.h"
#include "kiln/quant.h"

namespace kiln::avx2 {

namespace {

// All-ones in lanes [0, left) of 8.
KILN_TARGET_AVX2 inline __m256i tail_mask(int64_t left) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const int l = static_cast<int>(std::clamp<int64_t>(left, 0, 8));
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(l), idx);
}

KILN_TARGET_AVX2 inline __m256 load_m(const float* p, __m256i m) { return _mm256_maskload_ps(p, m); }
KILN_TARGET_AVX2 inline void store_m(float* p, __m256i m, __m256 v) { _mm256_maskstore_ps(p, m, v); }
// The first min(left, 8) floats at p, the rest zero (load_ps_masked: masked
// only for the last, partial vector).
KILN_TARGET_AVX2 inline __m256 load_n(const float* p, int64_t left) { return load_ps_masked(p, tail_mask(left), left >= 8); }
KILN_TARGET_AVX2 inline void store_n(float* p, int64_t left, __m256 v) { store_ps_masked(p, tail_mask(left), left >= 8, v); }

// 2^n for integral n in [-75, 64] as a float.
KILN_TARGET_AVX2 inline __m256 pow2i(__m256i n) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n, _mm256_set1_epi32(127)), 23)); }

// e^x as avx512_ops.cpp's exp_ps; 2^n applied in two exact-then-rounded steps so
// that results in the subnormal range round once, as vscalefps does.
KILN_TARGET_AVX2 inline __m256 exp_ps(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-104.0f)), _mm256_set1_ps(89.0f));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    return _mm256_mul_ps(_mm256_mul_ps(y, pow2i(n1)), pow2i(n2));
}

KILN_TARGET_AVX2 inline __m256 round_f16_ps(__m256 v) {
    return _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// 8 vectors -> one vector of their 8 horizontal sums.
KILN_TARGET_AVX2 inline __m256 reduce8(const __m256* v) {
    const __m256 s0123 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const __m256 s4567 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
    return _mm256_add_ps(_mm256_permute2f128_ps(s0123, s4567, 0x20), _mm256_permute2f128_ps(s0123, s4567, 0x31));
}

KILN_TARGET_AVX2 inline float hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

KILN_TARGET_AVX2 inline double hsum_pd(__m256d v) {
    __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    s = _mm_add_sd(s, _mm_unpackhi_pd(s, s));
    return _mm_cvtsd_f64(s);
}

// The low and high halves of e added to s0 and s1 in double.
KILN_TARGET_AVX2 inline void add_pd_halves(__m256d& s0, __m256d& s1, __m256 e) {
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
}

// sink: a logit in the normalisation without a value (-inf: none), as ops::softmax_with_sink.
// Whole vectors with plain loads and stores, then the partial one (a masked load
// or store takes longer on some CPUs); the same values as masking every vector.
KILN_TARGET_AVX2 void softmax_row(float* x, int64_t n, bool f16, float sink = -INFINITY) {
    const int64_t whole = n & ~int64_t{7};
    const __m256i tail = tail_mask(n - whole);
    __m256 mx = _mm256_set1_ps(-INFINITY);
    for (int64_t i = 0; i < whole; i += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(x + i));
    if (whole < n) mx = _mm256_max_ps(mx, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), load_m(x + whole, tail), _mm256_castsi256_ps(tail)));
    const float top = std::max(hmax_ps(mx), sink);
    if (top == -INFINITY) {
        for (int64_t i = 0; i < n; i += 8) store_n(x + i, n - i, _mm256_setzero_ps());
        return;
    }
    const __m256 vm = _mm256_set1_ps(top);
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (int64_t i = 0; i < whole; i += 8) {
        const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm));
        _mm256_storeu_ps(x + i, e);
        add_pd_halves(s0, s1, e);
    }
    if (whole < n) {
        const __m256 e = _mm256_and_ps(exp_ps(_mm256_sub_ps(load_m(x + whole, tail), vm)), _mm256_castsi256_ps(tail));
        store_m(x + whole, tail, e);
        add_pd_halves(s0, s1, e);
    }
    const double sum = hsum_pd(_mm256_add_pd(s0, s1)) + (sink == -INFINITY ? 0.0 : static_cast<double>(std::exp(sink - top)));
    const __m256 inv = _mm256_set1_ps(static_cast<float>(1.0 / sum));
    for (int64_t i = 0; i < whole; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), inv);
        if (f16) v = round_f16_ps(v);
        _mm256_storeu_ps(x + i, v);
    }
    if (whole < n) {
        __m256 v = _mm256_mul_ps(load_m(x + whole, tail), inv);
        if (f16) v = round_f16_ps(v);
        store_m(x + whole, tail, v);
    }
}

using kv_rows::Fmt;
using kv_rows::q8_scale;
using kv_rows::row_bytes_of;

// Elements 8c..8c+7 of a Q8 block as f32: the quants times the block's scale d.
KILN_TARGET_AVX2 inline __m256 q8_part(const uint8_t* block, int c, __m256 d) {
    const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(block + 2 + 8 * c)));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(q), d);
}

// 8 elements of a cached row from element i as f32. Q8 rows are read whole
// (head sizes that are multiples of 32): a quarter of a 34-byte block, its
// quants times its f16 scale as q8_0_to_f32 computes them.
template <Fmt F>
KILN_TARGET_AVX2 inline __m256 load_row8(const uint8_t* row, int i, __m256i m, int left) {
    if constexpr (F == Fmt::F16) {
        if (left >= 8) return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * i)));
        alignas(16) uint16_t tmp[8] = {};
        std::memcpy(tmp, row + 2 * i, static_cast<size_t>(std::max(0, left)) * 2);
        return _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(tmp)));
    } else if constexpr (F == Fmt::F32) {
        if (left >= 8) return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
        return _mm256_maskload_ps(reinterpret_cast<const float*>(row) + i, m);
    } else {
        (void)m, (void)left;
        const uint8_t* b = row + static_cast<uint64_t>(i / 32) * 34;
        return q8_part(b, i % 32 / 8, _mm256_set1_ps(q8_scale(b)));
    }
}

template <Fmt F>
KILN_TARGET_AVX2 inline __m256 dot_lanes(const float* q, const uint8_t* k, int n) {
    __m256 acc = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) {
        const __m256i m = tail_mask(n - i);
        acc = _mm256_fmadd_ps(load_m(q + i, m), load_row8<F>(k, i, m, n - i), acc);
    }
    return acc;
}

// Where value_tile's walk over cached value rows stands (see avx512_ops.cpp).
struct ValueWalk {
    static constexpr int64_t k_prefetch = 16;
    const KvRows& kv;
    uint64_t width_bytes, col_bytes;
    int64_t slot, ahead;
    int64_t p0;  // key j's weight is p[h * p_stride + j - p0]
    int col_off;  // the tile's first element within the block col_bytes starts (Q8: 0 or 16)
};

// Key j's value row into the NH queries' accumulators (`every`: all of them take
// key j, else those with nk[h] > j). `full`: all 32 elements, loaded without the
// partial-vector path (whose copy through memory would make GCC keep the
// accumulators in memory). One value vector at a time against every query's
// weight, so that the NH x 4 accumulators, NH weights and one vector fit the 16
// ymm registers.
template <int NH, int C, Fmt F, bool full, bool every, bool fused>
KILN_TARGET_AVX2 __attribute__((always_inline)) inline void value_key(__m256 (&acc)[NH * C], ValueWalk& w, const __m256i* masks,
                                                                     int width, const float* p, int64_t p_stride,
                                                                     const int64_t* nk, int64_t j) {
    const KvRows& kv = w.kv;
    const uint8_t* vr = kv.v + static_cast<uint64_t>(w.slot) * kv.v_row_bytes + w.col_bytes;
    if (++w.slot == kv.capacity) w.slot = 0;
    const char* pf = reinterpret_cast<const char*>(kv.v + static_cast<uint64_t>(w.ahead) * kv.v_row_bytes + w.col_bytes);
    if (++w.ahead == kv.capacity) w.ahead = 0;
    for (uint64_t b = 0; b < w.width_bytes; b += 64) _mm_prefetch(pf + b, _MM_HINT_T0);
    __m256 v[C], d8;
    if constexpr (F == Fmt::Q8) d8 = _mm256_set1_ps(q8_scale(vr));
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) {
        if constexpr (full && F == Fmt::F16)
            v[c] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(vr + 16 * c)));
        else if constexpr (full && F == Fmt::F32)
            v[c] = _mm256_loadu_ps(reinterpret_cast<const float*>(vr) + 8 * c);
        else if constexpr (F == Fmt::Q8) {
            // The tile's 16 elements lie in the one block vr starts (at 0 or 16): its scale once.
            static_assert(C <= 2);
            v[c] = q8_part(vr, w.col_off / 8 + c, d8);
        } else
            v[c] = load_row8<F>(vr, w.col_off + 8 * c, masks[c], width - 8 * c);
    }
#pragma GCC unroll 6
    for (int h = 0; h < NH; ++h) {
        if (!every && j >= nk[h]) continue;
        const __m256 wt = _mm256_set1_ps(p[h * p_stride + j - w.p0]);
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c)
            acc[C * h + c] = fused ? _mm256_fmadd_ps(wt, v[c], acc[C * h + c]) : _mm256_add_ps(acc[C * h + c], _mm256_mul_ps(wt, v[c]));
    }
}

// out[h][d] += sum over keys j in [j0, min(j1, nk[h])) of p[h][j] * v[j][d] for NH
// queries and up to 32 elements, keys in order (see avx512_ops.cpp: j0 > 0 goes on
// from what out holds, with the same bits as one walk).
template <int NH, int C, Fmt F, bool full, bool fused>
KILN_TARGET_AVX2 void value_tile_impl(const float* p, int64_t p_stride, int64_t p0, const int64_t* nk, const KvRows& kv,
                                      int64_t first, int64_t j0, int64_t j1, int64_t col, int width, float* const* out) {
    __m256i masks[C];
    for (int c = 0; c < C; ++c) masks[c] = tail_mask(width - 8 * c);
    int64_t all = j1, any = j0;  // keys every query takes, keys some query takes
#pragma GCC unroll 6
    for (int h = 0; h < NH; ++h) all = std::min(all, nk[h]), any = std::max(any, std::min(j1, nk[h]));
    __m256 acc[NH * C];
#pragma GCC unroll 6
    for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) acc[C * h + c] = j0 == 0 ? _mm256_setzero_ps() : load_n(out[h] + 8 * c, width - 8 * c);
    // A Q8 tile may start halfway into a 34-byte block: its rows start at the block.
    const int col_off = F == Fmt::Q8 ? static_cast<int>(col % 32) : 0;
    const uint64_t width_bytes = F == Fmt::Q8 ? row_bytes_of<F>(static_cast<uint64_t>((col_off + width + 31) / 32 * 32))
                                              : row_bytes_of<F>(static_cast<uint64_t>(width));
    ValueWalk walk{kv, width_bytes, row_bytes_of<F>(static_cast<uint64_t>(col - col_off)), kv.slot(first + j0), 0, p0, col_off};
    walk.ahead = (walk.slot + ValueWalk::k_prefetch) % kv.capacity;
    int64_t j = j0;
    for (; j < all; ++j) value_key<NH, C, F, full, true, fused>(acc, walk, masks, width, p, p_stride, nk, j);
    for (; j < any; ++j) value_key<NH, C, F, full, false, fused>(acc, walk, masks, width, p, p_stride, nk, j);
#pragma GCC unroll 6
    for (int h = 0; h < NH; ++h)
#pragma GCC unroll 4
        for (int c = 0; c < C; ++c) store_n(out[h] + 8 * c, width - 8 * c, acc[C * h + c]);
}
// `fused`: see avx512_ops.cpp (F16, and the streaming form).
template <int NH, Fmt F, int C, bool fused>
KILN_TARGET_AVX2 void value_tile(const float* p, int64_t p_stride, int64_t p0, const int64_t* nk, const KvRows& kv,
                                 int64_t first, int64_t j0, int64_t j1, int64_t col, int width, float* const* out) {
    if (width == 8 * C)
        value_tile_impl<NH, C, F, true, fused>(p, p_stride, p0, nk, kv, first, j0, j1, col, width, out);
    else
        value_tile_impl<NH, C, F, false, fused>(p, p_stride, p0, nk, kv, first, j0, j1, col, width, out);
}
using ValueTileFn = void (*)(const float*, int64_t, int64_t, const int64_t*, const KvRows&, int64_t, int64_t, int64_t, int64_t,
                             int, float* const*);
template <Fmt F, bool fused>
constexpr ValueTileFn k_value_tiles[7] = {nullptr, value_tile<1, F, 2, fused>, value_tile<2, F, 2, fused>, value_tile<3, F, 2, fused>,
                                                 value_tile<4, F, 2, fused>, value_tile<5, F, 2, fused>, value_tile<6, F, 2, fused>};
// The weighted sums of values of nq queries, in tiles of up to 6 queries x 16
// elements (12 accumulators): for a decode step's group of 4 one tile takes a
// head, so each value element is converted once (tiles of 3 x 32 converted it
// twice for a group of 4). Every element's sum is the same whatever the tile.
template <Fmt F, bool stream>
KILN_TARGET_AVX2 void value_tiles(const float* p, int64_t p_stride, int64_t p0, const int64_t* nk, int nq, const KvRows& kv,
                                  int64_t first, int64_t j0, int64_t j1, int64_t col, int dv, float* const* out_rows, float** outs) {
    constexpr bool fused = stream || F == Fmt::F16;
    for (int d0 = 0; d0 < dv; d0 += 16) {
        for (int i = 0; i < nq; ++i) outs[i] = out_rows[i] + d0;
        for (int i0 = 0; i0 < nq; i0 += 6) {
            const int np = std::min(6, nq - i0);
            k_value_tiles<F, fused>[np](p + i0 * p_stride, p_stride, p0, nk + i0, kv, first, j0, j1, col + d0, std::min(16, dv - d0),
                                        outs + i0);
        }
    }
}

// vhaddps's sums from two shuffles and an add: the same sums (each pair added
// in the same order), in fewer micro-ops on AMD's cores than vhaddps takes.
KILN_TARGET_AVX2 inline __m256 hadd_ps(__m256 a, __m256 b) {
    return _mm256_add_ps(_mm256_shuffle_ps(a, b, 0x88), _mm256_shuffle_ps(a, b, 0xDD));
}

// 8 elements of two keys (k0, k1) against NH heads' queries (q: the heads'
// elements at the same index, dk apart) into their sums. Each query vector is
// loaded once for both keys (pinned: GCC would fold it into both FMAs as a
// memory operand, two loads).
template <int NH>
KILN_TARGET_AVX2 __attribute__((always_inline)) inline void two_keys8(const float* q, int dk, __m256 k0, __m256 k1, __m256 (&a0)[NH],
                                                                      __m256 (&a1)[NH]) {
#pragma GCC unroll 8
    for (int h = 0; h < NH; ++h) {
        const __m256 qv = pinned(_mm256_loadu_ps(q + h * dk));
        a0[h] = _mm256_fmadd_ps(qv, k0, a0[h]);
        a1[h] = _mm256_fmadd_ps(qv, k1, a1[h]);
    }
}

// Scores of 8 keys for NH heads of a group: each key row is loaded and converted
// once for all NH heads (q from L1). Each (head, key) product runs dot_lanes'
// operations in its order. Keys go two at a time, and each pair's partial sums
// are folded at once (reduce8's first horizontal add), each two pairs into one
// vector, so no head holds 8 partial sums (which spilled); the folds are
// reduce8's, in its order, so the scores are the one-head loop's to the bit.
template <Fmt F, int NH>
KILN_TARGET_AVX2 void score_block(const float* q, int dk, const uint8_t* const* rows, __m256 scale, float* scores, int64_t stride) {
    __m256 quad[NH][2];  // per head: the folded sums of keys 0-3 and 4-7
    for (int g = 0; g < 2; ++g) {
        __m256 pair[NH];
        for (int jp = 0; jp < 2; ++jp) {
            const uint8_t* r0 = rows[4 * g + 2 * jp];
            const uint8_t* r1 = rows[4 * g + 2 * jp + 1];
            __m256 a0[NH], a1[NH];
#pragma GCC unroll 8
            for (int h = 0; h < NH; ++h) a0[h] = a1[h] = _mm256_setzero_ps();
            // Whole vectors with plain loads (a masked load takes longer on some
            // CPUs, AMD's among them), then the partial one; the same products.
            const int whole = dk & ~7;
            if constexpr (F == Fmt::Q8) {
                // A block's scale once for its 4 vectors (load_row8 converts it for each).
                for (int i = 0; i < dk; i += 32) {
                    const uint8_t* b0 = r0 + static_cast<uint64_t>(i / 32) * 34;
                    const uint8_t* b1 = r1 + static_cast<uint64_t>(i / 32) * 34;
                    const __m256 d0 = _mm256_set1_ps(q8_scale(b0)), d1 = _mm256_set1_ps(q8_scale(b1));
#pragma GCC unroll 4
                    for (int c = 0; c < 4; ++c) two_keys8<NH>(q + i + 8 * c, dk, q8_part(b0, c, d0), q8_part(b1, c, d1), a0, a1);
                }
            } else {
                for (int i = 0; i < whole; i += 8) {
                    const __m256i m = _mm256_set1_epi32(-1);
                    two_keys8<NH>(q + i, dk, load_row8<F>(r0, i, m, 8), load_row8<F>(r1, i, m, 8), a0, a1);
                }
            }
            if (whole < dk) {
                const __m256i m = tail_mask(dk - whole);
                const __m256 k0 = load_row8<F>(r0, whole, m, dk - whole);
                const __m256 k1 = load_row8<F>(r1, whole, m, dk - whole);
#pragma GCC unroll 8
                for (int h = 0; h < NH; ++h) {
                    const __m256 qv = load_m(q + h * dk + whole, m);
                    a0[h] = _mm256_fmadd_ps(qv, k0, a0[h]);
                    a1[h] = _mm256_fmadd_ps(qv, k1, a1[h]);
                }
            }
#pragma GCC unroll 8
            for (int h = 0; h < NH; ++h) {
                const __m256 hp = hadd_ps(a0[h], a1[h]);
                if (jp == 0)
                    pair[h] = hp;
                else
                    quad[h][g] = hadd_ps(pair[h], hp);
            }
        }
    }
#pragma GCC unroll 8
    for (int h = 0; h < NH; ++h) {
        const __m256 sum = _mm256_add_ps(_mm256_permute2f128_ps(quad[h][0], quad[h][1], 0x20), _mm256_permute2f128_ps(quad[h][0], quad[h][1], 0x31));
        _mm256_storeu_ps(scores + h * stride, _mm256_mul_ps(sum, scale));
    }
}

using ScoreFn = void (*)(const float*, int, const uint8_t* const*, __m256, float*, int64_t);
template <Fmt F>
constexpr ScoreFn k_score_blocks[9] = {nullptr,            score_block<F, 1>, score_block<F, 2>,
                                       score_block<F, 3>,  score_block<F, 4>, score_block<F, 5>,
                                       score_block<F, 6>,  score_block<F, 7>, score_block<F, 8>};

// q of KV head g's nq queries (row-major (row, head)) into qb, prescaled and
// rounded as attend() does.
KILN_TARGET_AVX2 void load_queries(const AttentionShape& s, const float* q, int64_t q_stride, int g, int nq, bool round, float* qb) {
    const int group = s.n_head / s.n_head_kv, dk = s.head_dim_k;
    for (int i = 0; i < nq; ++i) {
        const float* qh = q + (i / group) * q_stride + static_cast<int64_t>(g * group + i % group) * dk;
        float* qi = qb + static_cast<size_t>(i) * dk;
        for (int e = 0; e < dk; e += 8) {
            __m256 v = load_n(qh + e, dk - e);
            if (s.prescale_q) v = _mm256_mul_ps(v, _mm256_set1_ps(s.scale));
            if (round) v = round_f16_ps(v);
            store_n(qi + e, dk - e, v);
        }
    }
}

// The queries of n_rows rows of one sequence, for every KV head of the call,
// each with the operations it has alone (n_rows 1, one KV head), sharing each key
// and value row's loads, the heads walking the keys together (see avx512_ops.cpp).
template <Fmt F>
KILN_TARGET_AVX2 void attend_impl(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                                  const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                                  AttentionScratch& sc) {
    const int group = s.n_head / s.n_head_kv, n_kv = s.n_head_kv;
    const int dk = s.head_dim_k, dv = s.head_dim_v;
    const int nq = n_rows * group;  // queries per KV head: row-major (row, head)
    const size_t all = static_cast<size_t>(nq) * static_cast<size_t>(n_kv);
    const int64_t n_max = pos[n_rows - 1] - first + 1;
    const int64_t stride = (n_max + 7) / 8 * 8;
    sc.scores.resize(static_cast<size_t>(stride) * all);
    sc.qbuf.resize(all * static_cast<size_t>(dk));
    sc.nk.resize(static_cast<size_t>(nq));
    sc.outs.resize(2 * static_cast<size_t>(nq));
    for (int i = 0; i < nq; ++i) sc.nk[static_cast<size_t>(i)] = pos[i / group] - first + 1;
    const int64_t* nk = sc.nk.data();
    const bool round = kv.f16_rounding;
    const float score_scale = s.prescale_q ? 1.0f : s.scale;
    const __m256 vscale = _mm256_set1_ps(score_scale);
    for (int g = 0; g < n_kv; ++g) load_queries(s, q, q_stride, g, nq, round, sc.qbuf.data() + static_cast<size_t>(g) * nq * dk);
    // Scores, 8 keys at a time, each key row converted once for up to 8 queries.
    const uint64_t k_bytes = row_bytes_of<F>(static_cast<uint64_t>(dk));
    int64_t slot = kv.slot(first);
    int64_t ahead = (slot + 16) % kv.capacity;  // rows requested early
    for (int64_t j = 0; j < n_max; j += 8) {
        const int n_in = static_cast<int>(std::min<int64_t>(8, n_max - j));
        int64_t slots[8], aheads[8];
        for (int jj = 0; jj < n_in; ++jj) {
            slots[jj] = slot;
            aheads[jj] = ahead;
            if (++slot == kv.capacity) slot = 0;
            if (++ahead == kv.capacity) ahead = 0;
        }
        int full = 0;  // the first query whose keys cover the block (nk ascends)
        while (full < nq && nk[full] < j + 8) ++full;
        for (int g = 0; g < n_kv; ++g) {
            const uint64_t k_col = row_bytes_of<F>(static_cast<uint64_t>(g) * dk);
            const float* qb = sc.qbuf.data() + static_cast<size_t>(g) * nq * dk;
            float* scores = sc.scores.data() + static_cast<size_t>(g) * nq * stride;
            const uint8_t* rows[8];
            for (int jj = 0; jj < n_in; ++jj) {
                rows[jj] = kv.k + static_cast<uint64_t>(slots[jj]) * kv.k_row_bytes + k_col;
                const char* pf = reinterpret_cast<const char*>(kv.k + static_cast<uint64_t>(aheads[jj]) * kv.k_row_bytes + k_col);
                for (uint64_t b = 0; b < k_bytes; b += 64) _mm_prefetch(pf + b, _MM_HINT_T0);
            }
            for (int h0 = full; h0 < nq; h0 += 6)  // queries [full, nq) take the whole block
                k_score_blocks<F>[std::min(6, nq - h0)](qb + static_cast<size_t>(h0) * dk, dk, rows, vscale, scores + h0 * stride + j, stride);
            for (int i = 0; i < full; ++i)  // queries whose last keys are in this block: one key at a time
                for (int64_t jj = j; jj < nk[i]; ++jj)
                    scores[i * stride + jj] = hsum_ps(dot_lanes<F>(qb + static_cast<size_t>(i) * dk, rows[jj - j], dk)) * score_scale;
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
            float** rows = sc.outs.data();  // each query's output row, then the tiles' pointers
            for (int i = 0; i < nq; ++i) rows[i] = out + (i / group) * out_stride + static_cast<int64_t>(g * group + i % group) * dv;
            value_tiles<F, false>(scores, stride, 0, nk, nq, kv, first, j0, std::min(n_max, j0 + chunk), static_cast<int64_t>(g) * dv, dv,
                           rows, rows + nq);
        }
}

// attend_impl's streaming form (attend_rows_stream; see avx512_ops.cpp): blocks
// of k_stream_block keys, every KV head of the call within a block before the
// next, scores 8 keys at a time, each query's online-softmax step, then the
// block's values into the accumulators.
template <Fmt F>
KILN_TARGET_AVX2 void stream_impl(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                                  const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                                  AttentionScratch& sc) {
    constexpr int B = k_stream_block;
    const int group = s.n_head / s.n_head_kv, n_kv = s.n_head_kv;
    const int dk = s.head_dim_k, dv = s.head_dim_v;
    const int nq = n_rows * group;
    const size_t all = static_cast<size_t>(nq) * static_cast<size_t>(n_kv);
    const int64_t n_max = pos[n_rows - 1] - first + 1;
    sc.scores.resize(static_cast<size_t>(B) * all);
    sc.qbuf.resize(all * static_cast<size_t>(dk));
    sc.nk.resize(static_cast<size_t>(nq));
    sc.outs.resize(2 * static_cast<size_t>(nq));
    sc.run_max.resize(all);
    sc.run_sum.resize(all);
    sc.acc.assign(all * static_cast<size_t>(dv), 0.0f);
    for (int i = 0; i < nq; ++i) sc.nk[static_cast<size_t>(i)] = pos[i / group] - first + 1;
    const int64_t* nk = sc.nk.data();
    const bool round = kv.f16_rounding;
    const float score_scale = s.prescale_q ? 1.0f : s.scale;
    const __m256 vscale = _mm256_set1_ps(score_scale);
    const uint64_t k_bytes = row_bytes_of<F>(static_cast<uint64_t>(dk)), v_bytes = row_bytes_of<F>(static_cast<uint64_t>(dv));
    for (int g = 0; g < n_kv; ++g) {
        load_queries(s, q, q_stride, g, nq, round, sc.qbuf.data() + static_cast<size_t>(g) * nq * dk);
        for (int i = 0; i < nq; ++i) {  // a sink is a first key whose value is zero
            const size_t x = static_cast<size_t>(g) * nq + i;
            sc.run_max[x] = s.sinks ? s.sinks[g * group + i % group] : -INFINITY;
            sc.run_sum[x] = s.sinks ? 1.0f : 0.0f;
        }
    }
    for (int64_t j0 = 0; j0 < n_max; j0 += B) {
        const int64_t j1 = std::min<int64_t>(n_max, j0 + B);
        const int64_t slot0 = kv.slot(first + j0);
        for (int g = 0; g < n_kv; ++g) {
            const float* qb = sc.qbuf.data() + static_cast<size_t>(g) * nq * dk;
            float* scores = sc.scores.data() + static_cast<size_t>(g) * nq * B;
            float* acc = sc.acc.data() + static_cast<size_t>(g) * nq * dv;
            float* run_max = sc.run_max.data() + static_cast<size_t>(g) * nq;
            float* run_sum = sc.run_sum.data() + static_cast<size_t>(g) * nq;
            const uint64_t k_col = row_bytes_of<F>(static_cast<uint64_t>(g) * dk), v_col = row_bytes_of<F>(static_cast<uint64_t>(g) * dv);
            int64_t slot = slot0, ahead = (slot0 + B) % kv.capacity;
            for (int64_t j = j0; j < j1; j += 8) {
                const uint8_t* rows[8];
                const int n_in = static_cast<int>(std::min<int64_t>(8, j1 - j));
                for (int jj = 0; jj < n_in; ++jj) {
                    rows[jj] = kv.k + static_cast<uint64_t>(slot) * kv.k_row_bytes + k_col;
                    if (++slot == kv.capacity) slot = 0;
                    const char* pk = reinterpret_cast<const char*>(kv.k + static_cast<uint64_t>(ahead) * kv.k_row_bytes + k_col);
                    const char* pv = reinterpret_cast<const char*>(kv.v + static_cast<uint64_t>(ahead) * kv.v_row_bytes + v_col);
                    if (++ahead == kv.capacity) ahead = 0;
                    for (uint64_t b = 0; b < k_bytes; b += 64) _mm_prefetch(pk + b, _MM_HINT_T0);
                    for (uint64_t b = 0; b < v_bytes; b += 64) _mm_prefetch(pv + b, _MM_HINT_T0);
                }
                int full = 0;  // queries [full, nq) take all 8 keys (nk ascends)
                while (full < nq && nk[full] < j + 8) ++full;
                for (int h0 = full; h0 < nq; h0 += 6)
                    k_score_blocks<F>[std::min(6, nq - h0)](qb + static_cast<size_t>(h0) * dk, dk, rows, vscale, scores + h0 * B + (j - j0), B);
                for (int i = 0; i < full; ++i)  // queries whose last keys are in these 8
                    for (int64_t jj = j; jj < nk[i]; ++jj)
                        scores[i * B + (jj - j0)] = hsum_ps(dot_lanes<F>(qb + static_cast<size_t>(i) * dk, rows[jj - j], dk)) * score_scale;
            }
            for (int i = 0; i < nq; ++i) {
                if (nk[i] <= j0) continue;
                const int n = static_cast<int>(std::min(j1, nk[i]) - j0);
                float* sp = scores + i * B;
                if (s.softcap > 0.0f)
                    for (int jj = 0; jj < n; ++jj) sp[jj] = std::tanh(sp[jj] / s.softcap) * s.softcap;
                if (s.alibi) alibi_bias(sp, n, first + j0, q_pos[i / group], s.alibi[g * group + i % group]);
                __m256 mx = _mm256_set1_ps(-INFINITY);
                const int whole = n & ~7;  // plain loads, then the partial vector
                for (int c = 0; c < whole; c += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(sp + c));
                if (whole < n)
                    mx = _mm256_max_ps(mx, _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), load_m(sp + whole, tail_mask(n - whole)),
                                                            _mm256_castsi256_ps(tail_mask(n - whole))));
                __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(mx), _mm256_extractf128_ps(mx, 1));
                m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
                m4 = _mm_max_ss(m4, _mm_shuffle_ps(m4, m4, 1));
                const float m_old = run_max[i];
                const float m_new = std::max(m_old, _mm_cvtss_f32(m4));
                if (m_new == -INFINITY) {  // nothing seen yet has any weight
                    for (int jj = 0; jj < n; ++jj) sp[jj] = 0.0f;
                    continue;
                }
                const __m256 vm = _mm256_set1_ps(m_new);
                __m256 sum = _mm256_setzero_ps();
                for (int c = 0; c < whole; c += 8) {
                    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_loadu_ps(sp + c), vm));
                    _mm256_storeu_ps(sp + c, e);
                    sum = _mm256_add_ps(sum, e);
                }
                if (whole < n) {
                    const __m256i k = tail_mask(n - whole);
                    const __m256 e = _mm256_and_ps(exp_ps(_mm256_sub_ps(load_m(sp + whole, k), vm)), _mm256_castsi256_ps(k));
                    store_m(sp + whole, k, e);
                    sum = _mm256_add_ps(sum, e);
                }
                const float rescale = m_old == -INFINITY ? 0.0f : _mm256_cvtss_f32(exp_ps(_mm256_set1_ps(m_old - m_new)));
                run_sum[i] = run_sum[i] * rescale + hsum_ps(sum);
                run_max[i] = m_new;
                if (rescale != 1.0f) {
                    float* a = acc + static_cast<size_t>(i) * dv;
                    for (int d = 0; d < dv; d += 8) store_n(a + d, dv - d, _mm256_mul_ps(load_n(a + d, dv - d), _mm256_set1_ps(rescale)));
                }
            }
            float** rows = sc.outs.data();  // each query's accumulator row, then the tiles' pointers
            for (int i = 0; i < nq; ++i) rows[i] = acc + static_cast<size_t>(i) * dv;
            value_tiles<F, true>(scores, B, j0, nk, nq, kv, first, j0, j1, static_cast<int64_t>(g) * dv, dv, rows, rows + nq);
        }
    }
    for (int g = 0; g < n_kv; ++g)
        for (int i = 0; i < nq; ++i) {
            const size_t x = static_cast<size_t>(g) * nq + i;
            const float* a = sc.acc.data() + x * dv;
            float* o = out + (i / group) * out_stride + static_cast<int64_t>(g * group + i % group) * dv;
            const __m256 inv = _mm256_set1_ps(sc.run_sum[x] > 0.0f ? 1.0f / sc.run_sum[x] : 0.0f);
            for (int d = 0; d < dv; d += 8) store_n(o + d, dv - d, _mm256_mul_ps(load_n(a + d, dv - d), inv));
        }
}

}  // namespace

// Per 34-byte block: the scale as the reference converts it (q8_scale: NaN
// payloads as the reference gives them), then each level as f32 times it, one
// rounding each, as the reference.
KILN_TARGET_AVX2 void q8_0_to_f32(const uint8_t* row, float* dst, int64_t n) {
    for (int64_t b = 0; b < n / 32; ++b, row += 34, dst += 32) {
        const __m256 d = _mm256_set1_ps(q8_scale(row));
        for (int c = 0; c < 4; ++c) {
            const __m256i q = _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + 2 + 8 * c)));
            _mm256_storeu_ps(dst + 8 * c, _mm256_mul_ps(_mm256_cvtepi32_ps(q), d));
        }
    }
}

// As avx512_ops.cpp; a block with a NaN goes through the scalar conversion.
KILN_TARGET_AVX2 void round_to_f16(const float* src, float* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(src + i);
        if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q))) {
            for (int k = 0; k < 8; ++k) dst[i + k] = quant::fp16_to_fp32(quant::fp32_to_fp16(src[i + k]));
            continue;
        }
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)));
    }
    for (; i < n; ++i) dst[i] = quant::fp16_to_fp32(quant::fp32_to_fp16(src[i]));
}

KILN_TARGET_AVX2 void round_to_bf16(const float* src, float* dst, int64_t n) {
    const __m256i abs_mask = _mm256_set1_epi32(0x7FFFFFFF), inf = _mm256_set1_epi32(0x7F800000);
    const __m256i bias = _mm256_set1_epi32(0x7FFF), one = _mm256_set1_epi32(1), quiet = _mm256_set1_epi32(0x00400000);
    const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(src + i));
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), one);
        const __m256i r = _mm256_and_si256(_mm256_add_epi32(x, _mm256_add_epi32(bias, lsb)), high);
        // |x| > inf as signed integers (both non-negative): a NaN.
        const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
        const __m256i q = _mm256_and_si256(_mm256_or_si256(x, quiet), high);
        _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_blendv_epi8(r, q, nan)));
    }
    for (; i < n; ++i) dst[i] = quant::bf16_to_fp32(quant::fp32_to_bf16(src[i]));
}

// As avx512_ops.cpp: F16C conversion, NaNs made canonical.
KILN_TARGET_AVX2 void f32_to_f16(const float* src, uint16_t* dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(src + i);
        __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
        if (_mm256_movemask_ps(nan)) {
            alignas(16) uint16_t tmp[8];
            _mm_store_si128(reinterpret_cast<__m128i*>(tmp), h);
            for (int k = 0; k < 8; ++k)
                if (src[i + k] != src[i + k]) tmp[k] = quant::fp32_to_fp16(src[i + k]);
            h = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
        }
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i), h);
    }
    for (; i < n; ++i) dst[i] = quant::fp32_to_fp16(src[i]);
}

// As avx512_ops.cpp's rope_apply (bit-identical to ops::rope_apply); vaddsubps
// gives x0 c - x1 s in even lanes and x1 c + x0 s in odd ones.
KILN_TARGET_AVX2 void rope_apply(const ops::RopeParams& p, const float* cache, float* x, int64_t n_heads, int64_t head_dim) {
    const int n_dims = p.n_dims;
    for (int64_t h = 0; h < n_heads; ++h) {
        float* v = x + h * head_dim;
        if (p.layout == ops::RopeLayout::Norm) {
            for (int i = 0; i < n_dims; i += 8) {
                const __m256 xv = load_n(v + i, n_dims - i);
                const __m256 cs = load_n(cache + i, n_dims - i);
                const __m256 t1 = _mm256_mul_ps(xv, _mm256_moveldup_ps(cs));
                const __m256 t2 = _mm256_mul_ps(_mm256_permute_ps(xv, 0xB1), _mm256_movehdup_ps(cs));
                store_n(v + i, n_dims - i, _mm256_addsub_ps(t1, t2));
            }
        } else {
            const int half = n_dims / 2;
            for (int a = 0; a < half; ++a) {
                const float c = cache[2 * a], s = cache[2 * a + 1];
                const float x0 = v[a], x1 = v[a + half];
                v[a] = x0 * c - x1 * s;
                v[a + half] = x0 * s + x1 * c;
            }
        }
    }
}

KILN_TARGET_AVX2 void silu_mul(float* gate, const float* up, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f);
    for (int64_t i = 0; i < n; i += 8) {
        const __m256 x = load_n(gate + i, n - i);
        const __m256 s = _mm256_div_ps(x, _mm256_add_ps(one, exp_ps(_mm256_sub_ps(_mm256_setzero_ps(), x))));
        store_n(gate + i, n - i, _mm256_mul_ps(s, load_n(up + i, n - i)));
    }
}

// Exactly ops::gelu_mul: the f16 table looked up with a gather.
KILN_TARGET_AVX2 void gelu_mul(float* gate, const float* up, int64_t n) {
    const int* table = reinterpret_cast<const int*>(ops::gelu_f16_table());
    const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
    for (int64_t i = 0; i < n; i += 8) {
        const __m256 x = load_n(gate + i, n - i);
        const __m256i h = _mm256_cvtepu16_epi32(_mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        const __m256i g = _mm256_and_si256(_mm256_i32gather_epi32(table, h, 2), _mm256_set1_epi32(0xFFFF));
        __m256 v = _mm256_cvtph_ps(_mm_packus_epi32(_mm256_castsi256_si128(g), _mm256_extracti128_si256(g, 1)));
        v = _mm256_blendv_ps(v, x, _mm256_cmp_ps(x, hi, _CMP_GE_OQ));
        v = _mm256_blendv_ps(v, _mm256_setzero_ps(), _mm256_cmp_ps(x, lo, _CMP_LE_OQ));
        store_n(gate + i, n - i, _mm256_mul_ps(v, load_n(up + i, n - i)));
    }
}

KILN_TARGET_AVX2 void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
    __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd();
    for (int64_t i = 0; i < n; i += 8) {
        const __m256 v = load_n(x + i, n - i);
        const __m256 sq = _mm256_mul_ps(v, v);
        s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(sq)));
        s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(sq, 1)));
    }
    const double sum = hsum_pd(_mm256_add_pd(s0, s1));
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    const __m256 s = _mm256_set1_ps(1.0f / std::sqrt(mean + eps));
    for (int64_t i = 0; i < n; i += 8) {
        __m256 v = _mm256_mul_ps(load_n(x + i, n - i), s);
        if (w) v = _mm256_mul_ps(v, load_n(w + i, n - i));
        store_n(y + i, n - i, v);
    }
}

KILN_TARGET_AVX2 void softmax(float* x, int64_t n) { softmax_row(x, n, false); }

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

}  // namespace kiln::avx2

#endif  // KILN_HAVE_X86_KERNELS
