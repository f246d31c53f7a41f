// The x86 kernel functions, one namespace per level; the tables in dispatch.cpp
// collect them. Signatures are those of kernels.h.
#pragma once

#include "compute/kernels/kernels.h"

namespace kiln {

#define KILN_DECLARE_X86_KERNELS                                                                                     \
    void prep_act(const float* x, int64_t n_in, int64_t g0, int64_t g1, ActPack& a);                                  \
    void gemm_q4_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);           \
    void gemm_q4_1(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);           \
    void gemm_q5_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);           \
    void gemm_q5_1(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);           \
    void gemm_q8_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);           \
    void gemm_iq4_nl(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);         \
    void gemm_q4_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);           \
    void gemm_q5_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);           \
    void gemm_q6_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);           \
    void gemm_q2_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);           \
    void gemm_q3_K(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);           \
    void gemm_tq2_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);          \
    void gemm_tq1_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);          \
    void gemm_iq4_xs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);         \
    void gemm_mxfp4(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);          \
    void gemm_iq2_xxs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);        \
    void gemm_iq2_xs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);         \
    void gemm_iq2_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);          \
    void gemm_iq3_xxs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);        \
    void gemm_iq3_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);          \
    void gemm_iq1_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);          \
    void gemm_iq1_m(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);          \
    void gemm_float(const PackedMatrix& w, const FloatActs& a, int64_t p0, int64_t p1, float* y, int64_t ldy);         \
    void silu_mul(float* gate, const float* up, int64_t n);                                                           \
    void f32_to_f16(const float* src, uint16_t* dst, int64_t n);                                                      \
    void round_to_f16(const float* src, float* dst, int64_t n);                                                       \
    void round_to_bf16(const float* src, float* dst, int64_t n);                                                      \
    void q8_0_to_f32(const uint8_t* row, float* dst, int64_t n);                                                      \
    void rope_apply(const ops::RopeParams& p, const float* cache, float* x, int64_t n_heads, int64_t head_dim);          \
    void gelu_mul(float* gate, const float* up, int64_t n);                                                           \
    void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);                                    \
    void softmax(float* x, int64_t n);                                                                                \
    void attend_row(const AttentionShape& s, const float* q, int64_t first, int64_t pos, const KvRows& kv, float* out, \
                    AttentionScratch& scratch);                                                                       \
    void attend_block(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,    \
                      const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,             \
                      AttentionScratch& scratch);                                                                     \
    void attend_stream(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,   \
                       const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,            \
                       AttentionScratch& scratch);                                                                    \
    void ssm_scan2(float* state, const float* x, const float* dt, const float* A, const float* B, const float* C,      \
                   float* y, int d_state, int head_dim, int n_head, int n_group, int h0, int h1);               \
    void ssm_delta(float* state, const float* q, const float* k, const float* v, const float* g, const float* beta,   \
                   float* y, int d, int n_k_heads, int h0, int h1, float* deltas, float* from,                      \
                   const ssm::DeltaRows* pending, bool stream);                                                      \
    void ssm_delta_apply(float* state, const float* k, const float* g, const float* deltas, int64_t stride,          \
                         int n_rows, int d, int n_k_heads, int h0, int h1);                                          \
    void rwkv_wkv6(float* state, const float* k, const float* v, const float* r, const float* u, const float* w,       \
                   float* y, int d, int h0, int h1);                                                                 \
    void rwkv_gla(float* state, const float* k, const float* v, const float* q, const float* g, float* y, int d,       \
                  float scale, int h0, int h1);                                                                      \
    void rwkv_wkv7(float* state, const float* r, const float* w, const float* k, const float* v, const float* a,       \
                   const float* b, float* y, int d, int h0, int h1);

namespace avx2 {
KILN_DECLARE_X86_KERNELS
// The quantized products with AVX-VNNI's vpdpbusd (CPUs that have it).
namespace vnni {
extern const PackedGemmFn gemm_q4_0, gemm_q4_1, gemm_q5_0, gemm_q5_1, gemm_q8_0, gemm_iq4_nl, gemm_q4_K, gemm_q5_K, gemm_q6_K,
    gemm_q2_K, gemm_q3_K, gemm_tq2_0, gemm_tq1_0, gemm_iq4_xs, gemm_mxfp4, gemm_iq2_xxs, gemm_iq2_xs, gemm_iq2_s, gemm_iq3_xxs, gemm_iq3_s,
    gemm_iq1_s, gemm_iq1_m;
}  // namespace vnni
}
namespace avx512 {
KILN_DECLARE_X86_KERNELS
// gemm_float for CPUs without AVX512_BF16: BF16 by the AVX2 emulation (its
// activations as two f32 per pair: KernelTable::bf16_pair_acts false).
void gemm_float_bf16_emulated(const PackedMatrix& w, const FloatActs& a, int64_t p0, int64_t p1, float* y, int64_t ldy);
// The grid i-quants by AVX512_VBMI's byte permutes instead of gathers (CPUs that
// have it; avx512vbmi_iq_grid.cpp).
namespace vbmi {
void gemm_iq2_xxs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);
void gemm_iq2_xs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);
void gemm_iq2_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);
void gemm_iq3_xxs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);
void gemm_iq3_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);
void gemm_iq1_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);
void gemm_iq1_m(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);
}  // namespace vbmi
// Prefill (several token groups) by AMX tiles, else the AVX-512 kernels (CPUs with
// AMX-INT8; avx512_amx.h).
namespace amx {
extern const PackedGemmFn gemm_q4_0, gemm_q4_1, gemm_q5_0, gemm_q5_1, gemm_q8_0, gemm_iq4_nl, gemm_mxfp4;
}  // namespace amx
}

#undef KILN_DECLARE_X86_KERNELS

}  // namespace kiln
