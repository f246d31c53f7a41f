// olmo2 (OLMo 2, OLMo 3): no pre-norms — each block reads the residual stream
// as it is and its output is RMS-normed (post_attention_norm, post_ffw_norm)
// before the residual add; Q and K are RMS-normed over the whole projection
// (attn_q_norm [n_head * head size], attn_k_norm [n_head_kv * head size]) before
// RoPE; a separate output head (required). OLMo 3 declares a sliding window:
// then three sliding layers to one full one (attention.sliding_window_pattern
// where the file has it), the sliding layers rotating with the full layers'
// base and no RoPE scaling (no linear factor, YaRN ramp or magnitude). llama.cpp's
// graph uses the full base there even where the file has rope.freq_base_swa, so
// kiln reads that key as llama.cpp does: not at all.
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {
constexpr int k_swa_period = 4;  // OLMo 3: layers il % 4 < 3 slide
}  // namespace

void configure_olmo2(ArchConfig& c) {
    ModelSpec& s = c.spec;
    TensorRules& t = s.tensors;
    t.pre_norms = false;
    t.qk_norm = TensorUse::Required;
    t.qk_norm_full = true;
    t.post_norms = TensorUse::Required;
    t.output = TensorUse::Required;
    if (s.sliding_window > 0) {
        read_swa_pattern(c, k_swa_period, false);
        s.rope.freq_base_swa = s.rope.freq_base;
        s.rope.freq_scale_swa = 1.0f;
        s.rope.swa_unscaled = true;
    }
}

}  // namespace kiln
