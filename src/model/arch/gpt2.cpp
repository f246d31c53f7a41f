// gpt2 (GPT-2, Cerebras-GPT, ...) and starcoder (StarCoder 1, SantaCoder,
// WizardCoder): one graph in llama.cpp — learned absolute positions
// (position_embd, one row per trained position, added to the token's row), no
// RoPE, LayerNorms with biases, Q/K/V fused in attn_qkv with its bias
// (multi-query in StarCoder), attention-output bias, a plain GELU FFN with up /
// down biases (all required), output head separate or tied.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_gpt2(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (s.norm != NormKind::Layer)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_epsilon") + "' not found (" + s.arch +
                    " uses LayerNorm)");
    s.activation = FfnActivation::Gelu;
    TensorRules& t = s.tensors;
    t.pos_embd = TensorUse::Required;
    t.norm_bias = TensorUse::Required;
    t.attn_out_bias = TensorUse::Required;
    t.ffn_bias = TensorUse::Required;
}

}  // namespace kiln
