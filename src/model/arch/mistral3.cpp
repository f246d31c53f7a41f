// mistral3 (Ministral 3, Mistral Small 3.x text models as llama.cpp's converter
// writes them): llama's graph and tensors (configure_llama: every optional
// tensor llama reads, experts by the file) over the whole head (llama.cpp
// asserts rope.dimension_count = head size), with two additions its loader
// reads:
//   - YaRN's own keys: rope.scaling.yarn_beta_fast / yarn_beta_slow, and
//     rope.scaling.yarn_log_multiplier (mscale_all_dim, as written: mistral3's
//     loader does not divide it as deepseek2's does) in the rotation's magnitude;
//   - attention.temperature_scale (llama_4_scaling_beta): when not 0, every
//     layer's queries are scaled after RoPE by
//     log(floor(pos / n) + 1) · scale + 1, n = the original context
//     (rope.scaling.original_context_length, else context_length), offset 0.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_mistral3(ArchConfig& c) {
    configure_llama(c);
    require_full_rotation(c);
    ModelSpec& s = c.spec;
    const gguf::Metadata& md = c.metadata;
    s.rope.yarn_beta_fast = static_cast<float>(md.find_float(c.key("rope.scaling.yarn_beta_fast")).value_or(s.rope.yarn_beta_fast));
    s.rope.yarn_beta_slow = static_cast<float>(md.find_float(c.key("rope.scaling.yarn_beta_slow")).value_or(s.rope.yarn_beta_slow));
    const float log_mul = static_cast<float>(md.find_float(c.key("rope.scaling.yarn_log_multiplier")).value_or(0.0));
    if (s.rope.yarn_ext_factor != 0.0f) {
        const float rope_attn = static_cast<float>(md.find_float(c.key("rope.scaling.attn_factor")).value_or(1.0));
        s.rope.yarn_attn_factor = yarn_attn_factor(1.0f / s.rope.freq_scale, 1.0f, log_mul, rope_attn);
    }
    const float temp = static_cast<float>(md.find_float(c.key("attention.temperature_scale")).value_or(0.0));
    if (temp != 0.0f) {
        if (s.rope.n_ctx_orig <= 0)
            throw Error("GGUF metadata '" + c.key("rope.scaling.original_context_length") +
                        "': attention temperature scaling needs an original context length above 0");
        s.attn_temp.floor = s.rope.n_ctx_orig;
        s.attn_temp.scale = temp;
        s.attn_temp.offset = 0.0f;
        s.attn_temp.every_layer = true;
    }
}

}  // namespace kiln
