// gemma3: embeddings scaled by sqrt(width); GELU-gated FFN; five sliding-window
// layers to one full layer (the file's attention.sliding_window_pattern where it
// has one; no sliding layers without a window); sliding layers use their own
// RoPE base (10000 unless the file says otherwise) and no RoPE scaling; per-head
// QK-norm; post-attention and post-FFN norms; a final soft-cap only where the
// file declares one (no attention soft-cap: llama.cpp's gemma3 graph has none).
#include <cmath>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {
constexpr int k_swa_period = 6;             // by default layers il % 6 < 5 slide
constexpr float k_default_swa_base = 10000.0f;
}  // namespace

void configure_gemma3(ArchConfig& c) {
    ModelSpec& s = c.spec;
    s.embedding_scale = std::sqrt(static_cast<float>(s.n_embd));
    s.activation = FfnActivation::Gelu;
    s.tensors.qk_norm = TensorUse::Required;
    s.tensors.post_norms = TensorUse::Required;
    if (s.sliding_window > 0) read_swa_pattern(c, k_swa_period, false);
    s.final_softcap = static_cast<float>(c.metadata.find_float(c.key("final_logit_softcapping")).value_or(0.0));
    if (s.rope.freq_base_swa <= 0.0f) s.rope.freq_base_swa = k_default_swa_base;
    s.rope.freq_scale_swa = 1.0f;
    // As Gemma 3's reference config: 1/sqrt(head size), except 27B (62 layers).
    s.attention_scale = s.n_layer == 62 ? 1.0f / std::sqrt(static_cast<float>(s.n_embd / s.layers[0].n_head))
                                        : 1.0f / std::sqrt(static_cast<float>(s.head_dim_k));
}

}  // namespace kiln
