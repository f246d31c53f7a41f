// nomic-bert-moe: nomic-embed-text v2 MoE. bert's post-norm encoder with RoPE
// (NeoX) instead of learned positions, Q, K and V fused (or separate, by
// presence), attn_output's bias optional; the FFN of a layer il with
// il % moe_every_n_layers == 1 is a mixture of experts (router ffn_gate_inp
// without bias, ungated experts down(GELU(up x)), softmax over all experts,
// the top k keeping their probabilities unnormalized, as llama.cpp's
// build_moe_ffn for this family), every other layer bert's plain GELU FFN with
// optional biases. Token types as bert's (the count required, the tensor not).
#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_nomic_bert_moe(ArchConfig& c) {
    configure_encoder(c);
    ModelSpec& s = c.spec;
    s.activation = FfnActivation::Gelu;
    s.tensors.attn_out_bias = TensorUse::Optional;
    s.tensors.ffn_bias = TensorUse::Optional;
    // No key: no expert layers, as llama.cpp's default of 0.
    s.moe.every_n_layers = c.count("moe_every_n_layers", false);
    if (s.moe.every_n_layers == 0) return;
    s.tensors.experts = TensorUse::Optional;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = false});
    s.moe.ungated = true;
}

}  // namespace kiln
