// llama: the reference family (Llama 1-3, Mistral, SmolLM2, ...). Its graph in
// llama.cpp takes, beyond the common tensors, an attention-output bias, biases
// and weight scales on the three FFN matrices and the Llama 3 RoPE factors (rope_freqs.weight; LongRoPE's
// long / short factors instead when rope.scaling.type is longrope), each by presence.
// With llama.expert_count the file is a mixture of experts (Mixtral): layers
// with a router (ffn_gate_inp) select the top k experts by softmax and
// renormalize their weights, as llama.cpp does for this family.
// llama-embed (llama-embed-nemotron): llama's layers without the output head,
// for embeddings; causal or not and the pooling come from the file, as
// llama.cpp's llama-embed graph (llama's, no KV cache, no lm_head) reads them.
#include "model/arch/families.h"
#include "model/moe.h"
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
    if (c.metadata.has(c.key("expert_count")) && c.metadata.get_uint(c.key("expert_count")) > 0) {
        read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
        t.experts = TensorUse::Optional;
        t.shared_expert = TensorUse::Optional;  // ungated (Granite MoE Shared under llama's graph)
    }
}

void configure_llama_embed(ArchConfig& c) {
    configure_llama(c);
    c.spec.output_head = false;
    c.spec.tensors.output = TensorUse::No;
}

}  // namespace kiln
