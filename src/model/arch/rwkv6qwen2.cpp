// rwkv6qwen2 (QRWKV6: Qwen 2.5 converted to RWKV-6 attention): every layer is
// attn_norm (RMS) → RWKV-6's time mix as the recurrent mixer (one token-shift
// row, K / V of attention.head_count_kv heads, optional R / K / V biases, a
// sigmoid gate, gated linear attention in place of WKV6; src/model/rwkv6.cpp) →
// residual, then ffn_norm and a gated SiLU FFN; a separate output head. Keys:
// wkv.head_size, time_mix_extra_dim, time_decay_extra_dim, token_shift_count
// (1, as llama.cpp asserts), attention.head_count_kv,
// attention.layer_norm_rms_epsilon. output_norm.bias, which llama.cpp takes by
// presence, is not bound (a load error naming it).
#include <string>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_rwkv6qwen2(ArchConfig& c) {
    ModelSpec& s = c.spec;
    SsmSpec& m = s.ssm;
    m.kind = SsmKind::Rwkv6Qwen2;
    m.d_conv = 2;  // the state's one token-shift row
    m.d_inner = s.n_embd;
    m.d_state = c.count("wkv.head_size", true);
    m.rwkv_mix_dim = c.count("time_mix_extra_dim", true);
    m.rwkv_decay_dim = c.count("time_decay_extra_dim", true);
    if (m.d_state <= 0 || s.n_embd % m.d_state != 0 || m.rwkv_mix_dim <= 0 || m.rwkv_decay_dim <= 0)
        throw Error("GGUF metadata '" + c.key("wkv.head_size") + "' " + std::to_string(m.d_state) + " must divide '" +
                    c.key("embedding_length") + "' " + std::to_string(s.n_embd) + ", and '" + c.key("time_mix_extra_dim") +
                    "' / '" + c.key("time_decay_extra_dim") + "' be positive");
    const int n_head = s.n_embd / m.d_state;
    const int kv = s.layers.empty() ? 0 : s.layers[0].n_head_kv;
    for (const LayerSpec& l : s.layers)
        if (l.n_head_kv != kv)
            throw Error("GGUF metadata '" + c.key("attention.head_count_kv") + "': per-layer values are not supported",
                        ErrorKind::Unsupported);
    if (kv < 0 || (kv > 0 && n_head % kv != 0))
        throw Error("GGUF metadata '" + c.key("attention.head_count_kv") + "': " + std::to_string(kv) + " must divide the " +
                    std::to_string(n_head) + " WKV heads");
    m.rwkv_kv_heads = kv == n_head ? 0 : kv;
    if (c.count("rescale_every_n_layers", false) > 0)
        throw Error("GGUF metadata '" + c.key("rescale_every_n_layers") + "': not applied by this family's graph",
                    ErrorKind::Unsupported);
    configure_rwkv_qwen_layers(c);
}

void configure_rwkv_qwen_layers(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (c.metadata.find_uint(c.key("token_shift_count")).value_or(2) != 1)
        throw Error("GGUF metadata '" + c.key("token_shift_count") + "': must be 1 (as llama.cpp asserts for this family)",
                    ErrorKind::Unsupported);
    if (s.norm != NormKind::Rms)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_rms_epsilon") + "' not found (RMS norms)");
    for (LayerSpec& l : s.layers) {
        l.mixer = MixerKind::Recurrent;
        l.use_rope = false;
    }
    s.tensors.output = TensorUse::Required;
}

}  // namespace kiln
