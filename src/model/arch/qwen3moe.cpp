// qwen3moe (Qwen3-30B-A3B, 235B-A22B): qwen3's attention (NEOX RoPE, per-head
// QK-norm) with every layer's FFN a mixture of experts: softmax over all
// experts, the top k, their weights renormalized to sum 1 (llama.cpp fixes the
// renormalization for this family; an expert_weights_norm key overrides it).
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_qwen3moe(ArchConfig& c) {
    TensorRules& t = c.spec.tensors;
    t.qk_norm = TensorUse::Required;
    t.experts = TensorUse::Optional;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
}

}  // namespace kiln
