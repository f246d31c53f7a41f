// gptj (GPT-J 6B and its fine-tunes): a parallel block — one biased LayerNorm
// feeds both the attention and a plain GELU FFN, x + attn(ln(x)) + ffn(ln(x)) —
// with RoPE on the first rope.dimension_count dimensions of each head (GPT-J's
// rotate_every_two: adjacent pairs, NORM), no Q/K/V or attention-output
// biases, FFN biases, a final biased LayerNorm and a separate output head with
// its bias (all required; tensor names as gguf-py's GPTJ list).
//
// llama.cpp names the architecture but has no graph for it (and its converter
// writes none), so this family is checked against an independent reference
// instead: tools/gptj_reference.py, a numpy forward written from transformers'
// modeling_gptj (tests/golden/tiny/gptj.json says which oracle made it).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_gptj(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (s.norm != NormKind::Layer)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_epsilon") + "' not found (gptj uses LayerNorm)");
    s.activation = FfnActivation::Gelu;
    TensorRules& t = s.tensors;
    t.qkv_bias = false;  // GPT-J's q/k/v projections have none
    t.ffn_norm = TensorUse::No;  // every layer a parallel block
    t.norm_bias = TensorUse::Required;
    t.output = TensorUse::Required;
    t.output_bias = TensorUse::Required;
    t.ffn_bias = TensorUse::Required;
}

}  // namespace kiln
