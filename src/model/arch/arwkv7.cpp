// arwkv7 (ARWKV: Qwen 2.5 converted to RWKV-7 attention): every layer is
// attn_norm (RMS) → RWKV-7's time mix as the recurrent mixer (src/model/rwkv7.cpp:
// one token-shift row, the first layer's values mixed into later ones, the gate
// and the group norm each by presence) → residual, then ffn_norm and a gated SiLU
// FFN; no embedding norm; a separate output head. Keys as llama.cpp's loader:
// wkv.head_size, attention.decay_lora_rank, attention.iclr_lora_rank,
// attention.value_residual_mix_lora_rank, attention.gate_lora_rank (only with the
// gate's tensors), token_shift_count (1: llama.cpp asserts one shift row),
// attention.layer_norm_rms_epsilon. output_norm.bias, which llama.cpp takes by
// presence, is not bound (a load error naming it).
#include <string>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_arwkv7(ArchConfig& c) {
    ModelSpec& s = c.spec;
    SsmSpec& m = s.ssm;
    m.kind = SsmKind::Arwkv7;
    m.d_conv = 2;  // the state's one token-shift row
    m.d_inner = s.n_embd;
    m.d_state = c.count("wkv.head_size", true);
    m.rwkv_decay_dim = c.count("attention.decay_lora_rank", true);
    m.rwkv_iclr_dim = c.count("attention.iclr_lora_rank", true);
    m.rwkv_value_dim = c.count("attention.value_residual_mix_lora_rank", true);
    m.rwkv_gate_dim = c.count("attention.gate_lora_rank", false);  // 0: no gate (its tensors refused then)
    if (m.d_state <= 0 || s.n_embd % m.d_state != 0)
        throw Error("GGUF metadata '" + c.key("wkv.head_size") + "' " + std::to_string(m.d_state) + " must divide '" +
                    c.key("embedding_length") + "' " + std::to_string(s.n_embd));
    if (m.rwkv_decay_dim <= 0 || m.rwkv_iclr_dim <= 0 || m.rwkv_value_dim <= 0)
        throw Error("GGUF metadata: the '" + c.key("attention.*_lora_rank") + "' ranks must be positive");
    configure_rwkv_qwen_layers(c);
}

}  // namespace kiln
