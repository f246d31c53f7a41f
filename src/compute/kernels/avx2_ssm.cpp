// AVX2 recurrences: the Mamba-2 scan (ssm::scan2_step), the gated delta rule
// (ssm::delta_step), RWKV-6's WKV and the gated linear attention (ssm::wkv6_step,
// ssm::gla_step: lane-wise over a state row, nothing reordered). A state row is updated 16 floats at a time in two 8-float
// halves, each sum in two accumulators (the reference's lanes 0-7 and 8-15),
// folded in the same halves. Bit-identical to the references.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "compute/kernels/avx2_common.h"
#include "compute/kernels/x86.h"
#include "compute/ssm.h"

namespace kiln::avx2 {

namespace {

// Lanes [0, left) of 8 as a load / store mask (none when left <= 0).
KILN_TARGET_AVX2 inline __m256i lanes_below(int left) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), idx);
}

// One 8-float step at s + i: the state's update and the sum's terms, masked.
KILN_TARGET_AVX2 inline __m256 step8(float* s, const float* B, const float* C, __m256 dA, __m256 x_dt, __m256 acc, __m256i m) {
    const __m256 v = _mm256_add_ps(_mm256_mul_ps(_mm256_maskload_ps(s, m), dA), _mm256_mul_ps(_mm256_maskload_ps(B, m), x_dt));
    const __m256 term = _mm256_mul_ps(v, _mm256_maskload_ps(C, m));
    _mm256_maskstore_ps(s, m, v);
    // Only the masked lanes receive a term, as in the reference.
    return _mm256_blendv_ps(acc, _mm256_add_ps(acc, term), _mm256_castsi256_ps(m));
}

// Lanes k + 8, then + 4, + 2, + 1 of the two halves (the references' fold).
KILN_TARGET_AVX2 inline float fold16(__m256 lo, __m256 hi) {
    const __m256 r8 = _mm256_add_ps(lo, hi);
    const __m128 r4 = _mm_add_ps(_mm256_castps256_ps128(r8), _mm256_extractf128_ps(r8, 1));
    const __m128 r2 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
    return _mm_cvtss_f32(_mm_add_ss(r2, _mm_shuffle_ps(r2, r2, 1)));
}

// Σ a[i] · b[i] in the reference's lanes (tail lanes receive nothing).
KILN_TARGET_AVX2 inline float dot16(const float* a, const float* b, int n) {
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) {
        lo = _mm256_add_ps(lo, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
        hi = _mm256_add_ps(hi, _mm256_mul_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8)));
    }
    for (int half = 0; half < 2 && i + 8 * half < n; ++half) {
        const int left = n - i - 8 * half;
        const __m256i m = left >= 8 ? _mm256_set1_epi32(-1) : lanes_below(left);
        const __m256 term = _mm256_mul_ps(_mm256_maskload_ps(a + i + 8 * half, m), _mm256_maskload_ps(b + i + 8 * half, m));
        __m256& acc = half == 0 ? lo : hi;
        acc = _mm256_blendv_ps(acc, _mm256_add_ps(acc, term), _mm256_castsi256_ps(m));
    }
    return fold16(lo, hi);
}


// Positions [0, nb) of a block applied to one state row (ssm::delta_apply): 64
// floats of the row in 8 registers through the block (8 independent chains),
// (x · decay) + k · δ per position, rounded as ssm_delta. kb: the block's first
// k of this head; db: its first δ of this row; records stride apart.
KILN_TARGET_AVX2 inline void apply_row(float* row, const float* kb, const float* db, const __m256* decay, int nb, int64_t stride, int d,
                                       int full, __m256i tail) {
    const __m256i all = _mm256_set1_epi32(-1);
    int i = 0;
    for (; i + 64 <= d; i += 64) {
        __m256 x[8];
        for (int v = 0; v < 8; ++v) x[v] = _mm256_loadu_ps(row + i + 8 * v);
        for (int q = 0; q < nb; ++q) {
            const float* kq = kb + q * stride + i;
            const __m256 dv = _mm256_set1_ps(db[q * stride]);
            for (int v = 0; v < 8; ++v) x[v] = _mm256_add_ps(_mm256_mul_ps(x[v], decay[q]), _mm256_mul_ps(_mm256_loadu_ps(kq + 8 * v), dv));
        }
        for (int v = 0; v < 8; ++v) _mm256_storeu_ps(row + i + 8 * v, x[v]);
    }
    for (; i < d; i += 8) {  // the rest, 8 floats at a time
        const __m256i lanes = i < full ? all : tail;
        __m256 x = _mm256_maskload_ps(row + i, lanes);
        for (int q = 0; q < nb; ++q)
            x = _mm256_add_ps(_mm256_mul_ps(x, decay[q]),
                              _mm256_mul_ps(_mm256_maskload_ps(kb + q * stride + i, lanes), _mm256_set1_ps(db[q * stride])));
        _mm256_maskstore_ps(row + i, lanes, x);
    }
}

}  // namespace

KILN_TARGET_AVX2 void ssm_delta_apply(float* state, const float* k, const float* g, const float* deltas, int64_t stride,
                                      int n_rows, int d, int n_k_heads, int h0, int h1) {
    const int full = d / 8 * 8;
    const __m256i tail = lanes_below(d - full);
    for (int h = h0; h < h1; ++h) {
        float* m = state + static_cast<int64_t>(h) * d * d;
        const int64_t ko = static_cast<int64_t>(h % n_k_heads) * d;
        // Positions in blocks of 16, their decays computed once per head.
        for (int p0 = 0; p0 < n_rows; p0 += 16) {
            const int nb = std::min(16, n_rows - p0);
            __m256 decay[16];
            for (int q = 0; q < nb; ++q) decay[q] = _mm256_set1_ps(std::exp(g[(p0 + q) * stride + h]));
            const float* kb = k + p0 * stride + ko;
            const float* db = deltas + p0 * stride + static_cast<int64_t>(h) * d;
            for (int j = 0; j < d; ++j) apply_row(m + static_cast<int64_t>(j) * d, kb, db + j, decay, nb, stride, d, full, tail);
        }
    }
}

KILN_TARGET_AVX2 void ssm_delta(float* state, const float* q, const float* k, const float* v, const float* g, const float* beta,
                                float* y, int d, int n_k_heads, int h0, int h1, float* deltas, float* from,
                                const ssm::DeltaRows* pending, bool stream) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const int full = d / 8 * 8;
    const __m256i tail = lanes_below(d - full);
    const int n_pend = pending ? pending->n_rows : 0;
    // Streaming: each new row is built in `line` (L1) and then written whole with
    // non-temporal stores, so the state's lines are never fetched to be overwritten.
    alignas(32) float line[ssm::k_delta_stream_max];
    const bool nt = stream && d == full && d <= ssm::k_delta_stream_max && reinterpret_cast<uintptr_t>(state) % 32 == 0;
    for (int h = h0; h < h1; ++h) {
        const __m256 decay = _mm256_set1_ps(std::exp(g[h]));
        const float* kh = k + static_cast<int64_t>(h % n_k_heads) * d;
        const float* qh = q + static_cast<int64_t>(h % n_k_heads) * d;
        float* m = state + static_cast<int64_t>(h) * d * d;
        float* src = (from ? from : state) + static_cast<int64_t>(h) * d * d;
        // Pending positions: up to 16 fused into the row loop (each row brought up to
        // date in L1 just before the step reads it), more in a pass of their own.
        __m256 pdecay[16];
        const float* pk = nullptr;
        const float* pdl = nullptr;
        if (n_pend > 16) {
            ssm_delta_apply(src - static_cast<int64_t>(h) * d * d, pending->k, pending->g, pending->deltas, pending->stride, n_pend, d,
                            n_k_heads, h, h + 1);
        } else if (n_pend > 0) {
            for (int p = 0; p < n_pend; ++p) pdecay[p] = _mm256_set1_ps(std::exp(pending->g[p * pending->stride + h]));
            pk = pending->k + static_cast<int64_t>(h % n_k_heads) * d;
            pdl = pending->deltas + static_cast<int64_t>(h) * d;
        }
        for (int j = 0; j < d; ++j) {
            float* row = nt ? line : m + static_cast<int64_t>(j) * d;
            float* old = src + static_cast<int64_t>(j) * d;
            if (pk) apply_row(old, pk, pdl + j, pdecay, n_pend, pending->stride, d, full, tail);
            int i = 0;
            for (; i < full; i += 8) _mm256_storeu_ps(row + i, _mm256_mul_ps(_mm256_loadu_ps(old + i), decay));
            if (full < d) _mm256_maskstore_ps(row + i, tail, _mm256_mul_ps(_mm256_maskload_ps(old + i, tail), decay));
            const float delta = (v[static_cast<int64_t>(h) * d + j] - dot16(row, kh, d)) * beta[h];
            const __m256 dv = _mm256_set1_ps(delta);
            for (i = 0; i < full; i += 8)
                _mm256_storeu_ps(row + i, _mm256_add_ps(_mm256_loadu_ps(row + i), _mm256_mul_ps(_mm256_loadu_ps(kh + i), dv)));
            if (full < d)
                _mm256_maskstore_ps(row + i, tail,
                                    _mm256_add_ps(_mm256_maskload_ps(row + i, tail), _mm256_mul_ps(_mm256_maskload_ps(kh + i, tail), dv)));
            y[static_cast<int64_t>(h) * d + j] = dot16(row, qh, d) * scale;
            if (deltas) deltas[static_cast<int64_t>(h) * d + j] = delta;
            if (nt)
                for (i = 0; i < d; i += 8) _mm256_stream_ps(m + static_cast<int64_t>(j) * d + i, _mm256_load_ps(line + i));
        }
    }
    if (nt) _mm_sfence();  // the streamed lines visible before whatever follows the call
}

KILN_TARGET_AVX2 void ssm_scan2(float* state, const float* x, const float* dt, const float* A, const float* B, const float* C,
                                float* y, int d_state, int head_dim, int n_head, int n_group, int h0, int h1) {
    static_assert(ssm::k_scan_lanes == 16);
    const int heads_per_group = n_head / n_group;
    const int full = d_state / 16 * 16;
    const __m256i all = _mm256_set1_epi32(-1);
    for (int h = h0; h < h1; ++h) {
        const float dt_sp = ssm::softplus(dt[h]);
        const __m256 dA = _mm256_set1_ps(std::exp(dt_sp * A[h]));
        const int g = h / heads_per_group;
        const float* Bg = B + static_cast<int64_t>(g) * d_state;
        const float* Cg = C + static_cast<int64_t>(g) * d_state;
        for (int d = 0; d < head_dim; ++d) {
            const int64_t ii = static_cast<int64_t>(h) * head_dim + d;
            float* s = state + ii * d_state;
            const __m256 x_dt = _mm256_set1_ps(x[ii] * dt_sp);
            __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
            int i = 0;
            for (; i < full; i += 16) {
                const __m256 v0 = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(s + i), dA), _mm256_mul_ps(_mm256_loadu_ps(Bg + i), x_dt));
                const __m256 v1 =
                    _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(s + i + 8), dA), _mm256_mul_ps(_mm256_loadu_ps(Bg + i + 8), x_dt));
                lo = _mm256_add_ps(lo, _mm256_mul_ps(v0, _mm256_loadu_ps(Cg + i)));
                hi = _mm256_add_ps(hi, _mm256_mul_ps(v1, _mm256_loadu_ps(Cg + i + 8)));
                _mm256_storeu_ps(s + i, v0);
                _mm256_storeu_ps(s + i + 8, v1);
            }
            if (i < d_state) {
                const int left = d_state - i;
                lo = step8(s + i, Bg + i, Cg + i, dA, x_dt, lo, left >= 8 ? all : lanes_below(left));
                if (left > 8) hi = step8(s + i + 8, Bg + i + 8, Cg + i + 8, dA, x_dt, hi, lanes_below(left - 8));
            }
            // Lanes k + 8, then + 4, + 2, + 1.
            const __m256 r8 = _mm256_add_ps(lo, hi);
            const __m128 r4 = _mm_add_ps(_mm256_castps256_ps128(r8), _mm256_extractf128_ps(r8, 1));
            const __m128 r2 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
            const __m128 r1 = _mm_add_ss(r2, _mm_shuffle_ps(r2, r2, 1));
            y[ii] = _mm_cvtss_f32(r1);
        }
    }
}

// RWKV-6's WKV (ssm::wkv6_step): 8 columns of the state at a time, the rows in
// order, each column's output summed in its own lane as the reference sums it.
KILN_TARGET_AVX2 void rwkv_wkv6(float* state, const float* k, const float* v, const float* r, const float* u, const float* w,
                                float* y, int d, int h0, int h1) {
    for (int h = h0; h < h1; ++h) {
        const int64_t o = static_cast<int64_t>(h) * d;
        float* s = state + o * d;
        for (int j = 0; j < d; j += 8) {
            const __m256i m = lanes_below(d - j);
            const bool whole = d - j >= 8;
            const __m256 vj = load_ps_masked(v + o + j, m, whole);
            __m256 acc = _mm256_setzero_ps();
            for (int i = 0; i < d; ++i) {
                float* si = s + static_cast<int64_t>(i) * d + j;
                const __m256 kv = _mm256_mul_ps(vj, _mm256_set1_ps(k[o + i]));
                const __m256 prev = load_ps_masked(si, m, whole);
                acc = _mm256_fmadd_ps(_mm256_fmadd_ps(kv, _mm256_set1_ps(u[o + i]), prev), _mm256_set1_ps(r[o + i]), acc);
                store_ps_masked(si, m, whole, _mm256_fmadd_ps(prev, _mm256_set1_ps(w[o + i]), kv));
            }
            store_ps_masked(y + o + j, m, whole, acc);
        }
    }
}

// The gated linear attention (ssm::gla_step), as rwkv_wkv6.
KILN_TARGET_AVX2 void rwkv_gla(float* state, const float* k, const float* v, const float* q, const float* g, float* y, int d,
                               float scale, int h0, int h1) {
    for (int h = h0; h < h1; ++h) {
        const int64_t o = static_cast<int64_t>(h) * d;
        float* s = state + o * d;
        for (int j = 0; j < d; j += 8) {
            const __m256i m = lanes_below(d - j);
            const bool whole = d - j >= 8;
            const __m256 vj = load_ps_masked(v + o + j, m, whole);
            __m256 acc = _mm256_setzero_ps();
            for (int i = 0; i < d; ++i) {
                float* si = s + static_cast<int64_t>(i) * d + j;
                const __m256 st =
                    _mm256_fmadd_ps(load_ps_masked(si, m, whole), _mm256_set1_ps(g[o + i]), _mm256_mul_ps(vj, _mm256_set1_ps(k[o + i])));
                store_ps_masked(si, m, whole, st);
                acc = _mm256_fmadd_ps(st, _mm256_set1_ps(q[o + i] * scale), acc);
            }
            store_ps_masked(y + o + j, m, whole, acc);
        }
    }
}

// RWKV-7's WKV (ssm::wkv7_step): 8 rows of the state at a time (its stored
// columns), each lane summing its row over j in the reference's order.
KILN_TARGET_AVX2 void rwkv_wkv7(float* state, const float* r, const float* w, const float* k, const float* v, const float* a,
                                const float* b, float* y, int d, int h0, int h1) {
    for (int h = h0; h < h1; ++h) {
        const int64_t o = static_cast<int64_t>(h) * d;
        float* s = state + o * d;
        for (int i = 0; i < d; i += 8) {
            const __m256i m = lanes_below(d - i);
            const bool whole = d - i >= 8;
            __m256 sa = _mm256_setzero_ps();
            for (int j = 0; j < d; ++j)
                sa = _mm256_fmadd_ps(_mm256_set1_ps(a[o + j]), load_ps_masked(s + static_cast<int64_t>(j) * d + i, m, whole), sa);
            const __m256 vi = load_ps_masked(v + o + i, m, whole);
            __m256 out = _mm256_setzero_ps();
            for (int j = 0; j < d; ++j) {
                float* sj = s + static_cast<int64_t>(j) * d + i;
                const __m256 inner =
                    _mm256_fmadd_ps(load_ps_masked(sj, m, whole), _mm256_set1_ps(w[o + j]), _mm256_mul_ps(vi, _mm256_set1_ps(k[o + j])));
                const __m256 st = _mm256_fmadd_ps(sa, _mm256_set1_ps(b[o + j]), inner);
                store_ps_masked(sj, m, whole, st);
                out = _mm256_fmadd_ps(st, _mm256_set1_ps(r[o + j]), out);
            }
            store_ps_masked(y + o + i, m, whole, out);
        }
    }
}

}  // namespace kiln::avx2

#endif
