// llama: the reference family (Llama 1-3, Mistral, SmolLM2, ...). Everything it
// adds over the common pass is detected by tensor presence at load: Q/K/V/O
// biases, the Llama 3 RoPE factors (rope_freqs.weight), a separate output head.
// With llama.expert_count the file is a mixture of experts (Mixtral): layers
// with a router (ffn_gate_inp) select the top k experts by softmax and
// renormalize their weights, as llama.cpp does for this family.
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_llama(ArchConfig& c) {
    if (c.metadata.has(c.key("expert_count")) && c.metadata.get_uint(c.key("expert_count")) > 0)
        read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
}

}  // namespace kiln
