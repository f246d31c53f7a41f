#include "support/tiny_moe_models.h"

#include <utility>

#include "support/tiny_writer.h"

namespace kiln::test {

namespace {

using gguf::Value;
using u64 = uint64_t;

// A mixture-of-experts family in llama's tensor layout (attn_q / k / v / output,
// ffn_gate_inp, merged ffn_*_exps, ffn_*_shexp): which layers are dense, the
// routing keys and the optional tensors its llama.cpp loader takes. Routers are
// f32 with rows `tie` and `tie + 1` equal (the top-k selection breaks a tie), and
// the selection bias keeps that pair equal; 40 prompt tokens over 8 or 16
// experts select every expert.
struct MoeRecipe {
    std::string family, description;
    int n_layer = 3;         // the trunk
    int n_nextn = 0;         // multi-token-prediction layers after it (nextn_predict_layers)
    int e = 64, n_head = 4, n_head_kv = 2, hd = 32, rot = 16;
    int n_ff = 128;          // the dense layers' width (feed_forward_length)
    int n_ff_exp = 32;       // each expert's (expert_feed_forward_length)
    int n_expert = 16, n_used = 4, tie = 4;
    int n_lead = 1;          // leading dense layers (leading_dense_block_count)
    int moe_step = 1;        // after them, layer il has experts when (il + 1) % moe_step == 0 (llama4)
    int n_shared = 0;        // shared experts of width n_ff_exp each (expert_shared_count) ...
    int n_ff_shexp = 0;      // ... or one shared expert of this width (expert_shared_feed_forward_length)
    bool qkv_bias = false, qk_norm = false, probs_bias = false, tied = true;
    // Q/K norm weights around this: near 1 the unit-RMS heads score up to the head
    // size, a softmax so sharp that quantized models' last-bit differences pick
    // other keys (as gemma4's tiny models).
    float qk_norm_center = 1.0f;
    bool qk_norm_full = false;  // Q/K norms over the whole projections (minimax-m2)
    bool fused_qkv = false;     // attn_qkv in place of attn_q / k / v (bailingmoe2)
    bool mtp_out_norm = false;  // an MTP layer's layer_output_norm (bailingmoe2's loader wants it)
    bool shared_key = true;  // expert_shared_count / expert_shared_feed_forward_length written (llama4 has none)
    bool rope_freqs = false; // Llama 3 rope_freqs.weight
    int n_ctx_train = 512;   // context_length (llama4's: room for its 8192-position chunks, tools/tiny_long_fixtures.py)
    std::string ffn_norm = "ffn_norm";  // the FFN's input norm
    std::vector<std::pair<std::string, Value>> keys = {};  // family keys, prefixed with the architecture
    GgmlType attn = GgmlType::F32, ffn = GgmlType::F32, shexp = GgmlType::F32, embd = GgmlType::F32;
    std::string arch() const { return family.substr(0, family.find('@')); }
};

Value u32(int v) { return Value::u32(static_cast<uint32_t>(v)); }

const std::vector<MoeRecipe>& moe_recipes() {
    using T = GgmlType;
    static const std::vector<MoeRecipe> r = {
        {.family = "glm4moe",
         .description = "GLM-4.5 (355B-like): 1 dense + 2 expert layers + 1 MTP layer (the draft head), Q/K/V biases, per-head "
                        "Q/K norms, NEOX RoPE over 16 of 32, 16 experts top 4 by sigmoid with exp_probs_b in 4 groups (2 "
                        "used), renormalized, scale 2.5, 1 shared expert, separate output head; F32",
         .n_nextn = 1, .n_shared = 1, .qkv_bias = true, .qk_norm = true, .probs_bias = true, .tied = false,
         .ffn_norm = "post_attention_norm",
         .keys = {{"expert_gating_func", u32(2)}, {"expert_weights_norm", Value::boolean(true)},
                  {"expert_weights_scale", Value::f32(2.5f)}, {"expert_group_count", u32(4)}, {"expert_group_used_count", u32(2)}}},
        {.family = "glm4moe@q8_0",
         .description = "GLM-4.5-Air-like: 1 dense + 1 expert layer + 1 MTP layer (the draft head), Q/K/V biases, no Q/K norms, "
                        "RoPE over 32 of 64, 8 experts top 2 (sigmoid by default: no gating key) with exp_probs_b, "
                        "renormalized, scale 1.5, 1 shared expert, tied output; Q8_0",
         .n_layer = 2, .n_nextn = 1, .e = 256, .hd = 64, .rot = 32, .n_ff = 256, .n_ff_exp = 256, .n_expert = 8, .n_used = 2,
         .tie = 2, .n_shared = 1, .qkv_bias = true, .probs_bias = true, .ffn_norm = "post_attention_norm",
         .keys = {{"expert_weights_norm", Value::boolean(true)}, {"expert_weights_scale", Value::f32(1.5f)}},
         .attn = T::Q8_0, .ffn = T::Q8_0, .shexp = T::Q8_0, .embd = T::Q8_0},
        {.family = "ernie4_5-moe",
         .description = "ERNIE-4.5-21B-A3B-like: 1 dense + 2 expert layers, Q/K/V biases, NORM RoPE over the whole head, 16 "
                        "experts top 4 by softmax with exp_probs_b, renormalized, a shared expert of width 64 "
                        "(expert_shared_feed_forward_length), interleave step 1, separate output head; F32",
         .hd = 16, .rot = 16, .n_ff_shexp = 64, .qkv_bias = true, .probs_bias = true, .tied = false,
         .keys = {{"interleave_moe_layer_step", u32(1)}}},
        {.family = "ernie4_5-moe@q4_k",
         .description = "ernie4_5-moe with Q4_K experts and dense FFN, Q8_0 attention and shared expert (width 256), 1 dense + "
                        "1 expert layer, 8 experts top 2, no Q/K/V biases, tied output",
         .n_layer = 2, .e = 256, .hd = 64, .rot = 64, .n_ff = 256, .n_ff_exp = 256, .n_expert = 8, .n_used = 2, .tie = 5,
         .n_ff_shexp = 256, .probs_bias = true, .keys = {{"interleave_moe_layer_step", u32(1)}},
         .attn = T::Q8_0, .ffn = T::Q4_K, .shexp = T::Q8_0, .embd = T::Q8_0},
        {.family = "llama4",
         .description = "Llama 4 Maverick-like: 4 layers, dense and expert FFNs interleaved (step 2), 3 chunked layers to 1 "
                        "full without RoPE (attention temperature), Q/K RMS-normed after RoPE, rope_freqs, Q/K/V biases, 16 "
                        "experts top 1 on the raw logits, sigmoid weights applied to the experts' inputs, shared expert of 32, "
                        "separate output head; F32",
         .n_layer = 4, .hd = 16, .rot = 16, .n_lead = 0, .moe_step = 2, .n_ff_shexp = 32, .qkv_bias = true, .tied = false,
         .shared_key = false, .rope_freqs = true, .n_ctx_train = 16384,
         .keys = {{"interleave_moe_layer_step", u32(2)}, {"attention.sliding_window", u32(8192)}}},
        {.family = "llama4@q8_0",
         .description = "Llama 4 with 128 experts (no Q/K norm, as llama.cpp's 17B-128E), every FFN an expert layer (step "
                        "1), top 1, shared expert of 32, no sliding_window key (chunked by default); Q8_0, width 256",
         .n_layer = 4, .e = 256, .hd = 64, .rot = 64, .n_ff = 256, .n_ff_exp = 32, .n_expert = 128, .n_used = 1, .tie = 6,
         .n_lead = 0, .n_ff_shexp = 32, .shared_key = false, .keys = {{"interleave_moe_layer_step", u32(1)}},
         .attn = T::Q8_0, .ffn = T::Q8_0, .shexp = T::Q8_0, .embd = T::Q8_0},
        {.family = "deepseek",
         .description = "DeepSeek-MoE 16B-like: 1 dense + 2 expert layers, NORM RoPE over the whole head, 16 experts top 4 by "
                        "softmax, not renormalized, scale 1.5 (read), 2 shared experts (width 2 x 32), tied output; F32",
         .hd = 16, .rot = 16, .n_shared = 2, .keys = {{"expert_weights_scale", Value::f32(1.5f)}}},
        {.family = "deepseek@q4_k",
         .description = "deepseek with Q4_K experts and dense FFN, Q8_0 attention and shared expert, 1 dense + 1 expert layer, 8 "
                        "experts top 2, 1 shared expert, Q/K/V biases, separate output head",
         .n_layer = 2, .e = 256, .hd = 64, .rot = 64, .n_ff = 256, .n_ff_exp = 256, .n_expert = 8, .n_used = 2, .tie = 3,
         .n_shared = 1, .qkv_bias = true, .tied = false, .attn = T::Q8_0, .ffn = T::Q4_K, .shexp = T::Q8_0, .embd = T::Q8_0},
        {.family = "dots1",
         .description = "dots.llm1-like: 1 dense + 2 expert layers, per-head Q/K norms, NEOX RoPE over the whole head, 4 heads "
                        "= 4 KV heads, 16 experts top 4 by sigmoid with exp_probs_b, renormalized, scale 2.5, 1 shared "
                        "expert, separate output head; F32",
         .n_head_kv = 4, .hd = 16, .rot = 16, .n_shared = 1, .qk_norm = true, .probs_bias = true, .tied = false,
         .keys = {{"expert_gating_func", u32(2)}, {"expert_weights_norm", Value::boolean(true)},
                  {"expert_weights_scale", Value::f32(2.5f)}}},
        {.family = "dots1@q4_k",
         .description = "dots1 with softmax gating (expert_gating_func 1), not renormalized, no selection bias, 8 experts top "
                        "2, 1 dense + 1 expert layer, Q/K norm weights around 0.3; Q4_K experts and dense FFN, Q8_0 attention and "
                        "shared expert, width 256",
         .n_layer = 2, .e = 256, .n_head_kv = 4, .hd = 64, .rot = 64, .n_ff = 256, .n_ff_exp = 256, .n_expert = 8, .n_used = 2,
         .tie = 1, .n_shared = 1, .qk_norm = true, .tied = false, .qk_norm_center = 0.3f, .keys = {{"expert_gating_func", u32(1)}},
         .attn = T::Q8_0, .ffn = T::Q4_K, .shexp = T::Q8_0, .embd = T::Q8_0},
        {.family = "hunyuan-moe",
         .description = "Hunyuan-A13B-like: every layer experts, per-head Q/K norms after RoPE, NEOX RoPE over the whole "
                        "head, 16 experts top 4 by softmax, renormalized, a shared expert of width 64 in every layer, Q/K/V "
                        "biases, separate output head; F32",
         .hd = 16, .rot = 16, .n_ff = 32, .n_lead = 0, .n_ff_shexp = 64, .qkv_bias = true, .qk_norm = true, .tied = false},
        {.family = "hunyuan-moe@q8_0",
         .description = "hunyuan-moe in Q8_0, width 256, 2 layers, 8 experts top 2, shared expert of 256, Q/K norm weights "
                        "around 0.3, tied output",
         .n_layer = 2, .e = 256, .hd = 64, .rot = 64, .n_ff = 256, .n_ff_exp = 256, .n_expert = 8, .n_used = 2, .tie = 4,
         .n_lead = 0, .n_ff_shexp = 256, .qk_norm = true, .qk_norm_center = 0.3f,
         .attn = T::Q8_0, .ffn = T::Q8_0, .shexp = T::Q8_0, .embd = T::Q8_0},
        {.family = "bailingmoe2",
         .description = "Ling 2.0-like: fused attn_qkv, per-head Q/K norms, NEOX RoPE over 8 of 16, 1 dense + 2 expert "
                        "layers + 1 MTP layer (skipped), 16 experts top 4 by sigmoid with exp_probs_b in 4 groups (2 used), "
                        "renormalized, scale 2.5, 1 shared expert, separate output head; F32",
         .n_nextn = 1, .hd = 16, .rot = 8, .n_shared = 1, .qk_norm = true, .probs_bias = true, .tied = false, .fused_qkv = true,
         .mtp_out_norm = true, .keys = {{"expert_gating_func", u32(2)}, {"expert_weights_norm", Value::boolean(true)},
                  {"expert_weights_scale", Value::f32(2.5f)}, {"expert_group_count", u32(4)}, {"expert_group_used_count", u32(2)}}},
        {.family = "bailingmoe2@q4_k",
         .description = "bailingmoe2 with Q4_K experts and dense FFN, Q8_0 attention and shared expert, width 256, 1 dense + 1 "
                        "expert layer, softmax gating, 8 experts top 2, Q/K norm weights around 0.3",
         .n_layer = 2, .e = 256, .hd = 64, .rot = 32, .n_ff = 256, .n_ff_exp = 256, .n_expert = 8, .n_used = 2, .tie = 0,
         .n_shared = 1, .qk_norm = true, .tied = false, .qk_norm_center = 0.3f, .fused_qkv = true,
         .keys = {{"expert_gating_func", u32(1)}, {"expert_weights_norm", Value::boolean(true)}},
         .attn = T::Q8_0, .ffn = T::Q4_K, .shexp = T::Q8_0, .embd = T::Q8_0},
        {.family = "minimax-m2",
         .description = "MiniMax-M2-like: every layer experts, Q/K RMS norms over the whole projections, NEOX RoPE over 16 of "
                        "32, 16 experts top 4 by sigmoid with exp_probs_b (required), renormalized, no shared expert, "
                        "separate output head; F32",
         .n_layer = 2, .n_ff = 32, .n_lead = 0, .qk_norm = true, .probs_bias = true, .tied = false, .qk_norm_full = true,
         .shared_key = false, .keys = {{"expert_gating_func", u32(2)}}},
        {.family = "minimax-m2@q8_0",
         .description = "minimax-m2 in Q8_0, width 256, 8 experts top 2, RoPE over 32 of 64, Q/K norm weights around 0.3",
         .n_layer = 2, .e = 256, .hd = 64, .rot = 32, .n_ff = 256, .n_ff_exp = 256, .n_expert = 8, .n_used = 2, .tie = 5,
         .n_lead = 0, .qk_norm = true, .probs_bias = true, .tied = false, .qk_norm_center = 0.3f, .qk_norm_full = true,
         .shared_key = false, .keys = {{"expert_gating_func", u32(2)}},
         .attn = T::Q8_0, .ffn = T::Q8_0, .shexp = T::Q8_0, .embd = T::Q8_0},
    };
    return r;
}

void write_moe_model(const MoeRecipe& r, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    const std::string arch = r.arch();
    TinyWriter t(arch, seed);
    gguf::Metadata& md = t.writer().metadata();
    md.add("general.architecture", Value::string(arch));
    md.add("general.name", Value::string("kiln tiny " + r.family));
    const int n_all = r.n_layer + r.n_nextn;
    t.key("context_length", u32(r.n_ctx_train));
    t.key("embedding_length", u32(r.e));
    t.key("block_count", u32(n_all));
    t.key("feed_forward_length", u32(r.n_ff));
    t.key("attention.head_count", u32(r.n_head));
    t.key("attention.head_count_kv", u32(r.n_head_kv));
    t.key("attention.key_length", u32(r.hd));
    t.key("attention.value_length", u32(r.hd));
    t.key("attention.layer_norm_rms_epsilon", Value::f32(1e-6f));
    t.key("rope.freq_base", Value::f32(10000.0f));
    t.key("rope.dimension_count", u32(r.rot));
    if (r.n_nextn > 0) t.key("nextn_predict_layers", u32(r.n_nextn));
    if (r.n_lead > 0) t.key("leading_dense_block_count", u32(r.n_lead));
    t.key("expert_count", u32(r.n_expert));
    t.key("expert_used_count", u32(r.n_used));
    t.key("expert_feed_forward_length", u32(r.n_ff_exp));
    if (r.shared_key && (r.n_shared > 0 || r.n_ff_shexp == 0)) t.key("expert_shared_count", u32(r.n_shared));
    if (r.shared_key && r.n_ff_shexp > 0) t.key("expert_shared_feed_forward_length", u32(r.n_ff_shexp));
    for (const auto& [k, v] : r.keys) t.key(k, v);
    int64_t n_vocab = 0;
    copy_tokenizer(md, tokenizer_source, n_vocab);

    const int64_t e = r.e, dq = static_cast<int64_t>(r.n_head) * r.hd, dkv = static_cast<int64_t>(r.n_head_kv) * r.hd;
    const int64_t sff = r.n_ff_shexp > 0 ? r.n_ff_shexp : static_cast<int64_t>(r.n_ff_exp) * r.n_shared;
    t.matrix("token_embd.weight", e, n_vocab, r.embd, 4.0f);
    t.vector("output_norm.weight", e, 1.0f, 0.2f);
    if (!r.tied) t.matrix("output.weight", e, n_vocab, r.embd, 2.0f);
    if (r.rope_freqs) t.vector("rope_freqs.weight", r.rot / 2, 2.0f, 1.0f);
    for (int il = 0; il < n_all; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        t.vector(p + "attn_norm.weight", e, 1.0f, 0.2f);
        if (r.fused_qkv) {
            t.matrix(p + "attn_qkv.weight", e, dq + 2 * dkv, r.attn, 2.0f);
        } else {
            t.matrix(p + "attn_q.weight", e, dq, r.attn, 2.0f);
            t.matrix(p + "attn_k.weight", e, dkv, r.attn, 2.0f);
            t.matrix(p + "attn_v.weight", e, dkv, r.attn, 1.0f);
        }
        if (r.qkv_bias) {
            t.vector(p + "attn_q.bias", dq, 0.0f, 0.5f);
            t.vector(p + "attn_k.bias", dkv, 0.0f, 0.5f);
            t.vector(p + "attn_v.bias", dkv, 0.0f, 0.5f);
        }
        if (r.qk_norm) {
            t.vector(p + "attn_q_norm.weight", r.qk_norm_full ? dq : r.hd, r.qk_norm_center, 0.2f * r.qk_norm_center);
            t.vector(p + "attn_k_norm.weight", r.qk_norm_full ? dkv : r.hd, r.qk_norm_center, 0.2f * r.qk_norm_center);
        }
        t.matrix(p + "attn_output.weight", dq, e, r.attn, 1.0f);
        t.vector(p + r.ffn_norm + ".weight", e, 1.0f, 0.2f);
        if (il < r.n_lead || (il + 1) % r.moe_step != 0) {
            t.matrix(p + "ffn_gate.weight", e, r.n_ff, r.ffn);
            t.matrix(p + "ffn_up.weight", e, r.n_ff, r.ffn);
            t.matrix(p + "ffn_down.weight", r.n_ff, e, r.ffn);
        } else {
            // Router gain 4: logits spread over a few units (a selection that is
            // not a toss-up between near-equal experts, except the tie).
            t.router(p + "ffn_gate_inp.weight", e, r.n_expert, r.tie, 4.0f);
            if (r.probs_bias) {
                std::vector<float> pb(static_cast<size_t>(r.n_expert));
                t.fill(pb, 0.0f, 0.3f);
                pb[static_cast<size_t>(r.tie + 1)] = pb[static_cast<size_t>(r.tie)];
                t.raw(p + "exp_probs_b.bias", {static_cast<u64>(r.n_expert)}, pb);
            }
            t.experts(p + "ffn_gate_exps.weight", e, r.n_ff_exp, r.n_expert, r.ffn);
            t.experts(p + "ffn_up_exps.weight", e, r.n_ff_exp, r.n_expert, r.ffn);
            t.experts(p + "ffn_down_exps.weight", r.n_ff_exp, e, r.n_expert, r.ffn);
            if (sff > 0) {
                t.matrix(p + "ffn_gate_shexp.weight", e, sff, r.shexp);
                t.matrix(p + "ffn_up_shexp.weight", e, sff, r.shexp);
                t.matrix(p + "ffn_down_shexp.weight", sff, e, r.shexp);
            }
        }
        if (il >= r.n_layer) {  // an MTP layer's own tensors (GLM-4.5's names)
            t.matrix(p + "nextn.eh_proj.weight", 2 * e, e, r.attn);
            t.vector(p + "nextn.enorm.weight", e, 1.0f, 0.2f);
            t.vector(p + "nextn.hnorm.weight", e, 1.0f, 0.2f);
            t.vector(p + "nextn.shared_head_norm.weight", e, 1.0f, 0.2f);
            if (r.mtp_out_norm) t.vector(p + "layer_output_norm.weight", e, 1.0f, 0.2f);
        }
    }
    t.writer().write(path);
}

}  // namespace

std::vector<TinyModelInfo> tiny_moe_families() {
    std::vector<TinyModelInfo> out;
    for (const auto& r : moe_recipes()) out.push_back({r.family, r.arch(), r.description});
    return out;
}

bool write_tiny_moe_model(const std::string& family, uint64_t seed, const std::string& tokenizer_source, const std::string& path) {
    for (const auto& r : moe_recipes())
        if (r.family == family) {
            write_moe_model(r, seed, tokenizer_source, path);
            return true;
        }
    return false;
}

}  // namespace kiln::test
