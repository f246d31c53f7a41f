// orion (Orion 14B): llama's block with LayerNorms with biases (attention, FFN
// and output norms), NEOX RoPE, Q/K/V biases by presence, SwiGLU without biases
// and a separate output head (required, as llama.cpp's loader).
#include "kiln/error.h"
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_orion(ArchConfig& c) {
    ModelSpec& s = c.spec;
    if (s.norm != NormKind::Layer)
        throw Error("GGUF metadata key '" + c.key("attention.layer_norm_epsilon") + "' not found (orion uses LayerNorm)");
    s.tensors.norm_bias = TensorUse::Required;
    s.tensors.output = TensorUse::Required;
}

}  // namespace kiln
