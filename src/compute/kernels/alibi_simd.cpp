// compute/alibi.h's bias for the AVX2 and AVX-512 attention: the distances as
// 32-bit integers converted to float (exact), then the reference's product and
// add, one rounding each (no fused multiply-add), so every element is the
// scalar alibi_bias()'s bits.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include "compute/alibi.h"
#include "compute/kernels/avx512_intrinsics.h"

namespace kiln {

namespace avx2 {

KILN_TARGET_AVX2 void alibi_bias(float* scores, int64_t n, int64_t first, int64_t q_pos, float slope) {
    // d_j = q_pos - first - j; the window is under 2^24 positions wide.
    const int32_t d0 = static_cast<int32_t>(q_pos - first);
    const __m256i step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256 vslope = _mm256_set1_ps(slope);
    const __m256 sign = _mm256_set1_ps(-0.0f);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const __m256i d = _mm256_sub_epi32(_mm256_set1_epi32(d0 - static_cast<int32_t>(j)), step);
        const __m256 dist = _mm256_xor_ps(_mm256_cvtepi32_ps(_mm256_abs_epi32(d)), sign);  // -|d|
        _mm256_storeu_ps(scores + j, _mm256_add_ps(_mm256_loadu_ps(scores + j), _mm256_mul_ps(vslope, dist)));
    }
    if (j < n) kiln::alibi_bias(scores + j, n - j, first + j, q_pos, slope);
}

}  // namespace avx2

namespace avx512 {

KILN_TARGET_AVX512 void alibi_bias(float* scores, int64_t n, int64_t first, int64_t q_pos, float slope) {
    const int32_t d0 = static_cast<int32_t>(q_pos - first);
    const __m512i step = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512 vslope = _mm512_set1_ps(slope);
    const __m512i sign = _mm512_set1_epi32(static_cast<int32_t>(0x80000000u));
    for (int64_t j = 0; j < n; j += 16) {
        const __mmask16 k = n - j >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << (n - j)) - 1);
        const __m512i d = _mm512_sub_epi32(_mm512_set1_epi32(d0 - static_cast<int32_t>(j)), step);
        const __m512 dist = _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(_mm512_cvtepi32_ps(_mm512_abs_epi32(d))), sign));
        const __m512 s = _mm512_maskz_loadu_ps(k, scores + j);
        _mm512_mask_storeu_ps(scores + j, k, _mm512_add_ps(s, _mm512_mul_ps(vslope, dist)));
    }
}

}  // namespace avx512

}  // namespace kiln

#endif
