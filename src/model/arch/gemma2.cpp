// gemma2: embeddings scaled by sqrt(width); GELU-gated FFN; sliding-window and
// full attention alternate (even layers slide, window 4096 unless the file says);
// attention-logit and final-logit soft-caps (50 and 30 unless the file says);
// post-attention and post-FFN norms (required); the output head is always the
// embedding. Norm weights in GGUF already include Gemma's +1 (the converter adds it).
#include <cmath>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {
constexpr int k_default_window = 4096;  // Gemma 2's, as llama.cpp assumes when the file has none
}  // namespace

void configure_gemma2(ArchConfig& c) {
    ModelSpec& s = c.spec;
    s.embedding_scale = std::sqrt(static_cast<float>(s.n_embd));
    s.activation = FfnActivation::Gelu;
    s.tensors.output = TensorUse::No;
    s.tensors.post_norms = TensorUse::Required;
    if (!c.metadata.has(c.key("attention.sliding_window"))) s.sliding_window = k_default_window;
    read_swa_pattern(c, 2, false);
    s.attn_softcap = static_cast<float>(c.metadata.find_float(c.key("attn_logit_softcapping")).value_or(50.0));
    s.final_softcap = static_cast<float>(c.metadata.find_float(c.key("final_logit_softcapping")).value_or(30.0));
    // Sliding layers rotate as the full ones unless the file gives them a base.
    s.rope.freq_scale_swa = s.rope.freq_scale;
    // Query scaling as the Gemma 2 reference: 1/sqrt(head size), except the 27B
    // model (46 layers), which scales by 1/sqrt(width / heads). GGUF does not
    // store query_pre_attn_scalar, so the layer count identifies it, as in llama.cpp.
    s.attention_scale = s.n_layer == 46 ? 1.0f / std::sqrt(static_cast<float>(s.n_embd / s.layers[0].n_head))
                                        : 1.0f / std::sqrt(static_cast<float>(s.head_dim_k));
}

}  // namespace kiln
