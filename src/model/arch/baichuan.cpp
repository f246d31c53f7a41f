// baichuan (Baichuan 1 / 2): llama's block (RMS norms, SiLU-gated FFN, Q/K/V
// biases by presence, separate output head required) with positions decided as
// llama.cpp decides them, by the layer count: 32 layers (7B) rotate with NORM
// RoPE over the whole head; 40 layers (13B) use ALiBi (max bias 8) and no RoPE;
// any other count has neither (llama.cpp's "unknown" type).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

namespace {
constexpr int k_rope_layers = 32;   // Baichuan 7B
constexpr int k_alibi_layers = 40;  // Baichuan 13B
constexpr float k_max_bias = 8.0f;
}  // namespace

void configure_baichuan(ArchConfig& c) {
    ModelSpec& s = c.spec;
    s.tensors.output = TensorUse::Required;
    if (s.n_layer == k_rope_layers) {
        if (s.rope.n_dims != s.head_dim_k)
            throw Error("GGUF metadata '" + c.key("rope.dimension_count") + "': baichuan rotates the whole head (" +
                        std::to_string(s.head_dim_k) + "), found " + std::to_string(s.rope.n_dims));
        return;
    }
    for (LayerSpec& l : s.layers) l.use_rope = false;
    if (s.n_layer == k_alibi_layers) s.alibi_max_bias = k_max_bias;
}

}  // namespace kiln
