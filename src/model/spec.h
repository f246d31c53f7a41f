// The normalised description of a model: the registry row plus the file's
// metadata turned into capabilities at load. The forward pass branches on these
// capabilities, never on the architecture's name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/ops.h"

namespace kiln {

enum class NormKind { Rms, Layer };
enum class FfnActivation { Silu, Gelu };  // gated: act(gate) * up; plain: act(up)

// A layer's token mixer: how a position sees the others.
enum class MixerKind {
    Attention,  // softmax attention over the KV cells (causal or not, full or sliding window)
    Recurrent,  // a fixed-size state per sequence (the hybrid families fill this in)
};
// A layer's feed-forward block.
enum class FfnKind {
    Gated,    // down(act(gate(x)) * up(x))
    Plain,    // down(act(up(x))), with optional biases
    Experts,  // mixture of experts (the MoE families fill this in)
};
// What per-sequence memory the model needs (the registry row says; the layers agree).
enum class MemoryKind { Kv, Recurrent, Hybrid };

struct RopeSpec {
    ops::RopeLayout layout = ops::RopeLayout::Norm;
    int n_dims = 0;                 // rotated dimensions per head
    float freq_base = 10000.0f;     // full-attention layers
    float freq_base_swa = 0.0f;     // sliding layers (0: same as freq_base)
    float freq_scale = 1.0f;        // 1 / linear factor
    float freq_scale_swa = 1.0f;
    bool swa_unscaled = false;      // sliding layers rotate without YaRN's ramp and magnitude (olmo2)
    std::string scaling = "none";   // none | linear | yarn
    float yarn_ext_factor = 0.0f;
    float yarn_attn_factor = 1.0f;
    float yarn_beta_fast = 32.0f;
    float yarn_beta_slow = 1.0f;
    int n_ctx_orig = 0;
};

// Whether a family's graph reads an optional tensor (llama.cpp's loader for the
// architecture creates exactly these). A tensor a family does not read is not
// looked up, so the file's copy stays unused and the load fails naming it.
enum class TensorUse { No, Optional, Required };

// The optional tensors of a family beyond those every family takes (fused
// attn_qkv with its bias, Q/K/V biases, per-matrix `.scale` / `.input_scale`,
// which llama.cpp's loader looks up for every architecture).
struct TensorRules {
    TensorUse output = TensorUse::Optional;  // output.weight (absent: tied to the embedding)
    TensorUse output_bias = TensorUse::No;   // output.bias (qwen2)
    TensorUse attn_out_bias = TensorUse::No; // attn_output.bias
    TensorUse ffn_bias = TensorUse::No;      // ffn_gate / ffn_up / ffn_down .bias
    // ffn_gate / ffn_up / ffn_down .scale: llama.cpp loads them for every family
    // but only some graphs apply them; where a graph ignores them, kiln refuses
    // the file rather than ignore a weight scale.
    TensorUse ffn_scales = TensorUse::No;
    TensorUse rope_freqs = TensorUse::No;    // rope_freqs.weight (Llama 3 factors)
    // rope_factors_long / rope_factors_short (LongRoPE): the long ones when a
    // sequence's context exceeds rope.scaling.original_context_length.
    TensorUse rope_long_short = TensorUse::No;
    // ffn_up.weight holds gate and up stacked [n_embd, 2 n_ff] (gate first), no ffn_gate (phi3).
    bool ffn_gate_up_fused = false;
    TensorUse qk_norm = TensorUse::No;       // attn_q_norm / attn_k_norm
    bool qk_norm_full = false;               // ... over the whole projection [n_head * head_dim] rather than per head (olmo2)
    bool pre_norms = true;                   // attn_norm / ffn_norm before each block (olmo2 has post-norms only)
    TensorUse post_norms = TensorUse::No;    // post_attention_norm / post_ffw_norm
};

struct LayerSpec {
    MixerKind mixer = MixerKind::Attention;
    FfnKind ffn = FfnKind::Gated;  // Plain when the file has no ffn_gate (weights.cpp)
    int n_head = 0;
    int n_head_kv = 0;
    int n_ff = 0;
    bool sliding = false;  // sliding-window attention layer
    bool use_rope = true;
};

struct ModelSpec {
    std::string arch;
    int n_layer = 0;
    int n_embd = 0;
    int n_vocab = 0;
    int n_ctx_train = 0;
    int head_dim_k = 0;
    int head_dim_v = 0;
    std::vector<LayerSpec> layers;

    MemoryKind memory = MemoryKind::Kv;
    bool causal = true;  // false: every position of a sequence sees all of it (encoders)
    NormKind norm = NormKind::Rms;
    float norm_eps = 1e-5f;
    FfnActivation activation = FfnActivation::Silu;
    RopeSpec rope;

    float embedding_scale = 1.0f;   // gemma: sqrt(n_embd); granite: from the file
    float residual_scale = 0.0f;    // 0: none; else each block's output is scaled before the residual add (granite)
    float logit_scale = 1.0f;       // logits are multiplied by 1 / logit_scale (granite)
    float attention_scale = 0.0f;   // 0: 1/sqrt(head_dim_k)
    float attn_softcap = 0.0f;      // 0: none
    float final_softcap = 0.0f;
    int sliding_window = 0;         // tokens a sliding layer sees, current one included

    TensorRules tensors;  // set by the family's configure step

    int max_n_head() const;
    int max_n_head_kv() const;
    int max_n_ff() const;
};

}  // namespace kiln
