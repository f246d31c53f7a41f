// The normalised description of a model: the registry row plus the file's
// metadata turned into capabilities at load. The forward pass branches on these
// capabilities, never on the architecture's name.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compute/ops.h"
#include "kiln/model.h"

namespace kiln {

enum class NormKind { Rms, Layer };
// gated: act(gate) * up; plain: act(up); Relu2: max(x, 0)^2, Xielu: xIELU with the
// layer's XieluParams (plain only).
enum class FfnActivation { Silu, Gelu, Relu2, Xielu };

// xIELU's constants for one layer (apertus), as ggml's op holds them: alpha_n is
// beta + softplus of the file's, alpha_p softplus of the file's. For x > 0:
// alpha_p x² + beta x; else (expm1(min(x, eps)) - x) alpha_n + beta x.
struct XieluParams {
    float alpha_n = 0.0f, alpha_p = 0.0f, beta = 0.0f, eps = 0.0f;
};

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
    Experts,  // mixture of experts: a router picks MoeSpec::n_expert_used of n_expert gated FFNs (model/moe.h)
    None,     // no FFN block: the layer is its mixer alone (Mamba)
};

// How a mixture-of-experts router turns its logits into the experts' weights
// (the values of llama.cpp's `expert_gating_func` key).
enum class ExpertGating {
    Softmax = 1,        // softmax over all experts; the selected experts' probabilities
    Sigmoid = 2,        // sigmoid of each logit (DeepSeek-V3 style, with a selection bias)
    SoftmaxWeight = 3,  // select on the logits, then softmax over the selected ones (gpt-oss)
};

// The routing of the model's expert layers (the same for every such layer).
struct MoeSpec {
    int n_expert = 0;          // experts per layer ({arch}.expert_count)
    int n_expert_used = 0;     // selected per token ({arch}.expert_used_count)
    ExpertGating gating = ExpertGating::Softmax;
    bool norm_weights = false; // divide the selected weights by their sum
    float weights_scale = 1.0f;
    int n_group = 0;           // group-limited selection: experts in n_group groups,
    int n_group_used = 0;      //   only the best n_group_used groups (by their top-2 sum) compete
    int n_leading_dense = 0;   // the first layers have a dense FFN instead
    // nomic-bert-moe ({arch}.moe_every_n_layers): the layers il % n == 1 are expert
    // layers, the others dense, as llama.cpp's loader and graph schedule them.
    int every_n_layers = 0;
    bool oai_swiglu = false;   // gpt-oss: clamped SwiGLU with alpha 1.702, limit 7
    // llama4: the top k chosen on the raw router logits (the weights are still the
    // gating of the selected ones), and each selected expert's input row scaled by
    // its weight, its output then summed unweighted.
    bool select_on_logits = false;
    bool weight_before_ffn = false;
    // The experts and the shared expert are down(act(up x)) without a gate
    // projection, act ModelSpec::activation (nemotron_h_moe: ReLU²; nomic-bert-moe:
    // GELU, the experts only).
    bool ungated = false;
};

// Multi-head latent attention (DeepSeek-V2 / V3, Kimi K2; llama.cpp's absorbed
// form, src/model/mla.cpp). Each position caches one latent row of
// kv_lora_rank + n_rot values — the normed compressed KV and the roped shared key
// part — for all heads; a query head absorbs attn_k_b into its non-rotated half,
// attends over the latent rows as one KV head (the values are the rows' first
// kv_lora_rank values) and expands its result through attn_v_b. ModelSpec's
// head_dim_k / head_dim_v are then the latent sizes (kv_lora_rank + n_rot,
// kv_lora_rank), as the file's attention.key_length / value_length say.
struct MlaSpec {
    int kv_lora_rank = 0;  // 0: no MLA ({arch}.attention.kv_lora_rank)
    int q_lora_rank = 0;   // 0: queries by attn_q, else attn_q_a → attn_q_a_norm → attn_q_b
    int head_dim_qk = 0;   // a head's query / key size, rotated part included (attention.key_length_mla)
    int head_dim_v = 0;    // a head's value size after attn_v_b (attention.value_length_mla)
    float kq_scale = 0.0f; // the scores' scale: mscale² / sqrt(head_dim_qk)
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
    // gemma4: sliding layers rotate their own number of dimensions (0: n_dims)
    // and without rope_freqs, which only the full layers read (proportional RoPE).
    int n_dims_swa = 0;
    bool factors_full_only = false;
    int n_factors = 0;  // rope_freqs' length (0: n_dims / 2; gemma4: the full layers' head size / 2)
};

// The recurrence of a model's recurrent layers (llama.cpp's `ssm.*` keys).
enum class SsmKind { None, Mamba1, Mamba2, ShortConv, GatedDeltaNet, Rwkv6, Rwkv7, Rwkv6Qwen2, Arwkv7 };
struct SsmSpec {
    SsmKind kind = SsmKind::None;
    int d_conv = 0;   // causal convolution width (ssm.conv_kernel; ShortConv: shortconv.l_cache)
    int d_inner = 0;  // channels of the recurrence (ssm.inner_size; ShortConv: the width)
    int d_state = 0;  // state per channel (ssm.state_size)
    int dt_rank = 0;  // Mamba-1: rank of the time-step projection; Mamba-2: heads; delta net: value heads (ssm.time_step_rank)
    int n_group = 1;  // Mamba-2: groups sharing B and C; delta net: key heads (ssm.group_count)
    // Delta net, qwen3next's layout: the value heads come grouped by key head
    // (value head h reads key head h / (n_v / n_k), not qwen35's h % n_k), and
    // beta and alpha come from one ssm_ba holding, per key head, its
    // value heads' beta then their alpha.
    bool grouped_heads = false;
    bool norm_optional = false;  // Mamba-2: ssm_norm by presence, none without it (falcon-h1)
    // Mamba-1: dt, B and C RMS-normed with ssm_dt_norm / ssm_b_norm / ssm_c_norm
    // (required) after the x projection (jamba).
    bool dt_bc_norms = false;
    // FalconMamba (ssm.dt_b_c_rms): the same three RMS norms without weights.
    bool dt_bc_rms = false;
    // RWKV-6 (d_state: the WKV head size; d_inner: n_embd; d_conv 3: the state
    // starts with the two token-shift rows, time mix then channel mix): the
    // low-rank widths of the token-shift mix and of the decay, the channel mix's
    // width (feed_forward_length), and every rwkv_rescale_every-th layer's output
    // halved (0: never).
    int rwkv_mix_dim = 0, rwkv_decay_dim = 0, rwkv_ff = 0, rwkv_rescale_every = 0;
    // RWKV-7 (the same state; rwkv_decay_dim and rwkv_ff as RWKV-6's): the
    // low ranks of the in-context learning rate (a), the value residual mix and
    // the output gate.
    int rwkv_iclr_dim = 0, rwkv_value_dim = 0, rwkv_gate_dim = 0;
    // RWKV6Qwen2 (QRWKV: RWKV-6's time mix alone as the mixer, d_conv 2: one
    // token-shift row): K / V heads, each serving n_head / rwkv_kv_heads heads.
    int rwkv_kv_heads = 0;
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
    // With no output head: an output.weight llama.cpp's loader takes and no graph
    // reads (gemma-embedding), bound and never read rather than refused.
    bool output_unread = false;
    TensorUse dense_out = TensorUse::No;     // dense_2 / dense_3 after pooling (ModelSpec::dense_2_out)
    bool qkv_bias = true;                    // Q/K/V (or fused) biases by presence (gemma4's loader reads none)
    // attn_v: absent, V is the K projection (gemma4's full layers: K reused as V).
    TensorUse attn_v = TensorUse::Required;
    TensorUse layer_out_scale = TensorUse::No;  // blk.N.layer_output_scale [1]: the layer's output x it (gemma4)
    // Per-layer embeddings (gemma4 E2B / E4B, ModelSpec::n_embd_per_layer):
    // per_layer_token_embd, per_layer_model_proj, per_layer_proj_norm and per
    // layer inp_gate, proj, post_norm.
    TensorUse per_layer_embd = TensorUse::No;
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
    // attn_norm / ffn_norm / output_norm .bias added after an RMS norm (phimoe;
    // LayerNorm families take their biases anyway).
    bool rms_norm_bias = false;
    TensorUse qk_norm = TensorUse::No;       // attn_q_norm / attn_k_norm
    bool qk_norm_full = false;               // ... over the whole projection [n_head * head_dim] rather than per head (olmo2)
    bool pre_norms = true;                   // attn_norm / ffn_norm before each block (olmo2 has post-norms only)
    // ffn_norm with pre-norms: a layer without it (phi2, command-r: never;
    // stablelm: by presence) is a parallel block whose FFN reads the attention
    // norm's output (LayerSpec::parallel).
    TensorUse ffn_norm = TensorUse::Required;
    TensorUse norm_bias = TensorUse::Optional;  // LayerNorm biases (attn_norm / ffn_norm / output_norm .bias)
    // attn_norm_2 (+ bias). Decoders: the attention's own input norm in a
    // parallel block, attn_norm then feeding only the FFN (Falcon-40B). Encoders:
    // a second LayerNorm after the attention's (jina-bert-v2, below).
    TensorUse attn_norm_2 = TensorUse::No;
    // position_embd [n_embd, context_length]: learned absolute positions added
    // to the input rows (gpt2, starcoder; encoders bind theirs with the token types).
    TensorUse pos_embd = TensorUse::No;
    // Q/K norm weights per head, [head_dim, n_head] (stablelm, command-r), rather
    // than one [head_dim] vector shared by the heads; the norm is still per head.
    bool qk_norm_heads = false;
    bool qk_norm_after_rope = false;  // the Q/K norms follow RoPE instead of preceding it (hunyuan-dense)
    TensorUse post_norms = TensorUse::No;    // post_attention_norm / post_ffw_norm
    TensorUse attn_sinks = TensorUse::No;    // attn_sinks: one learned logit per head (gpt-oss)
    // Encoders (ModelSpec::post_norm): learned absolute positions position_embd
    // (bert), and a gate projection ffn_gate beside ffn_up (nomic-bert: SwiGLU).
    TensorUse position_embd = TensorUse::No;
    TensorUse encoder_ffn_gate = TensorUse::No;
    // jina-bert-v2: ffn_up may be [n_embd, 2 n_ff], gate rows then up rows (GEGLU),
    // where the layer has no ffn_gate; attn_norm_2 (above) after the attention's
    // (the layer input added again); Q / K LayerNorms over the whole projection
    // with biases (attn_q_norm, attn_k_norm; qk_norm_full).
    bool encoder_ffn_up_gate = false;
    // A pre-norm encoder (modern-bert): token_embd_norm LayerNorms the input rows
    // (no bias), and layer 0 may lack attn_norm (its input is already normed).
    TensorUse input_norm = TensorUse::No;
    TensorUse input_norm_bias = TensorUse::No;  // token_embd_norm.bias (bloom's LayerNorm after the embedding)
    bool first_attn_norm_optional = false;
    // blk.N.ffn.act.scales [n_ff]: the activation divided by them before ffn_down
    // (AWQ's ScaleActivation, mpt).
    TensorUse ffn_act_scales = TensorUse::No;

    // Expert layers (a router ffn_gate_inp with merged ffn_*_exps; each layer by
    // presence) and their optional parts: router and expert biases (gpt-oss), the
    // selection bias exp_probs_b (no runnable family yet), a shared expert
    // ffn_*_shexp (qwen2moe, llama) and its sigmoid gate ffn_gate_inp_shexp (qwen2moe).
    TensorUse experts = TensorUse::No;
    TensorUse expert_bias = TensorUse::No;
    TensorUse expert_probs_bias = TensorUse::No;
    TensorUse shared_expert = TensorUse::No;
    TensorUse shared_expert_gate = TensorUse::No;
    // gemma4 26B-A4B: an expert layer keeps its dense FFN beside the experts (width
    // LayerSpec::n_ff_dense), with pre_ffw_norm_2 / post_ffw_norm_1 /
    // post_ffw_norm_2 and the router's input scale ffn_gate_inp.scale (required
    // then); per-expert output scales ffn_*_exps.scale by presence.
    bool expert_dense_branch = false;
    // The first multi-token-prediction block (ModelSpec::nextn_layers) is bound as
    // the model's draft head, in the form of llama.cpp's MTP graph for the family
    // (glm4moe, deepseek2, qwen35 / qwen35moe); elsewhere NextN layers are skipped
    // with a load note.
    bool nextn_head = false;
};

struct LayerSpec {
    MixerKind mixer = MixerKind::Attention;
    FfnKind ffn = FfnKind::Gated;  // Plain when the file has no ffn_gate (weights.cpp)
    int n_head = 0;
    int n_head_kv = 0;
    int n_ff = 0;          // an expert layer: each expert's hidden width (from its tensors)
    int n_ff_shexp = 0;    // an expert layer's shared expert width (0: none)
    int n_ff_dense = 0;    // an expert layer's dense branch width (TensorRules::expert_dense_branch; 0: none)
    bool sliding = false;  // sliding-window attention layer
    bool use_rope = true;
    // A parallel block: the FFN reads the layer's input (normed by ffn_norm, or
    // where the layer has none, the attention norm's output) instead of the
    // attention's residual sum, and x += attn + ffn (phi2, gptneox, command-r).
    bool parallel = false;
    XieluParams xielu;  // FfnActivation::Xielu
    // The layer's head sizes (read_model_spec sets them to the model's unless the
    // family gives the layer its own: gemma4's sliding layers).
    int head_dim_k = 0, head_dim_v = 0;
    // >= 0: the layer computes no K / V and attends over that earlier layer's
    // cache (gemma4's shared-KV layers); it then stores nothing.
    int kv_source = -1;
    // An attention layer whose recurrent mixer (ModelSpec::ssm) runs beside the
    // attention on the same normed rows, the two outputs summed before the
    // residual add (falcon-h1); the layer then keeps a recurrent state too.
    bool parallel_ssm = false;
    bool has_recurrent_state() const { return mixer == MixerKind::Recurrent || parallel_ssm; }
};

struct ModelSpec {
    std::string arch;
    int n_layer = 0;       // the trunk's layers (block_count less the MTP layers)
    // Multi-token-prediction (NextN) layers stored after the trunk, blk.n_layer ..
    // (nextn_predict_layers), and their decoder blocks' specs. The first is bound
    // as the model's draft head (weights.cpp, ModelWeights::nextn; src/model/nextn.cpp);
    // the tensors of any further ones are left unread with a load note (llama.cpp
    // drafts with one block too).
    int n_layer_nextn = 0;
    std::vector<LayerSpec> nextn_layers;
    // A drafter that reads a target model's K/V cells (gemma4-assistant; 0: a
    // model of its own): the target's width (embedding_length_out), the
    // architecture it drafts for. Its rows are the target's token embedding and
    // the target's final normed state (nextn.pre_projection to n_embd), its
    // attention layers compute only Q and attend over the target's cells of the
    // positions before the row's (src/engine/assistant_draft.h maps its layers to
    // the target's); it runs only beside such a target, never in a Context.
    int n_embd_target = 0;
    std::string target_arch;
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
    MoeSpec moe;  // n_expert 0: no expert layers
    MlaSpec mla;  // kv_lora_rank 0: plain attention

    float embedding_scale = 1.0f;   // gemma: sqrt(n_embd); granite: from the file
    float residual_scale = 0.0f;    // 0: none; else each block's output is scaled before the residual add (granite)
    float logit_multiplier = 1.0f;  // logits *= this (granite: 1 / logit_scale; command-r: logit_scale)
    float attention_scale = 0.0f;   // 0: 1/sqrt(head_dim_k)
    float attn_softcap = 0.0f;      // 0: none
    float alibi_max_bias = 0.0f;    // > 0: ALiBi distance biases instead of positions (compute/alibi.h; jina-bert-v2: 8)
    float clamp_kqv = 0.0f;         // > 0: Q, K and V clamped to [-this, this] after their biases (mpt)
    float final_softcap = 0.0f;
    // V is RMS-normed per head without a weight before it is cached (gemma4).
    bool v_norm = false;
    // Per-layer embeddings (gemma4 E2B / E4B; 0: none): each token gets a row of
    // n_embd_per_layer values per layer, added through a gated projection after
    // the layer's FFN (per_layer_embd.cpp).
    int n_embd_per_layer = 0;
    int sliding_window = 0;         // tokens a sliding layer sees, current one included
    // Chunked attention (llama4): a sliding layer's query sees the keys from the
    // start of its chunk of sliding_window positions (pos - pos % window) to itself.
    bool swa_chunked = false;
    // Attention temperature tuning: queries scaled by
    // log(floor((pos + offset) / floor) + 1) * scale + 1 (floor 0: none), on the
    // layers without RoPE (llama4) or, with every_layer, on every layer after
    // its RoPE (mistral3's llama_4_scaling).
    struct {
        int floor = 0;
        float scale = 0.0f, offset = 0.0f;
        bool every_layer = false;
    } attn_temp;
    // Q and K RMS-normed per head without a weight after RoPE, on the layers with
    // RoPE only (llama4's L2 norm; attention temperature layers have none).
    bool qk_rms_after_rope = false;
    // Non-causal sliding layers see sliding_window / 2 positions on each side of
    // the query (llama.cpp's symmetric window: modern-bert).
    bool swa_symmetric = false;

    std::string output_norm_tensor = "output_norm.weight";  // the final norm's name (lfm2: token_embd_norm.weight)
    // The FFN's input norm (qwen35, gpt-oss: post_attention_norm.weight, and then
    // there is no post-attention norm in Gemma's sense).
    std::string ffn_norm_tensor = "ffn_norm.weight";
    // The Q projection carries a second half per head, a gate: the attention
    // output is multiplied by its sigmoid before attn_output (qwen35).
    bool attn_output_gate = false;

    // Encoders (bert): learned absolute positions and token types are added to
    // the input, which is LayerNormed (token_embd_norm); each block's LayerNorm
    // follows its residual add (attn_output_norm, layer_output_norm) instead of
    // preceding the block; no final norm.
    bool post_norm = false;
    bool output_head = true;  // false: no output head, outputs are hidden states only (encoders)
    int n_token_types = 0;    // rows of token_types.weight (tokenizer.ggml.token_type_count)
    std::optional<Pooling> pooling;  // {arch}.pooling_type, when the file sets it
    int n_cls_out = 0;        // rank pooling: the classifier's outputs (cls.output.weight rows)
    // {arch}.classifier.pooling_type mean: rank pooling feeds the head the mean of
    // the tokens instead of the first (or last) one (modern-bert's default).
    bool rank_mean = false;
    // The sentence-transformers Dense projections after pooling (llama.cpp's
    // build_dense_out: gemma-embedding): dense_2 [n_embd, dense_2_out], then
    // dense_3 [dense_3_in, n_embd], from {arch}.dense_2_feat_out /
    // dense_3_feat_in; 0: the file declares none.
    int dense_2_out = 0, dense_3_in = 0;
    TensorRules tensors;  // set by the family's configure step
    bool fused_qkv = false;  // some layer has attn_qkv (set by bind_weights; the forward pass's buffer sizes)
    bool fused_gate_up = false;  // some layer's ffn_up holds gate and up (set by bind_weights; the same)

    int max_n_head() const;
    int max_n_head_kv() const;
    int max_n_ff() const;
    int max_head_dim_k() const;  // over the layers (they may differ: gemma4)
    int max_head_dim_v() const;
};

}  // namespace kiln
