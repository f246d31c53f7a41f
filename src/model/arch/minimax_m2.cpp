// minimax-m2 (MiniMax-M2, 230B-A10B): Q/K RMS norms over the whole Q and K
// projections before RoPE (required), NEOX RoPE over rope.dimension_count (half
// the head in the real model), Q/K/V biases by presence, a separate output head
// (required); every FFN a mixture of experts with the exp_probs_b selection bias
// (required), gating by expert_gating_func (required: llama.cpp has no default
// for this family), the top k renormalized, unscaled (its loader reads no
// expert_weights_scale), no shared expert.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_minimax_m2(ArchConfig& c) {
    ModelSpec& s = c.spec;
    const auto gating = c.metadata.find_uint(c.key("expert_gating_func"));
    if (!gating || *gating == 0) throw Error("GGUF metadata key '" + c.key("expert_gating_func") + "' not found");
    if (*gating != 1 && *gating != 2 && *gating != 3)
        throw Error("GGUF metadata '" + c.key("expert_gating_func") + "': gating function " + std::to_string(*gating) +
                        " is not supported (1 softmax, 2 sigmoid, 3 softmax over the selected)",
                    ErrorKind::Unsupported);
    TensorRules& t = s.tensors;
    t.output = TensorUse::Required;
    t.qk_norm = TensorUse::Required;
    t.qk_norm_full = true;
    t.experts = TensorUse::Optional;
    t.expert_probs_bias = TensorUse::Required;
    c.count("expert_feed_forward_length", true);
    // The gating is the file's, the normalization fixed: read as a fixed routing of that gating.
    read_moe_hparams(c, {.gating = static_cast<ExpertGating>(*gating), .norm_weights = true});
}

}  // namespace kiln
