// granitehybrid (IBM Granite 4.0 H: Micro, Tiny, Small): Mamba-2 layers (where
// the per-layer attention.head_count_kv is 0) and attention layers (NORM RoPE,
// optional attention-output bias), every layer followed by an FFN: a mixture of
// experts when the file has expert_count (softmax, top k renormalized, plus an
// ungated-by-router SwiGLU shared expert when expert_shared_feed_forward_length
// is set, as granitemoe), else a gated SiLU FFN with optional biases. Granite's
// scales as llama.cpp reads them for this family, all optional: embedding_scale,
// attention.scale, residual_scale (the mixer's and the FFN's outputs before each
// residual add) and logit_scale (logits divided by it). rope.scaling.finetuned =
// false turns RoPE off. llama.cpp supports only ssm.inner_size = 2 x n_embd.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_granitehybrid(ArchConfig& c) {
    ModelSpec& s = c.spec;
    const gguf::Metadata& md = c.metadata;
    read_ssm_keys(c, SsmKind::Mamba2);
    if (s.ssm.d_inner != 2 * s.n_embd)
        throw Error("GGUF metadata '" + c.key("ssm.inner_size") + "': " + std::to_string(s.ssm.d_inner) +
                        " (only twice the embedding length, " + std::to_string(2 * s.n_embd) + ", is supported)",
                    ErrorKind::Unsupported);
    if (auto v = md.find_float(c.key("logit_scale")); v && *v != 0.0) s.logit_multiplier = static_cast<float>(1.0 / *v);
    s.residual_scale = static_cast<float>(md.find_float(c.key("residual_scale")).value_or(0.0));
    if (auto v = md.find_float(c.key("embedding_scale")); v && *v != 0.0) s.embedding_scale = static_cast<float>(*v);
    s.attention_scale = static_cast<float>(md.find_float(c.key("attention.scale")).value_or(0.0));
    const bool rope = md.find_bool(c.key("rope.scaling.finetuned")).value_or(true);
    for (LayerSpec& l : s.layers) {
        if (l.n_head_kv == 0) l.mixer = MixerKind::Recurrent;
        l.use_rope = rope && l.mixer == MixerKind::Attention;
    }
    TensorRules& t = s.tensors;
    t.attn_out_bias = TensorUse::Optional;
    t.ffn_bias = TensorUse::Optional;
    if (md.find_uint(c.key("expert_count")).value_or(0) > 0) {
        t.experts = TensorUse::Required;
        const bool shared = md.find_uint(c.key("expert_shared_feed_forward_length")).value_or(0) > 0;
        t.shared_expert = shared ? TensorUse::Required : TensorUse::No;
        read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
    }
}

}  // namespace kiln
