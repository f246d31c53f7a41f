// falcon (Falcon 7B / 40B / 180B, Falcon 2): a parallel block — attn_norm (a
// LayerNorm with bias) feeds the FFN, and the attention too unless the layer has
// its own attn_norm_2 (Falcon-40B / 180B), x += attn + ffn — with Q/K/V fused in
// attn_qkv (multi-query in 7B), NEOX RoPE, no attention or FFN biases, a plain
// GELU FFN, output head separate or tied.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_falcon(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (s.norm != NormKind::Layer)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_epsilon") + "' not found (falcon uses LayerNorm)");
    s.activation = FfnActivation::Gelu;
    TensorRules& t = s.tensors;
    t.ffn_norm = TensorUse::No;  // every layer a parallel block
    t.norm_bias = TensorUse::Required;
    t.attn_norm_2 = TensorUse::Optional;
}

}  // namespace kiln
