// gpt-oss (gpt-oss-20b / 120b, GGUF architecture "gpt-oss"): sliding-window and
// full attention alternate (attention.sliding_window_pattern, default 2: even
// layers slide), learned attention sinks (attn_sinks, one logit per head), Q/K/V
// biases (by presence) and an attention-output bias, sinks, router and expert
// biases and a separate output head (all required, as llama.cpp's loader); the pre-FFN norm is stored as post_attention_norm; every
// FFN a mixture of experts routed on the biased router logits, the selected
// experts' weights a softmax over their logits, experts with biases and the
// clamped OAI SwiGLU (alpha 1.702, limit 7), as llama.cpp's openai-moe graph.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_gpt_oss(ArchConfig& c) {
    ModelSpec& s = c.spec;
    s.ffn_norm_tensor = "post_attention_norm.weight";  // the pre-FFN norm, under this name
    TensorRules& t = s.tensors;
    t.output = TensorUse::Required;
    t.attn_out_bias = TensorUse::Required;
    t.attn_sinks = TensorUse::Required;
    t.experts = TensorUse::Optional;
    t.expert_bias = TensorUse::Required;
    if (s.sliding_window <= 0) throw Error("GGUF metadata key '" + c.key("attention.sliding_window") + "' not found");
    const std::string pk = c.key("attention.sliding_window_pattern");
    const gguf::Value* pv = c.metadata.find(pk);
    if (pv && pv->type() == gguf::ValueType::Array) {
        if (pv->lazy() || pv->count() != static_cast<uint64_t>(s.n_layer))
            throw Error("GGUF metadata '" + pk + "': " + std::to_string(pv->count()) + " values for " + std::to_string(s.n_layer) + " layers");
        size_t il = 0;
        for (const gguf::Value& x : pv->items()) s.layers[il++].sliding = x.raw_bool();
    } else {
        const uint64_t n = pv ? c.metadata.get_uint(pk) : 2;
        for (size_t il = 0; il < s.layers.size(); ++il) s.layers[il].sliding = n == 0 || il % n < n - 1;
    }
    s.rope.freq_scale_swa = s.rope.freq_scale;  // sliding layers scale as the full ones
    read_moe_hparams(c, {.gating = ExpertGating::SoftmaxWeight, .norm_weights = false});
    s.moe.oai_swiglu = true;
}

}  // namespace kiln
