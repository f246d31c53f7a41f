// rwkv6 (RWKV-6 "Finch"): attention-free; every layer is one RWKV-6 block (time
// mix and channel mix, src/model/rwkv6.cpp) over LayerNorms with biases, the
// embedding rows LayerNormed first (token_embd_norm + bias), a separate output
// head. Keys: wkv.head_size, time_mix_extra_dim, time_decay_extra_dim,
// feed_forward_length (the channel mix), rescale_every_n_layers (each such
// layer's output halved; the converter divides the weights to match),
// token_shift_count (must be 2), attention.layer_norm_epsilon.
#include <string>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_rwkv6(ArchConfig& c) {
    ModelSpec& s = c.spec;
    const gguf::Metadata& md = c.metadata;
    SsmSpec& m = s.ssm;
    m.kind = SsmKind::Rwkv6;
    m.d_conv = 3;  // the state's two token-shift rows
    m.d_inner = s.n_embd;
    m.d_state = c.count("wkv.head_size", true);
    m.rwkv_mix_dim = c.count("time_mix_extra_dim", true);
    m.rwkv_decay_dim = c.count("time_decay_extra_dim", true);
    m.rwkv_rescale_every = c.count("rescale_every_n_layers", false);
    if (m.d_state <= 0 || s.n_embd % m.d_state != 0 || m.rwkv_mix_dim <= 0 || m.rwkv_decay_dim <= 0)
        throw Error("GGUF metadata '" + c.key("wkv.head_size") + "' " + std::to_string(m.d_state) + " must divide '" +
                    c.key("embedding_length") + "' " + std::to_string(s.n_embd) + ", and '" + c.key("time_mix_extra_dim") +
                    "' / '" + c.key("time_decay_extra_dim") + "' be positive");
    if (md.find_uint(c.key("token_shift_count")).value_or(2) != 2)
        throw Error("GGUF metadata '" + c.key("token_shift_count") + "': only 2 is supported (as llama.cpp)", ErrorKind::Unsupported);
    m.rwkv_ff = c.count("feed_forward_length", true);
    if (m.rwkv_ff <= 0) throw Error("GGUF metadata '" + c.key("feed_forward_length") + "' must be positive");
    s.norm = NormKind::Layer;
    for (LayerSpec& l : s.layers) {
        l.mixer = MixerKind::Recurrent;
        l.ffn = FfnKind::None;  // the channel mix is part of the block
        l.use_rope = false;
    }
    TensorRules& t = s.tensors;
    t.output = TensorUse::Required;
    t.input_norm = TensorUse::Required;
    t.input_norm_bias = TensorUse::Required;
    t.norm_bias = TensorUse::Required;
}

}  // namespace kiln
