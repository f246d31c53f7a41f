// minicpm (MiniCPM 1B / 2B): granite's graph in llama.cpp (llama's tensors,
// attention-output and FFN biases and rope_freqs / LongRoPE factors by presence,
// no FFN weight scales) with MiniCPM's defaults where the file has no key: the
// embedding scaled by 12 (embedding_scale), each block's output by
// 1.4 / sqrt(layers) before the residual add (residual_scale), the logits divided
// by 256 / width (logit_scale). RoPE always applies and the attention scale is
// 1/sqrt(head size): llama.cpp reads neither rope.scaling.finetuned nor
// attention.scale for this family.
#include <cmath>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_minicpm(ArchConfig& c) {
    ModelSpec& s = c.spec;
    TensorRules& t = s.tensors;
    t.attn_out_bias = TensorUse::Optional;
    t.ffn_bias = TensorUse::Optional;
    (s.rope.scaling == "longrope" ? t.rope_long_short : t.rope_freqs) = TensorUse::Optional;
    const gguf::Metadata& md = c.metadata;
    s.embedding_scale = static_cast<float>(md.find_float(c.key("embedding_scale")).value_or(12.0));
    s.residual_scale = static_cast<float>(
        md.find_float(c.key("residual_scale")).value_or(1.4 / std::sqrt(static_cast<double>(s.n_layer))));
    const float logit_scale = static_cast<float>(md.find_float(c.key("logit_scale")).value_or(256.0 / static_cast<double>(s.n_embd)));
    if (!(logit_scale != 0.0f)) throw Error("GGUF metadata '" + c.key("logit_scale") + "' must not be 0");
    s.logit_multiplier = 1.0f / logit_scale;
}

}  // namespace kiln
