// gptneox (GPT-NeoX-20B, Pythia, RedPajama-INCITE): LayerNorm with biases (all
// required), Q/K/V fused in attn_qkv with its bias, NEOX RoPE over
// rope.dimension_count dimensions (partial rotary), attention-output bias, a
// plain GELU FFN with up / down biases, a separate output head (required). With
// use_parallel_residual (required, as llama.cpp reads it) each layer is a
// parallel block, x += attn(ln1(x)) + ffn(ln2(x)); without, the usual
// sequential block.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_gptneox(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (s.norm != NormKind::Layer)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_epsilon") + "' not found (gptneox uses LayerNorm)");
    s.activation = FfnActivation::Gelu;
    TensorRules& t = s.tensors;
    t.output = TensorUse::Required;
    t.norm_bias = TensorUse::Required;
    t.attn_out_bias = TensorUse::Required;
    t.ffn_bias = TensorUse::Required;
    const bool parallel = c.metadata.get_bool(c.key("use_parallel_residual"));  // throws naming the key if absent
    for (LayerSpec& l : s.layers) l.parallel = parallel;
}

}  // namespace kiln
