// gemma2: embeddings scaled by sqrt(width); GELU-gated FFN; sliding-window and
// full attention alternate (even layers slide); attention-logit and final-logit
// soft-caps; post-attention and post-FFN norms (found by presence). Norm weights
// in GGUF already include Gemma's +1 (the converter adds it).
#include <cmath>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_gemma2(ArchConfig& c) {
    ModelSpec& s = c.spec;
    s.embedding_scale = std::sqrt(static_cast<float>(s.n_embd));
    s.activation = FfnActivation::Gelu;
    if (s.sliding_window <= 0) throw Error("GGUF metadata key '" + c.key("attention.sliding_window") + "' not found");
    for (size_t il = 0; il < s.layers.size(); ++il) s.layers[il].sliding = il % 2 == 0;
    // Query scaling as the Gemma 2 reference: 1/sqrt(head size), except the 27B
    // model (46 layers), which scales by 1/sqrt(width / heads). GGUF does not
    // store query_pre_attn_scalar, so the layer count identifies it, as in llama.cpp.
    s.attention_scale = s.n_layer == 46 ? 1.0f / std::sqrt(static_cast<float>(s.n_embd / s.layers[0].n_head))
                                        : 1.0f / std::sqrt(static_cast<float>(s.head_dim_k));
}

}  // namespace kiln
