// qwen (Qwen 1: Qwen-7B / 14B / 72B): llama's block with NEOX RoPE, Q/K/V fused
// in attn_qkv with its bias, and a separate output head (required). Its
// converter writes feed_forward_length as twice the FFN width (the original
// config's intermediate_size counts gate and up together); llama.cpp halves it,
// and so does kiln.
#include <string>

#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_qwen(ArchConfig& c) {
    ModelSpec& s = c.spec;
    s.tensors.output = TensorUse::Required;
    for (LayerSpec& l : s.layers) {
        if (l.n_ff % 2 != 0)
            throw Error("GGUF metadata '" + c.key("feed_forward_length") + "': " + std::to_string(l.n_ff) +
                        " must be even (qwen's counts gate and up together)");
        l.n_ff /= 2;
    }
}

}  // namespace kiln
