// qwen35moe (Qwen 3.5 / 3.6 MoE, 35B-A3B and up): qwen35's hybrid stack (gated
// delta-net layers, every interval-th layer gated full attention with IMROPE)
// with every layer's FFN a mixture of experts: softmax over all experts, the top
// k renormalized to sum 1, plus a shared expert scaled by the sigmoid of its own
// gate (ffn_gate_inp_shexp), all required as llama.cpp's loader has them.
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_qwen35moe(ArchConfig& c) {
    configure_qwen35(c);
    TensorRules& t = c.spec.tensors;
    t.experts = TensorUse::Required;
    t.shared_expert = TensorUse::Required;
    t.shared_expert_gate = TensorUse::Required;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
}

}  // namespace kiln
