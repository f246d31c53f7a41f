// deepseek (DeepSeek-MoE 16B, DeepSeek V1 MoE): llama's attention (NORM RoPE
// over the whole head, Q/K/V biases by presence, tied or separate output head)
// with the first leading_dense_block_count layers dense and every later one a
// mixture of experts: softmax over all experts, the top k not renormalized
// (llama.cpp fixes both for this family), scaled by expert_weights_scale (read),
// plus expert_shared_count ungated shared experts of the experts' width each
// (ffn_*_shexp, required).
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_deepseek(ArchConfig& c) {
    require_full_rotation(c);
    TensorRules& t = c.spec.tensors;
    t.experts = TensorUse::Optional;
    c.count("expert_feed_forward_length", true);  // required by llama.cpp's loader; the width comes from the tensors
    t.shared_expert = c.count("expert_shared_count", true) > 0 ? TensorUse::Required : TensorUse::No;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = false, .scale_from_key = true});
}

}  // namespace kiln
