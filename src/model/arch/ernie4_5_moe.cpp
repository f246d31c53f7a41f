// ernie4_5-moe (ERNIE-4.5-21B-A3B, 300B-A47B): ernie4_5's block (NORM RoPE over
// the whole head, Q/K/V biases by presence) with the first
// leading_dense_block_count layers dense and every later one a mixture of
// experts: softmax over all experts, the exp_probs_b selection bias by presence,
// the top k renormalized (llama.cpp fixes both for this family; an
// expert_gating_func or expert_weights_norm that says otherwise is refused), no
// weight scale (its loader never reads expert_weights_scale), plus one ungated
// shared expert of expert_shared_feed_forward_length when that is positive.
//
// Refused by name: interleave_moe_layer_step other than 1 (llama.cpp's loader
// makes every layer past the dense ones an expert layer while its graph routes
// only every step-th, so no such file runs there), a rotated part smaller than
// the head (llama.cpp asserts them equal) and the attention-output bias its
// loader takes but its graph never adds (as ernie4_5).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_ernie4_5_moe(ArchConfig& c) {
    ModelSpec& s = c.spec;
    const int step = c.count("interleave_moe_layer_step", true);
    if (step != 1)
        throw Error("GGUF metadata '" + c.key("interleave_moe_layer_step") + "': " + std::to_string(step) +
                        " (kiln, as llama.cpp's loader, runs every layer after the leading dense ones as an expert layer: step 1)",
                    ErrorKind::Unsupported);
    require_full_rotation(c);
    TensorRules& t = s.tensors;
    t.experts = TensorUse::Optional;
    t.expert_probs_bias = TensorUse::Optional;
    c.count("expert_feed_forward_length", true);  // required by llama.cpp's loader; the width comes from the tensors
    t.shared_expert = c.count("expert_shared_feed_forward_length", false) > 0 ? TensorUse::Required : TensorUse::No;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
}

}  // namespace kiln
