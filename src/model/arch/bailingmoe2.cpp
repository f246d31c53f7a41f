// bailingmoe2 (Ling 2.0 / Ring 2.0 mini and flash): a fused attn_qkv without
// bias, per-head Q/K RMS norms before RoPE (required), NEOX RoPE over
// rope.dimension_count (half the head in the real models), a separate output
// head (required); the first leading_dense_block_count layers dense, then expert
// layers routed from the keys (expert_gating_func required, as llama.cpp's loader;
// exp_probs_b by presence; expert_weights_norm, expert_weights_scale, groups)
// plus expert_shared_count shared experts of expert_shared_feed_forward_length
// (or the experts' width) each, required. The multi-token-prediction layers
// after the trunk (nextn_predict_layers) are skipped with a load note, as
// llama.cpp skips them.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_bailingmoe2(ArchConfig& c) {
    ModelSpec& s = c.spec;
    read_nextn_layers(c);
    for (size_t il = 0; il < s.layers.size(); ++il)
        if (static_cast<int64_t>(s.layers[il].n_head) * s.head_dim_k != s.n_embd)
            throw Error("GGUF metadata '" + c.key("attention.head_count") + "': bailingmoe2's queries are as wide as the model (" +
                        std::to_string(s.n_embd) + "), layer " + std::to_string(il) + " has " + std::to_string(s.layers[il].n_head) +
                        " heads of " + std::to_string(s.head_dim_k));
    if (!c.metadata.find_uint(c.key("expert_gating_func")))
        throw Error("GGUF metadata key '" + c.key("expert_gating_func") + "' not found");
    TensorRules& t = s.tensors;
    t.output = TensorUse::Required;
    t.qkv_bias = false;  // llama.cpp's loader takes none
    t.qk_norm = TensorUse::Required;
    t.experts = TensorUse::Optional;
    t.expert_probs_bias = TensorUse::Optional;
    c.count("expert_feed_forward_length", true);
    t.shared_expert = c.count("expert_shared_count", true) > 0 ? TensorUse::Required : TensorUse::No;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = false, .from_keys = true});
}

}  // namespace kiln
