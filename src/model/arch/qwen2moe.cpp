// qwen2moe (Qwen1.5-MoE-A2.7B, Qwen2-57B-A14B): qwen2's attention (NEOX RoPE,
// Q/K/V biases by presence); every FFN routes by softmax over all experts, the
// selected experts keep their probabilities (not renormalized), and a shared
// expert runs for every token, scaled by the sigmoid of its own gate
// (ffn_gate_inp_shexp) — found by presence in the binding.
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_qwen2moe(ArchConfig& c) { read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = false}); }

}  // namespace kiln
