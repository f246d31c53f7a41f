// command-r (Command R, R+, Aya 23) and cohere2 (Command R7B, Command A): a
// parallel block — one LayerNorm without bias feeds the attention and a
// SiLU-gated FFN, x += attn + ffn — with NORM RoPE, Q/K/V biases by presence,
// the output head always the embedding (a file's output.weight is refused, as
// llama.cpp never reads one), and logits multiplied by logit_scale (0 or absent:
// none; cohere2 requires it).
//   command-r: per-head Q/K LayerNorms with one weight row per head, only in
//     a file of 64 or more layers (R+), where llama.cpp requires them.
//   cohere2: three sliding layers (attention.sliding_window, required) to one
//     full one (attention.sliding_window_pattern where the file has it); only the
//     sliding layers rotate, with the full base (llama.cpp's graph ignores
//     rope.freq_base_swa); FFN weight scales applied.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {

constexpr int k_qk_norm_min_layers = 64;  // llama.cpp: the Q/K norms exist from 64 layers (Command R+)
constexpr int k_swa_period = 4;           // cohere2: layers il % 4 < 3 slide

void configure_cohere_block(ArchConfig& c, bool logit_scale_required) {
    ModelSpec& s = c.spec;
    if (s.norm != NormKind::Layer)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_epsilon") + "' not found (" + s.arch +
                    " uses LayerNorm)");
    TensorRules& t = s.tensors;
    t.output = TensorUse::No;
    t.norm_bias = TensorUse::No;
    t.ffn_norm = TensorUse::No;  // every layer a parallel block
    const std::string key = c.key("logit_scale");
    if (logit_scale_required && !c.metadata.has(key)) throw Error("GGUF metadata key '" + key + "' not found");
    const float f = static_cast<float>(c.metadata.find_float(key).value_or(0.0));
    if (f != 0.0f) s.logit_multiplier = f;
}

}  // namespace

void configure_command_r(ArchConfig& c) {
    configure_cohere_block(c, false);
    TensorRules& t = c.spec.tensors;
    if (c.spec.n_layer >= k_qk_norm_min_layers) {
        t.qk_norm = TensorUse::Required;
        t.qk_norm_heads = true;
    }
}

void configure_cohere2(ArchConfig& c) {
    configure_cohere_block(c, true);
    ModelSpec& s = c.spec;
    if (s.sliding_window <= 0)
        throw Error("GGUF metadata key '" + c.key("attention.sliding_window") + "' not found (cohere2 has sliding layers)");
    read_swa_pattern(c, k_swa_period, false);
    for (LayerSpec& l : s.layers) l.use_rope = l.sliding;
    s.rope.freq_base_swa = 0.0f;  // the sliding layers rotate with the full base
    s.tensors.ffn_scales = TensorUse::Optional;
}

}  // namespace kiln
