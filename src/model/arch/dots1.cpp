// dots1 (rednote dots.llm1, 142B-A14B): per-head Q/K RMS norms before RoPE
// (required), NEOX RoPE over the whole head, Q/K/V biases by presence, as many
// KV heads as heads (llama.cpp's loader sizes K and V so), a separate output head
// (required); the first leading_dense_block_count layers dense, then expert
// layers routed from the keys (expert_gating_func required: llama.cpp has no
// default for this family; exp_probs_b by presence; expert_weights_norm,
// expert_weights_scale, groups) plus expert_shared_count ungated shared experts
// of the experts' width each (required).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_dots1(ArchConfig& c) {
    ModelSpec& s = c.spec;
    require_full_rotation(c);
    for (size_t il = 0; il < s.layers.size(); ++il)
        if (s.layers[il].n_head_kv != s.layers[il].n_head)
            throw Error("GGUF metadata '" + c.key("attention.head_count_kv") + "': dots1 has as many KV heads as heads (layer " +
                            std::to_string(il) + ": " + std::to_string(s.layers[il].n_head_kv) + " of " +
                            std::to_string(s.layers[il].n_head) + ")",
                        ErrorKind::Unsupported);
    if (c.metadata.find_uint(c.key("expert_gating_func")).value_or(0) == 0)
        throw Error("GGUF metadata key '" + c.key("expert_gating_func") + "' not found (dots1 names its gating function)");
    TensorRules& t = s.tensors;
    t.output = TensorUse::Required;
    t.qk_norm = TensorUse::Required;
    t.experts = TensorUse::Optional;
    t.expert_probs_bias = TensorUse::Optional;
    c.count("expert_feed_forward_length", true);
    t.shared_expert = c.count("expert_shared_count", true) > 0 ? TensorUse::Required : TensorUse::No;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = false, .from_keys = true});
}

}  // namespace kiln
