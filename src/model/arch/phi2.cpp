// phi2 (Phi-1, Phi-1.5, Phi-2): a parallel block — one biased LayerNorm feeds
// both the attention and a plain GELU FFN, x += attn + ffn — with NEOX RoPE over
// the first rope.dimension_count dimensions of a head (partial rotary), Q/K/V
// fused in attn_qkv or separate (with biases), attention-output and FFN biases,
// queries scaled by 1/sqrt(head size) before the scores (as llama.cpp, against
// f16 overflow), and a separate output head with its bias (all required, as
// llama.cpp's loader).
#include <cmath>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_phi2(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (s.norm != NormKind::Layer)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_epsilon") + "' not found (phi2 uses LayerNorm)");
    s.activation = FfnActivation::Gelu;
    s.attention_scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim_k));
    TensorRules& t = s.tensors;
    t.ffn_norm = TensorUse::No;  // every layer a parallel block
    t.norm_bias = TensorUse::Required;
    t.output = TensorUse::Required;
    t.output_bias = TensorUse::Required;
    t.attn_out_bias = TensorUse::Required;
    t.ffn_bias = TensorUse::Required;
}

}  // namespace kiln
