// Grouped-query attention of one query row over cached keys and values, with
// causal and sliding-window masks and an optional attention-logit soft-cap.
// Keys/values may be f32, f16 or q8_0 rows (the KV cache formats).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "kiln/gguf/ggml_type.h"

namespace kiln {

struct AttentionShape {
    int n_head = 0;
    int n_head_kv = 0;
    int head_dim_k = 0;
    int head_dim_v = 0;
    float scale = 1.0f;      // applied to q·k
    bool prescale_q = false; // multiply q by `scale` before the dot products (Gemma's reference order)
    float softcap = 0.0f;    // 0: none
};

// Where the keys and values of positions live.
struct KvView {
    GgmlType type = GgmlType::F16;
    std::function<const uint8_t*(int64_t pos)> k_row;  // [n_head_kv * head_dim_k]
    std::function<const uint8_t*(int64_t pos)> v_row;  // [n_head_kv * head_dim_v]
};

struct AttentionScratch {
    std::vector<float> scores;  // [n_keys]
    std::vector<float> kbuf;    // one key head as f32
    std::vector<float> vbuf;
    std::vector<float> qbuf;    // q of the group's heads, rounded as the cache type asks
};

// out[h*head_dim_v + d] for every head h, for the query at `pos` that sees keys
// [first, pos]. q is f32 [n_head * head_dim_k].
//
// With an f16 cache, q is rounded to f16 for the q·k products and the softmax
// weights are rounded to f16 for the weighted sum of values, as llama.cpp's CPU
// attention does: both sides of each product then have the cache's precision.
void attend(const AttentionShape& s, const float* q, int64_t first, int64_t pos, const KvView& kv, float* out,
            AttentionScratch& scratch);

}  // namespace kiln
