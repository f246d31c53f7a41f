// stablelm (StableLM 2 1.6B / 12B, StableLM 3B 4E1T, StableCode): LayerNorm
// with biases, NEOX RoPE over rope.dimension_count dimensions (partial rotary),
// Q/K/V biases by presence, a SiLU-gated FFN without biases, a separate output
// head (required). The residual form follows the tensors, as in llama.cpp: a
// layer with ffn_norm is sequential; one without (StableLM 2 12B) is a
// parallel block whose FFN reads the attention norm's output. The optional
// Q/K norms (12B) are LayerNorms without bias over each head, with one weight
// row per head (attn_q_norm [head size, n_head]).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_stablelm(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (s.norm != NormKind::Layer)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_epsilon") + "' not found (stablelm uses LayerNorm)");
    TensorRules& t = s.tensors;
    t.output = TensorUse::Required;
    t.ffn_norm = TensorUse::Optional;
    t.qk_norm = TensorUse::Optional;
    t.qk_norm_heads = true;
}

}  // namespace kiln
