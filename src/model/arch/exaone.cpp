// exaone (EXAONE 3.0 / 3.5): llama's block with NEOX RoPE (from the registry
// row), the Llama 3 RoPE factors (rope_freqs.weight) by presence and the output
// head separate or tied; no attention-output or FFN biases and no FFN weight
// scales (llama.cpp's exaone graph reads none).
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_exaone(ArchConfig& c) { c.spec.tensors.rope_freqs = TensorUse::Optional; }

}  // namespace kiln
