// granitemoe (Granite 3.0 / 3.1 MoE, 1B-A400M and 3B-A800M; "Granite MoE Shared"
// when expert_shared_feed_forward_length is set): granite's block and scales
// (granite.cpp: embedding, attention, residual and logit scales; attention-output
// bias, rope_freqs or LongRoPE factors by presence) with every FFN a mixture of
// experts: softmax over all experts, the top k renormalized, no weight scale
// (llama.cpp's graph passes expert_weights_scale, which its loader never reads
// for this family, so it is 0: unscaled). Unlike granite, RoPE is always on
// (llama.cpp does not read rope.scaling.finetuned for it). The shared variant adds
// an ungated shared expert (ffn_{gate,up,down}_shexp) of that width to the
// experts' sum; llama.cpp creates its tensors only when the key is positive, so
// kiln requires them then and refuses them otherwise.
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_granitemoe(ArchConfig& c) {
    ModelSpec& s = c.spec;
    TensorRules& t = s.tensors;
    t.attn_out_bias = TensorUse::Optional;
    (s.rope.scaling == "longrope" ? t.rope_long_short : t.rope_freqs) = TensorUse::Optional;
    read_granite_scales(c);
    t.experts = TensorUse::Optional;
    const bool shared = c.metadata.find_uint(c.key("expert_shared_feed_forward_length")).value_or(0) > 0;
    t.shared_expert = shared ? TensorUse::Required : TensorUse::No;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
}

}  // namespace kiln
