// modern-bert: ModernBERT and its embedders (modernbert-embed, gte-modernbert,
// granite-embedding R2). A pre-norm encoder: the input rows LayerNormed
// (token_embd_norm, no bias), each block LayerNorm -> fused attn_qkv -> RoPE
// (NeoX) -> attention over the whole sequence or, on sliding layers, a window
// of sliding_window / 2 positions each side (every third layer from layer 0 is
// global; the two kinds rotate with their own bases) -> attn_output ->
// residual -> ffn_norm -> GeGLU (gate and up in one ffn_up, gate first) or
// SwiGLU (`hidden_activation`) -> ffn_down -> residual; a final LayerNorm; no
// biases anywhere; layer 0 has no attn_norm (identity).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_modern_bert(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (s.norm != NormKind::Layer)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_epsilon") + "' not found (modern-bert uses LayerNorm)");
    if (c.metadata.find_bool(c.key("attention.causal")).value_or(false))
        throw Error("GGUF metadata '" + c.key("attention.causal") + "': modern-bert attention is not causal", ErrorKind::Unsupported);
    s.causal = false;
    s.output_head = false;
    // The classifier (rank pooling) pools the mean unless the file says otherwise,
    // as llama.cpp defaults ModernBERT's classifier_pooling.
    if (!c.metadata.has(c.key("classifier.pooling_type"))) s.rank_mean = true;
    TensorRules& t = s.tensors;
    t.output = TensorUse::No;
    t.input_norm = TensorUse::Required;
    t.first_attn_norm_optional = true;
    t.ffn_gate_up_fused = true;
    // The activation of the GLU pair, as llama.cpp maps the converter's key
    // (GeGLU when absent); ReLU / ReGLU variants are refused, not guessed.
    const std::string act_key = c.key("hidden_activation");
    const std::string act = c.metadata.find_string(act_key).value_or("gelu");
    if (act == "gelu" || act == "geglu")
        s.activation = FfnActivation::Gelu;
    else if (act == "silu" || act == "swish" || act == "swiglu")
        s.activation = FfnActivation::Silu;
    else
        throw Error("GGUF metadata '" + act_key + "': activation '" + act + "' is not supported (gelu, geglu, silu, swish, swiglu)",
                    ErrorKind::Unsupported);
    if (s.sliding_window > 0) {
        read_swa_pattern(c, 3, /*dense_first=*/true);
        s.swa_symmetric = true;
    }
}

}  // namespace kiln
