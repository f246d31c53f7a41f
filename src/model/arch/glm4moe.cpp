// glm4moe (GLM-4.5, GLM-4.5-Air, GLM-4.6): llama's pre-norm block with Q/K/V
// biases by presence, optional per-head Q/K RMS norms (GLM-4.5 355B has them, Air
// not), NEOX RoPE over rope.dimension_count of the head (half in the real
// models), the FFN's input norm stored as post_attention_norm; the first
// leading_dense_block_count layers have a dense SwiGLU FFN, the rest route by
// the file's keys (expert_gating_func: sigmoid when absent, as llama.cpp;
// expert_weights_norm; expert_weights_scale; group-limited selection by
// expert_group_count / expert_group_used_count) with the exp_probs_b selection
// bias (required) plus expert_shared_count ungated shared experts of the
// experts' width each (ffn_*_shexp, required when the count is positive).
//
// Multi-token-prediction layers (nextn_predict_layers, the last layer of real
// files: nextn.eh_proj / enorm / hnorm / shared_head_norm and a whole expert
// block): the first is bound as the draft head (src/model/nextn.h, llama.cpp's
// glm4moe MTP graph), any others are left unread with a load note. Refused by name: multimodal
// RoPE sections (GLM-4.5V's M-RoPE, when rope.dimension_sections' first two are
// positive, llama.cpp's test).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_glm4moe(ArchConfig& c) {
    ModelSpec& s = c.spec;
    const std::string sk = c.key("rope.dimension_sections");
    if (const gguf::Value* v = c.metadata.find(sk); v && v->type() == gguf::ValueType::Array && !v->lazy()) {
        std::vector<uint64_t> sec;
        for (const gguf::Value& x : v->items()) sec.push_back(x.is_integer() ? x.raw_u64() : 0);
        if (sec.size() >= 2 && sec[0] > 0 && sec[1] > 0)
            throw Error("GGUF metadata '" + sk + "': multimodal RoPE sections (GLM-4.5V) are not supported", ErrorKind::Unsupported);
    }
    read_nextn_layers(c);  // the first NextN block is the draft head (--spec mtp)
    c.spec.tensors.nextn_head = true;
    s.ffn_norm_tensor = "post_attention_norm.weight";  // the pre-FFN norm, under this name
    TensorRules& t = s.tensors;
    t.qk_norm = TensorUse::Optional;
    t.experts = TensorUse::Optional;
    t.expert_probs_bias = TensorUse::Required;
    c.count("expert_feed_forward_length", true);  // required by llama.cpp's loader; the width comes from the tensors
    t.shared_expert = c.count("expert_shared_count", true) > 0 ? TensorUse::Required : TensorUse::No;
    read_moe_hparams(c, {.gating = ExpertGating::Sigmoid, .norm_weights = false, .from_keys = true});
}

}  // namespace kiln
