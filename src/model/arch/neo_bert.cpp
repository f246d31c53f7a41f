// neo-bert (NeoBERT) and eurobert (EuroBERT): pre-norm encoders in the common
// pass, the RMS-normed shape of a llama block with attention over the whole
// sequence where the file says so (`attention.causal`: the converters write
// false; llama.cpp reads the key for both), no biases, no output head: the final
// norm's rows are the hidden states, pooled by the file's pooling type.
// neo-bert: fused attn_qkv, RoPE (normal layout), SwiGLU with gate and up in one
// ffn_up [n_embd, 2 n_ff] (gate first), the final norm `enc.output_norm`, an
// optional classification head (cls, cls.output) for rank pooling.
// eurobert: Q / K / V (or fused), RoPE (NeoX), SwiGLU with a separate ffn_gate,
// `output_norm`.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {

void configure_prenorm_encoder(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (s.norm != NormKind::Rms)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_rms_epsilon") + "' not found (" + s.arch + " uses RMS norms)");
    s.activation = FfnActivation::Silu;
    s.output_head = false;
    s.tensors.output = TensorUse::No;
    s.tensors.qkv_bias = false;  // llama.cpp's graphs add none
    s.tensors.rope_freqs = TensorUse::No;
}

}  // namespace

void configure_neo_bert(ArchConfig& c) {
    configure_prenorm_encoder(c);
    c.spec.output_norm_tensor = "enc.output_norm.weight";
    c.spec.tensors.ffn_gate_up_fused = true;
}

void configure_eurobert(ArchConfig& c) { configure_prenorm_encoder(c); }

}  // namespace kiln
