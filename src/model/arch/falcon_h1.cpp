// falcon-h1 (TII Falcon-H1): every layer runs attention (NEOX RoPE, no
// positions scaling) and a Mamba-2 mixer side by side on the same attn_norm
// output, adds their outputs, then one residual add; then ffn_norm and a gated
// SiLU FFN (biases by presence). Falcon-H1's µP multipliers (attention in / out,
// key, SSM in / out and per-part zxBCdt, MLP, embedding, LM head) are folded
// into the weights by llama.cpp's converter, so its graph — and kiln — applies
// none. ssm_norm is by presence (absent: y · SiLU(z) unnormed, as llama.cpp).
// llama.cpp loads attn_output.bias and per-layer rope_freqs but its graph never
// applies them, so kiln refuses them (a load error naming the tensor).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_falcon_h1(ArchConfig& c) {
    ModelSpec& s = c.spec;
    read_ssm_keys(c, SsmKind::Mamba2);
    s.ssm.norm_optional = true;
    for (LayerSpec& l : s.layers) l.parallel_ssm = true;
    s.tensors.ffn_bias = TensorUse::Optional;
    // The converter maps Falcon-H1's pre_ff_layernorm.weight whole to this name,
    // without the ".weight" suffix, and llama.cpp looks it up so.
    s.ffn_norm_tensor = "ffn_norm";
}

}  // namespace kiln
