// qwen2: llama-shaped with NEOX RoPE (from the registry row), Q/K/V biases (by
// presence, as every family) and an optional output bias; no FFN or
// attention-output biases (llama.cpp's qwen2 graph has none).
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_qwen2(ArchConfig& c) { c.spec.tensors.output_bias = TensorUse::Optional; }

}  // namespace kiln
