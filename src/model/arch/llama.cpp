// llama: the reference family (Llama 1-3, Mistral, SmolLM2, ...). Its graph in
// llama.cpp takes, beyond the common tensors, an attention-output bias, biases
// and weight scales on the three FFN matrices and the Llama 3 RoPE factors (rope_freqs.weight; LongRoPE's
// long / short factors instead when rope.scaling.type is longrope), each by presence.
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_llama(ArchConfig& c) {
    TensorRules& t = c.spec.tensors;
    t.attn_out_bias = TensorUse::Optional;
    t.ffn_bias = TensorUse::Optional;
    // With LongRoPE scaling llama.cpp reads long / short factors in place of rope_freqs.
    (c.spec.rope.scaling == "longrope" ? t.rope_long_short : t.rope_freqs) = TensorUse::Optional;
    t.ffn_scales = TensorUse::Optional;
}

}  // namespace kiln
