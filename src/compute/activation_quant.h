// Quantization of activation rows for the quantized dot products.
//
// Q8_0 / Q8_1 follow what ggml's x86 runtime does (not its `_ref` quantizer,
// which the traits table holds): the inverse scale is 127 / absmax and values
// round to nearest, ties to even. The two differ on rare ties by one level; using
// the runtime's rule keeps kiln's activations identical to llama.cpp's, which
// matters because a single flipped level can move a model's logits visibly
// after amplification through many layers (docs/numerics.md). Q8_K uses the
// reference quantizer, which is also what ggml runs on x86.
#pragma once

#include <cstdint>

#include "kiln/gguf/ggml_type.h"

namespace kiln {

void quantize_activations_q8_0(const float* x, void* dst, int64_t n);
void quantize_activations_q8_1(const float* x, void* dst, int64_t n);
// Any vec_dot activation type (Q8_0, Q8_1, Q8_K, F16, BF16).
void quantize_activations(GgmlType type, const float* x, void* dst, int64_t n);

}  // namespace kiln
