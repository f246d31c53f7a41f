// The kernel dispatch table: one table per instruction-set level, the active one
// chosen once at start-up from the CPU's features (and the KILN_ISA environment
// variable, which can only lower it: docs/perf.md).
//
// Every quantized and float matrix kernel gives results bit-identical to the
// scalar reference dot products of src/quant (their accumulation order is stated
// in kiln/quant.h); tests/compute checks each compiled variant against them. The
// element-wise kernels (SiLU, GELU, softmax, norms, attention) have scalar
// references in compute/ops.h and compute/attention.h and stated tolerances.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "compute/cpu_features.h"
#include "compute/kernels/layout.h"
#include "compute/ops.h"

namespace kiln {

namespace ssm {
struct DeltaRows;  // compute/ssm.h
}

// y[t * ldy + o] for panels [p0, p1) (rows 16 p0 .. min(16 p1, n_out)) and every
// token of `a`. Rows past n_out are not written.
using PackedGemmFn = void (*)(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy);

// Quantizes the tokens of groups [g0, g1) of x (f32 [n_in, a.n_tokens]) into a.
using ActPrepFn = void (*)(const float* x, int64_t n_in, int64_t g0, int64_t g1, ActPack& a);

// Float weights (F32 / F16 / BF16 panels of 32 rows): y[t * ldy + o] for panels
// [p0, p1) (rows 32 p0 .. min(32 p1, n_out)) and every token of `a`. Rows past
// n_out are not written.
using FloatGemmFn = void (*)(const PackedMatrix& w, const FloatActs& a, int64_t p0, int64_t p1, float* y, int64_t ldy);

struct QuantKernel {
    GgmlType type;
    PackedGemmFn gemm;
    PanelLayout layout = PanelLayout::Standard;  // the panel layout gemm reads (layout.h)
};

// Attention (compute/attention.h).
struct AttentionShape;
struct KvRows;
struct AttentionScratch;

struct KernelTable {
    Isa isa = Isa::Scalar;
    std::span<const QuantKernel> quant;  // packed quantized products (empty: scalar)
    ActPrepFn prep_act = nullptr;
    FloatGemmFn gemm_float = nullptr;    // nullptr: scalar reference
    // gemm_float takes BF16 activations as bfloat16 pairs (it runs the CPU's BF16
    // dot product), else as two f32 per pair (FloatActs).
    bool bf16_pair_acts = false;
    // The AVX2 quantized products use AVX-VNNI's vpdpbusd (CPUs that have it).
    bool avx_vnni = false;
    // The AVX-512 grid i-quant products use AVX512_VBMI's byte permutes (CPUs that have it).
    bool avx512_vbmi = false;
    // The AVX-512 prefill products use AMX tiles (CPUs with AMX-INT8).
    bool amx = false;

    // Element-wise kernels over n floats; each element's result depends on its
    // value only (tails are handled as full vectors), so any split of a row is
    // equivalent.
    void (*silu_mul)(float* gate, const float* up, int64_t n) = nullptr;
    void (*gelu_mul)(float* gate, const float* up, int64_t n) = nullptr;
    // RoPE of n_heads heads in place, bit-identical to ops::rope_apply.
    void (*rope_apply)(const ops::RopeParams& p, const float* cache, float* x, int64_t n_heads, int64_t head_dim) = nullptr;
    // f32 -> f16, bit-identical to quant::fp32_to_fp16 (NaN included).
    void (*f32_to_f16)(const float* src, uint16_t* dst, int64_t n) = nullptr;
    // dst[i] = fp16_to_fp32(fp32_to_fp16(src[i])) (the activations of F16 weights),
    // and the same through bf16; bit-identical to quant's conversions.
    void (*round_to_f16)(const float* src, float* dst, int64_t n) = nullptr;
    void (*round_to_bf16)(const float* src, float* dst, int64_t n) = nullptr;
    // A Q8_0 row of n values (a multiple of 32) as f32, bit-identical to
    // quant::dequantize_row (a q8_0 KV cache's rows, converted every decode step).
    void (*q8_0_to_f32)(const uint8_t* row, float* dst, int64_t n) = nullptr;
    // One row.
    void (*rms_norm)(const float* x, const float* w, float* y, int64_t n, float eps) = nullptr;
    void (*softmax)(float* x, int64_t n) = nullptr;
    // One query row over f32 keys and values (attend_rows); nullptr: the scalar attend().
    void (*attend_row)(const AttentionShape& s, const float* q, int64_t first, int64_t pos, const KvRows& kv, float* out,
                       AttentionScratch& scratch) = nullptr;
    // Several rows of one sequence at once (attend_rows_block): each row's bits
    // are attend_row's; nullptr: attend_row row by row.
    void (*attend_block)(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                         const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                         AttentionScratch& scratch) = nullptr;
    // Streaming attention of several rows of one sequence (attend_rows_stream);
    // nullptr: attend_stream_scalar.
    void (*attend_stream)(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                          const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                          AttentionScratch& scratch) = nullptr;
    // compute/alibi.h's bias of one score row, bit-identical to alibi_bias (the
    // attention of each level calls its own).
    void (*alibi_bias)(float* scores, int64_t n, int64_t first, int64_t q_pos, float slope) = nullptr;
    // The Mamba-2 scan of one position over heads [h0, h1), bit-identical to ssm::scan2_step.
    void (*ssm_scan2)(float* state, const float* x, const float* dt, const float* A, const float* B, const float* C, float* y,
                      int d_state, int head_dim, int n_head, int n_group, int h0, int h1) = nullptr;
    // The gated delta rule of one position over value heads [h0, h1), bit-identical to ssm::delta_step
    // (deltas, from, pending may be null; stream: non-temporal stores of the new state where they fit),
    // and its state update redone from the recorded δ (ssm::delta_apply).
    void (*ssm_delta)(float* state, const float* q, const float* k, const float* v, const float* g, const float* beta, float* y,
                      int d, int n_k_heads, int h0, int h1, float* deltas, float* from, const ssm::DeltaRows* pending,
                      bool stream) = nullptr;
    void (*ssm_delta_apply)(float* state, const float* k, const float* g, const float* deltas, int64_t stride, int n_rows, int d,
                            int n_k_heads, int h0, int h1) = nullptr;
    // RWKV-6's WKV and RWKV6Qwen2's gated linear attention of one position over
    // heads [h0, h1), bit-identical to ssm::wkv6_step / ssm::gla_step (lane-wise
    // over the state's columns, the rows in the reference's order).
    void (*rwkv_wkv6)(float* state, const float* k, const float* v, const float* r, const float* u, const float* w, float* y,
                      int d, int h0, int h1) = nullptr;
    void (*rwkv_gla)(float* state, const float* k, const float* v, const float* q, const float* g, float* y, int d, float scale,
                     int h0, int h1) = nullptr;
    // RWKV-7's WKV of one position over heads [h0, h1), bit-identical to ssm::wkv7_step.
    void (*rwkv_wkv7)(float* state, const float* r, const float* w, const float* k, const float* v, const float* a, const float* b,
                      float* y, int d, int h0, int h1) = nullptr;

    PackedGemmFn find_quant(GgmlType type) const {
        for (const QuantKernel& k : quant)
            if (k.type == type) return k.gemm;
        return nullptr;
    }
    // The kernel for a matrix packed in some layout: nullptr if the table has none
    // for its type, or reads that type in another layout (packed for another table).
    PackedGemmFn find_quant(const PackedMatrix& w) const {
        for (const QuantKernel& k : quant)
            if (k.type == w.type && k.layout == w.layout) return k.gemm;
        return nullptr;
    }
    // The panel layout this table's kernels read `type` in: what pack_matrix must
    // make for them (Standard where the table has no kernel for it).
    PanelLayout panel_layout(GgmlType type) const {
        for (const QuantKernel& k : quant)
            if (k.type == type) return k.layout;
        return PanelLayout::Standard;
    }
};

// The active table.
const KernelTable& kernels();
// A table's name as tools print it: its level, "avx2+avx-vnni" for the AVX2 table
// with AVX-VNNI, "avx512+vbmi" for the AVX-512 one with AVX512_VBMI (and "+amx"
// with AMX tiles).
std::string kernels_name(const KernelTable& k);
// The table of a level if it is compiled in and this CPU runs it, else nullptr.
const KernelTable* kernel_table(Isa isa);
// Makes `isa` the active level (tests and benchmarks; not thread-safe). Throws
// kiln::Error if the CPU cannot run it.
void set_active_isa(Isa isa);

// Per-level tables, defined in the level's files.
const KernelTable& scalar_kernels();
#if defined(__x86_64__)
const KernelTable& avx2_kernels();  // with AVX-VNNI where the CPU has it
const KernelTable& avx2_kernels_without_vnni();
const KernelTable& avx512_kernels();  // with AVX512_VBMI and AMX where the CPU has them
const KernelTable& avx512_kernels_without_vbmi();
const KernelTable& avx512_kernels_without_amx();  // VBMI where the CPU has it
#endif

}  // namespace kiln
