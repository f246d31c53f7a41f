// llama4 (Llama 4 Scout 17B-16E, Maverick 17B-128E): llama's block (NORM RoPE
// over the whole head, Q/K/V biases by presence, the Llama 3 rope_freqs factors
// by presence) in layers of three kinds, as llama.cpp's graph builds them:
//   - chunked attention: three layers in four (attention.sliding_window_pattern,
//     default 4) attend within chunks of 8192 positions (a query sees the keys
//     from its chunk's start to itself), RoPE'd with rope.freq_base_swa (default
//     the full base); llama.cpp always chunks by 8192, so a sliding_window key
//     other than that (or 0: no chunking, where llama.cpp's temperature input has
//     no scale) is refused;
//   - every fourth layer ((il + 1) % 4 == 0) has no RoPE and instead scales its
//     queries by the attention temperature log(floor((pos + 1) / 8192) + 1) · 0.1 + 1;
//   - on the RoPE layers Q and K are RMS-normed per head without a weight after
//     RoPE (Llama4TextL2Norm), except in the 128-expert model (llama.cpp's test:
//     use_kq_norm unless n_expert is 128).
// The FFN is dense or a mixture of experts by the file (interleave_moe_layer_step:
// Scout 1, Maverick 2): the top k on the raw router logits, weights sigmoid(logit)
// not renormalized and unscaled, each selected expert's input scaled by its
// weight (llama.cpp's weight_before_ffn), plus an ungated shared expert of the
// experts' width (required).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/moe.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_llama4(ArchConfig& c) {
    ModelSpec& s = c.spec;
    constexpr int k_chunk = 8192;  // llama.cpp's n_swa for llama4, whatever the key says
    const std::string wk = c.key("attention.sliding_window");
    if (c.metadata.has(wk) && s.sliding_window != k_chunk)
        throw Error("GGUF metadata '" + wk + "': " + std::to_string(s.sliding_window) +
                        " (llama4's attention is chunked by 8192 positions, as llama.cpp runs it; other chunk sizes and "
                        "0, no chunking, are not supported)",
                    ErrorKind::Unsupported);
    require_full_rotation(c);
    c.count("interleave_moe_layer_step", true);  // required by llama.cpp's loader; the layers' kinds come from the tensors
    c.count("expert_feed_forward_length", true);
    s.sliding_window = k_chunk;
    s.swa_chunked = true;
    read_swa_pattern(c, 4, false);
    s.rope.freq_scale_swa = s.rope.freq_scale;
    for (size_t il = 0; il < s.layers.size(); ++il) s.layers[il].use_rope = (il + 1) % 4 != 0;
    s.attn_temp.floor = k_chunk;
    s.attn_temp.scale = 0.1f;
    s.attn_temp.offset = 1.0f;

    TensorRules& t = s.tensors;
    t.rope_freqs = TensorUse::Optional;
    t.experts = TensorUse::Optional;
    t.shared_expert = TensorUse::Required;
    read_moe_hparams(c, {.gating = ExpertGating::Sigmoid, .norm_weights = false});
    s.moe.select_on_logits = true;
    s.moe.weight_before_ffn = true;
    s.qk_rms_after_rope = s.moe.n_expert != 128;
}

}  // namespace kiln
