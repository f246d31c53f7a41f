// nomic-bert: nomic-embed-text v1 / v1.5. bert's post-norm encoder with RoPE
// (NeoX layout, `nomic-bert.rope.freq_base`) instead of learned positions, Q, K
// and V in one fused attn_qkv, and a SwiGLU FFN (ffn_gate, ffn_up, ffn_down).
// llama.cpp's graph adds no bias to the FFN's products, so a file carrying
// them is refused (an unused tensor) rather than run without them.
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_nomic_bert(ArchConfig& c) {
    configure_encoder(c);
    ModelSpec& s = c.spec;
    s.activation = FfnActivation::Silu;
    s.tensors.encoder_ffn_gate = TensorUse::Required;
    s.tensors.attn_out_bias = TensorUse::Optional;
}

}  // namespace kiln
