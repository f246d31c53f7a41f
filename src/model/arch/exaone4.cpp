// exaone4 (EXAONE 4.0): a post-norm block — no pre-norms, the attention and FFN
// outputs RMS-normed (post_attention_norm, post_ffw_norm, required) before each
// residual add — per-head Q/K RMS norms (required) before RoPE, NEOX RoPE with
// rope_freqs by presence, output separate or tied. As llama.cpp, only the 64-layer
// model (EXAONE 4.0 32B) has the local / global schedule: three sliding layers
// (window 4096 unless the file says) to one full one
// (attention.sliding_window_pattern where the file has it), RoPE on the sliding
// layers only (rope.freq_base_swa, default the full base) and none on the full
// ones; other layer counts attend to the whole context with RoPE everywhere and
// llama.cpp ignores their attention.sliding_window, so kiln does too.
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {
constexpr int k_swa_layers = 64;  // the layer count llama.cpp keys the schedule on (32B)
constexpr int k_swa_period = 4;   // layers il % 4 < 3 slide
constexpr int k_default_window = 4096;
}  // namespace

void configure_exaone4(ArchConfig& c) {
    ModelSpec& s = c.spec;
    TensorRules& t = s.tensors;
    t.pre_norms = false;
    t.post_norms = TensorUse::Required;
    t.qk_norm = TensorUse::Required;
    t.rope_freqs = TensorUse::Optional;
    if (s.n_layer != k_swa_layers) {
        s.sliding_window = 0;
        return;
    }
    if (!c.metadata.has(c.key("attention.sliding_window"))) s.sliding_window = k_default_window;
    read_swa_pattern(c, k_swa_period, false);
    s.rope.freq_scale_swa = s.rope.freq_scale;
    for (LayerSpec& l : s.layers) l.use_rope = l.sliding;
}

}  // namespace kiln
