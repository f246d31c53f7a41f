#include "compute/alibi.h"

#include <cmath>

#include "kiln/error.h"

namespace kiln {

std::vector<float> alibi_slopes(int n_head, float max_bias) {
    if (n_head <= 0 || !(max_bias > 0.0f))
        throw Error("ALiBi needs heads and a positive max bias (found " + std::to_string(n_head) + " heads, max bias " +
                        std::to_string(max_bias) + ")",
                    ErrorKind::Internal);
    const uint32_t n2 = 1u << static_cast<uint32_t>(std::floor(std::log2(static_cast<double>(n_head))));
    const float m0 = std::pow(2.0f, -max_bias / static_cast<float>(n2));
    const float m1 = std::pow(2.0f, -(max_bias / 2.0f) / static_cast<float>(n2));
    std::vector<float> out(static_cast<size_t>(n_head));
    for (uint32_t h = 0; h < static_cast<uint32_t>(n_head); ++h)
        out[h] = h < n2 ? std::pow(m0, static_cast<float>(h + 1)) : std::pow(m1, static_cast<float>(2 * (h - n2) + 1));
    return out;
}

void alibi_bias(float* scores, int64_t n, int64_t first, int64_t q_pos, float slope) {
    for (int64_t j = 0; j < n; ++j) {
        const int64_t d = q_pos - (first + j);
        const float dist = static_cast<float>(d < 0 ? -d : d);
        scores[j] += slope * -dist;
    }
}

}  // namespace kiln
