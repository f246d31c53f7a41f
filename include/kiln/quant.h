// Block formats: dequantization to f32, reference (round-to-nearest) quantizers and
// scalar reference dot products.
//
// One traits row per ggml type (src/quant/traits.cpp). A row has no function for
// what a type does not support (e.g. no reference quantizer for IQ2_XXS); the
// checked helpers below throw a kiln::Error that names the type.
//
// The raw function pointers in a row do no checking: n must be a multiple of the
// type's block size (and of the activation type's, for a dot product), and the
// buffers must hold n elements. The helpers check n.
#pragma once

#include <cstdint>
#include <span>

#include "kiln/gguf/ggml_type.h"

namespace kiln::quant {

// dst[0..n) = the values of the n elements at src. Exact: bit for bit what ggml and
// the gguf package's numpy dequantizers produce.
using DequantizeRowFn = void (*)(const void* src, float* dst, int64_t n);
// Quantizes n floats into blocks at dst (ggml's quantize_row_*_ref algorithm).
using QuantizeRowFn = void (*)(const float* src, void* dst, int64_t n);
// The dot product of a weight row (the row's type) and an activation row of type
// vec_dot_type, both n elements long.
//
// Accumulation order (fixed, so the result depends on nothing but the two rows; the
// engine's batch invariance rests on this, and SIMD kernels must reproduce it):
//  * block formats: per block (per super-block for the k-quants and IQ4_XS), an
//    exact integer sum of weight level x activation level, sub-block scales applied
//    as integers; then one float term per block, (d_w * d_a) * isum, plus the min
//    term where the format has one, added to a single f32 accumulator in block
//    order. Each format's kernel states its term in src/quant.
//  * F32 / F16: sum = fma(w_i, a_i, sum) for i in element order, starting at 0:
//    each product added to a single f32 accumulator with one rounding (for F16 the
//    product is exact, so this equals a separate multiply and add). One chain per
//    output lets the SIMD kernels keep 16 rows of one element in a register and
//    multiply them by one broadcast activation: tiles of rows x tokens with no
//    horizontal reduction, and the same order for any number of tokens.
//  * BF16: the same chain taken in element pairs (2j, 2j + 1), the odd element
//    first (a missing last one counts as 0 x 0), with bfloat16 subnormal inputs read
//    as zero and every step's result below f32's normal range flushed to a zero of
//    its sign: the arithmetic of the x86 BF16 dot-product instruction (VDPBF16PS),
//    two multiply-adds per lane per instruction.
// Apart from those explicit fused multiply-adds, every product and sum is a
// separately rounded f32 operation (kiln_quant is compiled with -ffp-contract=off).
using VecDotFn = float (*)(int64_t n, const void* weight_row, const void* act_row);


struct QuantTraits {
    GgmlType type;
    DequantizeRowFn dequantize_row = nullptr;  // every type has one
    QuantizeRowFn quantize_row_ref = nullptr;  // nullptr if kiln has no quantizer for it
    GgmlType vec_dot_type = GgmlType::F32;     // activation format of vec_dot_ref
    VecDotFn vec_dot_ref = nullptr;            // nullptr if no dot product
};

// Every row, one per entry of ggml_types(), in the same order.
std::span<const QuantTraits> quant_traits();
// nullptr if the type has no traits row.
const QuantTraits* find_quant_traits(GgmlType type);

bool can_dequantize(GgmlType type);
bool can_quantize(GgmlType type);
bool can_vec_dot(GgmlType weight_type);

// Checked entry points: throw kiln::Error naming the type when it lacks the
// operation or n is not a whole number of blocks.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);
// What ggml_quantize_chunk writes without an importance matrix, i.e. what
// llama-quantize puts in a file: the reference quantizer, except for IQ4_NL,
// whose blocks search 15 scales for the best fit (quantize_iq4_nl), and IQ4_XS
// (quantize_iq4_xs), which has no traits-table reference quantizer. Throws for a
// type that only quantizes with an importance matrix (needs_importance).
void quantize_row_for_file(GgmlType type, const float* src, void* dst, int64_t n);
// Whether quantize_row_for_file can make the type, with or without an imatrix.
bool can_quantize_for_file(GgmlType type);
// Whether it can only with one (ggml's IQ2_XXS, IQ2_XS and IQ1_S quantizers).
bool needs_importance(GgmlType type);
// How a type's file quantizer treats an importance matrix (an imatrix), as
// ggml_quantize_chunk does: some ignore it (Q8_0, the float types, TQ1_0 / TQ2_0,
// MXFP4), some weight their search by it; those kiln does not have the weighted
// search for are refused (never quantized as if no imatrix were given).
enum class ImportanceUse { Ignored, Weighted, Unsupported };
ImportanceUse importance_use(GgmlType type);
// One whole row of n values with its n importances (the imatrix's mean squared
// activation per input column); importance null is the function above. Throws for
// an Unsupported type.
void quantize_row_for_file(GgmlType type, const float* src, void* dst, int64_t n, const float* importance);
float vec_dot(GgmlType weight_type, int64_t n, const void* weight_row, const void* act_row);

// Activation quantizers (the reference quantizers of the vec_dot types); n must be
// a multiple of 32 (Q8_0, Q8_1) or 256 (Q8_K). Unchecked, like the row functions.
void quantize_row_q8_0(const float* src, void* dst, int64_t n);
void quantize_row_q8_1(const float* src, void* dst, int64_t n);
void quantize_row_q8_K(const float* src, void* dst, int64_t n);

// fp16 / bf16 conversions (exact; round-to-nearest-even on the way down; NaN stays
// NaN: f32 -> f16 gives the canonical quiet NaN with the input's sign, f32 -> bf16
// keeps the top payload bits and sets the quiet bit).
float fp16_to_fp32(uint16_t h);
uint16_t fp32_to_fp16(float f);
float bf16_to_fp32(uint16_t h);
uint16_t fp32_to_bf16(float f);

}  // namespace kiln::quant
