// hunyuan-moe (Hunyuan-A13B): hunyuan-dense's attention (NEOX RoPE over the
// whole head, per-head Q/K RMS norms after RoPE, required; Q/K/V biases by
// presence; output head tied or separate) with every FFN a mixture of experts:
// softmax over all experts, the top k renormalized, unscaled (fixed by llama.cpp),
// plus an ungated shared expert of expert_shared_feed_forward_length (or the
// FFN width) in every layer, required. Its NTK-aware RoPE alpha is folded into
// rope.freq_base by the converter and llama.cpp's graph reads no
// rope.scaling.alpha for this family, so a file with that key is refused.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_hunyuan_moe(ArchConfig& c) {
    ModelSpec& s = c.spec;
    require_full_rotation(c);
    if (c.metadata.find_float(c.key("rope.scaling.alpha")).value_or(0.0) > 0.0)
        throw Error("GGUF metadata '" + c.key("rope.scaling.alpha") +
                        "': llama.cpp's hunyuan-moe graph does not apply it (its converter folds alpha into rope.freq_base)",
                    ErrorKind::Unsupported);
    TensorRules& t = s.tensors;
    t.qk_norm = TensorUse::Required;
    t.qk_norm_after_rope = true;
    t.experts = TensorUse::Optional;
    t.shared_expert = TensorUse::Required;
    c.count("expert_feed_forward_length", true);
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
}

}  // namespace kiln
