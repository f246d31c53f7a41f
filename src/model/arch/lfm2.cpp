// lfm2 (Liquid LFM2): a hybrid of gated short-convolution layers (the layers
// with 0 KV heads in `attention.head_count_kv`; src/model/ssm.cpp, ShortConv)
// and attention layers with per-head QK-norm, every layer followed by a SwiGLU
// FFN. The final norm is stored as `token_embd_norm.weight`. With
// `attention.sliding_window` the attention layers slide.
#include <string>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_lfm2(ArchConfig& c) {
    ModelSpec& s = c.spec;
    const std::string key = c.key("shortconv.l_cache");
    const uint64_t l_cache = c.metadata.get_uint(key);
    if (l_cache < 2 || l_cache > 64) throw Error("GGUF metadata '" + key + "': " + std::to_string(l_cache) + " is out of range (2 to 64)");
    s.ssm.kind = SsmKind::ShortConv;
    s.ssm.d_conv = static_cast<int>(l_cache);
    s.ssm.d_inner = s.n_embd;
    s.tensors.qk_norm = TensorUse::Required;
    s.output_norm_tensor = "token_embd_norm.weight";
    for (LayerSpec& l : s.layers) {
        if (l.n_head_kv == 0) {
            l.mixer = MixerKind::Recurrent;
            l.use_rope = false;
        } else {
            l.sliding = s.sliding_window > 0;
        }
    }
}

}  // namespace kiln
