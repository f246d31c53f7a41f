// chatglm (ChatGLM 2 / 3, GLM-4-9B-Chat) and glm4 (GLM-4-0414, GLM-Z1): llama's
// attention with NORM RoPE over rope.dimension_count dimensions (half the head
// in the real models), Q/K/V fused or separate with biases by presence, and an
// FFN whose gate and up are stacked in one ffn_up [n_embd, 2 n_ff] (SwiGLU, gate
// first); output head separate or tied. glm4 adds Gemma-style post-norms after
// the attention and the FFN (post_attention_norm, post_ffw_norm; required).
// Refused with a named error: multimodal RoPE sections (rope.dimension_sections,
// GLM-4V) and glm4's multi-token-prediction layers (nextn_predict_layers).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {

void configure_glm_block(ArchConfig& c) {
    for (const char* name : {"rope.dimension_sections", "nextn_predict_layers"}) {
        const std::string key = c.key(name);
        const gguf::Value* v = c.metadata.find(key);
        const bool set = v && !(v->is_integer() && v->raw_u64() == 0);
        if (set)
            throw Error("GGUF metadata '" + key + "': " +
                            (std::string(name) == "nextn_predict_layers" ? "multi-token-prediction layers"
                                                                         : "multimodal RoPE sections") +
                            " are not supported",
                        ErrorKind::Unsupported);
    }
    c.spec.tensors.ffn_gate_up_fused = true;
}

}  // namespace

void configure_chatglm(ArchConfig& c) { configure_glm_block(c); }

void configure_glm4(ArchConfig& c) {
    configure_glm_block(c);
    c.spec.tensors.post_norms = TensorUse::Required;
}

}  // namespace kiln
