// xverse (XVERSE 7B / 13B / 65B): llama's block (RMS norms, NORM RoPE, SwiGLU),
// Q/K/V biases by presence, a separate output head (required, as llama.cpp's
// loader); no other optional tensor (its graph reads none).
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_xverse(ArchConfig& c) { c.spec.tensors.output = TensorUse::Required; }

}  // namespace kiln
