// phimoe (Phi-3.5-MoE, 16 experts x 3.8B, top 2): phi3's graph as llama.cpp
// builds it — NEOX RoPE with LongRoPE short / long factors by presence (chosen by
// the context against rope.scaling.original_context_length), queries scaled by
// 1/sqrt(head size) before the scores, Q/K/V biases (fused or separate) and an
// attention-output bias — with RMS norms that carry biases (attn_norm,
// ffn_norm and output_norm .bias, all required: llama.cpp's loader creates them
// and its graph adds them after the weight; Hugging Face's PhiMoE uses
// LayerNorm, but the oracle's graph is the reference), a separate output head
// with its bias (required), and every FFN a mixture of experts. Routing: Phi-3.5-MoE
// was trained with SparseMixer, but llama.cpp routes by softmax over all experts,
// the top k renormalized (no weight scale: expert_weights_scale is not read for
// this family), and so does kiln. llama.cpp does not read a sliding window for
// phimoe: every layer attends to the whole context.
#include <cmath>

#include "model/arch/families.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_phimoe(ArchConfig& c) {
    ModelSpec& s = c.spec;
    TensorRules& t = s.tensors;
    t.output = TensorUse::Required;
    t.output_bias = TensorUse::Required;
    t.attn_out_bias = TensorUse::Required;
    t.rms_norm_bias = true;
    t.rope_long_short = TensorUse::Optional;
    t.experts = TensorUse::Optional;
    s.attention_scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim_k));
    s.sliding_window = 0;
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
}

}  // namespace kiln
