// llama: the reference family (Llama 1-3, Mistral, SmolLM2, ...). Its graph in
// llama.cpp takes, beyond the common tensors, an attention-output bias, biases
// and weight scales on the three FFN matrices and the Llama 3 RoPE factors (rope_freqs.weight),
// each by presence.
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_llama(ArchConfig& c) {
    TensorRules& t = c.spec.tensors;
    t.attn_out_bias = TensorUse::Optional;
    t.ffn_bias = TensorUse::Optional;
    t.rope_freqs = TensorUse::Optional;
    t.ffn_scales = TensorUse::Optional;
}

}  // namespace kiln
