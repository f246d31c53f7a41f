// gemma (Gemma 1): embeddings scaled by sqrt(width), GELU-gated FFN, queries
// pre-scaled by 1/sqrt(head size), the output head always the embedding (an
// output.weight is refused, as llama.cpp's loader refuses it). Norm weights in
// GGUF already include Gemma's +1 (the converter adds it).
#include <cmath>

#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_gemma(ArchConfig& c) {
    ModelSpec& s = c.spec;
    s.embedding_scale = std::sqrt(static_cast<float>(s.n_embd));
    s.activation = FfnActivation::Gelu;
    s.tensors.output = TensorUse::No;
    s.attention_scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim_k));
}

}  // namespace kiln
