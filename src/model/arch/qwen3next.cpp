// qwen3next (Qwen3-Next-80B-A3B): the hybrid stack qwen35 took over — gated
// delta-net layers and, every interval-th layer, gated full attention (QK-norm,
// partial rotary embedding) — with every FFN a mixture of experts and its
// sigmoid-gated shared expert, as qwen35moe. What differs, as llama.cpp reads it:
//   - RoPE is plain NEOX on rope.dimension_count dimensions (no IMROPE sections);
//   - the delta net's value heads are grouped by key head (value head h reads key
//     head h / (n_v / n_k)), and beta / alpha come fused in ssm_ba, per
//     key head its value heads' beta then their alpha (SsmSpec::grouped_heads);
//   - older converters wrote one ssm_in [q k v z per key head] in place of
//     attn_qkv + attn_gate: either is taken, by presence (model/delta_net.cpp).
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_qwen3next(ArchConfig& c) {
    configure_gated_delta_net(c);
    c.spec.ssm.grouped_heads = true;
    TensorRules& t = c.spec.tensors;
    t.experts = TensorUse::Required;
    t.shared_expert = TensorUse::Required;
    t.shared_expert_gate = TensorUse::Required;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
}

}  // namespace kiln
