// Block formats: dequantization to f32 and reference (round-to-nearest) quantizers.
//
// One traits row per ggml type (see src/quant/traits.cpp). Rows have no function
// for what a type does not support (e.g. no reference quantizer for IQ2_XXS);
// callers get a clear error through the helpers below.
#pragma once

#include <cstdint>
#include <span>

#include "kiln/gguf/ggml_type.h"

namespace kiln::quant {

// dst[0..n) = values of the n elements at src; n is a multiple of the block size.
using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t n);
// Quantizes n floats (a multiple of the block size) into blocks at dst.
using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t n);

struct QuantTraits {
    GgmlType type;
    DequantizeRowFn dequantize_row = nullptr;   // exact, bit-for-bit as ggml / the gguf package
    QuantizeRowFn quantize_row_ref = nullptr;   // round-to-nearest reference, nullptr if none
};

// nullptr if the type has no traits row.
const QuantTraits* find_quant_traits(GgmlType type);

// Throw kiln::Error naming the type when it lacks the operation.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);
bool can_dequantize(GgmlType type);
bool can_quantize(GgmlType type);

// fp16 / bf16 conversions (exact; round-to-nearest-even on the way down).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);

}  // namespace kiln::quant
