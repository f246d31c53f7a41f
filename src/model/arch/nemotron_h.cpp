// nemotron_h (NVIDIA Nemotron-H, dense): every layer is `attn_norm` → one block
// → residual, the block chosen per layer by the per-layer arrays: Mamba-2 where
// `attention.head_count_kv` and `feed_forward_length` are both 0, attention (no
// positional encoding, optional output bias) where only `feed_forward_length`
// is 0, else a plain ReLU² FFN (up → max(x, 0)² → down, optional biases). RMS norms throughout (the file
// may store only `attention.layer_norm_epsilon`).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_nemotron_h(ArchConfig& c) {
    ModelSpec& s = c.spec;
    read_ssm_keys(c, SsmKind::Mamba2);
    s.norm = NormKind::Rms;
    s.activation = FfnActivation::Relu2;
    s.ffn_norm_tensor = "attn_norm.weight";  // an FFN layer's only norm
    s.tensors.attn_out_bias = TensorUse::Optional;
    s.tensors.ffn_bias = TensorUse::Optional;
    for (LayerSpec& l : s.layers) {
        l.use_rope = false;
        if (l.n_head_kv == 0 && l.n_ff == 0) {
            l.mixer = MixerKind::Recurrent;
            l.ffn = FfnKind::None;
        } else if (l.n_ff == 0) {
            l.ffn = FfnKind::None;  // attention alone
        } else {
            l.mixer = MixerKind::None;  // the FFN alone (its kind from the file: plain)
        }
    }
}

}  // namespace kiln
