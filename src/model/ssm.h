// The state-space mixers of the Mamba families (spec.ssm.kind): a recurrent
// layer's token mixer between `attn_norm` and the residual. Per layer and
// sequence it keeps, in the RecurrentState, the causal convolution's last inputs
// and the scan state (compute/ssm.h has the layouts).
//
// Mamba-2 (mamba2; the Mamba-2 layers of nemotron_h, granitehybrid, falcon-h1):
//   zxBCdt = ssm_in · x;  xBC = SiLU(conv1d(xBC) + b);  y = scan(x, dt + dt_b, A, B, C) + D·x
//   y = RMSNorm_per_group(y · SiLU(z)) · ssm_norm;   out = ssm_out · y
// ShortConv (lfm2's convolution layers): no scan, a gated short convolution:
//   [B, C, x] = in_proj · x;  y = C · conv1d(B · x);  out = out_proj · y
// Gated delta net (qwen35's / qwen35moe's / qwen3next's linear-attention layers; src/model/delta_net.cpp):
//   qkv = attn_qkv · x;  [q, k, v] = SiLU(conv1d(qkv));  q, k L2-normed per key head
//   g = softplus(ssm_alpha · x + dt_b) · A;  beta = sigmoid(ssm_beta · x)
//   y = delta_rule(q, k, v, g, beta);  out = ssm_out · (RMSNorm(y) · ssm_norm · SiLU(attn_gate · x))
// Mamba-1 (mamba; jamba's Mamba layers also RMS-norm dt_low, B and C with weights):
//   xz = ssm_in · x;  x = SiLU(conv1d(x) + b);  [dt_low, B, C] = ssm_x · x;  dt = ssm_dt · dt_low + dt_b
//   y = (scan(x, dt, A, B, C) + D·x) · SiLU(z);   out = ssm_out · y
//
// A batch's rows are evaluated in batch order (a sequence's rows are in position
// order): the projections over all rows at once, the convolution and the scan
// row by row inside the mixer, split over threads by channel / head. A row's
// result therefore never depends on how its sequence was split into batches.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "cache/recurrent_state.h"
#include "compute/huge_pages.h"
#include "compute/matmul.h"
#include "compute/thread_pool.h"
#include "model/spec.h"
#include "model/tensor_source.h"

namespace kiln {

struct SsmWeights {
    Matrix in;                       // ssm_in (shortconv.in_proj) [n_embd, d_in_proj]
    const float* conv = nullptr;     // ssm_conv1d.weight (shortconv.conv.weight) f32 [d_conv, n_conv]
    const float* conv_b = nullptr;   // [n_conv]; ShortConv: none
    Matrix x_proj;                   // Mamba-1 ssm_x [d_inner, dt_rank + 2 d_state]
    Matrix dt_proj;                  // Mamba-1 ssm_dt [dt_rank, d_inner]
    const float* dt_b = nullptr;     // [n_head] (Mamba-2) or [d_inner]
    const float* A = nullptr;        // ssm_a: [1, n_head] (Mamba-2) or [d_state, d_inner]; already -exp(A_log)
    const float* D = nullptr;        // ssm_d: [1, n_head] (Mamba-2) or [d_inner]
    const float* norm = nullptr;     // Mamba-2 ssm_norm [d_inner / n_group, n_group]
    const float* dt_norm = nullptr;  // Mamba-1 with SsmSpec::dt_bc_norms: ssm_dt_norm [dt_rank]
    const float* b_norm = nullptr;   //   ssm_b_norm [d_state]
    const float* c_norm = nullptr;   //   ssm_c_norm [d_state]
    Matrix out;                      // ssm_out (shortconv.out_proj) [d_inner, n_embd]
    Matrix z_proj, beta_proj, alpha_proj;  // delta net: attn_gate [n_embd, d_inner], ssm_beta / ssm_alpha [n_embd, n_v_heads]
    Matrix beta_alpha_proj;          // delta net, grouped heads: ssm_ba [n_embd, 2 n_v_heads]
    // Delta net, grouped heads: `in` is the older converters' ssm_in [n_embd,
    // 2 d_inner + 2 n_k d], per key head its q, k, its value heads' v and z
    // (no attn_qkv / attn_gate).
    bool in_qkvz = false;

    // RWKV-6: the whole block's tensors (src/model/rwkv6.cpp), f32 vectors [n_embd]
    // unless said otherwise.
    struct Rwkv6 {
        const float* norm = nullptr, *norm_b = nullptr;      // attn_norm (LayerNorm) before the time mix
        const float* norm2 = nullptr, *norm2_b = nullptr;    // attn_norm_2 before the channel mix
        const float* lerp_x = nullptr;
        const float* lerp_fused = nullptr;                   // [n_embd, 5]: w, k, v, r, g
        Matrix w1;                                           // time_mix_w1 [n_embd, 5 mix_dim]
        const float* w2 = nullptr;                           // time_mix_w2 [mix_dim, n_embd, 5]
        const float* first = nullptr;                        // time_mix_first (u) [head_size, n_head]
        const float* decay = nullptr;                        // time_mix_decay
        Matrix decay_w1, decay_w2;                           // [n_embd, decay_dim], [decay_dim, n_embd]
        Matrix key, value, receptance, gate, output;         // [n_embd, n_embd]
        const float* ln = nullptr, *ln_b = nullptr;          // time_mix_ln: the per-head group norm's weight, bias
        const float* c_lerp_k = nullptr, *c_lerp_r = nullptr;
        Matrix c_key, c_value, c_receptance;                 // [n_embd, n_ff], [n_ff, n_embd], [n_embd, n_embd]
        const float* key_b = nullptr, *value_b = nullptr, *receptance_b = nullptr;  // RWKV6Qwen2, by presence
    } rwkv;

    // RWKV-7 (src/model/rwkv7.cpp), f32 vectors [n_embd] unless said otherwise.
    struct Rwkv7 {
        const float* norm = nullptr, *norm_b = nullptr, *norm2 = nullptr, *norm2_b = nullptr;
        const float* lerp_fused = nullptr;                 // [n_embd, 6]: r, w, k, v, a, g (5 without the gate)
        bool gate = true;                                  // g1 / g2 present (ARWKV: by presence)
        const float* w0 = nullptr, *a0 = nullptr, *v0 = nullptr;
        Matrix w1, w2, a1, a2, v1, v2, g1, g2;             // the low-rank pairs [n_embd, rank], [rank, n_embd]
        const float* k_k = nullptr, *k_a = nullptr, *r_k = nullptr;
        Matrix key, value, receptance, output;             // [n_embd, n_embd]
        const float* ln = nullptr, *ln_b = nullptr;
        const float* c_lerp_k = nullptr;
        Matrix c_key, c_value;                             // [n_embd, n_ff], [n_ff, n_embd]
    } rwkv7;
};

// RWKV-6 (rwkv6; src/model/rwkv6.cpp) is a whole block in the mixer, given the
// residual stream and returning the layer's output:
//   a = LN(x); sx = shift(a) - a; the token-shift mix (lerp_x, w1, tanh, w2, lerp_fused)
//   gives xw, xk, xv, xr, xg; r, k, v = receptance / key / value; g = SiLU(gate · xg)
//   w = exp(-exp(decay + decay_w2 · tanh(decay_w1 · xw)));  y = wkv6(k, v, r, first, w)
//   x += output · (GroupNorm_heads(y) · ln + ln_b) · g
//   b = LN2(x); sx = shift(b) - b; x += sigmoid(c_r · (b + sx·lerp_r)) · c_value · relu(c_key · (b + sx·lerp_k))²
// shift(a): the previous position's a (for a sequence's first row in a batch, the state's).
// RWKV6Qwen2 (QRWKV) keeps only the time mix, as an ordinary mixer on the
// RMS-normed rows (its FFN is the layer's gated FFN): K / V of fewer heads
// (repeated), optional R / K / V biases, g = sigmoid(gate · xg), k ·= (1 - w), and
// gated linear attention y = (Σ_i q_i S) / sqrt(head size) in place of WKV6, no group norm.

// Binds layer `prefix` ("blk.3.")'s mixer tensors, checking every shape.
SsmWeights bind_ssm_weights(TensorSource& src, const std::string& prefix, const ModelSpec& spec);
// The matrices among them (for the load-time repacking).
std::vector<Matrix*> ssm_matrices(SsmWeights& w);
// The delta net's part of bind_ssm_weights (delta_net.cpp).
SsmWeights bind_delta_net_weights(TensorSource& src, const std::string& prefix, const ModelSpec& spec);
// RWKV-6's (rwkv6.cpp) and RWKV-7's (rwkv7.cpp).
SsmWeights bind_rwkv6_weights(TensorSource& src, const std::string& prefix, const ModelSpec& spec);
SsmWeights bind_rwkv7_weights(TensorSource& src, const std::string& prefix, const ModelSpec& spec);

// Channels through the causal convolution.
int64_t ssm_conv_channels(const SsmSpec& m);
// Bytes of one sequence's state in one recurrent layer (convolution + scan).
uint64_t ssm_state_bytes(const ModelSpec& spec);

class SsmMixer {
public:
    using Hook = std::function<void(const char* name, int layer, const float* data, int64_t n_per_row, int64_t n_rows)>;

    SsmMixer(const ModelSpec& spec, int n_batch_max);

    // h: the normed input f32 [n_embd, n]; out: the mixer's output f32 [n_embd, n].
    // seq[r]: row r's sequence, whose state in `states` it reads and advances.
    void eval(int il, const SsmWeights& w, const int32_t* seq, int n, const float* h, float* out, RecurrentState& states,
              const ThreadPool& pool, MatmulScratch& mm, const Hook& hook);

    // The replay log (ssm_replay.cpp), for rolling a sequence back into the rows
    // of a verification batch exactly: log_start saves the sequence's state as it
    // is and has the evaluations of its next n_rows rows (positions pos0 ..) keep
    // each recurrent layer's recurrence inputs (the convolution's input row and
    // what the scan / delta rule / WKV reads); replay restores the saved state and
    // runs only those recurrences (no projections) for the rows before n_keep, the
    // same kernels on the same inputs in the same order, so the state is the bits
    // a decode of just those rows leaves.
    //
    // The delta net defers instead (ssm_deferred.cpp): a logged row does not
    // write the live state. Each thread runs the batch's rows on its copy of a
    // head, the first row reading the live head, the last writing the head in the
    // state's spare block (RecurrentState::spare, streamed), and records, per row
    // but the log's last, what redoes the row's update without reading the state
    // (the convolution's input row; k, g and the delta rule's δ). When
    // logging ends (log_stop, or a pass with rows of the sequence past the log)
    // and every evaluated row is kept, the spare becomes the live state (a swap);
    // otherwise the kept rows become the sequence's pending rows, which the next
    // pass over each layer applies inside its first step over each head
    // (ssm_delta's `pending`), bit-identical to having evaluated them there; a
    // rollback (replay_layer) only shortens the log. Whatever reads or copies a
    // sequence's state from outside a pass must flush() it first, and drop() it
    // where the state is replaced (clear, copied over, a checkpoint restored).
    void log_start(int seq, int64_t pos0, int n_rows, RecurrentState& states, const ThreadPool& pool);
    void log_stop(int seq, RecurrentState& states, const ThreadPool& pool);
    // Keeps the log's first n rows only (the state now holds pos0 + n positions).
    void log_truncate(int seq, int n);
    // Before a pass: each row's place in its sequence's log.
    void set_pass_rows(const int32_t* seq, const int64_t* pos, int n, RecurrentState& states, const ThreadPool& pool);
    // Whether replay can bring seq to n_keep positions: n_keep - pos0 rows, all logged.
    bool can_replay(int seq, int64_t n_keep) const;
    int64_t log_start_pos(int seq) const;
    // Restores layer il's saved state of seq, then replays its first n_rows rows
    // (the copy just before the replay leaves the state in cache for it). Deferred: nothing to do.
    void replay_layer(int il, const SsmWeights& w, int seq, int n_rows, RecurrentState& states, const ThreadPool& pool);
    // Deferred rows: applies seq's pending and logged rows to its state (the log ends) / forgets them.
    void flush(int seq, RecurrentState& states, const ThreadPool& pool);
    void drop(int seq);
    bool defers() const { return defers_; }
    uint64_t log_bytes() const;  // allocated for logs (on first use)
    // What logging n_rows rows of each of n_seq sequences allocates (the memory plan).
    static uint64_t log_bytes_needed(const ModelSpec& spec, int n_seq, int n_rows);

private:
    // The log's part of one row of layer il: null where the row is not logged
    // (and for the delta net, the log's last row: nothing redoes it).
    float* log_row(int il, int r);
    // Copies count floats of each logged row r (src + r * stride) to offset `at` of its log row.
    void log_part(int il, int n, int64_t at, const float* src, int64_t stride, int64_t count);
    struct RowLog {
        int64_t pos0 = -1;          // position of the first logged row (-1: no log)
        int n_rows = 0;             // rows logged (a row's place in `rows` depends on it)
        int n_valid = 0;            // of them, the rows the state may still be replayed to
        std::vector<uint8_t> base;  // the sequence's whole recurrent state before them
        std::vector<float> rows;    // [log_floats_, n_rows, n_layer]
    };
    std::vector<RowLog> logs_;      // per sequence

    // Deferred rows (the delta net; ssm_deferred.cpp). A record per row and
    // layer: the convolution's input [n_conv] | k [n_k d] | g [n_v] | δ [d, n_v]
    // (the log's last row has none: log_row).
    struct Deferred {
        HugeFloats pend;                  // pending rows' records [rec, pend_cap, n_layer] (64-byte aligned: written streamed)
        int n_pend = 0, pend_cap = 0;
        std::vector<uint8_t> pend_layer;  // per layer: its pending rows are still to apply
        HugeFloats log;                   // the logged rows' records [rec, n_rows, n_layer]
        int64_t pos0 = -1;                // position of the first logged row (-1: no log)
        int n_rows = 0;                   // rows the log takes (a record's place depends on it)
        int n_done = 0;                   // of them, evaluated by earlier passes
        int n_valid = 0;                  // of those, kept
        // Per layer: how many of the log's rows the state's spare block holds
        // (RecurrentState::spare; -1: nothing of this log). A logged pass writes
        // each layer's state after its rows there; a log whose every row is kept
        // ends by making the spare the live state (no pending rows at all).
        std::vector<int> spare_rows;
    };
    std::vector<Deferred> deferred_;  // per sequence
    bool defers_ = false;
    int64_t rec_floats_ = 0;
    int64_t rec_k_ = 0, rec_g_ = 0, rec_delta_ = 0;  // offsets in a record
    // This pass: its sequences in order of first row; per sequence the log index
    // of its first row in this pass (-1: not logged).
    std::vector<int32_t> pass_seqs_, pass_first_;
    std::vector<uint8_t*> pass_spare_;  // this layer: per pass sequence, its spare block's layer state (logged ones)
    // Fills pass_spare_ for layer il; per pass sequence whether its spare holds the log's earlier rows.
    void spare_of_pass(int il, RecurrentState& states);
    float* rec(HugeFloats& buf, int cap, int il, int r) const {
        return buf.data() + (static_cast<size_t>(il) * static_cast<size_t>(cap) + static_cast<size_t>(r)) * static_cast<size_t>(rec_floats_);
    }
    Deferred& deferred(int seq);
    void defer_commit(int seq, RecurrentState& states, const ThreadPool& pool);
    void defer_pass_rows(const int32_t* seq, const int64_t* pos, int n, RecurrentState& states, const ThreadPool& pool);
    // Applies rows [0, n) of records buf (capacity cap) of layer il to a state of
    // one sequence: the convolution part's channels [c0, c1) / the value heads [h0, h1).
    void apply_conv(int il, HugeFloats& buf, int cap, int n, float* conv_state, int64_t c0, int64_t c1);
    void apply_heads(int il, HugeFloats& buf, int cap, int n, float* scan_state, int64_t h0, int64_t h1);
    void apply_head(int il, HugeFloats& buf, int cap, int n, float* head_state, int64_t h);  // head h's d x d
    void apply_pending(int seq, RecurrentState& states, const ThreadPool& pool);
    void conv_deferred(int il, const SsmWeights& w, const int32_t* seq, int n, const float* src, RecurrentState& states,
                       const ThreadPool& pool);
    void delta_rule_deferred(int il, const int32_t* seq, int n, RecurrentState& states, const ThreadPool& pool);
    std::vector<int32_t> log_index_;  // this pass: each row's index in its log (-1: none)
    std::vector<int32_t> log_seq_;    // ... and its sequence
    int64_t log_floats_ = 0;        // logged per row and layer
    std::vector<float> replay_y_;   // replay's discarded outputs

    void conv(int il, const SsmWeights& w, const int32_t* seq, int n, const float* src, int64_t src_stride, int64_t src_offset,
              RecurrentState& states, const ThreadPool& pool, bool silu);
    void eval_delta_net(int il, const SsmWeights& w, const int32_t* seq, int n, const float* h, float* out, RecurrentState& states,
                        const ThreadPool& pool, MatmulScratch& mm, const Hook& hook);
    void eval_shortconv(int il, const SsmWeights& w, const int32_t* seq, int n, const float* h, float* out, RecurrentState& states,
                        const ThreadPool& pool, MatmulScratch& mm, const Hook& hook);
    void eval2(int il, const SsmWeights& w, const int32_t* seq, int n, const float* h, float* out, RecurrentState& states,
               const ThreadPool& pool, MatmulScratch& mm, const Hook& hook);
    void eval1(int il, const SsmWeights& w, const int32_t* seq, int n, const float* h, float* out, RecurrentState& states,
               const ThreadPool& pool, MatmulScratch& mm, const Hook& hook);
    // x: the layer's input rows (the residual stream); out: its output rows.
    void eval_rwkv6(int il, const SsmWeights& w, const int32_t* seq, int n, const float* x, float* out, RecurrentState& states,
                    const ThreadPool& pool, MatmulScratch& mm, const Hook& hook);
    void eval_rwkv7(int il, const SsmWeights& w, const int32_t* seq, int n, const float* x, float* out, RecurrentState& states,
                    const ThreadPool& pool, MatmulScratch& mm, const Hook& hook);

    const ModelSpec& spec_;
    int64_t n_conv_ = 0;     // channels through the convolution
    int64_t d_in_proj_ = 0;  // ssm_in's outputs
    int64_t conv_bytes_ = 0; // the convolution's part of a layer's state (the scan's follows)
    std::vector<float> proj_;  // ssm_in's output [d_in_proj, n]
    std::vector<float> xc_;    // convolved channels [n_conv, n]
    std::vector<float> xdb_;   // Mamba-1: ssm_x's output [dt_rank + 2 d_state, n]
    std::vector<float> dtl_;   // Mamba-1: its dt part, contiguous [dt_rank, n]
    std::vector<float> ones_;  // FalconMamba: the weightless dt / B / C norms' unit weights
    std::vector<float> dt_;    // time steps with bias [n_head or d_inner, n]
    std::vector<float> y_;     // scan output [d_inner, n]
    std::vector<float> g_;     // the gate, SiLU(z) · y [d_inner, n]; ShortConv: B · x
    std::vector<float> z_;     // delta net: the output gate's input [d_inner, n]
    std::vector<float> beta_, alpha_;  // delta net: [n_v_heads, n] each
    std::vector<float> ba_;    // delta net, grouped heads: ssm_ba's output [2 n_v_heads, n]
    std::vector<float> qkvz_;  // delta net, grouped heads, ssm_in: its output [2 d_inner + 2 n_k d, n]
    std::vector<float> rw_;    // RWKV-6's / RWKV-7's per-row buffers (rwkv6.cpp, rwkv7.cpp lay them out)
    std::vector<float> v_first_;  // RWKV-7: the first layer's values of this batch [n_embd, n]
};

}  // namespace kiln
