#include "support/tiny_models.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <stdexcept>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/gguf/writer.h"
#include "kiln/quant.h"
#include "support/tiny_moe_models.h"
#include "support/tiny_writer.h"

namespace kiln::test {

namespace {

using gguf::Value;

struct Shape {
    int n_layer = 2, n_embd = 64, n_head = 4, n_head_kv = 2, n_ff = 128, head_dim = 16;
    int window = 0;
};

// What a tiny model carries beyond the tensors every family has. Each family's
// base recipe has every optional tensor its llama.cpp graph accepts; the
// variants change what changes the graph (fused Q/K/V, RoPE scaling) and the
// matrix types (`@q4_k`, `@q8_0` for every base recipe).
struct FamilyRecipe {
    std::string family = "";  // "llama", or a variant "llama@fused"
    std::string description = "";
    Shape shape = {};
    GgmlType attn_type = GgmlType::F32, ffn_type = GgmlType::F32, embd_type = GgmlType::F32;
    bool tied_output = true;
    GgmlType output_type = GgmlType::Q8_0;  // a separate output head's type
    bool qkv_bias = true;        // Q/K/V biases (every family's loader takes them)
    bool fused_qkv = false;      // attn_qkv.weight in place of Q/K/V
    bool fused_bias = false;     // attn_qkv.bias (else separate biases, if qkv_bias)
    bool scales = true;          // `.scale` and `.input_scale` of the attention matrices (every family)
    bool ffn_scales = false;     // `.scale` of the FFN matrices (llama, qwen3; the others' graphs ignore them)
    bool attn_out_bias = false;
    bool ffn_bias = false;
    bool output_bias = false;
    bool qk_norm = false;
    bool post_norms = false;
    bool rope_freqs = false;
    bool rope_long_short = false;  // LongRoPE rope_factors_long / _short
    bool fused_gate_up = false;    // ffn_up [n_embd, 2 n_ff], no ffn_gate (phi3)
    int rope_dims = 0;             // rope.dimension_count (0: the head size)
    bool layer_norm = false;       // LayerNorm with biases (attention.layer_norm_epsilon) in place of RMSNorm
    bool rms_norm_bias = false;    // RMS norms with biases (attn_norm / ffn_norm / output_norm .bias: phimoe)
    bool plain_ffn = false;        // no ffn_gate: down(act(up(x)))
    bool pre_norms = true;         // attn_norm / ffn_norm (olmo2 has none)
    bool qk_norm_full = false;     // Q/K norms over the whole projection (olmo2)
    bool ffn_norm = true;          // ffn_norm with pre-norms (none: a parallel block, phi2 / command-r / stablelm 12B)
    bool norm_bias = true;         // with layer_norm: the norms' biases (command-r has none)
    bool qk_norm_heads = false;    // Q/K norm weights [head_dim, n_head]: one row per head (stablelm, command-r)
    int ff_key_factor = 1;         // feed_forward_length written as this x the FFN width (qwen: 2)
    std::string ffn_norm_name = "ffn_norm";  // the FFN's input norm (seed_oss: post_attention_norm)
    bool attn_norm_2 = false;      // the attention's own input norm attn_norm_2 (+ bias with layer_norm): Falcon-40B
    bool learned_positions = false;  // position_embd [n_embd, context_length] (gpt2, starcoder)
    bool input_norm = false;       // token_embd_norm (+ bias with layer_norm): bloom's LayerNorm of the embedding rows
    bool ffn_act_scales = false;   // blk.N.ffn.act.scales [n_ff] (mpt: AWQ's activation scales)
    std::vector<std::pair<std::string, Value>> global_keys = {};  // keys written as they are (apertus's xielu.*)
    float softcap_attn = 0, softcap_final = 0;
    // RoPE scaling keys ("" writes none): type, factor, original context, attn_factor.
    std::string rope_scaling = "";
    float rope_factor = 0, rope_attn_factor = 0;
    int rope_orig_ctx = 0;
    bool quant_variants = true;  // `@q4_k` and `@q8_0` of this recipe
    bool q4_k_variant = true;
    // The Q4_K variant's KV cache in f32 in both engines (its fixture records it):
    // where the Q4_K products' order-of-sum differences (1e-7 relative) flip f16
    // roundings of K, V and llama.cpp's f16 queries, and that grows past the
    // bound through many or post-normed blocks (olmo2, glm4, baichuan).
    bool q4_k_f32_cache = false;
    bool f32_cache = false;  // this model's fixture and test run with an f32 KV cache
    std::vector<std::pair<std::string, Value>> keys = {};  // family keys ("logit_scale"), prefixed with the architecture
    // general.name "kiln tiny <name>" (else a neutral name), and the seed from
    // <name> where it is not the family: the recipes made before the families
    // were named <arch>@<variant> and neutral names keep their bytes this way.
    bool name_with_family = false;
    std::string first_name = "";
    // Mixture of experts (n_expert 0: dense): every layer's FFN is n_expert
    // experts of width n_ff (the shape's), n_used selected per token.
    struct Experts {
        int n_expert = 0, n_used = 0;
        int n_ff_shexp = 0;        // a shared expert of this width (0: none)
        bool shexp_gate = false;   // ... scaled by sigmoid(ffn_gate_inp_shexp · x)
        int tie = -1;              // experts tie and tie + 1 have equal router rows
        GgmlType shexp_type = GgmlType::F32;
        bool ff_key = true;        // write expert_feed_forward_length
    } moe = {};
    // gpt-oss: attention sinks, router and expert biases, the pre-FFN norm named
    // post_attention_norm.
    bool gpt_oss = false;
    std::string arch() const { return family.substr(0, family.find('@')); }  // the GGUF architecture
};

std::vector<FamilyRecipe> base_recipes() {
    using T = GgmlType;
    const Shape small{2, 64, 4, 2, 128, 16, 0};
    return {
        {.family = "llama",
         .description = "GQA 4/2, separate output head, every optional tensor (Q/K/V/O and FFN biases, weight and input "
                        "scales, Llama 3 rope_freqs), rope.scaling linear with factor 0 (no scaling); Q8_0 / Q4_0 / F16",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::F16, .tied_output = false,
         .ffn_scales = true, .attn_out_bias = true, .ffn_bias = true, .rope_freqs = true, .rope_scaling = "linear",
         .rope_factor = 0.0f},
        {.family = "llama@fused",
         .description = "llama with a fused attn_qkv and its bias (as some converters write), linear RoPE scaling x2; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .fused_qkv = true,
         .fused_bias = true, .ffn_scales = true, .attn_out_bias = true, .ffn_bias = true, .rope_scaling = "linear", .rope_factor = 2.0f,
         .quant_variants = false},
        {.family = "llama@yarn",
         .description = "llama with YaRN RoPE scaling (factor 4 over an original context of 16, attn_factor 1.25); Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .rope_scaling = "yarn",
         .rope_factor = 4.0f, .rope_attn_factor = 1.25f, .rope_orig_ctx = 16, .quant_variants = false},
        {.family = "llama@float",
         .description = "llama with float weights (the BF16 pair kernels, F32 panels); BF16 / F32 / BF16",
         .shape = small, .attn_type = T::BF16, .ffn_type = T::F32, .embd_type = T::BF16, .tied_output = false,
         .rope_freqs = true, .quant_variants = false},
        {.family = "mistral3",
         .description = "llama's tensors (every optional one) with mistral3's YaRN keys (factor 4 over an original context of 8, "
                        "attn_factor 1.25, yarn_log_multiplier 0.8, beta fast 16 / slow 2) and its attention temperature (scale 0.5, "
                        "a step every 8 positions); Q8_0 / Q4_0 / F16",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::F16, .tied_output = false,
         .ffn_scales = true, .attn_out_bias = true, .ffn_bias = true, .rope_freqs = true, .rope_scaling = "yarn",
         .rope_factor = 4.0f, .rope_attn_factor = 1.25f, .rope_orig_ctx = 8,
         .keys = {{"attention.temperature_scale", Value::f32(0.5f)}, {"rope.scaling.yarn_log_multiplier", Value::f32(0.8f)},
                  {"rope.scaling.yarn_beta_fast", Value::f32(16.0f)}, {"rope.scaling.yarn_beta_slow", Value::f32(2.0f)}},
         .name_with_family = true},
        {.family = "granite",
         .description = "llama's tensors with Granite's embedding, attention, residual and logit scales, attention-output "
                        "and FFN biases, rope_freqs; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .attn_out_bias = true, .ffn_bias = true, .rope_freqs = true,
         .keys = {{"logit_scale", Value::f32(3.0f)}, {"residual_scale", Value::f32(0.6f)},
                  {"embedding_scale", Value::f32(2.0f)}, {"attention.scale", Value::f32(0.15f)}}},
        {.family = "granite@nope", .description = "granite with rope.scaling.finetuned = false: no RoPE; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .quant_variants = false,
         .keys = {{"logit_scale", Value::f32(2.0f)}, {"rope.scaling.finetuned", Value::boolean(false)}}},
        {.family = "phi3",
         .description = "fused attn_qkv and gate-up, partial rotary (12 of 16), LongRoPE short factors (context 256 within "
                        "the original 4096), rope.scaling.attn_factor; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .qkv_bias = false, .fused_qkv = true, .rope_long_short = true, .fused_gate_up = true, .rope_dims = 12,
         .rope_attn_factor = 1.19f, .rope_orig_ctx = 4096},
        {.family = "phi3@long",
         .description = "phi3 with separate Q/K/V and the long LongRoPE factors (context 256 past the original 64); Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .rope_long_short = true,
         .fused_gate_up = true, .rope_dims = 12, .rope_attn_factor = 1.19f, .rope_orig_ctx = 64, .quant_variants = false},
        {.family = "starcoder2",
         .description = "LayerNorm with biases, plain GELU FFN with biases, Q/K/V/O biases, NEOX RoPE, separate output; "
                        "Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .attn_out_bias = true, .ffn_bias = true, .layer_norm = true, .plain_ffn = true},
        {.family = "olmo2",
         .description = "post-norms only (no attn_norm / ffn_norm), Q/K RMS norm over the whole projection, separate "
                        "output head; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .qkv_bias = false, .qk_norm = true, .post_norms = true, .pre_norms = false, .qk_norm_full = true,
         // In Q4_K with an f16 cache the logits differ from llama.cpp's by 0.067
         // (1.2% of the largest; the bound is 1%): see q4_k_f32_cache.
         .q4_k_f32_cache = true},
        {.family = "olmo2@olmo3",
         .description = "OLMo 3: four layers, three sliding (window 8) to one full, the sliding ones without RoPE scaling "
                        "(linear x2 on the full one) and, as llama.cpp, the full base despite rope.freq_base_swa; Q8_0 / Q4_0",
         .shape = {4, 64, 4, 2, 128, 16, 8}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .tied_output = false, .qkv_bias = false, .qk_norm = true, .post_norms = true, .pre_norms = false,
         .qk_norm_full = true, .rope_scaling = "linear", .rope_factor = 2.0f, .quant_variants = false,
         .keys = {{"rope.freq_base_swa", Value::f32(500.0f)}}},
        {.family = "qwen2", .description = "Q/K/V biases, output bias, NEOX RoPE, tied output; Q4_K / Q6_K",
         .shape = {2, 256, 4, 2, 256, 64, 0}, .attn_type = T::Q4_K, .ffn_type = T::Q6_K, .embd_type = T::Q8_0,
         .output_bias = true},
        {.family = "qwen2@fused", .description = "qwen2 with a fused attn_qkv and separate Q/K/V biases; Q4_K / Q6_K",
         .shape = {2, 256, 4, 2, 256, 64, 0}, .attn_type = T::Q4_K, .ffn_type = T::Q6_K, .embd_type = T::Q8_0,
         .fused_qkv = true, .output_bias = true, .quant_variants = false},
        {.family = "qwen3",
         .description = "QK-norm, FFN weight scales, head size 32 with width 64 (key_length != width / heads); Q5_0 / Q8_0",
         .shape = {2, 64, 4, 2, 128, 32, 0}, .attn_type = T::Q5_0, .ffn_type = T::Q8_0, .embd_type = T::Q8_0,
         .ffn_scales = true, .qk_norm = true},
        {.family = "smollm3", .description = "four layers: NoPE on the fourth; Q4_1 / Q5_1",
         .shape = {4, 64, 4, 1, 128, 16, 0}, .attn_type = T::Q4_1, .ffn_type = T::Q5_1, .embd_type = T::Q8_0},
        {.family = "gemma", .description = "Gemma 1: sqrt(width) embedding scale, GELU, pre-scaled queries, MQA; Q8_0 / Q6_K",
         .shape = {2, 256, 4, 1, 256, 64, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q6_K, .embd_type = T::Q8_0},
        {.family = "gemma2",
         .description = "sliding window 8 on even layers, attention and final soft-caps, post-norms, GELU; Q8_0 / Q5_K",
         .shape = {3, 256, 4, 2, 256, 64, 8}, .attn_type = T::Q8_0, .ffn_type = T::Q5_K, .embd_type = T::Q8_0,
         .post_norms = true, .softcap_attn = 50.0f, .softcap_final = 30.0f},
        {.family = "gemma3",
         .description = "six layers (5 sliding, window 8, + 1 full), QK-norm, post-norms, GELU, 1 KV head of 128, separate "
                        "output head; Q4_K / Q3_K",
         .shape = {6, 256, 2, 1, 512, 128, 8}, .attn_type = T::Q4_K, .ffn_type = T::Q3_K, .embd_type = T::Q8_0,
         .tied_output = false, .qk_norm = true, .post_norms = true},
        {.family = "internlm2", .description = "llama's block, Q/K/V biases, separate output head (required); Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false},
        {.family = "exaone", .description = "llama's block with NEOX RoPE, Q/K/V biases, rope_freqs, tied output; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .rope_freqs = true},
        {.family = "ernie4_5",
         .description = "head size 32 x 4 heads over width 64 (larger than width / heads), Q/K/V biases, tied; Q8_0 / Q4_0",
         .shape = {2, 64, 4, 2, 128, 32, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0},
        {.family = "minicpm",
         .description = "granite's graph with MiniCPM's default scales (no keys: embedding 12, residual 1.4 / sqrt(layers), "
                        "logits / (256 / width)), attention-output and FFN biases, rope_freqs, separate output; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .attn_out_bias = true, .ffn_bias = true, .rope_freqs = true},
        {.family = "minicpm@keys", .description = "minicpm with the three scales from the file's keys; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .quant_variants = false,
         .keys = {{"embedding_scale", Value::f32(3.0f)}, {"residual_scale", Value::f32(0.5f)}, {"logit_scale", Value::f32(0.5f)}}},
        {.family = "exaone4",
         .description = "post-norms only, per-head QK-norm, rope_freqs, Q/K/V biases; a sliding_window key that llama.cpp "
                        "ignores below 64 layers; Q8_0 / Q4_0",
         .shape = {2, 64, 4, 2, 128, 16, 8}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .qk_norm = true, .post_norms = true, .rope_freqs = true, .pre_norms = false},
        {.family = "exaone4@swa",
         .description = "exaone4 with 64 layers: three sliding (window 8) to one full, RoPE on the sliding ones only; F32 "
                        "(quantized, the 64 blocks without pre-norms grow the rounding past the bound)",
         .shape = {64, 64, 4, 2, 128, 16, 8}, .attn_type = T::F32, .ffn_type = T::F32, .embd_type = T::Q8_0,
         .qk_norm = true, .post_norms = true, .pre_norms = false, .quant_variants = false},
        {.family = "phi2",
         .description = "parallel block (one biased LayerNorm feeds attention and FFN), plain GELU FFN with biases, fused "
                        "attn_qkv + bias, attention-output bias, partial rotary (8 of 16), separate output head with bias; "
                        "Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .fused_qkv = true, .fused_bias = true, .attn_out_bias = true, .ffn_bias = true, .output_bias = true, .rope_dims = 8,
         .layer_norm = true, .plain_ffn = true, .ffn_norm = false},
        {.family = "gptj",
         .description = "GPT-J: parallel block (one biased LayerNorm feeds attention and FFN), NORM RoPE on 8 of 16 dimensions, "
                        "no Q/K/V/O biases, plain GELU FFN with biases, separate output head with bias; F32, f32 cache (checked "
                        "against tools/gptj_reference.py: llama.cpp has no gptj graph)",
         .shape = {2, 64, 4, 4, 128, 16, 0}, .tied_output = false, .output_type = T::F32, .qkv_bias = false, .scales = false,
         .ffn_bias = true, .output_bias = true,
         .rope_dims = 8, .layer_norm = true, .plain_ffn = true, .ffn_norm = false, .f32_cache = true,
         .name_with_family = true},
        {.family = "stablelm",
         .description = "sequential block (ffn_norm present), LayerNorm with biases, per-head Q/K LayerNorms with one weight "
                        "row per head, Q/K/V biases, partial rotary (8 of 16), separate output head; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .qk_norm = true, .rope_dims = 8, .layer_norm = true, .qk_norm_heads = true},
        {.family = "stablelm@parallel",
         .description = "stablelm without ffn_norm (StableLM 2 12B): a parallel block, the FFN reading the attention norm's "
                        "output; per-head Q/K norms; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .qk_norm = true, .rope_dims = 8, .layer_norm = true, .ffn_norm = false, .qk_norm_heads = true,
         .quant_variants = false},
        {.family = "gptneox",
         .description = "use_parallel_residual: x += attn(ln1(x)) + ffn(ln2(x)); LayerNorm with biases, fused attn_qkv + "
                        "bias, attention-output bias, plain GELU FFN with biases, partial rotary (4 of 16), separate output "
                        "head; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .fused_qkv = true, .fused_bias = true, .attn_out_bias = true, .ffn_bias = true, .rope_dims = 4, .layer_norm = true,
         .plain_ffn = true, .keys = {{"use_parallel_residual", Value::boolean(true)}}},
        {.family = "gptneox@sequential",
         .description = "gptneox with use_parallel_residual false: the sequential block; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .fused_qkv = true, .fused_bias = true, .attn_out_bias = true, .ffn_bias = true, .rope_dims = 4, .layer_norm = true,
         .plain_ffn = true, .quant_variants = false, .keys = {{"use_parallel_residual", Value::boolean(false)}}},
        {.family = "command-r",
         .description = "parallel block under one LayerNorm without bias, SiLU-gated FFN, Q/K/V biases, tied output, "
                        "logits x logit_scale 0.5; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .layer_norm = true,
         .ffn_norm = false, .norm_bias = false, .keys = {{"logit_scale", Value::f32(0.5f)}}},
        {.family = "cohere2",
         .description = "command-r's block over four layers: three sliding (window 8) with RoPE to one full without (and "
                        "a rope.freq_base_swa its graph ignores), FFN weight scales, logit_scale 0.25; Q8_0 / Q4_0",
         .shape = {4, 64, 4, 2, 128, 16, 8}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .ffn_scales = true, .layer_norm = true, .ffn_norm = false, .norm_bias = false,
         .keys = {{"logit_scale", Value::f32(0.25f)}, {"rope.freq_base_swa", Value::f32(500.0f)}}},
        {.family = "command-r@plus",
         .description = "command-r with 64 layers (Command R+): per-head Q/K LayerNorms with one weight row per head, which "
                        "llama.cpp reads from 64 layers on; F32 layers",
         .shape = {64, 64, 4, 2, 128, 16, 0}, .attn_type = T::F32, .ffn_type = T::F32, .embd_type = T::Q8_0,
         .qk_norm = true, .layer_norm = true, .ffn_norm = false, .norm_bias = false, .qk_norm_heads = true,
         .quant_variants = false, .keys = {{"logit_scale", Value::f32(0.5f)}}},
        {.family = "xverse", .description = "llama's block, Q/K/V biases, separate output head (required); Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false},
        {.family = "orion",
         .description = "llama's block with LayerNorms with biases, NEOX RoPE, Q/K/V biases, separate output head; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .layer_norm = true},
        {.family = "qwen",
         .description = "Qwen 1: fused attn_qkv + bias (no GQA), feed_forward_length twice the FFN width, NEOX RoPE, separate "
                        "output head; Q8_0 / Q4_0",
         .shape = {2, 64, 4, 4, 128, 16, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .tied_output = false, .fused_qkv = true, .fused_bias = true, .ff_key_factor = 2},
        {.family = "seed_oss",
         .description = "head size 32 x 4 heads over width 64, Q/K/V biases, the FFN norm named post_attention_norm, NEOX "
                        "RoPE, tied output; Q8_0 / Q4_0",
         .shape = {2, 64, 4, 2, 128, 32, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .ffn_norm_name = "post_attention_norm"},
        {.family = "arcee",
         .description = "llama's attention with a plain ReLU² FFN (no gate), Q/K/V biases, rope_freqs, tied output; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .rope_freqs = true,
         .plain_ffn = true},
        {.family = "falcon",
         .description = "Falcon-7B: parallel block under one biased LayerNorm, fused attn_qkv without bias, multi-query "
                        "(4 heads, 1 KV head), plain GELU FFN, separate output head; Q8_0 / Q4_0",
         .shape = {2, 64, 4, 1, 128, 16, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .tied_output = false, .qkv_bias = false, .fused_qkv = true, .layer_norm = true, .plain_ffn = true,
         .ffn_norm = false},
        {.family = "falcon@40b",
         .description = "Falcon-40B: the attention's own attn_norm_2 (the FFN reads attn_norm), GQA 4/2, tied output; "
                        "Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .qkv_bias = false,
         .fused_qkv = true, .layer_norm = true, .plain_ffn = true, .ffn_norm = false, .attn_norm_2 = true,
         .quant_variants = false},
        {.family = "gpt2",
         .description = "learned positions (position_embd), no RoPE, LayerNorms with biases, fused attn_qkv + bias (4 heads, "
                        "no GQA), attention-output bias, plain GELU FFN with biases, tied output; Q8_0 / Q4_0",
         .shape = {2, 64, 4, 4, 128, 16, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .fused_qkv = true, .fused_bias = true, .attn_out_bias = true, .ffn_bias = true, .layer_norm = true,
         .plain_ffn = true, .learned_positions = true},
        {.family = "starcoder",
         .description = "gpt2's graph with multi-query attention (4 heads, 1 KV head), separate output head; Q8_0 / Q4_0",
         .shape = {2, 64, 4, 1, 128, 16, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .tied_output = false, .fused_qkv = true, .fused_bias = true, .attn_out_bias = true, .ffn_bias = true,
         .layer_norm = true, .plain_ffn = true, .learned_positions = true},
        {.family = "chatglm",
         .description = "fused attn_qkv + bias, gate and up stacked in ffn_up (SwiGLU), NORM RoPE over 8 of 16 dimensions, "
                        "separate output head; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .fused_qkv = true, .fused_bias = true, .fused_gate_up = true, .rope_dims = 8},
        {.family = "glm4",
         .description = "chatglm's block with separate Q/K/V (+ biases) and post-norms after attention and FFN, tied "
                        "output; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .post_norms = true,
         .fused_gate_up = true, .rope_dims = 8,
         // In Q4_K with an f16 cache: 0.13 from llama.cpp (1.15% of the largest) at
         // every ISA level, the base and Q8_0 0.00000: see q4_k_f32_cache.
         .q4_k_f32_cache = true},
        {.family = "hunyuan-dense",
         .description = "per-head Q/K RMS norms after RoPE, Q/K/V biases, rope.scaling.alpha 2 (base x 2^(16/14)), tied "
                        "output; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .qk_norm = true,
         .keys = {{"rope.scaling.alpha", Value::f32(2.0f)}}},
        {.family = "apertus",
         .description = "plain xIELU FFN (constants per layer: alpha_n an array, the others scalars), per-head Q/K RMS norms, "
                        "Q/K/V and attention-output biases, rope_freqs, separate output head; Q8_0 / Q4_0",
         .shape = small, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0, .tied_output = false,
         .attn_out_bias = true, .qk_norm = true, .rope_freqs = true, .plain_ffn = true,
         .global_keys = {{"xielu.alpha_n", Value::array(gguf::ValueType::F32, {Value::f32(0.8f), Value::f32(1.2f)})},
                         {"xielu.alpha_p", Value::f32(0.8f)}, {"xielu.beta", Value::f32(0.5f)},
                         {"xielu.eps", Value::f32(-1e-6f)}}},
    };
}

// The mixture-of-experts and low-bit recipes: written without the optional
// tensors every family's loader takes (attention scales, Q/K/V biases where not
// listed), their bytes as when their fixtures were made. Mixture of experts: 8
// experts, a pair of them with equal router rows (ties at the top-k boundary),
// 40 tokens x 2 layers so every expert is selected; expert tensors merged
// [n_in, n_ff, n_expert].
// The ALiBi decoders and baichuan (positions by its layer count).
std::vector<FamilyRecipe> alibi_recipes() {
    using T = GgmlType;
    return {
        {.family = "bloom",
         .description = "ALiBi (max bias 8) without RoPE, LayerNorm with bias on the embedding rows, fused attn_qkv + bias, "
                        "attention-output and FFN biases, plain GELU FFN, separate output head; Q8_0 / Q4_0",
         .shape = {2, 64, 4, 4, 128, 16, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .tied_output = false, .fused_qkv = true, .fused_bias = true, .attn_out_bias = true, .ffn_bias = true,
         .layer_norm = true, .plain_ffn = true, .input_norm = true},
        {.family = "mpt",
         .description = "ALiBi from attention.max_alibi_bias (8), clamp_kqv 0.8, learned positions, fused attn_qkv + bias, "
                        "attention-output and FFN biases, AWQ activation scales, plain GELU FFN; Q8_0 / Q4_0",
         .shape = {2, 64, 4, 4, 128, 16, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .fused_qkv = true, .fused_bias = true, .attn_out_bias = true, .ffn_bias = true, .layer_norm = true,
         .plain_ffn = true, .learned_positions = true, .ffn_act_scales = true,
         .keys = {{"attention.max_alibi_bias", Value::f32(8.0f)}, {"attention.clamp_kqv", Value::f32(0.8f)}}},
        {.family = "mpt@7b",
         .description = "mpt as MPT-7B: no biases, no Q / K norms, no positions, ALiBi 8, no clamp; Q8_0 / Q4_0",
         .shape = {2, 64, 4, 4, 128, 16, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .qkv_bias = false, .fused_qkv = true, .layer_norm = true, .plain_ffn = true, .norm_bias = false,
         .quant_variants = false, .keys = {{"attention.max_alibi_bias", Value::f32(8.0f)}}},
        {.family = "baichuan",
         .description = "Baichuan 7B's positions (32 layers: NORM RoPE), Q/K/V biases, separate output head; Q8_0 / Q4_0",
         .shape = {32, 64, 4, 2, 128, 16, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .tied_output = false, .q4_k_f32_cache = true},  // @q4_k: 1.02% at KILN_ISA=scalar with an f16 cache, 0.96% with f32 (32 layers)
        {.family = "baichuan@13b",
         .description = "Baichuan 13B's positions (40 layers: ALiBi 8, no RoPE), fused attn_qkv; Q8_0 / Q4_0",
         .shape = {40, 64, 4, 4, 128, 16, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_0, .embd_type = T::Q8_0,
         .tied_output = false, .fused_qkv = true, .quant_variants = false},
    };
}

std::vector<FamilyRecipe> expert_and_lowbit_recipes() {
    using T = GgmlType;
    using X = FamilyRecipe::Experts;
    std::vector<FamilyRecipe> out = {
        {.family = "qwen3moe", .description = "8 experts top-2 renormalized, router tie 2/3, QK-norm; Q8_0 attention / Q4_K experts",
         .shape = {2, 256, 4, 2, 256, 64, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_K, .embd_type = T::Q8_0,
         .qkv_bias = false, .scales = false, .qk_norm = true, .quant_variants = false, .name_with_family = true,
         .moe = X{.n_expert = 8, .n_used = 2, .tie = 2}},
        {.family = "qwen3moe@float", .description = "qwen3moe in F32 (experts through the float kernels), 8 experts top-3",
         .shape = {2, 64, 4, 2, 64, 16, 0}, .attn_type = T::F32, .ffn_type = T::F32, .embd_type = T::F32,
         .qkv_bias = false, .scales = false, .qk_norm = true, .quant_variants = false, .name_with_family = true,
         .first_name = "qwen3moe_float", .moe = X{.n_expert = 8, .n_used = 3, .tie = 2}},
        {.family = "llama@mixtral", .description = "llama with experts (Mixtral): 8 experts top-2 renormalized, tie 4/5; Q8_0 experts",
         .shape = {2, 64, 4, 2, 128, 16, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q8_0, .embd_type = T::Q8_0,
         .tied_output = false, .output_type = T::Q8_0, .qkv_bias = false, .scales = false, .quant_variants = false,
         .name_with_family = true, .first_name = "mixtral", .moe = X{.n_expert = 8, .n_used = 2, .tie = 4, .ff_key = false}},
        {.family = "olmoe", .description = "OLMoE: Q/K RMS-normed over the whole row, 8 experts top-2 not renormalized, "
                                           "tie 0/1; Q8_0 attention / Q5_K experts",
         .shape = {2, 256, 4, 4, 256, 64, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q5_K, .embd_type = T::Q8_0,
         .tied_output = false, .output_type = T::Q8_0, .qkv_bias = false, .scales = false, .qk_norm = true,
         .qk_norm_full = true, .quant_variants = false, .name_with_family = true, .moe = X{.n_expert = 8, .n_used = 2, .tie = 0}},
        {.family = "gpt-oss", .description = "gpt-oss: sliding window 8 on even layers / full, attention sinks, Q/K/V/O "
                                             "biases, 8 experts top-2 (softmax over the selected), router and expert biases, "
                                             "clamped OAI SwiGLU, tie 6/7; Q8_0",
         .shape = {2, 64, 4, 2, 64, 16, 8}, .attn_type = T::Q8_0, .ffn_type = T::Q8_0, .embd_type = T::Q8_0,
         .tied_output = false, .output_type = T::Q8_0, .scales = false, .attn_out_bias = true, .quant_variants = false,
         .name_with_family = true, .first_name = "gpt_oss", .moe = X{.n_expert = 8, .n_used = 2, .tie = 6}, .gpt_oss = true},
        {.family = "gpt-oss@mxfp4", .description = "gpt-oss as above with MXFP4 experts, as the release ships them; Q8_0 attention",
         .shape = {2, 64, 4, 2, 64, 16, 8}, .attn_type = T::Q8_0, .ffn_type = T::MXFP4, .embd_type = T::Q8_0,
         .tied_output = false, .output_type = T::Q8_0, .scales = false, .attn_out_bias = true, .quant_variants = false,
         .name_with_family = true, .first_name = "gpt_oss", .moe = X{.n_expert = 8, .n_used = 2, .tie = 6}, .gpt_oss = true},
        {.family = "qwen2moe", .description = "qwen2moe: 8 experts top-2 not renormalized + sigmoid-gated shared expert, Q/K/V "
                                              "biases; Q4_K experts, Q8_0 shared expert",
         .shape = {2, 256, 4, 2, 256, 64, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_K, .embd_type = T::Q8_0,
         .tied_output = false, .output_type = T::Q8_0, .scales = false, .quant_variants = false, .name_with_family = true,
         .moe = X{.n_expert = 8, .n_used = 2, .n_ff_shexp = 512, .shexp_gate = true, .tie = 2, .shexp_type = T::Q8_0}},
        {.family = "granitemoe", .description = "granitemoe: granite's four scales, Q/K/V and attention-output biases, "
                                                "rope_freqs, 8 experts top-2 renormalized, tie 1/2; F32",
         .shape = {2, 64, 4, 2, 64, 16, 0}, .attn_type = T::F32, .ffn_type = T::F32, .embd_type = T::F32,
         .tied_output = false, .output_type = T::F32, .scales = false, .attn_out_bias = true, .rope_freqs = true,
         .quant_variants = false, .keys = {{"logit_scale", Value::f32(3.0f)}, {"residual_scale", Value::f32(0.6f)},
                                            {"embedding_scale", Value::f32(2.0f)}, {"attention.scale", Value::f32(0.15f)}},
         .name_with_family = true, .moe = X{.n_expert = 8, .n_used = 2, .tie = 1}},
        {.family = "granitemoe@shared", .description = "Granite MoE Shared: granitemoe + an ungated shared expert of width "
                                                       "256; Q8_0 attention, Q4_K experts, Q8_0 shared expert, tied output",
         .shape = {2, 256, 4, 2, 256, 64, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_K, .embd_type = T::Q8_0,
         .qkv_bias = false, .scales = false, .quant_variants = false,
         .keys = {{"logit_scale", Value::f32(2.0f)}, {"residual_scale", Value::f32(0.5f)}, {"embedding_scale", Value::f32(3.0f)}},
         .name_with_family = true, .moe = X{.n_expert = 8, .n_used = 2, .n_ff_shexp = 256, .tie = 5, .shexp_type = T::Q8_0}},
        {.family = "phimoe", .description = "phimoe: phi3's attention (pre-scaled queries, LongRoPE short factors, "
                                            "rope.scaling.attn_factor) with Q/K/V/O biases, RMS norms with biases, output "
                                            "bias, 8 experts top-2 renormalized, tie 3/4; F32",
         .shape = {2, 64, 4, 2, 64, 16, 0}, .attn_type = T::F32, .ffn_type = T::F32, .embd_type = T::F32,
         .tied_output = false, .output_type = T::F32, .scales = false, .attn_out_bias = true, .output_bias = true,
         .rope_long_short = true, .rms_norm_bias = true, .rope_attn_factor = 1.19f, .rope_orig_ctx = 4096,
         .quant_variants = false, .name_with_family = true, .moe = X{.n_expert = 8, .n_used = 2, .tie = 3}},
        {.family = "phimoe@long", .description = "phimoe with a fused attn_qkv and its bias, the long LongRoPE factors "
                                                 "(context 256 past the original 64); Q8_0 attention, Q4_K experts",
         .shape = {2, 256, 4, 2, 256, 64, 0}, .attn_type = T::Q8_0, .ffn_type = T::Q4_K, .embd_type = T::Q8_0,
         .tied_output = false, .output_type = T::Q8_0, .fused_qkv = true, .fused_bias = true, .scales = false,
         .attn_out_bias = true, .output_bias = true, .rope_long_short = true, .rms_norm_bias = true, .rope_attn_factor = 1.19f,
         .rope_orig_ctx = 64, .quant_variants = false, .name_with_family = true, .moe = X{.n_expert = 8, .n_used = 2, .tie = 6}},
    };
    // The low-bit types with kernels (src/compute/kernels/*_lowbit.cpp, MXFP4 in
    // *_quant.cpp): llama with every layer matrix in one type, 256-wide rows;
    // types kiln cannot quantize get random blocks (TinyWriter::random_blocks),
    // attention in one, the FFN in another.
    struct LowBit {
        std::string family;
        const char* description;
        GgmlType attn, ffn;
    };
    const LowBit low[] = {
        {"llama@q2_k", "llama with every layer matrix Q2_K; Q8_0 embedding", T::Q2_K, T::Q2_K},
        {"llama@q3_k", "llama with every layer matrix Q3_K; Q8_0 embedding", T::Q3_K, T::Q3_K},
        {"llama@tq1_0", "llama with every layer matrix TQ1_0 (ternary); Q8_0 embedding", T::TQ1_0, T::TQ1_0},
        {"llama@tq2_0", "llama with every layer matrix TQ2_0 (ternary); Q8_0 embedding", T::TQ2_0, T::TQ2_0},
        {"llama@mxfp4", "llama with every layer matrix MXFP4; Q8_0 embedding", T::MXFP4, T::MXFP4},
        {"llama@iq2", "llama with random IQ2_XXS attention and IQ2_XS FFN blocks; Q8_0 embedding", T::IQ2_XXS, T::IQ2_XS},
        {"llama@iq3", "llama with random IQ3_XXS attention and IQ2_S FFN blocks; Q8_0 embedding", T::IQ3_XXS, T::IQ2_S},
        {"llama@iq1", "llama with random IQ1_S attention and IQ1_M FFN blocks; Q8_0 embedding", T::IQ1_S, T::IQ1_M},
        {"llama@iq4_xs", "llama with random IQ3_S attention and IQ4_XS FFN blocks; Q8_0 embedding", T::IQ3_S, T::IQ4_XS},
    };
    for (const LowBit& l : low)
        out.push_back({.family = l.family, .description = l.description, .shape = {2, 256, 4, 2, 512, 64, 0}, .attn_type = l.attn,
                       .ffn_type = l.ffn, .embd_type = T::Q8_0, .qkv_bias = false, .scales = false, .quant_variants = false,
                       .name_with_family = true,
                       .first_name = "llama_" + l.family.substr(l.family.find('@') + 1)});
    return out;
}

// Every base recipe, then its Q4_K and Q8_0 variants: every layer matrix in one
// type, in a shape whose rows are whole Q4_K blocks (256); the embedding and a
// separate output head stay Q8_0 (quantizing 12 M values to Q4_K with the
// reference quantizer would take most of the test's time).
const std::vector<FamilyRecipe>& recipes() {
    static const std::vector<FamilyRecipe> r = [] {
        std::vector<FamilyRecipe> out = base_recipes();
        for (FamilyRecipe& x : alibi_recipes()) out.push_back(std::move(x));
        const size_t n_base = out.size();
        for (FamilyRecipe& x : expert_and_lowbit_recipes()) out.push_back(std::move(x));
        for (size_t i = 0; i < n_base; ++i) {
            if (!out[i].quant_variants) continue;
            for (GgmlType t : {GgmlType::Q4_K, GgmlType::Q8_0}) {
                if (t == GgmlType::Q4_K && !out[i].q4_k_variant) continue;
                FamilyRecipe v = out[i];
                const std::string tn = t == GgmlType::Q4_K ? "q4_k" : "q8_0";
                v.family += "@" + tn;
                v.description = out[i].family + " with every layer matrix in " + std::string(ggml_type_name(t)) + ", width 256";
                v.shape.n_embd = 256;
                v.shape.n_ff = 256;
                v.shape.head_dim = 64;
                v.shape.n_head = 4;
                // MQA stays MQA, no GQA stays without (qwen's fused Q/K/V is [n_embd, 3 n_embd]).
                const Shape& b = out[i].shape;
                v.shape.n_head_kv = b.n_head_kv == 1 ? 1 : b.n_head_kv == b.n_head ? 4 : 2;
                v.attn_type = v.ffn_type = t;
                v.embd_type = v.output_type = GgmlType::Q8_0;
                v.quant_variants = false;
                v.f32_cache = out[i].f32_cache || (t == GgmlType::Q4_K && out[i].q4_k_f32_cache);
                out.push_back(v);
            }
        }
        return out;
    }();
    return r;
}
const FamilyRecipe& recipe(const std::string& family) {
    for (const auto& r : recipes())
        if (r.family == family) return r;
    throw std::runtime_error("no tiny model recipe for '" + family + "'");
}

// The state-space families: attention-free stacks of Mamba layers.
struct SsmRecipe {
    std::string family;
    std::string description;
    int version;  // 1: mamba, 2: mamba2
    int n_layer, n_embd, d_inner, d_state, dt_rank, n_group, d_conv;
    GgmlType proj_type, embd_type;
    bool dt_b_c_rms = false;  // FalconMamba: ssm.dt_b_c_rms (dt, B and C RMS-normed without weights)
    std::string arch() const { return family.substr(0, family.find('@')); }
};

const std::vector<SsmRecipe>& ssm_recipes() {
    static const std::vector<SsmRecipe> r = {
        {"mamba2", "Mamba-2: 8 heads of 16 in 2 groups, state 32, conv 4, grouped RMSNorm gate; Q8_0 / Q5_0",
         2, 2, 64, 128, 32, 8, 2, 4, GgmlType::Q8_0, GgmlType::Q5_0},
        {"mamba", "Mamba-1: inner 128, state 16, dt rank 4, conv 4, separate output head; Q8_0 / F32 dt",
         1, 2, 64, 128, 16, 4, 1, 4, GgmlType::Q8_0, GgmlType::Q8_0},
        {"mamba@falcon", "FalconMamba: Mamba-1 with ssm.dt_b_c_rms (dt, B and C RMS-normed without weights); Q8_0",
         1, 2, 64, 128, 16, 4, 1, 4, GgmlType::Q8_0, GgmlType::Q8_0, true},
    };
    return r;
}

const SsmRecipe* ssm_recipe(const std::string& family) {
    for (const auto& r : ssm_recipes())
        if (r.family == family) return &r;
    return nullptr;
}


// Keys and tensors as llama.cpp's converter writes them (head_count and
// feed_forward_length 0, ssm_a already -exp(A_log), [1, n_head] A and D).
void write_ssm_model(const SsmRecipe& r, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    TinyWriter t(r.arch(), seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(r.arch()));
    md.add("general.name", Value::string("kiln tiny " + r.family));
    t.key("context_length", Value::u32(1u << 20));
    t.key("embedding_length", Value::u32(static_cast<uint32_t>(r.n_embd)));
    t.key("feed_forward_length", Value::u32(0));
    t.key("attention.head_count", Value::u32(0));
    t.key("block_count", Value::u32(static_cast<uint32_t>(r.n_layer)));
    t.key("ssm.conv_kernel", Value::u32(static_cast<uint32_t>(r.d_conv)));
    t.key("ssm.inner_size", Value::u32(static_cast<uint32_t>(r.d_inner)));
    t.key("ssm.state_size", Value::u32(static_cast<uint32_t>(r.d_state)));
    t.key("ssm.time_step_rank", Value::u32(static_cast<uint32_t>(r.dt_rank)));
    if (r.version == 2) t.key("ssm.group_count", Value::u32(static_cast<uint32_t>(r.n_group)));
    if (r.dt_b_c_rms) t.key("ssm.dt_b_c_rms", Value::boolean(true));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-5f));
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);

    using u64 = uint64_t;
    const int64_t e = r.n_embd, di = r.d_inner, ds = r.d_state;
    t.matrix("token_embd.weight", e, n_vocab, r.embd_type, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    if (r.version == 1) t.matrix("output.weight", e, n_vocab, r.proj_type, 2.0f);
    // Decays exp(dt·A) between about 0.5 and 1: the state remembers many positions.
    auto neg_exp = [](float u) { return -std::exp(u); };
    auto dt_bias = [](float u) { return -2.5f + 1.5f * u; };  // softplus ≈ 0.02 .. 0.6
    for (int il = 0; il < r.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        const int64_t nc = r.version == 2 ? di + 2 * static_cast<int64_t>(r.n_group) * ds : di;
        t.tensor(p + "ssm_conv1d.weight", {static_cast<u64>(r.d_conv), static_cast<u64>(nc)}, [](float u) { return 0.6f * u; });
        t.vector(p + "ssm_conv1d.bias", nc, 0.0f, 0.2f);
        if (r.version == 2) {
            const int64_t nh = r.dt_rank;
            t.matrix(p + "ssm_in.weight", e, di + nc + nh, r.proj_type, 2.0f);
            t.tensor(p + "ssm_dt.bias", {static_cast<u64>(nh)}, dt_bias);
            t.tensor(p + "ssm_a", {1, static_cast<u64>(nh)}, neg_exp);
            t.tensor(p + "ssm_d", {1, static_cast<u64>(nh)}, [](float u) { return 1.0f + 0.5f * u; });
            t.tensor(p + "ssm_norm.weight", {static_cast<u64>(di / r.n_group), static_cast<u64>(r.n_group)},
                     [](float u) { return 1.0f + 0.2f * u; });
        } else {
            t.matrix(p + "ssm_in.weight", e, 2 * di, r.proj_type, 2.0f);
            t.matrix(p + "ssm_x.weight", di, r.dt_rank + 2 * ds, r.proj_type, 2.0f);
            t.matrix(p + "ssm_dt.weight", r.dt_rank, di, GgmlType::F32, 0.5f);
            t.tensor(p + "ssm_dt.bias", {static_cast<u64>(di)}, dt_bias);
            t.tensor(p + "ssm_a", {static_cast<u64>(ds), static_cast<u64>(di)}, neg_exp);
            t.vector(p + "ssm_d", di, 1.0f, 0.5f);
        }
        t.matrix(p + "ssm_out.weight", di, e, r.proj_type);
    }
    t.writer().write(path);
}

// lfm2: short-convolution layers (0 KV heads) and attention layers with
// QK-norm, each with a SwiGLU FFN, the final norm named token_embd_norm.
void write_lfm2_model(uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string family = "lfm2";
    const int n_layer = 4, e = 64, n_head = 4, n_head_kv = 2, hd = 16, n_ff = 128, l_cache = 3;
    const bool attention[n_layer] = {false, true, false, true};
    TinyWriter t(family, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(family));
    md.add("general.name", Value::string("kiln tiny " + family));
    t.key("context_length", Value::u32(512));
    t.key("embedding_length", Value::u32(e));
    t.key("block_count", Value::u32(n_layer));
    t.key("feed_forward_length", Value::u32(n_ff));
    t.key("attention.head_count", Value::u32(n_head));
    std::vector<Value> kv;
    for (bool a : attention) kv.push_back(Value::u32(a ? n_head_kv : 0));
    t.key("attention.head_count_kv", Value::array(gguf::ValueType::U32, kv));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-5f));
    t.key("rope.freq_base", Value::f32(1000000.0f));
    t.key("shortconv.l_cache", Value::u32(l_cache));
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);
    const GgmlType wt = GgmlType::Q8_0, ft = GgmlType::Q4_0;
    t.matrix("token_embd.weight", e, n_vocab, wt, 4.0f);
    t.vector("token_embd_norm.weight", e, 1.0f, 0.2f);
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        if (attention[il]) {
            t.matrix(p + "attn_q.weight", e, n_head * hd, wt, 2.0f);
            t.matrix(p + "attn_k.weight", e, n_head_kv * hd, wt, 2.0f);
            t.matrix(p + "attn_v.weight", e, n_head_kv * hd, wt);
            t.vector(p + "attn_q_norm.weight", hd, 1.0f, 0.2f);
            t.vector(p + "attn_k_norm.weight", hd, 1.0f, 0.2f);
            t.matrix(p + "attn_output.weight", n_head * hd, e, wt);
        } else {
            t.tensor(p + "shortconv.conv.weight", {static_cast<uint64_t>(l_cache), static_cast<uint64_t>(e)},
                     [](float u) { return 0.7f * u; });
            t.matrix(p + "shortconv.in_proj.weight", e, 3 * e, wt, 2.0f);
            t.matrix(p + "shortconv.out_proj.weight", e, e, wt);
        }
        t.vector(p + "ffn_norm.weight", e, 1.0f, 0.2f);
        t.matrix(p + "ffn_gate.weight", e, n_ff, ft);
        t.matrix(p + "ffn_up.weight", e, n_ff, ft);
        t.matrix(p + "ffn_down.weight", n_ff, e, ft);
    }
    t.writer().write(path);
}

// The gated delta-net hybrids: three delta-net layers then one gated
// full-attention layer (full_attention_interval 4), 2 key / 4 value heads of 16
// (so qwen35's tiled and qwen3next's grouped head layouts differ). qwen35: a
// SwiGLU FFN after each; the MoE families: 8 experts of width 64, top 2, router
// tie 2/3, and a sigmoid-gated shared expert of width 128.
struct DeltaNetRecipe {
    std::string family, arch, description;
    bool experts = false;
    bool grouped = false;  // qwen3next's layout: ssm_ba, no IMROPE sections
    bool qkvz = false;     // qwen3next as older converters wrote it: ssm_in in place of attn_qkv + attn_gate
    GgmlType wt = GgmlType::Q8_0, ft = GgmlType::Q4_0;
    int n_nextn = 0;       // multi-token-prediction blocks after the trunk (write_delta_net_nextn)
};

const std::vector<DeltaNetRecipe>& delta_net_recipes() {
    using T = GgmlType;
    static const std::vector<DeltaNetRecipe> r = {
        {"qwen35", "qwen35", "Qwen 3.5 dense: 3 gated delta-net layers (2 key / 4 value heads of 16) + 1 gated attention layer "
                             "(GQA 4/2, head 32, 16 rotated dims, IMROPE sections), SwiGLU FFN; Q8_0 / Q4_0"},
        {"qwen35moe", "qwen35moe", "Qwen 3.5 MoE: qwen35's layers, 8 experts top-2 renormalized (tie 2/3) + sigmoid-gated "
                                   "shared expert; Q8_0", true, false, false, T::Q8_0, T::Q8_0},
        {"qwen35moe@float", "qwen35moe", "qwen35moe in F32", true, false, false, T::F32, T::F32},
        {"qwen3next", "qwen3next", "Qwen3-Next: qwen35moe's stack with NEOX RoPE, value heads grouped by key head, fused "
                                   "ssm_ba; Q8_0", true, true, false, T::Q8_0, T::Q8_0},
        {"qwen3next@float", "qwen3next", "qwen3next in F32", true, true, false, T::F32, T::F32},
        {"qwen3next@ssm_in", "qwen3next", "qwen3next as older converters wrote it (one ssm_in of q, k, v, z per key head); F32",
         true, true, true, T::F32, T::F32},
        {"qwen35@mtp", "qwen35", "Qwen 3.5 / 3.6 with its MTP block: qwen35's 4 layers + 1 gated full-attention block with a "
                                 "SwiGLU FFN and nextn.eh_proj / enorm / hnorm / shared_head_norm (the trunk's embedding and "
                                 "head); F32", false, false, false, T::F32, T::F32, 1},
        {"qwen35moe@mtp", "qwen35moe", "qwen35moe in F32 with an MTP block of experts and the gated shared expert", true, false,
         false, T::F32, T::F32, 1},
    };
    return r;
}

const DeltaNetRecipe* delta_net_recipe(const std::string& family) {
    for (const auto& r : delta_net_recipes())
        if (r.family == family) return &r;
    return nullptr;
}

// A Qwen 3.5 MTP block's own tensors (beside its attention block and FFN).
void write_delta_net_nextn(TinyWriter& t, const std::string& p, int64_t e, GgmlType type) {
    t.matrix(p + "nextn.eh_proj.weight", 2 * e, e, type, 2.0f);
    t.vector(p + "nextn.enorm.weight", e, 1.0f, 0.2f);
    t.vector(p + "nextn.hnorm.weight", e, 1.0f, 0.2f);
    t.vector(p + "nextn.shared_head_norm.weight", e, 1.0f, 0.2f);
}

void write_delta_net_model(const DeltaNetRecipe& r, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string& family = r.arch;
    using u64 = uint64_t;
    const int n_layer = 4, e = 64, n_head = 4, n_head_kv = 2, hd = 32, n_ff = 128, n_rot = 16;
    const int d_conv = 4, d_state = 16, n_k = 2, n_v = 4, d_inner = n_v * d_state, n_conv = d_inner + 2 * n_k * d_state;
    const int n_expert = 8, n_used = 2, n_ff_exp = 64, n_ff_shexp = 128, tie = 2;
    TinyWriter t(family, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(family));
    md.add("general.name", Value::string("kiln tiny " + family));
    t.key("context_length", Value::u32(512));
    t.key("embedding_length", Value::u32(e));
    t.key("block_count", Value::u32(n_layer + r.n_nextn));
    if (r.n_nextn > 0) t.key("nextn_predict_layers", Value::u32(r.n_nextn));
    t.key("feed_forward_length", Value::u32(n_ff));
    t.key("attention.head_count", Value::u32(n_head));
    t.key("attention.head_count_kv", Value::u32(n_head_kv));
    t.key("attention.key_length", Value::u32(hd));
    t.key("attention.value_length", Value::u32(hd));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    t.key("rope.freq_base", Value::f32(10000000.0f));
    t.key("rope.dimension_count", Value::u32(n_rot));
    if (!r.grouped)
        t.key("rope.dimension_sections",
              Value::array(gguf::ValueType::I32, {Value::i32(3), Value::i32(3), Value::i32(2), Value::i32(0)}));
    t.key("full_attention_interval", Value::u32(4));
    t.key("ssm.conv_kernel", Value::u32(d_conv));
    t.key("ssm.inner_size", Value::u32(d_inner));
    t.key("ssm.state_size", Value::u32(d_state));
    t.key("ssm.time_step_rank", Value::u32(n_v));
    t.key("ssm.group_count", Value::u32(n_k));
    if (r.experts) {
        t.key("expert_count", Value::u32(n_expert));
        t.key("expert_used_count", Value::u32(n_used));
        t.key("expert_feed_forward_length", Value::u32(n_ff_exp));
        t.key("expert_shared_feed_forward_length", Value::u32(n_ff_shexp));
    }
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);
    const GgmlType wt = r.wt, ft = r.ft;
    t.matrix("token_embd.weight", e, n_vocab, wt, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    for (int il = 0; il < n_layer + r.n_nextn; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        if (il >= n_layer) write_delta_net_nextn(t, p, e, wt);
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        if ((il + 1) % 4 == 0 || il >= n_layer) {
            t.matrix(p + "attn_q.weight", e, 2 * n_head * hd, wt, 2.0f);
            t.matrix(p + "attn_k.weight", e, n_head_kv * hd, wt, 2.0f);
            t.matrix(p + "attn_v.weight", e, n_head_kv * hd, wt);
            t.vector(p + "attn_q_norm.weight", hd, 1.0f, 0.2f);
            t.vector(p + "attn_k_norm.weight", hd, 1.0f, 0.2f);
            t.matrix(p + "attn_output.weight", n_head * hd, e, wt);
        } else {
            if (r.qkvz) {
                t.matrix(p + "ssm_in.weight", e, n_conv + d_inner, wt, 2.0f);
            } else {
                t.matrix(p + "attn_qkv.weight", e, n_conv, wt, 2.0f);
                t.matrix(p + "attn_gate.weight", e, d_inner, wt, 2.0f);
            }
            t.tensor(p + "ssm_conv1d.weight", {static_cast<u64>(d_conv), static_cast<u64>(n_conv)}, [](float u) { return 0.6f * u; });
            t.tensor(p + "ssm_dt.bias", {static_cast<u64>(n_v)}, [](float u) { return 0.5f * u; });
            t.tensor(p + "ssm_a", {static_cast<u64>(n_v)}, [](float u) { return -std::exp(u); });
            if (r.grouped) {
                t.matrix(p + "ssm_ba.weight", e, 2 * n_v, wt, 2.0f);
            } else {
                t.matrix(p + "ssm_beta.weight", e, n_v, wt, 2.0f);
                t.matrix(p + "ssm_alpha.weight", e, n_v, wt, 2.0f);
            }
            t.vector(p + "ssm_norm.weight", d_state, 1.0f, 0.2f);
            t.matrix(p + "ssm_out.weight", d_inner, e, wt);
        }
        t.vector(p + "post_attention_norm.weight", e, 1.0f, 0.2f);
        if (r.experts) {
            t.router(p + "ffn_gate_inp.weight", e, n_expert, tie, 4.0f);
            t.experts(p + "ffn_gate_exps.weight", e, n_ff_exp, n_expert, ft);
            t.experts(p + "ffn_up_exps.weight", e, n_ff_exp, n_expert, ft);
            t.experts(p + "ffn_down_exps.weight", n_ff_exp, e, n_expert, ft);
            t.vector(p + "ffn_gate_inp_shexp.weight", e, 0.0f, 0.5f);
            t.matrix(p + "ffn_gate_shexp.weight", e, n_ff_shexp, ft);
            t.matrix(p + "ffn_up_shexp.weight", e, n_ff_shexp, ft);
            t.matrix(p + "ffn_down_shexp.weight", n_ff_shexp, e, ft);
        } else {
            t.matrix(p + "ffn_gate.weight", e, n_ff, ft);
            t.matrix(p + "ffn_up.weight", e, n_ff, ft);
            t.matrix(p + "ffn_down.weight", n_ff, e, ft);
        }
    }
    t.writer().write(path);
}

// nemotron_h: Mamba-2, ReLU² FFN, attention (no RoPE), ReLU² FFN, Mamba-2, each
// layer its block alone. nemotron_h_moe: the FFN layers are 8 ungated ReLU²
// experts of 64 (sigmoid routing with exp_probs_b, top 2 renormalized, scale 2.5)
// plus an ungated shared expert of 128.
struct NemotronRecipe {
    std::string family, arch, description;
    bool experts = false;
    GgmlType wt = GgmlType::Q8_0, ft = GgmlType::Q4_0;
};

const std::vector<NemotronRecipe>& nemotron_recipes() {
    using T = GgmlType;
    static const std::vector<NemotronRecipe> r = {
        {"nemotron_h", "nemotron_h", "Nemotron-H dense: Mamba-2 / ReLU² FFN / attention without RoPE / FFN / Mamba-2, "
                                     "one block per layer; Q8_0 / Q4_0"},
        {"nemotron_h_moe", "nemotron_h_moe", "Nemotron-H MoE: nemotron_h's layers with 8 ungated ReLU² experts top-2 (sigmoid, "
                                             "exp_probs_b, renormalized, scale 2.5) + an ungated shared expert; Q8_0",
         true, T::Q8_0, T::Q8_0},
        {"nemotron_h_moe@float", "nemotron_h_moe", "nemotron_h_moe in F32", true, T::F32, T::F32},
    };
    return r;
}

const NemotronRecipe* nemotron_recipe(const std::string& family) {
    for (const auto& r : nemotron_recipes())
        if (r.family == family) return &r;
    return nullptr;
}

void write_nemotron_h_model(const NemotronRecipe& r, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string& family = r.arch;
    using u64 = uint64_t;
    const int n_expert = 8, n_used = 2, n_ff_exp = 64, n_ff_shexp = 128;
    const int n_layer = 5, e = 64, n_head = 4, n_head_kv = 2, hd = 16, n_ff = 128;
    const int d_conv = 4, d_inner = 128, d_state = 16, n_ssm_head = 8, n_group = 2, n_conv = d_inner + 2 * n_group * d_state;
    const char kinds[n_layer + 1] = "M-*-M";
    TinyWriter t(family, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(family));
    md.add("general.name", Value::string("kiln tiny " + family));
    t.key("context_length", Value::u32(512));
    t.key("embedding_length", Value::u32(e));
    t.key("block_count", Value::u32(n_layer));
    std::vector<Value> kv, ff;
    for (int il = 0; il < n_layer; ++il) {
        kv.push_back(Value::u32(kinds[il] == '*' ? n_head_kv : 0));
        ff.push_back(Value::u32(kinds[il] == '-' ? n_ff : 0));
    }
    t.key("attention.head_count", Value::u32(n_head));
    t.key("attention.head_count_kv", Value::array(gguf::ValueType::U32, kv));
    t.key("feed_forward_length", Value::array(gguf::ValueType::U32, ff));
    t.key("attention.layer_norm_epsilon", Value::f32(1e-5f));
    t.key("ssm.conv_kernel", Value::u32(d_conv));
    t.key("ssm.inner_size", Value::u32(d_inner));
    t.key("ssm.state_size", Value::u32(d_state));
    t.key("ssm.time_step_rank", Value::u32(n_ssm_head));
    t.key("ssm.group_count", Value::u32(n_group));
    if (r.experts) {
        t.key("expert_count", Value::u32(n_expert));
        t.key("expert_used_count", Value::u32(n_used));
        t.key("expert_feed_forward_length", Value::u32(n_ff_exp));
        t.key("expert_shared_feed_forward_length", Value::u32(n_ff_shexp));
        t.key("expert_weights_norm", Value::boolean(true));
        t.key("expert_weights_scale", Value::f32(2.5f));
    }
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);
    const GgmlType wt = r.wt, ft = r.ft;
    t.matrix("token_embd.weight", e, n_vocab, wt, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    t.matrix("output.weight", e, n_vocab, wt, 2.0f);
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        if (kinds[il] == 'M') {
            t.matrix(p + "ssm_in.weight", e, d_inner + n_conv + n_ssm_head, wt, 2.0f);
            t.tensor(p + "ssm_conv1d.weight", {static_cast<u64>(d_conv), static_cast<u64>(n_conv)}, [](float u) { return 0.6f * u; });
            t.vector(p + "ssm_conv1d.bias", n_conv, 0.0f, 0.2f);
            t.tensor(p + "ssm_dt.bias", {static_cast<u64>(n_ssm_head)}, [](float u) { return -2.5f + 1.5f * u; });
            t.tensor(p + "ssm_a", {1, static_cast<u64>(n_ssm_head)}, [](float u) { return -std::exp(u); });
            t.tensor(p + "ssm_d", {1, static_cast<u64>(n_ssm_head)}, [](float u) { return 1.0f + 0.5f * u; });
            t.tensor(p + "ssm_norm.weight", {static_cast<u64>(d_inner / n_group), static_cast<u64>(n_group)},
                     [](float u) { return 1.0f + 0.2f * u; });
            t.matrix(p + "ssm_out.weight", d_inner, e, wt);
        } else if (kinds[il] == '*') {
            t.matrix(p + "attn_q.weight", e, n_head * hd, wt, 2.0f);
            t.matrix(p + "attn_k.weight", e, n_head_kv * hd, wt, 2.0f);
            t.matrix(p + "attn_v.weight", e, n_head_kv * hd, wt);
            t.matrix(p + "attn_output.weight", n_head * hd, e, wt);
        } else if (r.experts) {
            t.router(p + "ffn_gate_inp.weight", e, n_expert, -1, 4.0f);
            t.vector(p + "exp_probs_b.bias", n_expert, 0.0f, 0.3f);
            t.experts(p + "ffn_up_exps.weight", e, n_ff_exp, n_expert, ft, 2.0f);
            t.experts(p + "ffn_down_exps.weight", n_ff_exp, e, n_expert, ft);
            t.matrix(p + "ffn_up_shexp.weight", e, n_ff_shexp, ft, 2.0f);
            t.matrix(p + "ffn_down_shexp.weight", n_ff_shexp, e, ft);
        } else {
            t.matrix(p + "ffn_up.weight", e, n_ff, ft, 2.0f);
            t.matrix(p + "ffn_down.weight", n_ff, e, ft);
        }
    }
    t.writer().write(path);
}

// falcon-h1: 3 layers, each attention (NEOX RoPE, GQA 4/2, head 16) and Mamba-2
// (8 heads of 16, 1 group, state 16) side by side, then a SwiGLU FFN; tensors
// as llama.cpp's converter writes them (the µP multipliers folded in). @float:
// F32, without ssm_norm (the unnormed gate), with FFN biases.
struct FalconH1Recipe {
    std::string family, description;
    bool ssm_norm = true, ffn_bias = false;
    GgmlType wt = GgmlType::Q8_0;
};

const std::vector<FalconH1Recipe>& falcon_h1_recipes() {
    using T = GgmlType;
    static const std::vector<FalconH1Recipe> r = {
        {"falcon-h1", "Falcon-H1: attention (NEOX RoPE) and Mamba-2 side by side in every layer, SwiGLU FFN; Q8_0", true, false, T::Q8_0},
        {"falcon-h1@float", "falcon-h1 in F32 without ssm_norm, with FFN biases", false, true, T::F32},
    };
    return r;
}

const FalconH1Recipe* falcon_h1_recipe(const std::string& family) {
    for (const auto& r : falcon_h1_recipes())
        if (r.family == family) return &r;
    return nullptr;
}

void write_falcon_h1_model(const FalconH1Recipe& r, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string family = "falcon-h1";
    using u64 = uint64_t;
    const int n_layer = 3, e = 64, n_head = 4, n_head_kv = 2, hd = 16, n_ff = 128;
    const int d_conv = 4, d_inner = 128, d_state = 16, n_ssm_head = 8, n_group = 1, n_conv = d_inner + 2 * n_group * d_state;
    TinyWriter t(family, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(family));
    md.add("general.name", Value::string("kiln tiny " + family));
    t.key("context_length", Value::u32(512));
    t.key("embedding_length", Value::u32(e));
    t.key("block_count", Value::u32(n_layer));
    t.key("feed_forward_length", Value::u32(n_ff));
    t.key("attention.head_count", Value::u32(n_head));
    t.key("attention.head_count_kv", Value::u32(n_head_kv));
    t.key("attention.key_length", Value::u32(hd));
    t.key("attention.value_length", Value::u32(hd));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-5f));
    t.key("rope.freq_base", Value::f32(10000.0f));
    t.key("ssm.conv_kernel", Value::u32(d_conv));
    t.key("ssm.inner_size", Value::u32(d_inner));
    t.key("ssm.state_size", Value::u32(d_state));
    t.key("ssm.time_step_rank", Value::u32(n_ssm_head));
    t.key("ssm.group_count", Value::u32(n_group));
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);
    const GgmlType wt = r.wt;
    t.matrix("token_embd.weight", e, n_vocab, wt, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    t.matrix("output.weight", e, n_vocab, wt, 2.0f);
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        t.matrix(p + "attn_q.weight", e, n_head * hd, wt, 2.0f);
        t.matrix(p + "attn_k.weight", e, n_head_kv * hd, wt, 2.0f);
        t.matrix(p + "attn_v.weight", e, n_head_kv * hd, wt);
        t.matrix(p + "attn_output.weight", n_head * hd, e, wt);
        t.matrix(p + "ssm_in.weight", e, d_inner + n_conv + n_ssm_head, wt, 2.0f);
        t.tensor(p + "ssm_conv1d.weight", {static_cast<u64>(d_conv), static_cast<u64>(n_conv)}, [](float u) { return 0.6f * u; });
        t.vector(p + "ssm_conv1d.bias", n_conv, 0.0f, 0.2f);
        t.tensor(p + "ssm_dt.bias", {static_cast<u64>(n_ssm_head)}, [](float u) { return -2.5f + 1.5f * u; });
        t.tensor(p + "ssm_a", {1, static_cast<u64>(n_ssm_head)}, [](float u) { return -std::exp(u); });
        t.tensor(p + "ssm_d", {1, static_cast<u64>(n_ssm_head)}, [](float u) { return 1.0f + 0.5f * u; });
        if (r.ssm_norm)
            t.tensor(p + "ssm_norm.weight", {static_cast<u64>(d_inner / n_group), static_cast<u64>(n_group)},
                     [](float u) { return 1.0f + 0.2f * u; });
        t.matrix(p + "ssm_out.weight", d_inner, e, wt);
        t.vector(p + "ffn_norm", e, 1.0f, 0.2f);  // no ".weight": the converter maps the HF name whole
        t.matrix(p + "ffn_gate.weight", e, n_ff, wt);
        t.matrix(p + "ffn_up.weight", e, n_ff, wt);
        t.matrix(p + "ffn_down.weight", n_ff, e, wt);
        if (r.ffn_bias) {
            t.vector(p + "ffn_gate.bias", n_ff, 0.0f, 0.5f);
            t.vector(p + "ffn_up.bias", n_ff, 0.0f, 0.5f);
            t.vector(p + "ffn_down.bias", e, 0.0f, 0.5f);
        }
    }
    t.writer().write(path);
}

// jamba: Mamba-1 (inner 128, state 16, dt rank 4, dt / B / C norms) with a
// dense FFN, Mamba-1 with experts, attention (no positions, GQA 4/2) with a dense
// FFN, Mamba-1 with experts; 8 SwiGLU experts of 128 top-2 not renormalized (tie 2/3).
void write_jamba_model(GgmlType wt, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string family = "jamba";
    using u64 = uint64_t;
    const int n_layer = 4, e = 64, n_head = 4, n_head_kv = 2, hd = 16, n_ff = 128;
    const int d_conv = 4, d_inner = 2 * e, d_state = 16, dt_rank = 4;
    const int n_expert = 8, n_used = 2, tie = 2;
    const char kinds[n_layer + 1] = "MM*M";
    const bool moe[n_layer] = {false, true, false, true};
    TinyWriter t(family, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(family));
    md.add("general.name", Value::string("kiln tiny " + family));
    t.key("context_length", Value::u32(512));
    t.key("embedding_length", Value::u32(e));
    t.key("block_count", Value::u32(n_layer));
    std::vector<Value> kv;
    for (int il = 0; il < n_layer; ++il) kv.push_back(Value::u32(kinds[il] == '*' ? n_head_kv : 0));
    t.key("attention.head_count", Value::u32(n_head));
    t.key("attention.head_count_kv", Value::array(gguf::ValueType::U32, kv));
    t.key("feed_forward_length", Value::u32(n_ff));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    t.key("ssm.conv_kernel", Value::u32(d_conv));
    t.key("ssm.inner_size", Value::u32(d_inner));
    t.key("ssm.state_size", Value::u32(d_state));
    t.key("ssm.time_step_rank", Value::u32(dt_rank));
    t.key("expert_count", Value::u32(n_expert));
    t.key("expert_used_count", Value::u32(n_used));
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);
    t.matrix("token_embd.weight", e, n_vocab, wt, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    t.matrix("output.weight", e, n_vocab, wt, 2.0f);
    auto neg_exp = [](float u) { return -std::exp(u); };
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        if (kinds[il] == 'M') {
            t.matrix(p + "ssm_in.weight", e, 2 * d_inner, wt, 2.0f);
            t.tensor(p + "ssm_conv1d.weight", {static_cast<u64>(d_conv), static_cast<u64>(d_inner)}, [](float u) { return 0.6f * u; });
            t.vector(p + "ssm_conv1d.bias", d_inner, 0.0f, 0.2f);
            t.matrix(p + "ssm_x.weight", d_inner, dt_rank + 2 * d_state, wt, 2.0f);
            t.vector(p + "ssm_dt_norm.weight", dt_rank, 1.0f, 0.2f);
            t.vector(p + "ssm_b_norm.weight", d_state, 1.0f, 0.2f);
            t.vector(p + "ssm_c_norm.weight", d_state, 1.0f, 0.2f);
            t.matrix(p + "ssm_dt.weight", dt_rank, d_inner, GgmlType::F32, 0.5f);
            t.tensor(p + "ssm_dt.bias", {static_cast<u64>(d_inner)}, [](float u) { return -2.5f + 1.5f * u; });
            t.tensor(p + "ssm_a", {static_cast<u64>(d_state), static_cast<u64>(d_inner)}, neg_exp);
            t.vector(p + "ssm_d", d_inner, 1.0f, 0.5f);
            t.matrix(p + "ssm_out.weight", d_inner, e, wt);
        } else {
            t.matrix(p + "attn_q.weight", e, n_head * hd, wt, 2.0f);
            t.matrix(p + "attn_k.weight", e, n_head_kv * hd, wt, 2.0f);
            t.matrix(p + "attn_v.weight", e, n_head_kv * hd, wt);
            t.matrix(p + "attn_output.weight", n_head * hd, e, wt);
        }
        t.vector(p + "ffn_norm.weight", e, 1.0f, 0.2f);
        if (moe[il]) {
            t.router(p + "ffn_gate_inp.weight", e, n_expert, tie, 4.0f);
            t.experts(p + "ffn_gate_exps.weight", e, n_ff, n_expert, wt);
            t.experts(p + "ffn_up_exps.weight", e, n_ff, n_expert, wt);
            t.experts(p + "ffn_down_exps.weight", n_ff, e, n_expert, wt);
        } else {
            t.matrix(p + "ffn_gate.weight", e, n_ff, wt);
            t.matrix(p + "ffn_up.weight", e, n_ff, wt);
            t.matrix(p + "ffn_down.weight", n_ff, e, wt);
        }
    }
    t.writer().write(path);
}

// rwkv6: 3 RWKV-6 blocks, n_embd 64 in 4 WKV heads of 16, mix / decay low
// ranks 8 / 16, channel mix 128, rescale every 2 layers; tensors as llama.cpp's
// converter writes them (the lerps fused, w2 and the low-rank decay in F32).
void write_rwkv6_model(GgmlType wt, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string family = "rwkv6";
    using u64 = uint64_t;
    const int n_layer = 3, e = 64, hs = 16, nh = e / hs, mix = 8, dec = 16, n_ff = 128;
    TinyWriter t(family, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(family));
    md.add("general.name", Value::string("kiln tiny " + family));
    t.key("context_length", Value::u32(1u << 20));
    t.key("embedding_length", Value::u32(e));
    t.key("block_count", Value::u32(n_layer));
    t.key("attention.layer_norm_epsilon", Value::f32(1e-5f));
    t.key("rescale_every_n_layers", Value::u32(2));
    t.key("wkv.head_size", Value::u32(hs));
    t.key("time_mix_extra_dim", Value::u32(mix));
    t.key("time_decay_extra_dim", Value::u32(dec));
    t.key("feed_forward_length", Value::u32(n_ff));
    t.key("attention.head_count", Value::u32(0));
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);
    t.matrix("token_embd.weight", e, n_vocab, wt, 4.0f);
    t.vector("token_embd_norm.weight", e, 1.0f, 0.2f);
    t.vector("token_embd_norm.bias", e, 0.0f, 0.2f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    t.vector("output_norm.bias", e, 0.0f, 0.2f);
    t.matrix("output.weight", e, n_vocab, wt, 2.0f);
    auto lerp = [](float u) { return 0.5f + 0.4f * u; };
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        t.vector(p + "attn_norm.bias", e, 0.0f, 0.2f);
        t.vector(p + "attn_norm_2.weight", e, 1.0f, 0.2f);
        t.vector(p + "attn_norm_2.bias", e, 0.0f, 0.2f);
        t.tensor(p + "time_mix_lerp_x.weight", {static_cast<u64>(e), 1, 1}, lerp);
        t.matrix(p + "time_mix_w1.weight", e, 5 * mix, wt, 2.0f);
        t.tensor(p + "time_mix_w2.weight", {static_cast<u64>(mix), static_cast<u64>(e), 5}, [](float u) { return 0.3f * u; });
        t.tensor(p + "time_mix_lerp_fused.weight", {static_cast<u64>(e), 1, 1, 5}, lerp);
        t.tensor(p + "time_mix_first.weight", {static_cast<u64>(hs), static_cast<u64>(nh)}, [](float u) { return 0.5f * u; });
        // Decays exp(-exp(d)) between about 0.3 and 0.9.
        t.vector(p + "time_mix_decay.weight", e, -1.0f, 1.0f);
        t.matrix(p + "time_mix_decay_w1.weight", e, dec, wt, 1.0f);
        t.matrix(p + "time_mix_decay_w2.weight", dec, e, GgmlType::F32, 0.5f);
        t.matrix(p + "time_mix_key.weight", e, e, wt, 2.0f);
        t.matrix(p + "time_mix_value.weight", e, e, wt, 2.0f);
        t.matrix(p + "time_mix_receptance.weight", e, e, wt, 2.0f);
        t.matrix(p + "time_mix_gate.weight", e, e, wt, 2.0f);
        t.vector(p + "time_mix_ln.weight", e, 1.0f, 0.2f);
        t.vector(p + "time_mix_ln.bias", e, 0.0f, 0.2f);
        t.matrix(p + "time_mix_output.weight", e, e, wt);
        t.tensor(p + "channel_mix_lerp_k.weight", {static_cast<u64>(e), 1, 1}, lerp);
        t.tensor(p + "channel_mix_lerp_r.weight", {static_cast<u64>(e), 1, 1}, lerp);
        t.matrix(p + "channel_mix_key.weight", e, n_ff, wt, 2.0f);
        t.matrix(p + "channel_mix_value.weight", n_ff, e, wt);
        t.matrix(p + "channel_mix_receptance.weight", e, e, wt, 2.0f);
    }
    t.writer().write(path);
}

// rwkv7: 3 RWKV-7 blocks, n_embd 128 in 2 WKV heads of 64 (ggml's SIMD WKV7
// reads 64 at a time), low ranks decay 16 / iclr 8 / value mix 8 / gate 16,
// channel mix 256; tensors as llama.cpp's converter writes them.
void write_rwkv7_model(GgmlType wt, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string family = "rwkv7";
    using u64 = uint64_t;
    const int n_layer = 3, e = 128, hs = 64, ld = 16, la = 8, lv = 8, lg = 16, n_ff = 256;
    TinyWriter t(family, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(family));
    md.add("general.name", Value::string("kiln tiny " + family));
    t.key("context_length", Value::u32(1u << 20));
    t.key("embedding_length", Value::u32(e));
    t.key("block_count", Value::u32(n_layer));
    t.key("attention.layer_norm_epsilon", Value::f32(1e-5f));
    t.key("wkv.head_size", Value::u32(hs));
    t.key("attention.decay_lora_rank", Value::u32(ld));
    t.key("attention.iclr_lora_rank", Value::u32(la));
    t.key("attention.value_residual_mix_lora_rank", Value::u32(lv));
    t.key("attention.gate_lora_rank", Value::u32(lg));
    t.key("feed_forward_length", Value::u32(n_ff));
    t.key("attention.head_count", Value::u32(0));
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);
    t.matrix("token_embd.weight", e, n_vocab, wt, 4.0f);
    t.vector("token_embd_norm.weight", e, 1.0f, 0.2f);
    t.vector("token_embd_norm.bias", e, 0.0f, 0.2f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    t.vector("output_norm.bias", e, 0.0f, 0.2f);
    t.matrix("output.weight", e, n_vocab, wt, 2.0f);
    auto lerp = [](float u) { return 0.5f + 0.4f * u; };
    // The low-rank matrices stay F32 (their inner sizes are below a block).
    const GgmlType lt = GgmlType::F32;
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        t.vector(p + "attn_norm.bias", e, 0.0f, 0.2f);
        t.vector(p + "attn_norm_2.weight", e, 1.0f, 0.2f);
        t.vector(p + "attn_norm_2.bias", e, 0.0f, 0.2f);
        t.vector(p + "time_mix_w0.weight", e, 0.0f, 1.0f);
        t.matrix(p + "time_mix_w1.weight", e, ld, wt == GgmlType::F32 ? lt : wt, 1.0f);
        t.matrix(p + "time_mix_w2.weight", ld, e, lt, 0.5f);
        t.vector(p + "time_mix_a0.weight", e, 0.0f, 1.0f);
        t.matrix(p + "time_mix_a1.weight", e, la, wt == GgmlType::F32 ? lt : wt, 1.0f);
        t.matrix(p + "time_mix_a2.weight", la, e, lt, 0.5f);
        const int vr = il == 0 ? la : lv;
        t.vector(p + "time_mix_v0.weight", e, 0.0f, 1.0f);
        t.matrix(p + "time_mix_v1.weight", e, vr, wt == GgmlType::F32 ? lt : wt, 1.0f);
        t.matrix(p + "time_mix_v2.weight", vr, e, lt, 0.5f);
        t.matrix(p + "time_mix_g1.weight", e, lg, wt == GgmlType::F32 ? lt : wt, 1.0f);
        t.matrix(p + "time_mix_g2.weight", lg, e, lt, 0.5f);
        t.tensor(p + "time_mix_lerp_fused.weight", {static_cast<u64>(e), 1, 1, 6}, lerp);
        t.vector(p + "time_mix_k_k.weight", e, 1.0f, 0.3f);
        t.vector(p + "time_mix_k_a.weight", e, 1.0f, 0.3f);
        t.vector(p + "time_mix_r_k.weight", e, 0.0f, 0.5f);
        t.matrix(p + "time_mix_key.weight", e, e, wt, 2.0f);
        t.matrix(p + "time_mix_value.weight", e, e, wt, 2.0f);
        t.matrix(p + "time_mix_receptance.weight", e, e, wt, 2.0f);
        t.vector(p + "time_mix_ln.weight", e, 1.0f, 0.2f);
        t.vector(p + "time_mix_ln.bias", e, 0.0f, 0.2f);
        t.matrix(p + "time_mix_output.weight", e, e, wt);
        t.tensor(p + "channel_mix_lerp_k.weight", {static_cast<u64>(e), 1, 1}, lerp);
        t.matrix(p + "channel_mix_key.weight", e, n_ff, wt, 2.0f);
        t.matrix(p + "channel_mix_value.weight", n_ff, e, wt);
    }
    t.writer().write(path);
}

// arwkv7: 3 layers of RWKV-7's time mix (2 WKV heads of 64, low ranks 16 / 8 / 8,
// with the gate (rank 16) and the group norm, or @nogate without either: five
// mixes) each with a SwiGLU FFN of 256, RMS norms, no embedding norm.
void write_arwkv7_model(bool gate, GgmlType wt, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string family = "arwkv7";
    using u64 = uint64_t;
    const int n_layer = 3, e = 128, hs = 64, ld = 16, la = 8, lv = 8, lg = 16, n_ff = 256;
    TinyWriter t(family, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(family));
    md.add("general.name", Value::string(std::string("kiln tiny ") + (gate ? "arwkv7" : "arwkv7@nogate")));
    t.key("context_length", Value::u32(1u << 20));
    t.key("embedding_length", Value::u32(e));
    t.key("block_count", Value::u32(n_layer));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    t.key("wkv.head_size", Value::u32(hs));
    t.key("attention.decay_lora_rank", Value::u32(ld));
    t.key("attention.iclr_lora_rank", Value::u32(la));
    t.key("attention.value_residual_mix_lora_rank", Value::u32(lv));
    if (gate) t.key("attention.gate_lora_rank", Value::u32(lg));
    t.key("feed_forward_length", Value::u32(n_ff));
    t.key("token_shift_count", Value::u32(1));
    t.key("attention.head_count", Value::u32(0));
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);
    t.matrix("token_embd.weight", e, n_vocab, wt, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    t.matrix("output.weight", e, n_vocab, wt, 2.0f);
    auto lerp = [](float u) { return 0.5f + 0.4f * u; };
    const GgmlType lt = GgmlType::F32;  // the low-rank second halves (inner sizes below a block)
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        t.vector(p + "time_mix_w0.weight", e, 0.0f, 1.0f);
        t.matrix(p + "time_mix_w1.weight", e, ld, wt, 1.0f);
        t.matrix(p + "time_mix_w2.weight", ld, e, lt, 0.5f);
        t.vector(p + "time_mix_a0.weight", e, 0.0f, 1.0f);
        t.matrix(p + "time_mix_a1.weight", e, la, wt, 1.0f);
        t.matrix(p + "time_mix_a2.weight", la, e, lt, 0.5f);
        const int vr = il == 0 ? la : lv;
        t.vector(p + "time_mix_v0.weight", e, 0.0f, 1.0f);
        t.matrix(p + "time_mix_v1.weight", e, vr, wt, 1.0f);
        t.matrix(p + "time_mix_v2.weight", vr, e, lt, 0.5f);
        if (gate) {
            t.matrix(p + "time_mix_g1.weight", e, lg, wt, 1.0f);
            t.matrix(p + "time_mix_g2.weight", lg, e, lt, 0.5f);
        }
        t.tensor(p + "time_mix_lerp_fused.weight", {static_cast<u64>(e), 1, 1, gate ? 6u : 5u}, lerp);
        t.vector(p + "time_mix_k_k.weight", e, 1.0f, 0.3f);
        t.vector(p + "time_mix_k_a.weight", e, 1.0f, 0.3f);
        t.vector(p + "time_mix_r_k.weight", e, 0.0f, 0.5f);
        t.matrix(p + "time_mix_key.weight", e, e, wt, 2.0f);
        t.matrix(p + "time_mix_value.weight", e, e, wt, 2.0f);
        t.matrix(p + "time_mix_receptance.weight", e, e, wt, 2.0f);
        if (gate) {
            t.vector(p + "time_mix_ln.weight", e, 1.0f, 0.2f);
            t.vector(p + "time_mix_ln.bias", e, 0.0f, 0.2f);
        }
        t.matrix(p + "time_mix_output.weight", e, e, wt);
        t.vector(p + "ffn_norm.weight", e, 1.0f, 0.2f);
        t.matrix(p + "ffn_gate.weight", e, n_ff, wt);
        t.matrix(p + "ffn_up.weight", e, n_ff, wt);
        t.matrix(p + "ffn_down.weight", n_ff, e, wt);
    }
    t.writer().write(path);
}

// rwkv6qwen2: 3 layers of RWKV-6's time mix (4 WKV heads of 16, K / V of 2
// heads with biases, low ranks 8 / 16) each with a SwiGLU FFN of 128, RMS norms.
void write_rwkv6qwen2_model(GgmlType wt, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string family = "rwkv6qwen2";
    using u64 = uint64_t;
    const int n_layer = 3, e = 64, hs = 16, n_kv = 2, mix = 8, dec = 16, n_ff = 128;
    TinyWriter t(family, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(family));
    md.add("general.name", Value::string("kiln tiny " + family));
    t.key("context_length", Value::u32(1u << 20));
    t.key("embedding_length", Value::u32(e));
    t.key("block_count", Value::u32(n_layer));
    t.key("wkv.head_size", Value::u32(hs));
    t.key("time_mix_extra_dim", Value::u32(mix));
    t.key("time_decay_extra_dim", Value::u32(dec));
    t.key("feed_forward_length", Value::u32(n_ff));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    t.key("token_shift_count", Value::u32(1));
    t.key("attention.head_count_kv", Value::u32(n_kv));
    t.key("attention.head_count", Value::u32(0));
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);
    t.matrix("token_embd.weight", e, n_vocab, wt, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    t.matrix("output.weight", e, n_vocab, wt, 2.0f);
    auto lerp = [](float u) { return 0.5f + 0.4f * u; };
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        t.tensor(p + "time_mix_lerp_x.weight", {static_cast<u64>(e), 1, 1}, lerp);
        t.matrix(p + "time_mix_w1.weight", e, 5 * mix, wt, 2.0f);
        t.tensor(p + "time_mix_w2.weight", {static_cast<u64>(mix), static_cast<u64>(e), 5}, [](float u) { return 0.3f * u; });
        t.tensor(p + "time_mix_lerp_fused.weight", {static_cast<u64>(e), 1, 1, 5}, lerp);
        t.vector(p + "time_mix_decay.weight", e, -1.0f, 1.0f);
        t.matrix(p + "time_mix_decay_w1.weight", e, dec, wt, 1.0f);
        t.matrix(p + "time_mix_decay_w2.weight", dec, e, GgmlType::F32, 0.5f);
        t.matrix(p + "time_mix_key.weight", e, n_kv * hs, wt, 2.0f);
        t.matrix(p + "time_mix_value.weight", e, n_kv * hs, wt, 2.0f);
        t.matrix(p + "time_mix_receptance.weight", e, e, wt, 2.0f);
        t.matrix(p + "time_mix_gate.weight", e, e, wt, 2.0f);
        t.vector(p + "time_mix_key.bias", n_kv * hs, 0.0f, 0.3f);
        t.vector(p + "time_mix_value.bias", n_kv * hs, 0.0f, 0.3f);
        t.vector(p + "time_mix_receptance.bias", e, 0.0f, 0.3f);
        t.matrix(p + "time_mix_output.weight", e, e, wt);
        t.vector(p + "ffn_norm.weight", e, 1.0f, 0.2f);
        t.matrix(p + "ffn_gate.weight", e, n_ff, wt);
        t.matrix(p + "ffn_up.weight", e, n_ff, wt);
        t.matrix(p + "ffn_down.weight", n_ff, e, wt);
    }
    t.writer().write(path);
}

// granitehybrid (Granite 4.0 H): Mamba-2 (8 heads of 16, 1 group), Mamba-2,
// attention (NORM RoPE, GQA 4/2, attention-output bias), Mamba-2, every layer
// followed by an FFN: 8 SwiGLU experts of 64 top-2 renormalized (router tie 2/3)
// + a shared expert of 128, or (@dense) a gated FFN with biases; granite's four
// scales; a separate output head.
struct GraniteHybridRecipe {
    std::string family, description;
    bool experts = true;
    GgmlType wt = GgmlType::Q8_0;
};

const std::vector<GraniteHybridRecipe>& granite_hybrid_recipes() {
    using T = GgmlType;
    static const std::vector<GraniteHybridRecipe> r = {
        {"granitehybrid", "Granite 4.0 H: Mamba-2 / Mamba-2 / attention (NORM RoPE) / Mamba-2, each with 8 experts top-2 "
                          "+ shared expert, granite's four scales; Q8_0", true, T::Q8_0},
        {"granitehybrid@float", "granitehybrid in F32", true, T::F32},
        {"granitehybrid@dense", "granitehybrid with a dense gated FFN with biases (Granite 4.0 H Micro's shape); Q8_0", false, T::Q8_0},
    };
    return r;
}

const GraniteHybridRecipe* granite_hybrid_recipe(const std::string& family) {
    for (const auto& r : granite_hybrid_recipes())
        if (r.family == family) return &r;
    return nullptr;
}

void write_granite_hybrid_model(const GraniteHybridRecipe& r, uint64_t seed, const std::string& tokenizer_source,
                                const std::string& path) {
    const std::string family = "granitehybrid";
    using u64 = uint64_t;
    const int n_layer = 4, e = 64, n_head = 4, n_head_kv = 2, hd = 16;
    const int d_conv = 4, d_inner = 2 * e, d_state = 16, n_ssm_head = 8, n_group = 1, n_conv = d_inner + 2 * n_group * d_state;
    const int n_expert = 8, n_used = 2, n_ff_exp = 64, n_ff_shexp = 128, n_ff_dense = 128, tie = 2;
    const int n_ff = r.experts ? n_ff_exp : n_ff_dense;
    const char kinds[n_layer + 1] = "MM*M";
    TinyWriter t(family, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(family));
    md.add("general.name", Value::string("kiln tiny " + family));
    t.key("context_length", Value::u32(512));
    t.key("embedding_length", Value::u32(e));
    t.key("block_count", Value::u32(n_layer));
    std::vector<Value> kv;
    for (int il = 0; il < n_layer; ++il) kv.push_back(Value::u32(kinds[il] == '*' ? n_head_kv : 0));
    t.key("attention.head_count", Value::u32(n_head));
    t.key("attention.head_count_kv", Value::array(gguf::ValueType::U32, kv));
    t.key("feed_forward_length", Value::u32(n_ff));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-5f));
    t.key("rope.freq_base", Value::f32(10000.0f));
    t.key("logit_scale", Value::f32(3.0f));
    t.key("residual_scale", Value::f32(0.6f));
    t.key("embedding_scale", Value::f32(2.0f));
    t.key("attention.scale", Value::f32(0.15f));
    t.key("ssm.conv_kernel", Value::u32(d_conv));
    t.key("ssm.inner_size", Value::u32(d_inner));
    t.key("ssm.state_size", Value::u32(d_state));
    t.key("ssm.time_step_rank", Value::u32(n_ssm_head));
    t.key("ssm.group_count", Value::u32(n_group));
    if (r.experts) {
        t.key("expert_count", Value::u32(n_expert));
        t.key("expert_used_count", Value::u32(n_used));
        t.key("expert_shared_feed_forward_length", Value::u32(n_ff_shexp));
    }
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);
    const GgmlType wt = r.wt;
    t.matrix("token_embd.weight", e, n_vocab, wt, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    // A separate head: tied to the embedding, with the embedding scaled by 2 in
    // the residual stream, every position's argmax would be its own token.
    t.matrix("output.weight", e, n_vocab, wt, 2.0f);
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        if (kinds[il] == 'M') {
            t.matrix(p + "ssm_in.weight", e, d_inner + n_conv + n_ssm_head, wt, 2.0f);
            t.tensor(p + "ssm_conv1d.weight", {static_cast<u64>(d_conv), static_cast<u64>(n_conv)}, [](float u) { return 0.6f * u; });
            t.vector(p + "ssm_conv1d.bias", n_conv, 0.0f, 0.2f);
            t.tensor(p + "ssm_dt.bias", {static_cast<u64>(n_ssm_head)}, [](float u) { return -2.5f + 1.5f * u; });
            t.tensor(p + "ssm_a", {1, static_cast<u64>(n_ssm_head)}, [](float u) { return -std::exp(u); });
            t.tensor(p + "ssm_d", {1, static_cast<u64>(n_ssm_head)}, [](float u) { return 1.0f + 0.5f * u; });
            t.tensor(p + "ssm_norm.weight", {static_cast<u64>(d_inner / n_group), static_cast<u64>(n_group)},
                     [](float u) { return 1.0f + 0.2f * u; });
            t.matrix(p + "ssm_out.weight", d_inner, e, wt);
        } else {
            t.matrix(p + "attn_q.weight", e, n_head * hd, wt, 2.0f);
            t.matrix(p + "attn_k.weight", e, n_head_kv * hd, wt, 2.0f);
            t.matrix(p + "attn_v.weight", e, n_head_kv * hd, wt);
            t.matrix(p + "attn_output.weight", n_head * hd, e, wt);
            t.vector(p + "attn_output.bias", e, 0.0f, 0.5f);
        }
        t.vector(p + "ffn_norm.weight", e, 1.0f, 0.2f);
        if (r.experts) {
            t.router(p + "ffn_gate_inp.weight", e, n_expert, tie, 4.0f);
            t.experts(p + "ffn_gate_exps.weight", e, n_ff_exp, n_expert, wt);
            t.experts(p + "ffn_up_exps.weight", e, n_ff_exp, n_expert, wt);
            t.experts(p + "ffn_down_exps.weight", n_ff_exp, e, n_expert, wt);
            t.matrix(p + "ffn_gate_shexp.weight", e, n_ff_shexp, wt);
            t.matrix(p + "ffn_up_shexp.weight", e, n_ff_shexp, wt);
            t.matrix(p + "ffn_down_shexp.weight", n_ff_shexp, e, wt);
        } else {
            t.matrix(p + "ffn_gate.weight", e, n_ff_dense, wt);
            t.matrix(p + "ffn_up.weight", e, n_ff_dense, wt);
            t.matrix(p + "ffn_down.weight", n_ff_dense, e, wt);
            t.vector(p + "ffn_gate.bias", n_ff_dense, 0.0f, 0.5f);
            t.vector(p + "ffn_up.bias", n_ff_dense, 0.0f, 0.5f);
            t.vector(p + "ffn_down.bias", e, 0.0f, 0.5f);
        }
    }
    t.writer().write(path);
}

// deepseek2: latent attention (MLA, absorbed: attn_k_b / attn_v_b per head,
// one KV head of kv_lora + rope values), YaRN with yarn_log_multiplier, one
// leading dense block, then expert layers with shared experts and grouped
// routing, keys and tensors as llama.cpp's converter writes them.
struct Deepseek2Recipe {
    std::string family, description;
    int n_layer, e, n_head, kv_lora, q_lora, rot, nope, dv, n_ff, n_ff_exp, n_shared, n_expert, n_used, n_group, n_group_used;
    int gating;          // expert_gating_func: 1 softmax, 2 sigmoid
    bool norm, probs_bias, tied;
    float weights_scale;
    int tie;
    GgmlType attn, ffn, shexp, embd;
    int n_nextn = 0;  // multi-token-prediction blocks after the trunk (nextn_predict_layers; write_deepseek2_nextn)
};

const std::vector<Deepseek2Recipe>& deepseek2_recipes() {
    using T = GgmlType;
    static const std::vector<Deepseek2Recipe> r = {
        {"deepseek2", "DeepSeek-V2 style: q_lora 48, kv_lora 32 + 16 rotated, heads 4 x (32 + 16) / 32, YaRN x4 over 16 "
                      "with yarn_log_multiplier, 1 dense + 2 expert layers: 16 experts top 3 by softmax in 4 groups (2 "
                      "used), not renormalized, scale 2.5, 2 shared experts, separate output head; F32",
         3, 64, 4, 32, 48, 16, 32, 32, 128, 32, 2, 16, 3, 4, 2, 1, false, false, false, 2.5f, 4,
         T::F32, T::F32, T::F32, T::F32},
        // The quantized models have two layers (1 dense + 1 expert): with three,
        // the rounding (f16 softmax weights and 8-bit activations flipping on last
        // bits, amplified by the norms of these random blocks) grew to 1.1% (Q8_0)
        // and 1.4% (Q4_K) of the largest logit, and with Q4_K one token's second
        // expert, a near-tie (0.0014 apart after the bias), flipped (2.5 off).
        {"deepseek2@v3", "DeepSeek-V3 routing without q_lora (V2-Lite's attn_q), 1 dense + 1 expert layer: kv_lora 64 + 32 "
                         "rotated, heads 4 x (64 + 32) / 64, sigmoid gating with the exp_probs_b selection bias, 8 experts top 2 in 4 groups (2 used), "
                         "renormalized, scale 2.5, 1 shared expert, tied output; Q8_0",
         2, 256, 4, 64, 0, 32, 64, 64, 256, 256, 1, 8, 2, 4, 2, 2, true, true, true, 2.5f, 2,
         T::Q8_0, T::Q8_0, T::Q8_0, T::Q8_0},
        {"deepseek2@q4_k", "deepseek2@v3 with Q4_K experts and dense FFN; Q8_0 attention and shared expert",
         2, 256, 4, 64, 0, 32, 64, 64, 256, 256, 1, 8, 2, 4, 2, 2, true, true, true, 2.5f, 2,
         T::Q8_0, T::Q4_K, T::Q8_0, T::Q8_0},
        // llama.cpp's deepseek2 MTP graph wants q_lora, an expert block and a shared expert.
        {"deepseek2@nextn", "DeepSeek-V3-like with a NextN block: deepseek2's V2 shapes (q_lora 48, kv_lora 32 + 16), sigmoid "
                            "gating with exp_probs_b, renormalized, 1 dense + 1 expert layer + 1 MTP block (an expert layer "
                            "with nextn.eh_proj / enorm / hnorm and its own embed_tokens, shared_head_norm and "
                            "shared_head_head), separate output head; F32",
         2, 64, 4, 32, 48, 16, 32, 32, 128, 32, 1, 16, 3, 4, 2, 2, true, true, false, 2.5f, 4,
         T::F32, T::F32, T::F32, T::F32, 1},
    };
    return r;
}

const Deepseek2Recipe* deepseek2_recipe(const std::string& family) {
    for (const auto& r : deepseek2_recipes())
        if (r.family == family) return &r;
    return nullptr;
}

// A NextN block's own tensors (DeepSeek-V3's converted names), every optional one
// included: its token embedding, head norm and output head.
void write_deepseek2_nextn(TinyWriter& t, const std::string& p, int64_t e, int64_t n_vocab, GgmlType type) {
    t.matrix(p + "nextn.eh_proj.weight", 2 * e, e, type, 2.0f);
    t.vector(p + "nextn.enorm.weight", e, 1.0f, 0.2f);
    t.vector(p + "nextn.hnorm.weight", e, 1.0f, 0.2f);
    t.matrix(p + "nextn.embed_tokens.weight", e, n_vocab, type, 4.0f);
    t.vector(p + "nextn.shared_head_norm.weight", e, 1.0f, 0.2f);
    t.matrix(p + "nextn.shared_head_head.weight", e, n_vocab, type, 2.0f);
}

void write_deepseek2_model(const Deepseek2Recipe& r, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string arch = "deepseek2";
    using u64 = uint64_t;
    TinyWriter t(arch, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(arch));
    md.add("general.name", Value::string("kiln tiny " + r.family));
    auto u32 = [](int v) { return Value::u32(static_cast<uint32_t>(v)); };
    t.key("context_length", u32(512));
    t.key("embedding_length", u32(r.e));
    t.key("block_count", u32(r.n_layer + r.n_nextn));
    if (r.n_nextn > 0) t.key("nextn_predict_layers", u32(r.n_nextn));
    t.key("feed_forward_length", u32(r.n_ff));
    t.key("attention.head_count", u32(r.n_head));
    t.key("attention.head_count_kv", u32(1));
    t.key("attention.key_length", u32(r.kv_lora + r.rot));
    t.key("attention.value_length", u32(r.kv_lora));
    t.key("attention.key_length_mla", u32(r.nope + r.rot));
    t.key("attention.value_length_mla", u32(r.dv));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    t.key("attention.q_lora_rank", u32(r.q_lora));
    t.key("attention.kv_lora_rank", u32(r.kv_lora));
    t.key("rope.freq_base", Value::f32(10000.0f));
    t.key("rope.dimension_count", u32(r.rot));
    t.key("rope.scaling.type", Value::string("yarn"));
    t.key("rope.scaling.factor", Value::f32(4.0f));
    t.key("rope.scaling.original_context_length", u32(16));
    t.key("rope.scaling.yarn_log_multiplier", Value::f32(0.0707f));
    t.key("leading_dense_block_count", u32(1));
    t.key("expert_count", u32(r.n_expert));
    t.key("expert_used_count", u32(r.n_used));
    t.key("expert_feed_forward_length", u32(r.n_ff_exp));
    t.key("expert_shared_count", u32(r.n_shared));
    t.key("expert_weights_scale", Value::f32(r.weights_scale));
    t.key("expert_weights_norm", Value::boolean(r.norm));
    t.key("expert_gating_func", u32(r.gating));
    t.key("expert_group_count", u32(r.n_group));
    t.key("expert_group_used_count", u32(r.n_group_used));
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);

    const int64_t e = r.e, nh = r.n_head, dqk = r.nope + r.rot;
    t.matrix("token_embd.weight", e, n_vocab, r.embd, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    if (!r.tied) t.matrix("output.weight", e, n_vocab, r.embd, 2.0f);
    for (int il = 0; il < r.n_layer + r.n_nextn; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        if (il >= r.n_layer) write_deepseek2_nextn(t, p, e, n_vocab, r.attn);
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        if (r.q_lora > 0) {
            t.matrix(p + "attn_q_a.weight", e, r.q_lora, r.attn, 2.0f);
            t.vector(p + "attn_q_a_norm.weight", r.q_lora, 1.0f, 0.2f);
            t.matrix(p + "attn_q_b.weight", r.q_lora, nh * dqk, r.attn, 2.0f);
        } else {
            t.matrix(p + "attn_q.weight", e, nh * dqk, r.attn, 2.0f);
        }
        t.matrix(p + "attn_kv_a_mqa.weight", e, r.kv_lora + r.rot, r.attn, 2.0f);
        t.vector(p + "attn_kv_a_norm.weight", r.kv_lora, 1.0f, 0.2f);
        t.experts(p + "attn_k_b.weight", r.nope, r.kv_lora, nh, r.attn, 2.0f);
        t.experts(p + "attn_v_b.weight", r.kv_lora, r.dv, nh, r.attn);
        t.matrix(p + "attn_output.weight", nh * r.dv, e, r.attn);
        t.vector(p + "ffn_norm.weight", e, 1.0f, 0.2f);
        if (il == 0) {  // the leading dense block
            t.matrix(p + "ffn_gate.weight", e, r.n_ff, r.ffn);
            t.matrix(p + "ffn_up.weight", e, r.n_ff, r.ffn);
            t.matrix(p + "ffn_down.weight", r.n_ff, e, r.ffn);
            continue;
        }
        t.router(p + "ffn_gate_inp.weight", e, r.n_expert, r.tie, 4.0f);
        if (r.probs_bias) {  // the tied pair keeps equal biases
            std::vector<float> pb(static_cast<size_t>(r.n_expert));
            t.fill(pb, 0.0f, 0.3f);
            pb[static_cast<size_t>(r.tie + 1)] = pb[static_cast<size_t>(r.tie)];
            t.raw(p + "exp_probs_b.bias", {static_cast<u64>(r.n_expert)}, pb);
        }
        t.experts(p + "ffn_gate_exps.weight", e, r.n_ff_exp, r.n_expert, r.ffn);
        t.experts(p + "ffn_up_exps.weight", e, r.n_ff_exp, r.n_expert, r.ffn);
        t.experts(p + "ffn_down_exps.weight", r.n_ff_exp, e, r.n_expert, r.ffn);
        const int64_t sff = static_cast<int64_t>(r.n_ff_exp) * r.n_shared;
        t.matrix(p + "ffn_gate_shexp.weight", e, sff, r.shexp);
        t.matrix(p + "ffn_up_shexp.weight", e, sff, r.shexp);
        t.matrix(p + "ffn_down_shexp.weight", sff, e, r.shexp);
    }
    t.writer().write(path);
}

// gemma4: sliding and full layers with their own head sizes, KV heads and RoPE
// (the full layers' proportional RoPE through rope_freqs), K as V where a layer
// has no attn_v, Q/K norms, post-norms, layer_output_scale; E2B-style variants
// add shared-KV layers, per-layer embeddings and per-layer FFN widths. Every
// optional tensor llama.cpp's graph reads (weight and input scales of the
// attention and FFN matrices) is present.
struct Gemma4Recipe {
    std::string family, description;
    std::string pattern;  // per layer: S sliding, F full
    int e, n_head, kv_swa, kv_full, hd_swa, hd_full, rot_swa, rot_full, window;
    std::vector<int> n_ff;  // per layer
    int n_shared, n_pl;     // shared_kv_layers, embedding_length_per_layer_input (0: none)
    bool v_on_full;         // attn_v on the full layers (else K serves as V)
    float softcap;          // final_logit_softcapping written (0: key absent, llama.cpp's 30)
    GgmlType attn, ffn, ple;
    // 26B-A4B-style expert layers in every layer (0: dense): n_expert experts of
    // n_ff_exp, n_used selected, router rows tie / tie + 1 equal.
    int n_expert = 0, n_used = 0, n_ff_exp = 0, tie = -1;
};

const std::vector<Gemma4Recipe>& gemma4_recipes() {
    using T = GgmlType;
    static const std::vector<Gemma4Recipe> r = {
        {"gemma4", "Gemma 4 dense (31B-like): 3 sliding (window 8, 2 KV heads of 16, 16 rotated, base 10000) to 1 full layer "
                   "(1 KV head of 32, K as V, proportional RoPE: rope_freqs 1 on 4 pairs, 1e30 on 12), layer_output_scale, "
                   "weight and input scales, final soft-cap 30 by default; F32",
         "SSSF", 64, 4, 2, 1, 16, 32, 16, 32, 8, {128, 128, 128, 128}, 0, 0, false, 0.0f, T::F32, T::F32, T::F32},
        {"gemma4@e2b", "Gemma 4 E2B-like: 6 layers S S S F S F, the last 2 sharing layers 2 / 3's KV cache, per-layer "
                       "embeddings of 16, 1 KV head, attn_v everywhere, FFN widths 128 then 256 on the shared layers, "
                       "partial rotary on the sliding layers (8 of 16), soft-cap 25; F32, Q8_0 per-layer table",
         "SSSFSF", 64, 4, 1, 1, 16, 32, 8, 32, 8, {128, 128, 128, 128, 256, 256}, 2, 16, true, 25.0f, T::F32, T::F32, T::Q8_0},
        {"gemma4@q4_k", "gemma4 with every layer matrix in Q4_K, width 256, one sliding and one full layer (heads 4 x 64 / 4 x 128)",
         "SF", 256, 4, 2, 1, 64, 128, 64, 128, 8, {256, 256}, 0, 0, false, 0.0f, T::Q4_K, T::Q4_K, T::F32},
        {"gemma4@q8_0", "gemma4 with every layer matrix in Q8_0, width 256, one sliding and one full layer (heads 4 x 64 / 4 x 128)",
         "SF", 256, 4, 2, 1, 64, 128, 64, 128, 8, {256, 256}, 0, 0, false, 0.0f, T::Q8_0, T::Q8_0, T::F32},
        {"gemma4@e2b_q8_0", "gemma4@e2b in four layers S F S F (the last two sharing layers 0 / 1's KV) with every layer "
                            "matrix and the per-layer table in Q8_0, width 256, per-layer embeddings of 32",
         "SFSF", 256, 4, 1, 1, 64, 128, 32, 128, 8, {256, 256, 512, 512}, 2, 32, true, 25.0f, T::Q8_0, T::Q8_0,
         T::Q8_0},
        {"gemma4@moe", "Gemma 4 26B-A4B-like: gemma4's 4 layers, each with the dense GELU FFN beside 16 GEGLU experts of 32 "
                       "(top 4, softmax renormalized, router on rms(x) / sqrt(width) x ffn_gate_inp.scale, per-expert down "
                       "scales), pre_ffw_norm_2 / post_ffw_norm_1 / post_ffw_norm_2; F32",
         "SSSF", 64, 4, 2, 1, 16, 32, 16, 32, 8, {128, 128, 128, 128}, 0, 0, false, 0.0f, T::F32, T::F32, T::F32, 16, 4, 32, 5},
        {"gemma4@moe_q8_0", "gemma4@moe in Q8_0, width 256, one sliding and one full layer, 8 experts of 256 top 2",
         "SF", 256, 4, 2, 1, 64, 128, 64, 128, 8, {256, 256}, 0, 0, false, 0.0f, T::Q8_0, T::Q8_0, T::F32, 8, 2, 256, 3},
    };
    return r;
}

const Gemma4Recipe* gemma4_recipe(const std::string& family) {
    for (const auto& r : gemma4_recipes())
        if (r.family == family) return &r;
    return nullptr;
}

void write_gemma4_model(const Gemma4Recipe& r, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string arch = "gemma4";
    using u64 = uint64_t;
    TinyWriter t(arch, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(arch));
    md.add("general.name", Value::string("kiln tiny " + r.family));
    auto u32 = [](int v) { return Value::u32(static_cast<uint32_t>(v)); };
    const int n_layer = static_cast<int>(r.pattern.size());
    std::vector<Value> swa, kv, ff;
    for (int il = 0; il < n_layer; ++il) {
        const bool sliding = r.pattern[static_cast<size_t>(il)] == 'S';
        swa.push_back(Value::boolean(sliding));
        kv.push_back(u32(sliding ? r.kv_swa : r.kv_full));
        ff.push_back(u32(r.n_ff[static_cast<size_t>(il)]));
    }
    t.key("context_length", u32(512));
    t.key("embedding_length", u32(r.e));
    t.key("block_count", u32(n_layer));
    t.key("feed_forward_length", Value::array(gguf::ValueType::U32, ff));
    t.key("attention.head_count", u32(r.n_head));
    t.key("attention.head_count_kv", Value::array(gguf::ValueType::U32, kv));
    t.key("attention.key_length", u32(r.hd_full));
    t.key("attention.value_length", u32(r.hd_full));
    t.key("attention.key_length_swa", u32(r.hd_swa));
    t.key("attention.value_length_swa", u32(r.hd_swa));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    t.key("attention.sliding_window", u32(r.window));
    t.key("attention.sliding_window_pattern", Value::array(gguf::ValueType::Bool, swa));
    t.key("rope.freq_base", Value::f32(1000000.0f));
    t.key("rope.freq_base_swa", Value::f32(10000.0f));
    t.key("rope.dimension_count", u32(r.rot_full));
    t.key("rope.dimension_count_swa", u32(r.rot_swa));
    if (r.n_shared > 0) t.key("attention.shared_kv_layers", u32(r.n_shared));
    t.key("embedding_length_per_layer_input", u32(r.n_pl));  // required by llama.cpp, 0 for none
    if (r.n_expert > 0) {
        t.key("expert_count", u32(r.n_expert));
        t.key("expert_used_count", u32(r.n_used));
        t.key("expert_feed_forward_length", u32(r.n_ff_exp));
    }
    if (r.softcap > 0) t.key("final_logit_softcapping", Value::f32(r.softcap));
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);

    const int64_t e = r.e;
    // A matrix with its weight scale (around 1) and input scale (read by no graph).
    auto matrix = [&](const std::string& base, int64_t n_in, int64_t n_out, GgmlType type, float gain) {
        t.matrix(base + ".weight", n_in, n_out, type, gain);
        t.vector(base + ".scale", 1, 1.0f, 0.5f);
        t.vector(base + ".input_scale", 1, 1.0f, 0.5f);
    };
    t.matrix("token_embd.weight", e, n_vocab, GgmlType::Q8_0, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    // Proportional RoPE: the first quarter of the full layers' pairs rotate, the rest are held by huge factors.
    std::vector<float> freqs(static_cast<size_t>(r.hd_full / 2), 1e30f);
    for (int i = 0; i < r.hd_full / 8; ++i) freqs[static_cast<size_t>(i)] = 1.0f;
    t.raw("rope_freqs.weight", {static_cast<u64>(r.hd_full / 2)}, freqs);
    if (r.n_pl > 0) {
        const int64_t n_ple = static_cast<int64_t>(r.n_pl) * n_layer;
        t.matrix("per_layer_token_embd.weight", n_ple, n_vocab, r.ple, 4.0f);
        t.matrix("per_layer_model_proj.weight", e, n_ple, r.attn, 2.0f);
        t.vector("per_layer_proj_norm.weight", r.n_pl, 1.0f, 0.2f);
    }
    const int n_kv = n_layer - r.n_shared;
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const bool sliding = r.pattern[static_cast<size_t>(il)] == 'S';
        const int64_t hd = sliding ? r.hd_swa : r.hd_full, nkv = sliding ? r.kv_swa : r.kv_full;
        const int64_t n_ff = r.n_ff[static_cast<size_t>(il)];
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        matrix(p + "attn_q", e, r.n_head * hd, r.attn, 2.0f);
        // Q/K norm weights around 0.3: with unit-RMS heads and no query scaling,
        // weights of 1 give scores up to the head size, a softmax so sharp that
        // last-bit differences pick other keys.
        t.vector(p + "attn_q_norm.weight", hd, 0.3f, 0.1f);
        if (il < n_kv) {  // shared-KV layers have no K / V of their own
            matrix(p + "attn_k", e, nkv * hd, r.attn, 2.0f);
            if (sliding || r.v_on_full) matrix(p + "attn_v", e, nkv * hd, r.attn, 1.0f);
            t.vector(p + "attn_k_norm.weight", hd, 0.3f, 0.1f);
        }
        matrix(p + "attn_output", r.n_head * hd, e, r.attn, 1.0f);
        t.vector(p + "post_attention_norm.weight", e, 1.0f, 0.2f);
        t.vector(p + "ffn_norm.weight", e, 1.0f, 0.2f);
        matrix(p + "ffn_gate", e, n_ff, r.ffn, 1.0f);
        matrix(p + "ffn_up", e, n_ff, r.ffn, 1.0f);
        matrix(p + "ffn_down", n_ff, e, r.ffn, 1.0f);
        t.vector(p + "post_ffw_norm.weight", e, 1.0f, 0.2f);
        if (r.n_expert > 0) {  // the experts beside the dense FFN
            t.router(p + "ffn_gate_inp.weight", e, r.n_expert, r.tie, 4.0f);
            t.vector(p + "ffn_gate_inp.scale", e, 1.0f, 0.2f);
            t.vector(p + "pre_ffw_norm_2.weight", e, 1.0f, 0.2f);
            t.vector(p + "post_ffw_norm_1.weight", e, 1.0f, 0.2f);
            t.vector(p + "post_ffw_norm_2.weight", e, 1.0f, 0.2f);
            t.experts(p + "ffn_gate_exps.weight", e, r.n_ff_exp, r.n_expert, r.ffn);
            t.experts(p + "ffn_up_exps.weight", e, r.n_ff_exp, r.n_expert, r.ffn);
            t.experts(p + "ffn_down_exps.weight", r.n_ff_exp, e, r.n_expert, r.ffn);
            t.vector(p + "ffn_down_exps.scale", r.n_expert, 1.0f, 0.3f);
        }
        if (r.n_pl > 0) {
            t.matrix(p + "inp_gate.weight", e, r.n_pl, r.attn, 2.0f);
            t.matrix(p + "proj.weight", r.n_pl, e, r.attn == GgmlType::Q4_K ? GgmlType::Q8_0 : r.attn, 1.0f);
            t.vector(p + "post_norm.weight", e, 1.0f, 0.2f);
        }
        t.vector(p + "layer_output_scale.weight", 1, 0.8f, 0.3f);
    }
    t.writer().write(path);
}

// A gemma4-assistant for a tiny gemma4 target (the recipe's shapes): width 32,
// one sliding and one full layer with the target's head sizes, KV heads, rotated
// dimensions and window (it attends over the target's cache), 4 query heads,
// GELU FFN of 64, the projections between the target's width and its own;
// final_logit_softcapping written (llama.cpp's assistant graph ignores it).
void write_gemma4_assistant(const Gemma4Recipe& r, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string arch = "gemma4-assistant";
    TinyWriter t(arch, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(arch));
    md.add("general.name", Value::string("kiln tiny assistant for " + r.family));
    auto u32 = [](int v) { return Value::u32(static_cast<uint32_t>(v)); };
    const std::string pattern = "SF";
    const int n_layer = 2, e = 32, n_head = 4, n_ff = 64;
    std::vector<Value> swa, kv;
    for (char c : pattern) {
        swa.push_back(Value::boolean(c == 'S'));
        kv.push_back(u32(c == 'S' ? r.kv_swa : r.kv_full));
    }
    t.key("context_length", u32(512));
    t.key("embedding_length", u32(e));
    t.key("embedding_length_out", u32(r.e));
    t.key("block_count", u32(n_layer));
    t.key("nextn_predict_layers", u32(n_layer));
    t.key("feed_forward_length", u32(n_ff));
    t.key("attention.head_count", u32(n_head));
    t.key("attention.head_count_kv", Value::array(gguf::ValueType::U32, kv));
    t.key("attention.key_length", u32(r.hd_full));
    t.key("attention.value_length", u32(r.hd_full));
    t.key("attention.key_length_swa", u32(r.hd_swa));
    t.key("attention.value_length_swa", u32(r.hd_swa));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    t.key("attention.sliding_window", u32(r.window));
    t.key("attention.sliding_window_pattern", Value::array(gguf::ValueType::Bool, swa));
    t.key("attention.shared_kv_layers", u32(n_layer));  // as the converter writes it (every layer reads the target's)
    t.key("rope.freq_base", Value::f32(1000000.0f));
    t.key("rope.freq_base_swa", Value::f32(10000.0f));
    t.key("rope.dimension_count", u32(r.rot_full));
    t.key("rope.dimension_count_swa", u32(r.rot_swa));
    t.key("embedding_length_per_layer_input", u32(0));
    t.key("final_logit_softcapping", Value::f32(30.0f));
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);
    t.matrix("token_embd.weight", e, n_vocab, GgmlType::Q8_0, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    std::vector<float> freqs(static_cast<size_t>(r.hd_full / 2), 1e30f);
    for (int i = 0; i < r.hd_full / 8; ++i) freqs[static_cast<size_t>(i)] = 1.0f;
    t.raw("rope_freqs.weight", {static_cast<uint64_t>(r.hd_full / 2)}, freqs);
    t.matrix("nextn.pre_projection.weight", 2 * static_cast<int64_t>(r.e), e, GgmlType::F32, 2.0f);
    t.matrix("nextn.post_projection.weight", e, r.e, GgmlType::F32, 2.0f);
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        const int64_t hd = pattern[static_cast<size_t>(il)] == 'S' ? r.hd_swa : r.hd_full;
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        t.matrix(p + "attn_q.weight", e, n_head * hd, GgmlType::F32, 2.0f);
        t.vector(p + "attn_q_norm.weight", hd, 0.3f, 0.1f);  // as the target's: a softmax not too sharp
        t.matrix(p + "attn_output.weight", n_head * hd, e, GgmlType::F32, 1.0f);
        t.vector(p + "post_attention_norm.weight", e, 1.0f, 0.2f);
        t.vector(p + "ffn_norm.weight", e, 1.0f, 0.2f);
        t.matrix(p + "ffn_gate.weight", e, n_ff, GgmlType::F32, 1.0f);
        t.matrix(p + "ffn_up.weight", e, n_ff, GgmlType::F32, 1.0f);
        t.matrix(p + "ffn_down.weight", n_ff, e, GgmlType::F32, 1.0f);
        t.vector(p + "post_ffw_norm.weight", e, 1.0f, 0.2f);
        t.vector(p + "layer_output_scale.weight", 1, 0.8f, 0.3f);
    }
    t.writer().write(path);
}

}  // namespace

std::vector<TinyModelInfo> tiny_model_families() {
    std::vector<TinyModelInfo> out;
    for (const auto& r : recipes()) out.push_back({r.family, r.arch(), r.description, r.f32_cache ? "f32" : "f16"});
    for (const auto& r : ssm_recipes()) out.push_back({r.family, r.arch(), r.description});
    for (const auto& r : deepseek2_recipes()) out.push_back({r.family, "deepseek2", r.description});
    for (const auto& r : gemma4_recipes()) out.push_back({r.family, "gemma4", r.description});
    for (auto& f : tiny_moe_families()) out.push_back(std::move(f));
    out.push_back({"lfm2", "lfm2", "LFM2: short-convolution layers (L 3) and QK-norm attention layers (GQA 4/2), SwiGLU FFN; Q8_0 / Q4_0"});
    for (const auto& r : delta_net_recipes()) out.push_back({r.family, r.arch, r.description});
    for (const auto& r : nemotron_recipes()) out.push_back({r.family, r.arch, r.description});
    for (const auto& r : granite_hybrid_recipes()) out.push_back({r.family, "granitehybrid", r.description});
    for (const auto& r : falcon_h1_recipes()) out.push_back({r.family, "falcon-h1", r.description});
    out.push_back({"jamba", "jamba", "Jamba: Mamba-1 (dt / B / C norms) / Mamba-1 / attention without positions / Mamba-1, "
                                     "dense and 8-expert top-2 FFNs alternating; Q8_0"});
    out.push_back({"jamba@float", "jamba", "jamba in F32"});
    out.push_back({"rwkv6", "rwkv6", "RWKV-6: 3 blocks (4 WKV heads of 16, low ranks 8 / 16, channel mix 128, rescale every 2); Q8_0"});
    out.push_back({"rwkv6@float", "rwkv6", "rwkv6 in F32"});
    out.push_back({"arwkv7", "arwkv7", "ARWKV: 3 layers of RWKV-7 time mix (2 WKV heads of 64, low ranks 16 / 8 / 8, gate 16, "
                                       "group norm) + SwiGLU FFN of 256, RMS norms; Q8_0"});
    out.push_back({"arwkv7@nogate", "arwkv7", "arwkv7 without the gate (five token-shift mixes) and without the group norm; Q8_0"});
    out.push_back({"rwkv7", "rwkv7", "RWKV-7: 3 blocks (2 WKV heads of 64, low ranks 16 / 8 / 8 / 16, channel mix 256); Q8_0"});
    out.push_back({"rwkv7@float", "rwkv7", "rwkv7 in F32"});
    out.push_back({"rwkv6qwen2", "rwkv6qwen2", "QRWKV6: 3 layers of RWKV-6 time mix (gated linear attention, K / V of 2 of 4 "
                                               "heads, biases) + SwiGLU FFN, RMS norms; Q8_0"});
    out.push_back({"rwkv6qwen2@float", "rwkv6qwen2", "rwkv6qwen2 in F32"});
    return out;
}

std::vector<int32_t> tiny_model_prompt() {
    // "The quick brown fox ..." style ids mixed with rare ones; 40 positions so the
    // window-8 sliding layers mask most of the prompt.
    std::vector<int32_t> p = {1};
    Rng rng{42};
    for (int i = 0; i < 39; ++i) p.push_back(static_cast<int32_t>(100 + rng.next() % 49000));
    return p;
}

void write_tiny_model(const std::string& family, const std::string& tokenizer_source, const std::string& path) {
    auto seed_of = [](const std::string& name) {
        uint64_t seed = 1000;
        for (char c : name) seed = seed * 131 + static_cast<unsigned char>(c);
        return seed;
    };
    if (const SsmRecipe* sr = ssm_recipe(family)) return write_ssm_model(*sr, seed_of(family), tokenizer_source, path);
    if (family == "lfm2") return write_lfm2_model(seed_of(family), tokenizer_source, path);
    if (const Deepseek2Recipe* dr = deepseek2_recipe(family)) return write_deepseek2_model(*dr, seed_of(family), tokenizer_source, path);
    if (const DeltaNetRecipe* qr = delta_net_recipe(family)) return write_delta_net_model(*qr, seed_of(family), tokenizer_source, path);
    if (const Gemma4Recipe* gr = gemma4_recipe(family)) return write_gemma4_model(*gr, seed_of(family), tokenizer_source, path);
    if (family.rfind("assistant:", 0) == 0) return write_tiny_gemma4_assistant(family.substr(10), tokenizer_source, path);
    if (write_tiny_moe_model(family, seed_of(family), tokenizer_source, path)) return;
    if (const NemotronRecipe* nr = nemotron_recipe(family)) return write_nemotron_h_model(*nr, seed_of(family), tokenizer_source, path);
    if (family == "rwkv6qwen2" || family == "rwkv6qwen2@float")
        return write_rwkv6qwen2_model(family == "rwkv6qwen2" ? GgmlType::Q8_0 : GgmlType::F32, seed_of(family), tokenizer_source,
                                      path);
    if (family == "arwkv7" || family == "arwkv7@nogate")
        return write_arwkv7_model(family == "arwkv7", GgmlType::Q8_0, seed_of(family), tokenizer_source, path);
    if (family == "rwkv7" || family == "rwkv7@float")
        return write_rwkv7_model(family == "rwkv7" ? GgmlType::Q8_0 : GgmlType::F32, seed_of(family), tokenizer_source, path);
    if (family == "rwkv6" || family == "rwkv6@float")
        return write_rwkv6_model(family == "rwkv6" ? GgmlType::Q8_0 : GgmlType::F32, seed_of(family), tokenizer_source, path);
    if (family == "jamba" || family == "jamba@float")
        return write_jamba_model(family == "jamba" ? GgmlType::Q8_0 : GgmlType::F32, seed_of(family), tokenizer_source, path);
    if (const FalconH1Recipe* fr = falcon_h1_recipe(family)) return write_falcon_h1_model(*fr, seed_of(family), tokenizer_source, path);
    if (const GraniteHybridRecipe* gr = granite_hybrid_recipe(family))
        return write_granite_hybrid_model(*gr, seed_of(family), tokenizer_source, path);
    const FamilyRecipe& r = recipe(family);
    const std::string name = r.first_name.empty() ? family : r.first_name;
    const uint64_t seed = seed_of(name);
    const std::string arch = r.arch();
    TinyWriter t(arch, seed);
    gguf::Metadata& md = t.writer().metadata();
    const Shape& s = r.shape;
    md.add("general.architecture", Value::string(arch));
    // A name without the family's: llama.cpp keys some tokenizer behaviour on the
    // model name ("phi3" marks special tokens right-stripping), not on the file's data.
    md.add("general.name", Value::string(r.name_with_family ? "kiln tiny " + name : "kiln tiny random model"));
    t.key("context_length", Value::u32(512));
    t.key("embedding_length", Value::u32(static_cast<uint32_t>(s.n_embd)));
    t.key("block_count", Value::u32(static_cast<uint32_t>(s.n_layer)));
    t.key("feed_forward_length", Value::u32(static_cast<uint32_t>(s.n_ff * r.ff_key_factor)));
    t.key("attention.head_count", Value::u32(static_cast<uint32_t>(s.n_head)));
    t.key("attention.head_count_kv", Value::u32(static_cast<uint32_t>(s.n_head_kv)));
    t.key(r.layer_norm ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    t.key("rope.freq_base", Value::f32(10000.0f));
    if (!r.rope_scaling.empty()) {
        t.key("rope.scaling.type", Value::string(r.rope_scaling));
        t.key("rope.scaling.factor", Value::f32(r.rope_factor));
    }
    if (r.rope_orig_ctx > 0) t.key("rope.scaling.original_context_length", Value::u32(static_cast<uint32_t>(r.rope_orig_ctx)));
    if (r.rope_attn_factor > 0) t.key("rope.scaling.attn_factor", Value::f32(r.rope_attn_factor));
    if (s.head_dim * s.n_head != s.n_embd) {
        t.key("attention.key_length", Value::u32(static_cast<uint32_t>(s.head_dim)));
        t.key("attention.value_length", Value::u32(static_cast<uint32_t>(s.head_dim)));
    }
    for (const auto& [k, v] : r.keys) t.key(k, v);
    for (const auto& [k, v] : r.global_keys) md.add(k, v);
    if (s.window > 0) t.key("attention.sliding_window", Value::u32(static_cast<uint32_t>(s.window)));
    if (r.softcap_attn > 0) t.key("attn_logit_softcapping", Value::f32(r.softcap_attn));
    if (r.softcap_final > 0) t.key("final_logit_softcapping", Value::f32(r.softcap_final));
    const FamilyRecipe::Experts& moe = r.moe;
    if (moe.n_expert > 0) {
        t.key("expert_count", Value::u32(static_cast<uint32_t>(moe.n_expert)));
        t.key("expert_used_count", Value::u32(static_cast<uint32_t>(moe.n_used)));
        if (moe.ff_key) t.key("expert_feed_forward_length", Value::u32(static_cast<uint32_t>(s.n_ff)));
        if (moe.n_ff_shexp > 0) t.key("expert_shared_feed_forward_length", Value::u32(static_cast<uint32_t>(moe.n_ff_shexp)));
    }
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);

    // A matrix with its weight scale (around 1) and input scale (read by no graph).
    auto matrix = [&](const std::string& base, int64_t n_in, int64_t n_out, GgmlType type, float gain, bool scale = true) {
        t.matrix(base + ".weight", n_in, n_out, type, gain);
        if (r.scales) {
            if (scale) t.vector(base + ".scale", 1, 1.0f, 0.5f);
            t.vector(base + ".input_scale", 1, 1.0f, 0.5f);
        }
    };
    const int64_t e = s.n_embd, dq = static_cast<int64_t>(s.n_head) * s.head_dim, dkv = static_cast<int64_t>(s.n_head_kv) * s.head_dim;
    t.matrix("token_embd.weight", e, n_vocab, r.embd_type, 4.0f);
    if (r.learned_positions) t.matrix("position_embd.weight", e, 512, r.embd_type, 2.0f);  // 512: context_length
    if (r.input_norm) {
        t.vector("token_embd_norm.weight", e, 1.0f, 0.2f);
        if (r.layer_norm && r.norm_bias) t.vector("token_embd_norm.bias", e, 0.0f, 0.2f);
    }
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    if ((r.layer_norm && r.norm_bias) || r.rms_norm_bias) t.vector("output_norm.bias", e, 0.0f, 0.2f);
    if (!r.tied_output) t.matrix("output.weight", e, n_vocab, r.output_type, 2.0f);
    if (r.output_bias) t.vector("output.bias", n_vocab, 0.0f, 0.5f);
    const int rope_dims = r.rope_dims > 0 ? r.rope_dims : s.head_dim;
    if (r.rope_dims > 0) t.key("rope.dimension_count", Value::u32(static_cast<uint32_t>(r.rope_dims)));
    if (r.rope_freqs) t.vector("rope_freqs.weight", rope_dims / 2, 2.0f, 1.0f);
    if (r.rope_long_short) {
        t.vector("rope_factors_long.weight", rope_dims / 2, 3.0f, 2.0f);
        t.vector("rope_factors_short.weight", rope_dims / 2, 1.5f, 0.5f);
    }
    for (int il = 0; il < s.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        if (r.pre_norms) t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        if ((r.layer_norm && r.norm_bias) || r.rms_norm_bias) t.vector(p + "attn_norm.bias", e, 0.0f, 0.2f);
        if (r.attn_norm_2) {
            t.vector(p + "attn_norm_2.weight", e, 1.0f, 0.2f);
            if (r.layer_norm) t.vector(p + "attn_norm_2.bias", e, 0.0f, 0.2f);
        }
        if (r.fused_qkv) {
            matrix(p + "attn_qkv", e, dq + 2 * dkv, r.attn_type, 2.0f);
            if (r.fused_bias) t.vector(p + "attn_qkv.bias", dq + 2 * dkv, 0.0f, 0.5f);
        } else {
            matrix(p + "attn_q", e, dq, r.attn_type, 2.0f);
            matrix(p + "attn_k", e, dkv, r.attn_type, 2.0f);
            matrix(p + "attn_v", e, dkv, r.attn_type, 1.0f);
        }
        if (r.qkv_bias && !r.fused_bias) {
            t.vector(p + "attn_q.bias", dq, 0.0f, 0.5f);
            t.vector(p + "attn_k.bias", dkv, 0.0f, 0.5f);
            t.vector(p + "attn_v.bias", dkv, 0.0f, 0.5f);
        }
        if (r.qk_norm && r.qk_norm_heads) {
            const auto hd = static_cast<uint64_t>(s.head_dim);
            t.tensor(p + "attn_q_norm.weight", {hd, static_cast<uint64_t>(s.n_head)}, [](float u) { return 1.0f + 0.2f * u; });
            t.tensor(p + "attn_k_norm.weight", {hd, static_cast<uint64_t>(s.n_head_kv)}, [](float u) { return 1.0f + 0.2f * u; });
        } else if (r.qk_norm) {
            t.vector(p + "attn_q_norm.weight", r.qk_norm_full ? dq : s.head_dim, 1.0f, 0.2f);
            t.vector(p + "attn_k_norm.weight", r.qk_norm_full ? dkv : s.head_dim, 1.0f, 0.2f);
        }
        matrix(p + "attn_output", dq, e, r.attn_type, 1.0f);
        if (r.attn_out_bias) t.vector(p + "attn_output.bias", e, 0.0f, 0.5f);
        if (r.gpt_oss) t.vector(p + "attn_sinks.weight", s.n_head, 0.0f, 2.0f);
        if (r.post_norms) t.vector(p + "post_attention_norm.weight", e, 1.0f, 0.2f);
        if (r.gpt_oss)
            t.vector(p + "post_attention_norm.weight", e, 1.0f, 0.2f);  // gpt-oss's pre-FFN norm
        else if (r.pre_norms && r.ffn_norm)
            t.vector(p + r.ffn_norm_name + ".weight", e, 1.0f, 0.2f);
        if (((r.layer_norm && r.norm_bias) || r.rms_norm_bias) && r.ffn_norm) t.vector(p + "ffn_norm.bias", e, 0.0f, 0.2f);
        if (moe.n_expert > 0) {
            // Router gain 4: logits spread over a few units, so the selection
            // is not a toss-up between near-equal experts (except the tie).
            t.router(p + "ffn_gate_inp.weight", e, moe.n_expert, moe.tie, 4.0f);
            if (r.gpt_oss) {
                // The router bias keeps the tie (equal bias for the tied pair).
                std::vector<float> rb(static_cast<size_t>(moe.n_expert));
                t.fill(rb, 0.0f, 0.5f);
                if (moe.tie >= 0) rb[static_cast<size_t>(moe.tie + 1)] = rb[static_cast<size_t>(moe.tie)];
                t.raw(p + "ffn_gate_inp.bias", {static_cast<uint64_t>(moe.n_expert)}, rb);
                std::vector<float> b(static_cast<size_t>(s.n_ff * moe.n_expert));
                t.fill(b, 0.0f, 0.5f);
                t.raw(p + "ffn_gate_exps.bias", {static_cast<uint64_t>(s.n_ff), static_cast<uint64_t>(moe.n_expert)}, b);
                t.fill(b, 0.0f, 0.5f);
                t.raw(p + "ffn_up_exps.bias", {static_cast<uint64_t>(s.n_ff), static_cast<uint64_t>(moe.n_expert)}, b);
                std::vector<float> db(static_cast<size_t>(e * moe.n_expert));
                t.fill(db, 0.0f, 0.5f);
                t.raw(p + "ffn_down_exps.bias", {static_cast<uint64_t>(e), static_cast<uint64_t>(moe.n_expert)}, db);
            }
            t.experts(p + "ffn_gate_exps.weight", e, s.n_ff, moe.n_expert, r.ffn_type);
            t.experts(p + "ffn_up_exps.weight", e, s.n_ff, moe.n_expert, r.ffn_type);
            t.experts(p + "ffn_down_exps.weight", s.n_ff, e, moe.n_expert, r.ffn_type);
            if (moe.n_ff_shexp > 0) {
                if (moe.shexp_gate) t.vector(p + "ffn_gate_inp_shexp.weight", e, 0.0f, 0.5f);
                t.matrix(p + "ffn_gate_shexp.weight", e, moe.n_ff_shexp, moe.shexp_type);
                t.matrix(p + "ffn_up_shexp.weight", e, moe.n_ff_shexp, moe.shexp_type);
                t.matrix(p + "ffn_down_shexp.weight", moe.n_ff_shexp, e, moe.shexp_type);
            }
        } else {
            if (r.fused_gate_up) {
                matrix(p + "ffn_up", e, 2 * s.n_ff, r.ffn_type, 1.0f, r.ffn_scales);
            } else {
                if (!r.plain_ffn) matrix(p + "ffn_gate", e, s.n_ff, r.ffn_type, 1.0f, r.ffn_scales);
                matrix(p + "ffn_up", e, s.n_ff, r.ffn_type, 1.0f, r.ffn_scales);
            }
            matrix(p + "ffn_down", s.n_ff, e, r.ffn_type, 1.0f, r.ffn_scales);
            if (r.ffn_bias) {
                if (!r.fused_gate_up && !r.plain_ffn) t.vector(p + "ffn_gate.bias", s.n_ff, 0.0f, 0.5f);
                t.vector(p + "ffn_up.bias", s.n_ff, 0.0f, 0.5f);
                t.vector(p + "ffn_down.bias", e, 0.0f, 0.5f);
            }
            if (r.ffn_act_scales) t.vector(p + "ffn.act.scales", s.n_ff, 1.0f, 0.3f);
        }
        if (r.post_norms) t.vector(p + "post_ffw_norm.weight", e, 1.0f, 0.2f);
    }
    t.writer().write(path);
}

void write_tiny_gemma4_assistant(const std::string& target_family, const std::string& tokenizer_source, const std::string& path) {
    const Gemma4Recipe* r = gemma4_recipe(target_family);
    if (!r) throw kiln::Error("no tiny gemma4 target '" + target_family + "' for an assistant");
    write_gemma4_assistant(*r, 7000 + static_cast<uint64_t>(target_family.size()), tokenizer_source, path);
}

}  // namespace kiln::test
