// internlm2 (InternLM 2 / 2.5): llama's block (RMS norms, NORM RoPE, SwiGLU)
// with its converter's split Q/K/V (Q/K/V biases by presence, as every family)
// and a separate output head, which llama.cpp's loader requires; no other
// optional tensor (no attention-output or FFN bias, no FFN weight scales, no
// rope_freqs: its graph reads none).
#include "model/arch/families.h"
#include "model/registry.h"
#include "model/spec.h"

namespace kiln {

void configure_internlm2(ArchConfig& c) { c.spec.tensors.output = TensorUse::Required; }

}  // namespace kiln
