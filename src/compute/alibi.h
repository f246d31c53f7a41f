// ALiBi (attention with linear biases): instead of position embeddings, each
// head adds slope_h * -|i - j| to the score of query i and key j, a penalty that
// grows with the distance (jina-bert-v2; the same bias serves causal decoders,
// where j <= i). Slopes as ggml computes them from the file's max bias.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln {

// One slope per head: with n2 = the largest power of two <= n_head,
// m0 = 2^(-max_bias / n2), m1 = 2^(-max_bias / 2 / n2), head h's slope is
// m0^(h + 1) for h < n2, else m1^(2 (h - n2) + 1) (ggml's soft_max_ext).
std::vector<float> alibi_slopes(int n_head, float max_bias);

// scores[j] += slope * -|q_pos - (first + j)| for j in [0, n): the scalar
// reference. The distance is exact in float (|q_pos - key| < 2^24), so each
// element is one product and one add, which the SIMD kernels repeat exactly.
void alibi_bias(float* scores, int64_t n, int64_t first, int64_t q_pos, float slope);

#if defined(__x86_64__)
namespace avx2 {
void alibi_bias(float* scores, int64_t n, int64_t first, int64_t q_pos, float slope);
}
namespace avx512 {
void alibi_bias(float* scores, int64_t n, int64_t first, int64_t q_pos, float slope);
}
#endif

}  // namespace kiln
