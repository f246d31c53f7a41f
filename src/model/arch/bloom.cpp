// bloom (BLOOM, BLOOMZ) and mpt (MPT-7B / 30B): ALiBi decoders without RoPE, in
// llama.cpp's graphs — a LayerNorm block (attention, then a plain GELU FFN, each
// with its residual), Q/K/V fused in attn_qkv, the scores biased by ALiBi's
// slope x -distance per head, output head separate or tied.
//   bloom: a LayerNorm with bias on the embedding rows (token_embd_norm), every
//     norm, the fused QKV, the attention output and the FFN with biases (all
//     required); ALiBi's max bias 8 (llama.cpp fixes it; the file has no key).
//   mpt: biases by presence (MPT-7B has none), attention.max_alibi_bias (absent
//     or 0: no ALiBi, so no positions at all, as llama.cpp), attention.clamp_kqv
//     (Q, K, V clamped after their biases), learned positions position_embd and
//     AWQ's activation scales ffn.act.scales, each by presence. Q / K norms are
//     not read: llama.cpp 0.3.36 loads them but its graph aborts on them (a
//     reshape of the fused QKV's non-contiguous view), so there is no oracle and
//     such a file is refused naming the tensor.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {

constexpr float k_bloom_max_bias = 8.0f;  // llama.cpp's f_max_alibi_bias for bloom

void configure_alibi_block(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (s.norm != NormKind::Layer)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_epsilon") + "' not found (" + s.arch +
                    " uses LayerNorm)");
    s.activation = FfnActivation::Gelu;
}

}  // namespace

void configure_bloom(ArchConfig& c) {
    configure_alibi_block(c);
    ModelSpec& s = c.spec;
    s.alibi_max_bias = k_bloom_max_bias;
    TensorRules& t = s.tensors;
    t.input_norm = TensorUse::Required;
    t.input_norm_bias = TensorUse::Required;
    t.norm_bias = TensorUse::Required;
    t.attn_out_bias = TensorUse::Required;
    t.ffn_bias = TensorUse::Required;
}

void configure_mpt(ArchConfig& c) {
    configure_alibi_block(c);
    ModelSpec& s = c.spec;
    s.alibi_max_bias = static_cast<float>(c.metadata.find_float(c.key("attention.max_alibi_bias")).value_or(0.0));
    s.clamp_kqv = static_cast<float>(c.metadata.find_float(c.key("attention.clamp_kqv")).value_or(0.0));
    if (s.alibi_max_bias < 0.0f || s.clamp_kqv < 0.0f)
        throw Error("GGUF metadata '" + c.key(s.alibi_max_bias < 0.0f ? "attention.max_alibi_bias" : "attention.clamp_kqv") +
                    "' must not be negative");
    TensorRules& t = s.tensors;
    t.attn_out_bias = TensorUse::Optional;
    t.ffn_bias = TensorUse::Optional;
    t.pos_embd = TensorUse::Optional;
    t.ffn_act_scales = TensorUse::Optional;
}

}  // namespace kiln
