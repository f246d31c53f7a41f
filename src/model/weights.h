// Weights bound by tensor name with shape checks, used in place from the
// mapping. Optional tensors (biases, QK-norm, post-norms, output.weight,
// rope_freqs) are detected by presence and recorded in the spec.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "compute/matmul.h"
#include "kiln/gguf/file.h"
#include "model/spec.h"

namespace kiln {

struct LayerWeights {
    const float* attn_norm = nullptr;
    const float* attn_norm_b = nullptr;
    Matrix wq, wk, wv, wo;
    const float* bq = nullptr;
    const float* bk = nullptr;
    const float* bv = nullptr;
    const float* bo = nullptr;
    const float* q_norm = nullptr;  // f32 [head_dim_k]
    const float* k_norm = nullptr;
    const float* attn_post_norm = nullptr;
    const float* ffn_norm = nullptr;
    const float* ffn_norm_b = nullptr;
    Matrix ffn_gate, ffn_up, ffn_down;  // ffn_gate empty: a plain FFN
    const float* ffn_up_b = nullptr;
    const float* ffn_down_b = nullptr;
    const float* ffn_post_norm = nullptr;
};

struct ModelWeights {
    Matrix tok_embd;                // [n_embd, n_vocab]
    const float* output_norm = nullptr;
    const float* output_norm_b = nullptr;
    Matrix output;                  // [n_embd, n_vocab]; the embedding when tied
    const float* rope_freqs = nullptr;  // [n_rot / 2]
    std::vector<LayerWeights> layers;

    // Vectors stored in another type than f32 and matrices in a type the matmul
    // does not take are converted once at load and kept here.
    std::vector<std::unique_ptr<std::vector<float>>> converted_vectors;
    std::vector<std::unique_ptr<std::vector<uint8_t>>> converted_matrices;
    std::vector<std::string> conversion_notes;  // "blk.0.ffn_down.weight: IQ1_S -> F32"
    uint64_t unused_tensors = 0;
    uint64_t packed_bytes = 0;  // weights repacked at load for the SIMD kernels
    uint64_t converted_bytes = 0;  // of converted_vectors and converted_matrices
    uint64_t mapped_bytes = 0;     // tensors bound in place from the mapping
    bool tok_embd_mapped = true;   // the embedding is read from the mapping (not converted)
    PackPlan pack_plan;            // plan_only: what prepare_matrices would repack
};

// Binds every tensor the spec needs; sets spec's presence flags. Errors name
// the tensor and the expected versus found shape or type.
// plan_only checks the same and converts and repacks nothing: converted_bytes
// and pack_plan say what a load would allocate (src/engine/memory_plan.cpp).
ModelWeights bind_weights(const gguf::File& file, ModelSpec& spec, bool plan_only = false);

}  // namespace kiln
