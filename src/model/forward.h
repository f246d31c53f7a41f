// The common forward pass: one implementation for every family, branching only
// on the capabilities in ModelSpec. Evaluates a chunk of tokens at consecutive
// positions, writes K/V into the cache and produces logits for the rows asked for.
//
// Every intermediate has a name (attn_norm, Qcur, kq_out, ffn_out, l_out, ...,
// with its layer index); a debug hook, when set, receives each one so a run can
// be compared with a reference step by step.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "cache/kv_cache.h"
#include "compute/attention.h"
#include "compute/matmul.h"
#include "compute/ops.h"
#include "compute/thread_pool.h"
#include "model/spec.h"
#include "model/weights.h"

namespace kiln {

// name, layer (-1 for none), data f32 [n_per_row, n_rows]
using DebugHook = std::function<void(const char* name, int layer, const float* data, int64_t n_per_row, int64_t n_rows)>;

class Forward {
public:
    Forward(const ModelSpec& spec, const ModelWeights& weights, KvCache& cache, ThreadPool& pool, int n_batch_max);

    int n_batch_max() const { return n_batch_max_; }
    void set_debug_hook(DebugHook hook) { hook_ = std::move(hook); }

    // Evaluates tokens[0..n) at positions pos0..pos0+n-1 (n <= n_batch_max; the
    // cache must hold positions < pos0). Logits of the rows i with i >= first_logit_row
    // are written to `logits` as f32 [n_vocab, n - first_logit_row].
    void eval(const int32_t* tokens, int n, int64_t pos0, int first_logit_row, float* logits);

private:
    void attention_layer(int il, int n, int64_t pos0);
    void ffn_layer(int il, int n);
    void prepare_rope(int64_t pos0, int n);
    ops::RopeParams rope_params(bool swa_base) const;
    void dump(const char* name, int layer, const float* data, int64_t per_row, int64_t rows) const {
        if (hook_) hook_(name, layer, data, per_row, rows);
    }

    const ModelSpec& spec_;
    const ModelWeights& w_;
    KvCache& cache_;
    ThreadPool& pool_;
    int n_batch_max_;
    DebugHook hook_;

    MatmulScratch mm_;
    std::vector<AttentionScratch> attn_scratch_;  // per thread
    std::vector<float> x_, h_, q_, k_, v_, att_, o_, gate_, up_, out_rows_;
    std::vector<float> rope_cache_, rope_cache_swa_;  // cos / sin per row of the chunk
    HugeFloats kv_k_f32_, kv_v_f32_;                  // a q8_0 cache's rows as f32, per layer and chunk
};

}  // namespace kiln
