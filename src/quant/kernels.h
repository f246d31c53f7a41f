// The per-type reference kernels behind the traits table (src/quant/traits.cpp).
// One family per file: float_types.cpp, legacy_quants.cpp, k_quants.cpp,
// iq_quants.cpp, ternary_quants.cpp, fp4_quants.cpp. Signatures are those of
// DequantizeRowFn, QuantizeRowFn and VecDotFn in kiln/quant.h.
#pragma once

#include <cstdint>

namespace kiln::quant {

// ---- float_types.cpp
void dequantize_row_f32(const void* src, float* dst, int64_t n);
void dequantize_row_f16(const void* src, float* dst, int64_t n);
void dequantize_row_bf16(const void* src, float* dst, int64_t n);
void dequantize_row_f64(const void* src, float* dst, int64_t n);
void dequantize_row_i8(const void* src, float* dst, int64_t n);
void dequantize_row_i16(const void* src, float* dst, int64_t n);
void dequantize_row_i32(const void* src, float* dst, int64_t n);
void dequantize_row_i64(const void* src, float* dst, int64_t n);
void quantize_row_f32(const float* src, void* dst, int64_t n);
void quantize_row_f16(const float* src, void* dst, int64_t n);
void quantize_row_bf16(const float* src, void* dst, int64_t n);
float vec_dot_f32(int64_t n, const void* w, const void* a);
float vec_dot_f16(int64_t n, const void* w, const void* a);
float vec_dot_bf16(int64_t n, const void* w, const void* a);

// ---- legacy_quants.cpp
void dequantize_row_q4_0(const void* src, float* dst, int64_t n);
void dequantize_row_q4_1(const void* src, float* dst, int64_t n);
void dequantize_row_q5_0(const void* src, float* dst, int64_t n);
void dequantize_row_q5_1(const void* src, float* dst, int64_t n);
void dequantize_row_q8_0(const void* src, float* dst, int64_t n);
void dequantize_row_q8_1(const void* src, float* dst, int64_t n);
void dequantize_row_q1_0(const void* src, float* dst, int64_t n);
void quantize_row_q4_0(const float* src, void* dst, int64_t n);
void quantize_row_q4_1(const float* src, void* dst, int64_t n);
void quantize_row_q5_0(const float* src, void* dst, int64_t n);
void quantize_row_q5_1(const float* src, void* dst, int64_t n);
// quantize_row_q8_0 / quantize_row_q8_1 are public (kiln/quant.h).
// With an importance matrix: n is a whole row, qw its n importances.
void quantize_row_q4_0_weighted(const float* src, void* dst, int64_t n, const float* qw);
void quantize_row_q4_1_weighted(const float* src, void* dst, int64_t n, const float* qw);
void quantize_row_q5_0_weighted(const float* src, void* dst, int64_t n, const float* qw);
void quantize_row_q5_1_weighted(const float* src, void* dst, int64_t n, const float* qw);
float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* a);
float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* a);
float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* a);

// ---- k_quants.cpp
void dequantize_row_q2_K(const void* src, float* dst, int64_t n);
void dequantize_row_q3_K(const void* src, float* dst, int64_t n);
void dequantize_row_q4_K(const void* src, float* dst, int64_t n);
void dequantize_row_q5_K(const void* src, float* dst, int64_t n);
void dequantize_row_q6_K(const void* src, float* dst, int64_t n);
void dequantize_row_q8_K(const void* src, float* dst, int64_t n);
void quantize_row_q2_K(const float* src, void* dst, int64_t n);
void quantize_row_q3_K(const float* src, void* dst, int64_t n);
void quantize_row_q4_K(const float* src, void* dst, int64_t n);
void quantize_row_q5_K(const float* src, void* dst, int64_t n);
void quantize_row_q6_K(const float* src, void* dst, int64_t n);
// quantize_row_q8_K is public (kiln/quant.h).
void quantize_row_q2_K_weighted(const float* src, void* dst, int64_t n, const float* qw);
void quantize_row_q3_K_weighted(const float* src, void* dst, int64_t n, const float* qw);
void quantize_row_q4_K_weighted(const float* src, void* dst, int64_t n, const float* qw);
void quantize_row_q5_K_weighted(const float* src, void* dst, int64_t n, const float* qw);
void quantize_row_q6_K_weighted(const float* src, void* dst, int64_t n, const float* qw);
float vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* a);

// ---- iq_quants.cpp
void dequantize_row_iq2_xxs(const void* src, float* dst, int64_t n);
void dequantize_row_iq2_xs(const void* src, float* dst, int64_t n);
void dequantize_row_iq2_s(const void* src, float* dst, int64_t n);
void dequantize_row_iq3_xxs(const void* src, float* dst, int64_t n);
void dequantize_row_iq3_s(const void* src, float* dst, int64_t n);
void dequantize_row_iq1_s(const void* src, float* dst, int64_t n);
void dequantize_row_iq1_m(const void* src, float* dst, int64_t n);
void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n);
void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n);
void quantize_row_iq4_nl(const float* src, void* dst, int64_t n);
void quantize_row_iq4_nl_search(const float* src, void* dst, int64_t n);  // llama-quantize's (quantize_iq4_nl)
void quantize_row_iq4_nl_weighted(const float* src, void* dst, int64_t n, const float* qw);  // ... with an imatrix
void quantize_row_iq4_xs(const float* src, void* dst, int64_t n);  // = llama-quantize's (quantize_iq4_xs)
void quantize_row_iq4_xs_weighted(const float* src, void* dst, int64_t n, const float* qw);
// The grid i-quants' file quantizers (iq3_quants.cpp, iq2_quants.cpp, iq1_quants.cpp): ggml's quantize_iq*.
void quantize_row_iq3_xxs(const float* src, void* dst, int64_t n);
void quantize_row_iq3_xxs_weighted(const float* src, void* dst, int64_t n, const float* qw);
void quantize_row_iq3_s(const float* src, void* dst, int64_t n);
void quantize_row_iq3_s_weighted(const float* src, void* dst, int64_t n, const float* qw);
void quantize_row_iq2_xxs_weighted(const float* src, void* dst, int64_t n, const float* qw);  // qw required
void quantize_row_iq2_xs_weighted(const float* src, void* dst, int64_t n, const float* qw);   // qw required
void quantize_row_iq2_s(const float* src, void* dst, int64_t n);
void quantize_row_iq2_s_weighted(const float* src, void* dst, int64_t n, const float* qw);
void quantize_row_iq1_s_weighted(const float* src, void* dst, int64_t n, const float* qw);  // qw required
void quantize_row_iq1_m(const float* src, void* dst, int64_t n);
void quantize_row_iq1_m_weighted(const float* src, void* dst, int64_t n, const float* qw);
float vec_dot_iq4_nl_q8_0(int64_t n, const void* w, const void* a);
float vec_dot_iq4_xs_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq2_xxs_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq2_xs_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq2_s_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq3_xxs_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq3_s_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq1_s_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_iq1_m_q8_K(int64_t n, const void* w, const void* a);

// ---- ternary_quants.cpp
void dequantize_row_tq1_0(const void* src, float* dst, int64_t n);
void dequantize_row_tq2_0(const void* src, float* dst, int64_t n);
void quantize_row_tq1_0(const float* src, void* dst, int64_t n);
void quantize_row_tq2_0(const float* src, void* dst, int64_t n);
float vec_dot_tq1_0_q8_K(int64_t n, const void* w, const void* a);
float vec_dot_tq2_0_q8_K(int64_t n, const void* w, const void* a);

// ---- fp4_quants.cpp
void dequantize_row_mxfp4(const void* src, float* dst, int64_t n);
void dequantize_row_nvfp4(const void* src, float* dst, int64_t n);
void quantize_row_mxfp4(const float* src, void* dst, int64_t n);
float vec_dot_mxfp4_q8_0(int64_t n, const void* w, const void* a);

}  // namespace kiln::quant
