// rwkv7 (RWKV-7 "Goose"): attention-free; every layer is one RWKV-7 block (time
// mix with WKV7 and the first layer's values mixed into later ones, channel mix
// with a squared-ReLU key; src/model/rwkv7.cpp) over LayerNorms with biases, the
// embedding rows LayerNormed first, a separate output head. Keys: wkv.head_size,
// attention.decay_lora_rank, attention.iclr_lora_rank,
// attention.value_residual_mix_lora_rank, attention.gate_lora_rank (the gate's
// tensors are required, as llama.cpp's loader has them), feed_forward_length,
// token_shift_count (only 2), attention.layer_norm_epsilon.
#include <string>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_rwkv7(ArchConfig& c) {
    ModelSpec& s = c.spec;
    SsmSpec& m = s.ssm;
    m.kind = SsmKind::Rwkv7;
    m.d_conv = 3;  // the state's two token-shift rows
    m.d_inner = s.n_embd;
    m.d_state = c.count("wkv.head_size", true);
    m.rwkv_decay_dim = c.count("attention.decay_lora_rank", true);
    m.rwkv_iclr_dim = c.count("attention.iclr_lora_rank", true);
    m.rwkv_value_dim = c.count("attention.value_residual_mix_lora_rank", true);
    m.rwkv_gate_dim = c.count("attention.gate_lora_rank", true);
    m.rwkv_ff = c.count("feed_forward_length", true);
    if (m.d_state <= 0 || s.n_embd % m.d_state != 0)
        throw Error("GGUF metadata '" + c.key("wkv.head_size") + "' " + std::to_string(m.d_state) + " must divide '" +
                    c.key("embedding_length") + "' " + std::to_string(s.n_embd));
    if (m.rwkv_decay_dim <= 0 || m.rwkv_iclr_dim <= 0 || m.rwkv_value_dim <= 0 || m.rwkv_gate_dim <= 0 || m.rwkv_ff <= 0)
        throw Error("GGUF metadata: the '" + c.key("attention.*_lora_rank") + "' ranks and '" + c.key("feed_forward_length") +
                    "' must be positive");
    if (c.metadata.find_uint(c.key("token_shift_count")).value_or(2) != 2)
        throw Error("GGUF metadata '" + c.key("token_shift_count") + "': only 2 is supported (as llama.cpp)", ErrorKind::Unsupported);
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
