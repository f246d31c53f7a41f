// starcoder2: LayerNorm with biases (attention, FFN and output norms), NEOX
// RoPE, Q/K/V biases (by presence) and attention-output bias (required), a plain
// GELU FFN (no gate) with up and down biases (required), output head separate or
// tied.
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_starcoder2(ArchConfig& c) {
    ModelSpec& s = c.spec;
    s.activation = FfnActivation::Gelu;
    s.tensors.attn_out_bias = TensorUse::Required;
    s.tensors.ffn_bias = TensorUse::Required;
}

}  // namespace kiln
