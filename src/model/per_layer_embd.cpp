// Per-layer embeddings (Gemma 4 E2B / E4B, as llama.cpp's gemma4 graph): every
// token has, per layer, a row of n_embd_per_layer values from its own table,
// mixed with a projection of the token's (scaled) embedding; after the layer's
// FFN residual, x += post_norm(proj(gelu(inp_gate · x) * that layer's row)).
#include <cmath>

#include "compute/kernels/kernels.h"
#include "model/forward.h"

namespace kiln {

// ple_ [n_embd_per_layer, n_layer, n] = (norm(per_layer_model_proj · x / sqrt(n_embd))
//   + per_layer_token_embd[token] * sqrt(n_embd_per_layer)) / sqrt(2), the norm per
// layer's slice with per_layer_proj_norm. A row given as an embedding takes the
// table's row 0, as llama.cpp does for such rows.
void Forward::per_layer_inputs(const BatchRows& b) {
    const int n = b.n;
    const int64_t d = spec_.n_embd_per_layer, width = d * spec_.n_layer;
    matmul(w_.ple_model_proj, x_.data(), n, ple_.data(), pool_, mm_);
    ops::scale(ple_.data(), static_cast<int64_t>(n) * width, 1.0f / std::sqrt(static_cast<float>(spec_.n_embd)));
    const auto rms_norm = kernels().rms_norm;
    const float tok_scale = std::sqrt(static_cast<float>(d)), mix = 1.0f / std::sqrt(2.0f);
    pool_.parallel_for(n, 1, [&](int64_t r0, int64_t r1, int) {
        std::vector<float> tok(static_cast<size_t>(width));  // f32 [n_embd_per_layer, n_layer]: the token's rows
        for (int64_t r = r0; r < r1; ++r) {
            float* row = ple_.data() + r * width;
            for (int il = 0; il < spec_.n_layer; ++il) rms_norm(row + il * d, w_.ple_proj_norm, row + il * d, d, spec_.norm_eps);
            matrix_row_f32(w_.ple_tok_embd, b.tokens[r] < 0 ? 0 : b.tokens[r], tok.data());
            for (int64_t i = 0; i < width; ++i) row[i] = (row[i] + tok[static_cast<size_t>(i)] * tok_scale) * mix;
        }
    });
    dump("inp_per_layer", -1, ple_.data(), width, n);
}

void Forward::per_layer_embedding(int il, int n) {
    const LayerWeights& lw = w_.layers[static_cast<size_t>(il)];
    const int64_t d = spec_.n_embd_per_layer, width = d * spec_.n_layer, e = spec_.n_embd;
    matmul(lw.ple_gate, x_.data(), n, ple_gate_.data(), pool_, mm_);
    const auto gelu_mul = kernels().gelu_mul;
    pool_.parallel_for(n, 1, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) gelu_mul(ple_gate_.data() + r * d, ple_.data() + r * width + il * d, d);
    });
    matmul(lw.ple_proj, ple_gate_.data(), n, o_.data(), pool_, mm_);
    norm_rows(spec_, o_.data(), lw.ple_post_norm, nullptr, o_.data(), n, e, pool_);
    dump("per_layer_embd_out", il, o_.data(), e, n);
    add_rows(x_.data(), o_.data(), static_cast<int64_t>(n) * e, pool_);
}

}  // namespace kiln
