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
enum class FfnActivation { Silu, Gelu, Relu2 };  // gated: act(gate) * up; plain: act(up); Relu2: max(x, 0)^2 (plain only)

// A layer's token mixer: how a position sees the others.
enum class MixerKind {
    Attention,  // softmax attention over the KV cells (causal or not, full or sliding window)
    Recurrent,  // a fixed-size state per sequence: ModelSpec::ssm says which recurrence (src/model/ssm.h)
    None,       // no mixer: the layer is its FFN alone (nemotron_h)
};
// A layer's feed-forward block.
enum class FfnKind {
    Gated,    // down(act(gate(x)) * up(x))
    Plain,    // down(act(up(x))), with optional biases
    Experts,  // mixture of experts (the MoE families fill this in)
    None,     // no FFN block: the layer is its mixer alone (Mamba)
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
    std::string scaling = "none";   // none | linear | yarn
    float yarn_ext_factor = 0.0f;
    float yarn_attn_factor = 1.0f;
    float yarn_beta_fast = 32.0f;
    float yarn_beta_slow = 1.0f;
    int n_ctx_orig = 0;
};

// The recurrence of a model's recurrent layers (llama.cpp's `ssm.*` keys).
enum class SsmKind { None, Mamba1, Mamba2, ShortConv, GatedDeltaNet };
struct SsmSpec {
    SsmKind kind = SsmKind::None;
    int d_conv = 0;   // causal convolution width (ssm.conv_kernel; ShortConv: shortconv.l_cache)
    int d_inner = 0;  // channels of the recurrence (ssm.inner_size; ShortConv: the width)
    int d_state = 0;  // state per channel (ssm.state_size)
    int dt_rank = 0;  // Mamba-1: rank of the time-step projection; Mamba-2: heads; delta net: value heads (ssm.time_step_rank)
    int n_group = 1;  // Mamba-2: groups sharing B and C; delta net: key heads (ssm.group_count)
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
    SsmSpec ssm;  // the recurrent layers' mixer (kind None: the model has none)

    float embedding_scale = 1.0f;   // gemma: sqrt(n_embd)
    float attention_scale = 0.0f;   // 0: 1/sqrt(head_dim_k)
    float attn_softcap = 0.0f;      // 0: none
    float final_softcap = 0.0f;
    int sliding_window = 0;         // tokens a sliding layer sees, current one included

    std::string output_norm_tensor = "output_norm.weight";  // the final norm's name (lfm2: token_embd_norm.weight)
    std::string ffn_norm_tensor = "ffn_norm.weight";        // the FFN's input norm (qwen35: post_attention_norm.weight)
    // The Q projection carries a second half per head, a gate: the attention
    // output is multiplied by its sigmoid before attn_output (qwen35).
    bool attn_output_gate = false;

    // Set by a family that requires per-head Q/K norms (binding then fails naming
    // the missing tensor); otherwise they are found by presence.
    bool qk_norm = false;

    int max_n_head() const;
    int max_n_head_kv() const;
    int max_n_ff() const;
};

}  // namespace kiln
