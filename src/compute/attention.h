// Grouped-query attention of one query row over cached keys and values, with
// causal and sliding-window masks and an optional attention-logit soft-cap.
// Keys/values may be f32, f16 or q8_0 rows (the KV cache formats).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "compute/huge_pages.h"
#include "kiln/gguf/ggml_type.h"

namespace kiln {
class ThreadPool;
}

namespace kiln {

struct AttentionShape {
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim_k = 0;
    int head_dim_v = 0;
    float scale = 1.0f;      // applied to q·k
    bool prescale_q = false; // multiply q by `scale` before the dot products (Gemma's reference order)
    float softcap = 0.0f;    // 0: none
    // gpt-oss: a learned logit per query head that joins the softmax's
    // normalisation without a value (attention may go "nowhere"); [n_head], or null.
    const float* sinks = nullptr;
    // ALiBi (compute/alibi.h): a slope per query head, [n_head], or null; the
    // bias slope * -|q_pos - key position| joins each score before the softmax.
    const float* alibi = nullptr;
    int64_t q_pos = 0;  // the query's position (ALiBi's distances)
};

// Where the keys and values of positions live.
struct KvView {
    GgmlType type = GgmlType::F16;
    bool f16_rounding = false;  // round as for an f16 cache although rows are f32 (rows converted from one)
    std::function<const uint8_t*(int64_t pos)> k_row;  // [n_head_kv * head_dim_k]
    std::function<const uint8_t*(int64_t pos)> v_row;  // [n_head_kv * head_dim_v]
};

struct AttentionScratch {
    std::vector<float> scores;  // [n_keys]
    std::vector<float> kbuf;    // one key head as f32
    std::vector<float> vbuf;
    std::vector<float> qbuf;    // q of the group's heads, rounded as the cache type asks
    std::vector<int64_t> nk;    // keys each query of a block of rows sees
    std::vector<float*> outs;   // where each query's result goes
    // Streaming attention: each query's running max, sum and accumulator.
    std::vector<float> run_max, run_sum, acc;
};

// out[h*head_dim_v + d] for every head h, for the query at `pos` that sees keys
// [first, pos]. q is f32 [n_head * head_dim_k]. The scalar reference.
//
// With an f16 cache, q is rounded to f16 for the q·k products and the softmax
// weights are rounded to f16 for the weighted sum of values, as llama.cpp's CPU
// attention does: both sides of each product then have the cache's precision.
void attend(const AttentionShape& s, const float* q, int64_t first, int64_t pos, const KvView& kv, float* out,
            AttentionScratch& scratch);

// Where the SIMD attention reads keys and values: rows of F32, F16 or Q8_0
// elements, position p at slot (p - base) % capacity (the cache's ring for
// sliding-window layers). Q8_0 rows are read in place when every head starts on a
// block (head sizes that are multiples of 32: kv_reads_q8_0 says), else first
// converted to f32 by kv_rows_f32; both give the same bits (the conversion is exact).
struct KvRows {
    GgmlType type = GgmlType::F16;  // F16, F32 or Q8_0
    const uint8_t* k = nullptr;
    const uint8_t* v = nullptr;
    uint64_t k_row_bytes = 0, v_row_bytes = 0;
    int64_t base = 0, capacity = 0;
    bool f16_rounding = false;  // the cache is f16: round q and the softmax weights to f16 (see attend)

    int64_t slot(int64_t pos) const { return (pos - base) % capacity; }
    const uint8_t* k_row(int64_t pos) const { return k + static_cast<uint64_t>(slot(pos)) * k_row_bytes; }
    const uint8_t* v_row(int64_t pos) const { return v + static_cast<uint64_t>(slot(pos)) * v_row_bytes; }
};

// Whether attention reads a q8_0 cache of this shape in place (heads on block starts).
inline bool kv_reads_q8_0(const AttentionShape& s) { return s.head_dim_k % 32 == 0 && s.head_dim_v % 32 == 0; }
// Whether queries of n positions of one sequence read a q8_0 cache through
// kv_rows_f32 (converted once for all of them: cheaper for a prefill chunk) rather
// than in place (a decode step, which would convert every cached row for one
// query). Both give the same bits.
inline bool kv_convert_q8_0(const AttentionShape& s, int64_t n) { return !kv_reads_q8_0(s) || n >= 16; }

// Bytes of the first n elements of a cached row (n a multiple of 32 for Q8_0).
inline uint64_t kv_row_offset(GgmlType type, uint64_t n) {
    return type == GgmlType::Q8_0 ? n / 32 * 34 : type == GgmlType::F16 ? 2 * n : 4 * n;
}

// Positions [first, last] of kv dequantized to f32 rows in the given buffers
// (split by position over the pool's threads when one is given).
KvRows kv_rows_f32(const AttentionShape& s, const KvView& kv, int64_t first, int64_t last, HugeFloats& kbuf,
                   HugeFloats& vbuf, const ThreadPool* pool = nullptr);

// The table-dispatched attention of one query row: the semantics of attend()
// (f16 rounding of q and of the weights with an f16 cache, masks, soft-cap) with
// SIMD dot products, softmax and weighted sums. A query's result depends only on
// its row and the cache (batch invariance). It differs from attend() only by the
// order of the q.k sums and the exponential's last bits (tests/compute states the
// bound); the weighted sum of values is attend()'s, operation for operation.
void attend_rows(const AttentionShape& s, const float* q, int64_t first, int64_t pos, const KvRows& kv, float* out,
                 AttentionScratch& scratch);
// attend_rows for n_rows rows of one sequence that see the same first key: row r
// at position pos[r] (ascending; its last key), q row r at q + r * q_stride, out
// row r at out + r * out_stride, ALiBi distances from q_pos[r]. Each row gets the
// bits attend_rows gives it alone (batch invariance); a kernel that takes the
// block whole reads each cached key and value row once for all its queries.
void attend_rows_block(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                       const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                       AttentionScratch& scratch);
// The scalar version (the scalar kernel table's; bit-identical to attend()).
void attend_rows_scalar(const AttentionShape& s, const float* q, int64_t first, int64_t pos, const KvRows& kv, float* out,
                        AttentionScratch& scratch);

// Streaming attention (ContextOptions::flash_attn, llama.cpp's -fa on): one pass
// over the keys and values, k_stream_block keys at a time from `first`, with an
// online softmax (a running maximum; the sum and the weighted values rescaled when
// it rises), so no row of scores is kept and each cached row is read once, its key
// and value together. q is prescaled and rounded as attend() does; the weights are
// not rounded (they are not normalised until the end, as in llama.cpp's flash
// attention). The result is attention's to float rounding, not attend()'s bits:
// tests/compute bounds both. The arguments are attend_rows_block's (n_rows 1: a
// decode step); each row's result does not depend on the others in the block.
constexpr int k_stream_block = 64;
void attend_rows_stream(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                        const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                        AttentionScratch& scratch);
// The scalar reference (the scalar kernel table's): per row, key block by key
// block, each sum in key order.
void attend_stream_scalar(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                          const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                          AttentionScratch& scratch);

}  // namespace kiln
