// AVX-512 element-wise and row kernels: exp-based activations, the GELU table,
// RMSNorm, softmax and the attention of one query row over f32 keys and values.
//
// Every element-wise kernel treats a partial last vector with masks, so each
// element's result depends on its value only, never on where a row was split
// (batch invariance). Reference and tolerance of each: tests/compute.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

// GCC 12's AVX-512 headers trip -Wuninitialized on their own placeholder values.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>

#include "compute/attention.h"
#include "compute/kernels/x86.h"
#include "compute/ops.h"

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

// 16 elements of a cached row as f32 (masked).
template <bool f16>
KILN_TARGET_AVX512 inline __m512 load_row16(const uint8_t* row, int i, __mmask16 m) {
    if constexpr (f16)
        return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, row + 2 * i));
    else
        return _mm512_maskz_loadu_ps(m, row + 4 * i);
}

// Partial products of q and a cached row (n elements) in 16 lanes.
template <bool f16>
KILN_TARGET_AVX512 inline __m512 dot_lanes(const float* q, const uint8_t* k, int n) {
    __m512 acc = _mm512_setzero_ps();
    for (int i = 0; i < n; i += 16) {
        const __mmask16 m = tail_mask(n - i);
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, q + i), load_row16<f16>(k, i, m), acc);
    }
    return acc;
}

KILN_TARGET_AVX512 void softmax_row(float* x, int64_t n, bool f16) {
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t i = 0; i < n; i += 16) mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), tail_mask(n - i), x + i));
    const float m = _mm512_reduce_max_ps(mx);
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
    const double sum = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
    const __m512 inv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 k = tail_mask(n - i);
        __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(k, x + i), inv);
        if (f16) v = round_f16(v);
        _mm512_mask_storeu_ps(x + i, k, v);
    }
}

// out[h][d] = sum over keys j of p[h][j] * v[j][d] for NH heads and up to 64
// elements, keys in order (attend()'s order for every element). With an f16 cache
// both factors are f16 values, so a fused multiply-add rounds exactly as attend()'s
// separate multiply and add.
template <int NH, bool f16>
KILN_TARGET_AVX512 void value_tile(const float* p, int64_t p_stride, const KvRows& kv, int64_t first, int64_t n_keys, int64_t col,
                                   int width, float* out, int64_t out_stride) {
    __mmask16 masks[4];
    for (int c = 0; c < 4; ++c) masks[c] = tail_mask(width - 16 * c);
    __m512 acc[NH * 4];
    for (int k = 0; k < NH * 4; ++k) acc[k] = _mm512_setzero_ps();
    const uint64_t esize = f16 ? 2 : 4;
    int64_t slot = kv.slot(first);  // the ring index, advanced without a division per key
    for (int64_t j = 0; j < n_keys; ++j) {
        const uint8_t* vr = kv.v + static_cast<uint64_t>(slot) * kv.v_row_bytes + static_cast<uint64_t>(col) * esize;
        if (++slot == kv.capacity) slot = 0;
        __m512 vv[4];
        for (int c = 0; c < 4; ++c) vv[c] = load_row16<f16>(vr, 16 * c, masks[c]);
        for (int h = 0; h < NH; ++h) {
            const __m512 w = _mm512_set1_ps(p[h * p_stride + j]);
            for (int c = 0; c < 4; ++c)
                acc[4 * h + c] = f16 ? _mm512_fmadd_ps(w, vv[c], acc[4 * h + c]) : _mm512_add_ps(acc[4 * h + c], _mm512_mul_ps(w, vv[c]));
        }
    }
    for (int h = 0; h < NH; ++h)
        for (int c = 0; c < 4; ++c) _mm512_mask_storeu_ps(out + h * out_stride + 16 * c, masks[c], acc[4 * h + c]);
}

using ValueTileFn = void (*)(const float*, int64_t, const KvRows&, int64_t, int64_t, int64_t, int, float*, int64_t);
template <bool f16>
constexpr ValueTileFn k_value_tiles[7] = {nullptr,           value_tile<1, f16>, value_tile<2, f16>, value_tile<3, f16>,
                                          value_tile<4, f16>, value_tile<5, f16>, value_tile<6, f16>};

template <bool f16>
KILN_TARGET_AVX512 void attend_impl(const AttentionShape& s, const float* q, int64_t first, int64_t pos, const KvRows& kv,
                                    float* out, AttentionScratch& sc) {
    const int64_t n_keys = pos - first + 1;
    const int group = s.n_head / s.n_head_kv;
    const int dk = s.head_dim_k, dv = s.head_dim_v;
    const int64_t stride = (n_keys + 15) / 16 * 16;
    sc.scores.resize(static_cast<size_t>(stride * group));
    sc.qbuf.resize(static_cast<size_t>(group * dk));
    const bool round = kv.f16_rounding;
    const float score_scale = s.prescale_q ? 1.0f : s.scale;
    const __m512 vscale = _mm512_set1_ps(score_scale);
    const uint64_t esize = f16 ? 2 : 4;
    for (int g = 0; g < s.n_head_kv; ++g) {
        // q of the group's heads, prescaled and rounded as attend() does.
        for (int hq = 0; hq < group; ++hq) {
            const float* qh = q + static_cast<int64_t>(g * group + hq) * dk;
            float* qb = sc.qbuf.data() + static_cast<size_t>(hq * dk);
            for (int i = 0; i < dk; i += 16) {
                const __mmask16 k = tail_mask(dk - i);
                __m512 v = _mm512_maskz_loadu_ps(k, qh + i);
                if (s.prescale_q) v = _mm512_mul_ps(v, _mm512_set1_ps(s.scale));
                if (round) v = round_f16(v);
                _mm512_mask_storeu_ps(qb + i, k, v);
            }
        }
        const uint64_t k_col = static_cast<uint64_t>(g) * dk * esize;
        // Scores, 16 keys at a time.
        for (int hq = 0; hq < group; ++hq) {
            const float* qb = sc.qbuf.data() + static_cast<size_t>(hq * dk);
            float* sp = sc.scores.data() + hq * stride;
            int64_t j = 0, slot = kv.slot(first);
            auto next_row = [&]() {
                const uint8_t* r = kv.k + static_cast<uint64_t>(slot) * kv.k_row_bytes + k_col;
                if (++slot == kv.capacity) slot = 0;
                return r;
            };
            for (; j + 16 <= n_keys; j += 16) {
                const uint8_t* rows[16];
                for (int jj = 0; jj < 16; ++jj) rows[jj] = next_row();
                __m512 part[16];
                for (int jj = 0; jj < 16; ++jj) part[jj] = dot_lanes<f16>(qb, rows[jj], dk);
                _mm512_storeu_ps(sp + j, _mm512_mul_ps(reduce16(part), vscale));
            }
            for (; j < n_keys; ++j) sp[j] = _mm512_reduce_add_ps(dot_lanes<f16>(qb, next_row(), dk)) * score_scale;
            if (s.softcap > 0.0f)
                for (int64_t jj = 0; jj < n_keys; ++jj) sp[jj] = std::tanh(sp[jj] / s.softcap) * s.softcap;
            softmax_row(sp, n_keys, round);
        }
        // Weighted sums of values.
        for (int d0 = 0; d0 < dv; d0 += 64)
            for (int h0 = 0; h0 < group; h0 += 6) {
                const int nh = std::min(6, group - h0);
                k_value_tiles<f16>[nh](sc.scores.data() + h0 * stride, stride, kv, first, n_keys,
                                       static_cast<int64_t>(g) * dv + d0, std::min(64, dv - d0),
                                       out + static_cast<int64_t>(g * group + h0) * dv + d0, dv);
            }
    }
}

}  // namespace

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

void attend_row(const AttentionShape& s, const float* q, int64_t first, int64_t pos, const KvRows& kv, float* out,
                AttentionScratch& sc) {
    if (kv.type == GgmlType::F16)
        attend_impl<true>(s, q, first, pos, kv, out, sc);
    else
        attend_impl<false>(s, q, first, pos, kv, out, sc);
}

}  // namespace kiln::avx512

#endif  // KILN_HAVE_X86_KERNELS
