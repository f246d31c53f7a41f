// granite (IBM Granite 3.x dense): llama's tensors (attention-output and FFN
// biases, rope_freqs, by presence; no FFN weight scales: its graph in llama.cpp
// ignores them) with four scales from the file: the embedding
// (granite.embedding_scale), the attention logits (attention.scale, in place of
// 1/sqrt(head size)), each block's output before the residual add
// (residual_scale) and the logits (divided by logit_scale, required). A file
// with rope.scaling.finetuned = false applies no RoPE at all.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void read_granite_scales(ArchConfig& c) {
    ModelSpec& s = c.spec;
    const gguf::Metadata& md = c.metadata;
    const float logit_scale = static_cast<float>(md.get_float(c.key("logit_scale")));
    if (!(logit_scale != 0.0f)) throw Error("GGUF metadata '" + c.key("logit_scale") + "' must not be 0");
    s.logit_multiplier = 1.0f / logit_scale;
    s.residual_scale = static_cast<float>(md.find_float(c.key("residual_scale")).value_or(0.0));
    if (auto v = md.find_float(c.key("embedding_scale")); v && *v != 0.0) s.embedding_scale = static_cast<float>(*v);
    s.attention_scale = static_cast<float>(md.find_float(c.key("attention.scale")).value_or(0.0));
}

void configure_granite(ArchConfig& c) {
    ModelSpec& s = c.spec;
    TensorRules& t = s.tensors;
    t.attn_out_bias = TensorUse::Optional;
    t.ffn_bias = TensorUse::Optional;
    (s.rope.scaling == "longrope" ? t.rope_long_short : t.rope_freqs) = TensorUse::Optional;
    read_granite_scales(c);
    if (!c.metadata.find_bool(c.key("rope.scaling.finetuned")).value_or(true))
        for (LayerSpec& l : s.layers) l.use_rope = false;
}

}  // namespace kiln
