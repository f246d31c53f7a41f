// gemma4-assistant (Gemma 4's draft model, llama.cpp's gemma4-assistant graph):
// a few gemma4 layers that compute only Q and attend over the Gemma 4 target's
// K/V cache — each sliding layer over the target's last sliding layer's cells,
// each full layer over its last full layer's (llama.cpp shares them: n_layer - 2
// and n_layer - 1 of the target). A row is a token and a state of the target's
// width (embedding_length_out): nextn.pre_projection · [the target's token
// embedding x sqrt(target width) | state], then the layers (gemma4's norms,
// GELU FFN, layer_output_scale; attention scale 1), output_norm, logits by the
// tied embedding (no soft-cap), and nextn.post_projection of the normed row is
// the state the next draft step chains from. Every layer is one of the
// assistant's (nextn_predict_layers equals block_count). The masked-embedding
// centroids / ordering, which llama.cpp's loader accepts and its graph never
// reads (and its converter never writes), are refused as unused tensors.
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/hparams.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_gemma4_assistant(ArchConfig& c) {
    configure_gemma4_layers(c);
    ModelSpec& s = c.spec;
    TensorRules& t = s.tensors;
    s.target_arch = "gemma4";
    s.n_embd_target = c.count("embedding_length_out", true);
    if (s.n_embd_target == s.n_embd)
        throw Error("GGUF metadata '" + c.key("embedding_length_out") + "' = " + std::to_string(s.n_embd_target) +
                    " equals the assistant's own width: it must carry the target's hidden size (llama.cpp refuses this too)");
    const int n_nextn = c.count("nextn_predict_layers", false);
    if (n_nextn != s.n_layer)
        throw Error("GGUF metadata '" + c.key("nextn_predict_layers") + "' = " + std::to_string(n_nextn) + ": a Gemma 4 assistant runs all its " +
                    std::to_string(s.n_layer) + " layers (" + c.key("block_count") + ")");
    if (c.count("expert_count", false) > 0)
        throw Error("GGUF metadata '" + c.key("expert_count") + "': a Gemma 4 assistant with expert layers is not supported",
                    ErrorKind::Unsupported);
    if (c.count("embedding_length_per_layer_input", false) > 0)
        throw Error("GGUF metadata '" + c.key("embedding_length_per_layer_input") +
                        "': a Gemma 4 assistant with per-layer embeddings is not supported",
                    ErrorKind::Unsupported);
    // No K / V of its own: a placeholder source (itself) until the drafter maps
    // each layer to the target's cache; the binding then reads no attn_k / attn_v.
    for (size_t il = 0; il < s.layers.size(); ++il) s.layers[il].kv_source = static_cast<int>(il);
    t.attn_v = TensorUse::No;
    t.output = TensorUse::No;  // the tied embedding
    t.layer_out_scale = TensorUse::Required;
    s.final_softcap = 0.0f;  // llama.cpp's assistant graph has none
}

}  // namespace kiln
