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
    Matrix wqkv;  // fused [n_embd, q + k + v]; wq / wk / wv empty when present
    const float* bqkv = nullptr;
    const float* bq = nullptr;
    const float* bk = nullptr;
    const float* bv = nullptr;
    const float* bo = nullptr;
    const float* q_norm = nullptr;  // f32 [head_dim_k]
    const float* k_norm = nullptr;
    const float* attn_post_norm = nullptr;
    const float* ffn_norm = nullptr;
    const float* ffn_norm_b = nullptr;
    Matrix ffn_gate, ffn_up, ffn_down;  // ffn_gate empty: a plain FFN, or gate and up fused in ffn_up
    bool ffn_gate_up_fused = false;     // ffn_up is [n_embd, 2 n_ff]: gate rows, then up rows
    const float* ffn_gate_b = nullptr;
    const float* ffn_up_b = nullptr;
    const float* ffn_down_b = nullptr;
    // Per-matrix output scales (`<name>.scale`, shape [1]; 1 when absent), as
    // llama.cpp applies them: Q/K/V/O after the product, before the bias; the
    // FFN's after the bias.
    float wq_s = 1.0f, wk_s = 1.0f, wv_s = 1.0f, wo_s = 1.0f, wqkv_s = 1.0f;
    float ffn_gate_s = 1.0f, ffn_up_s = 1.0f, ffn_down_s = 1.0f;
    const float* ffn_post_norm = nullptr;
};

struct ModelWeights {
    Matrix tok_embd;                // [n_embd, n_vocab]
    const float* output_norm = nullptr;
    const float* output_norm_b = nullptr;
    Matrix output;                  // [n_embd, n_vocab]; the embedding when tied
    const float* output_b = nullptr;    // [n_vocab]
    const float* rope_freqs = nullptr;  // [n_rot / 2]
    const float* rope_long = nullptr;   // [n_rot / 2] LongRoPE factors past the original context
    const float* rope_short = nullptr;  // [n_rot / 2] ... within it
    std::vector<LayerWeights> layers;

    // Vectors stored in another type than f32 and matrices in a type the matmul
    // does not take are converted once at load and kept here.
    std::vector<std::unique_ptr<std::vector<float>>> converted_vectors;
    std::vector<std::unique_ptr<std::vector<uint8_t>>> converted_matrices;
    std::vector<std::string> conversion_notes;  // "blk.0.ffn_down.weight: IQ1_S -> F32"
    uint64_t packed_bytes = 0;  // weights repacked at load for the SIMD kernels
};

// Binds every tensor the spec needs; sets spec's presence flags. Errors name
// the tensor and the expected versus found shape or type. A tensor of the file
// that the family does not read is an error naming it (llama.cpp refuses such a
// file too: its loader counts the tensors it created against the file's).
ModelWeights bind_weights(const gguf::File& file, ModelSpec& spec);

}  // namespace kiln
