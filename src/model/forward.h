// The common forward pass: one implementation for every family, branching only
// on the capabilities in ModelSpec. Evaluates a batch of rows from any number of
// sequences (each row: a token or an embedding, its position, its sequence,
// whether its output is wanted), writes their K/V into the sequences' memory and
// produces logits (and final hidden states) for the rows asked for.
//
// Every intermediate has a name (attn_norm, Qcur, kq_out, ffn_out, l_out, ...,
// with its layer index); a debug hook, when set, receives each one so a run can
// be compared with a reference step by step.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "cache/kv_cache.h"
#include "cache/memory.h"
#include "compute/attention.h"
#include "compute/matmul.h"
#include "compute/ops.h"
#include "compute/thread_pool.h"
#include "model/moe.h"
#include "model/spec.h"
#include "model/ssm.h"
#include "model/weights.h"

namespace kiln {

// name, layer (-1 for none), data f32 [n_per_row, n_rows]
using DebugHook = std::function<void(const char* name, int layer, const float* data, int64_t n_per_row, int64_t n_rows)>;

// The rows of one evaluation. A sequence's rows appear in position order and
// continue what its memory holds (the engine's Context checks this).
struct BatchRows {
    int n = 0;
    const int32_t* tokens = nullptr;  // [n]; a negative id takes its row from embd
    const float* embd = nullptr;      // f32 [n_embd, n] (rows read only where tokens[i] < 0)
    const int64_t* pos = nullptr;     // [n]
    const int32_t* seq = nullptr;     // [n]
    const uint8_t* output = nullptr;  // [n]: nonzero where the row's output is wanted
    const int32_t* types = nullptr;   // [n]: token types of an encoder's rows (null: all 0)
    // f32 [n_embd, n]: a multi-token-prediction head's second input per row, the
    // trunk's final hidden state before the row's token (ModelWeights::nextn_input).
    const float* state = nullptr;
};

// Shared by the pass's parts (forward.cpp, mla.cpp): y = norm(x) row by row
// with the spec's norm (+ bias where given; no weight: y = x), and y += x over n
// floats, both split across the pool.
void norm_rows(const ModelSpec& s, const float* x, const float* w, const float* b, float* y, int n, int64_t width,
               const ThreadPool& pool);
void add_rows(float* y, const float* x, int64_t n, const ThreadPool& pool);

class Forward {
public:
    Forward(const ModelSpec& spec, const ModelWeights& weights, SequenceMemory& memory, const ThreadPool& pool, int n_batch_max);

    int n_batch_max() const { return n_batch_max_; }

    // Bytes of the buffers a Forward of this batch size uses once it has run a
    // full batch over n_keys_max keys (the memory plan; the constructor's
    // buffers come from the same buffer_sizes).
    static uint64_t scratch_bytes(const ModelSpec& spec, int n_batch_max, int n_threads, int64_t n_keys_max, bool q8_0_cache);
    void set_debug_hook(DebugHook hook) { hook_ = std::move(hook); }
    // ContextOptions::flash_attn: every attention layer through attend_rows_stream.
    void set_streaming_attention(bool on) { stream_attention_ = on; }
    // Sees every weight product's matrix and input rows (Context::set_weight_input_hook).
    void set_matmul_observer(std::function<void(const Matrix&, const float*, int64_t)> observe) { mm_.observe = std::move(observe); }
    // Expert selections per layer and expert since the last reset (kiln bench).
    const std::vector<std::vector<uint64_t>>& expert_usage() const { return moe_.usage(); }
    void reset_expert_usage() { moe_.reset_usage(); }

    // Evaluates the rows (1 <= n <= n_batch_max). For the k-th row with output
    // wanted, in batch order, logits row k of f32 [n_vocab, n_out] and, if hidden
    // is given, the final normed hidden state row k of f32 [n_embd, n_out]; if
    // row_hidden is given, every row's final normed hidden state f32 [n_embd, n]
    // (what a multi-token-prediction head reads: src/model/nextn.h).
    void eval(const BatchRows& batch, float* logits, float* hidden = nullptr, float* row_hidden = nullptr);

    // Rolling back into a verification batch (SsmMixer's replay log, ssm.h): with
    // recurrent layers, log_rows logs seq's next n_rows rows (from pos0), saving
    // its state (or deferring the rows: the delta net); replay then brings its
    // recurrent state to n_keep positions (can_replay: pos0 <= n_keep <= what was
    // logged) without the projections. log_stop keeps the logged rows.
    bool has_recurrent() const { return ssm_ != nullptr; }
    void log_rows(int seq, int64_t pos0, int n_rows);
    void log_stop(int seq);
    bool can_replay(int seq, int64_t n_keep) const;
    int replay(int seq, int64_t n_keep);  // returns the rows replayed
    // Deferred rows (SsmMixer::flush / drop): before anything reads or copies
    // seq's recurrent state outside a pass, flush; where it is replaced, drop.
    void flush_recurrent(int seq);
    void drop_recurrent(int seq);
    uint64_t log_bytes() const { return (ssm_ ? ssm_->log_bytes() : 0) + (recurrent_ ? recurrent_->spare_bytes() : 0); }
    // What logging n_rows rows of n_seq sequences allocates (0 without recurrent layers; the memory plan).
    static uint64_t replay_log_bytes(const ModelSpec& spec, int n_seq, int n_rows);

private:
    // Elements of the activation buffers for a batch of n_batch_max rows.
    struct BufferSizes {
        size_t x = 0, q = 0, k = 0, v = 0, att = 0, ff = 0, ones = 0, qkv = 0, gate_up = 0, par = 0, ssm_o = 0;
        size_t mla_q = 0, mla_qa = 0, mla_nope = 0, mla_lat = 0;  // latent attention's (mla.cpp)
        size_t ple = 0;  // the per-layer embeddings' rows (per_layer_embd.cpp)
    };
    static BufferSizes buffer_sizes(const ModelSpec& spec, int n_batch_max);

    // The rows of one sequence in the batch: keys visible to them, where to read them.
    struct SeqSpan {
        int seq = 0;
        int64_t pos_min = 0, pos_max = 0;  // positions of its rows in this batch
        KvRows rows;                       // the layer's rows of this sequence (per layer)
        HugeFloats k_f32, v_f32;           // a q8_0 cache's rows as f32, per layer
    };
    void plan_spans(const BatchRows& b);
    // The attention of a run of rows of one sequence (n_rows consecutive rows with
    // the same first key; pos: each row's last key, q_pos: its position), exact or
    // streaming as set.
    void attend_run(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                    const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride, AttentionScratch& sc) const;
    void attention_layer(int il, const BatchRows& b);
    void mla_attention_layer(int il, const BatchRows& b);  // ModelSpec::mla (mla.cpp)
    void recurrent_layer(int il, const BatchRows& b);
    void ffn_layer(int il, int n);
    // Per-layer embeddings (ModelSpec::n_embd_per_layer; per_layer_embd.cpp): every
    // layer's input rows of the batch, then one layer's gated addition.
    void per_layer_inputs(const BatchRows& b);
    void per_layer_embedding(int il, int n);
    void prepare_rope(const BatchRows& b);
    void encoder_inputs(const BatchRows& b);
    void add_position_rows(const BatchRows& b);
    void nextn_inputs(const BatchRows& b);  // a NextN head's input rows (nextn.cpp)
    void assistant_inputs(const BatchRows& b);  // a Gemma 4 assistant's input rows (assistant.cpp)
    ops::RopeParams rope_params(bool swa_base) const;
    void dump(const char* name, int layer, const float* data, int64_t per_row, int64_t rows) const {
        if (hook_) hook_(name, layer, data, per_row, rows);
    }

    const ModelSpec& spec_;
    const ModelWeights& w_;
    KvCache* cache_;               // null without attention layers
    RecurrentState* recurrent_;    // null without recurrent layers
    std::unique_ptr<SsmMixer> ssm_;
    const ThreadPool& pool_;
    int n_batch_max_;
    DebugHook hook_;
    bool stream_attention_ = false;
    MoeBlock moe_;  // the expert layers' FFN

    MatmulScratch mm_;
    std::vector<AttentionScratch> attn_scratch_;  // per thread
    std::vector<float> alibi_slopes_;             // [max n_head]: ALiBi's slope per head (empty: none)
    std::vector<SeqSpan> spans_;                  // the batch's sequences
    std::vector<int> row_span_;                   // [n]: each row's index in spans_
    // The end of the run of rows from r (before r_end) that attend as one block:
    // causal rows of r's sequence whose first key is r's (same_first(e)); r + 1
    // for non-causal attention. Each row of a block keeps the bits it has alone.
    template <class SameFirst>
    int64_t attention_run(int64_t r, int64_t r_end, SameFirst same_first) const {
        int64_t e = r + 1;
        if (spec_.causal)
            while (e < r_end && row_span_[static_cast<size_t>(e)] == row_span_[static_cast<size_t>(r)] && same_first(e)) ++e;
        return e;
    }
    size_t n_spans_ = 0;                          // spans_ used by this batch
    // Activations of the batch, f32 [width, n] each.
    std::vector<float> x_;       // the residual stream [n_embd, n]
    std::vector<float> h_;       // normed input of a block [n_embd, n]
    std::vector<float> q_, k_, v_;  // [n_head * head_dim_k, n], [n_head_kv * head_dim_k, n], [n_head_kv * head_dim_v, n]
    std::vector<float> qkv_;     // a fused Q/K/V product before the split [q + k + v, n] (sized only if used)
    std::vector<float> att_;     // attention output [n_head * head_dim_v, n]
    std::vector<float> qg_, ogate_;  // attn_output_gate: Q with its gates [2 n_head head_dim_k, n], the gates [n_head head_dim_k, n]
    std::vector<float> o_;       // a block's output [n_embd, n]
    std::vector<float> par_;     // a parallel block's attention output, added with the FFN's [n_embd, n] (sized only if used)
    std::vector<float> ssm_o_;   // LayerSpec::parallel_ssm: the recurrent mixer's output [n_embd, n] (sized only if used)
    std::vector<float> gate_, up_;  // [n_ff, n]
    std::vector<float> ones_;    // [n_ff] of 1.0f: a plain FFN's activation through the gated kernel
    std::vector<float> out_x_;   // the rows whose output is wanted [n_embd, n_out]
    std::vector<float> rope_cache_, rope_cache_swa_;  // cos / sin per row [n_dims, n]
    std::vector<float> gate_up_;  // a fused gate / up product [2 n_ff, n] (sized only if used)
    // Expert layers with a dense branch (gemma4; sized only if used): the experts'
    // normed input, the router's input, the experts' output [n_embd, n]; ones [n_embd].
    std::vector<float> moe_in_, moe_router_in_, moe_out_, embd_ones_;
    // Latent attention (mla.cpp; sized only if used): the queries [n_head * head_dim_qk, n]
    // (later the heads' expanded results [n_head * head_dim_v, n]), q_a [q_lora, n],
    // per-head gathers [nope or head_dim_v, n] x n_head and [kv_lora, n] x n_head.
    std::vector<float> mla_q_, mla_qa_, mla_nope_, mla_lat_;
    std::vector<float> norm_ones_;  // [max head_dim_v] of 1.0f: the V norm's weight (ModelSpec::v_norm)
    // Per-layer embeddings: each row's inputs of every layer [n_embd_per_layer, n_layer, n],
    // and one layer's gate [n_embd_per_layer, n].
    std::vector<float> ple_, ple_gate_;
    // A NextN head's [enorm(embedding) | hnorm(state)] rows [2 n_embd, n], a Gemma 4
    // assistant's [embedding | state] rows [2 n_embd_target, n] (sized only if used).
    std::vector<float> nextn_cat_;
    const float* rope_factors_ = nullptr;  // rope_freqs, or the LongRoPE factors for this memory's context
};

}  // namespace kiln
