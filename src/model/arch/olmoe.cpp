// olmoe (OLMoE-1B-7B): RMS norm of the whole Q and K rows before RoPE
// (attn_q_norm / attn_k_norm of [n_head * head_dim], required), a separate
// output head (required),
// NEOX RoPE, and every FFN a mixture of experts: softmax over all experts, the
// top k keeping their probabilities (llama.cpp does not renormalize for it).
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_olmoe(ArchConfig& c) {
    TensorRules& t = c.spec.tensors;
    t.qk_norm = TensorUse::Required;
    t.qk_norm_full = true;
    t.output = TensorUse::Required;
    t.experts = TensorUse::Optional;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = false});
}

}  // namespace kiln
