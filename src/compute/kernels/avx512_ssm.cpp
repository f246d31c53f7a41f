// AVX-512 Mamba-2 scan (ssm::scan2_step): a head's state row of d_state floats
// updated 16 at a time, the output's sum in one accumulator whose lanes are the
// reference's 16 lanes, folded in the same halves. Bit-identical to it.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include "compute/kernels/avx512_intrinsics.h"

#include <cmath>

#include "compute/kernels/x86.h"
#include "compute/ssm.h"

namespace kiln::avx512 {

KILN_TARGET_AVX512 void ssm_scan2(float* state, const float* x, const float* dt, const float* A, const float* B, const float* C,
                                  float* y, int d_state, int head_dim, int n_head, int n_group, int h0, int h1) {
    static_assert(ssm::k_scan_lanes == 16);
    const int heads_per_group = n_head / n_group;
    const int full = d_state / 16 * 16;
    const __mmask16 tail = static_cast<__mmask16>((1u << (d_state - full)) - 1);
    for (int h = h0; h < h1; ++h) {
        const float dt_sp = ssm::softplus(dt[h]);
        const __m512 dA = _mm512_set1_ps(std::exp(dt_sp * A[h]));
        const int g = h / heads_per_group;
        const float* Bg = B + static_cast<int64_t>(g) * d_state;
        const float* Cg = C + static_cast<int64_t>(g) * d_state;
        for (int d = 0; d < head_dim; ++d) {
            const int64_t ii = static_cast<int64_t>(h) * head_dim + d;
            float* s = state + ii * d_state;
            const __m512 x_dt = _mm512_set1_ps(x[ii] * dt_sp);
            __m512 acc = _mm512_setzero_ps();
            int i = 0;
            for (; i < full; i += 16) {
                const __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_loadu_ps(s + i), dA), _mm512_mul_ps(_mm512_loadu_ps(Bg + i), x_dt));
                acc = _mm512_add_ps(acc, _mm512_mul_ps(v, _mm512_loadu_ps(Cg + i)));
                _mm512_storeu_ps(s + i, v);
            }
            if (tail) {
                const __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(tail, s + i), dA),
                                               _mm512_mul_ps(_mm512_maskz_loadu_ps(tail, Bg + i), x_dt));
                // Only the tail's lanes receive a term, as in the reference.
                acc = _mm512_mask_add_ps(acc, tail, acc, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(tail, Cg + i)));
                _mm512_mask_storeu_ps(s + i, tail, v);
            }
            // Lanes k + 8, then + 4, + 2, + 1.
            __m256 r8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
            __m128 r4 = _mm_add_ps(_mm256_castps256_ps128(r8), _mm256_extractf128_ps(r8, 1));
            __m128 r2 = _mm_add_ps(r4, _mm_movehl_ps(r4, r4));
            __m128 r1 = _mm_add_ss(r2, _mm_shuffle_ps(r2, r2, 1));
            y[ii] = _mm_cvtss_f32(r1);
        }
    }
}

}  // namespace kiln::avx512

#endif
