// AVX2 Mamba-2 scan (ssm::scan2_step): a head's state row updated 16 floats at a
// time in two 8-float halves, the output's sum in two accumulators (the
// reference's lanes 0-7 and 8-15), folded in the same halves. Bit-identical to it.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <immintrin.h>

#include <cmath>

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

}  // namespace

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

}  // namespace kiln::avx2

#endif
