// qwen2moe (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): qwen2's attention (NEOX RoPE,
// Q/K/V biases by presence); every FFN routes by softmax over all experts, the
// selected experts keep their probabilities (not renormalized), and a shared
// expert runs for every token, scaled by the sigmoid of its own gate
// (ffn_gate_inp_shexp), both required as in llama.cpp's loader; a separate
// output head (required).
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_qwen2moe(ArchConfig& c) {
    TensorRules& t = c.spec.tensors;
    t.output = TensorUse::Required;
    t.experts = TensorUse::Optional;
    t.shared_expert = TensorUse::Required;
    t.shared_expert_gate = TensorUse::Required;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = false});
}

}  // namespace kiln
