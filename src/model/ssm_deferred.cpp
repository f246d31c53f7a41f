// SsmMixer's deferred rows (src/model/ssm.h): how the delta net rolls back into a
// verification batch without saving or restoring its state. A logged row never
// writes the live state: per value head, a thread runs the sequence's rows of
// the pass on its copy of the head (in cache; the first row reads the live head),
// and the pass's last row writes the head in the state's spare block
// (RecurrentState::spare) with non-temporal stores — written once and not read
// until the next pass, so its lines are not fetched from memory to be
// overwritten. Each row but the log's last records its δ beside its k and g
// (streamed too: read back only after a rejection); per convolution channel
// range the same with the spare's convolution state and the inputs. When the
// log ends, if every row it evaluated is kept the spare becomes the live state (a
// swap of pointers: nothing left to do; the only way the log's last row is kept,
// hence no record of it); otherwise its kept rows become the sequence's pending
// rows, and the next pass over each layer applies them to the head it is about
// to use (delta_apply: the delta rule's update from the recorded δ, the same
// float operations in the same order, so the state gets the bits a plain decode
// gives it) — the write a decode step does anyway. A rollback only shortens the log.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "compute/kernels/kernels.h"
#include "compute/ops.h"
#include "compute/ssm.h"
#include "compute/stream.h"
#include "kiln/error.h"
#include "model/ssm.h"

namespace kiln {

namespace {

// A thread's copy of one head (d x d floats, 64-byte aligned: the kernels' full lines).
float* thread_head(size_t n) {
    thread_local std::vector<float> buf;
    if (buf.size() < n + 16) buf.resize(n + 16);
    const uintptr_t a = reinterpret_cast<uintptr_t>(buf.data());
    return buf.data() + ((64 - a % 64) % 64) / sizeof(float);
}

// A thread's copy of a layer's convolution state (n floats; a thread uses its channels' part).
float* thread_conv(size_t n) {
    thread_local std::vector<float> buf;
    if (buf.size() < n) buf.resize(n);
    return buf.data();
}

}  // namespace

SsmMixer::Deferred& SsmMixer::deferred(int seq) {
    while (deferred_.size() <= static_cast<size_t>(seq)) {
        deferred_.emplace_back();
        deferred_.back().pend_layer.assign(static_cast<size_t>(spec_.n_layer), 0);
        deferred_.back().spare_rows.assign(static_cast<size_t>(spec_.n_layer), -1);
    }
    return deferred_[static_cast<size_t>(seq)];
}

// Before a pass: its sequences, and for each whether its rows continue its log
// (rows n_done.. of it, all of them); a sequence with rows past its log ends it
// first (its kept rows become pending, applied in this pass).
void SsmMixer::defer_pass_rows(const int32_t* seq, const int64_t* pos, int n, RecurrentState& states, const ThreadPool& pool) {
    pass_seqs_.clear();
    pass_first_.clear();
    log_index_.assign(static_cast<size_t>(n), -1);
    log_seq_.assign(seq, seq + n);
    for (int r = 0; r < n; ++r)
        if (std::find(pass_seqs_.begin(), pass_seqs_.end(), seq[r]) == pass_seqs_.end()) pass_seqs_.push_back(seq[r]);
    for (int s : pass_seqs_) {
        int32_t first = -1;
        if (static_cast<size_t>(s) < deferred_.size() && deferred_[static_cast<size_t>(s)].pos0 >= 0) {
            Deferred& df = deferred_[static_cast<size_t>(s)];
            bool in_log = df.n_valid == df.n_rows;  // not cut back by a rollback
            int k = 0;  // its rows so far
            for (int r = 0; r < n; ++r) {
                if (seq[r] != s) continue;
                in_log = in_log && pos[r] == df.pos0 + df.n_done + k && df.n_done + k < df.n_rows;
                ++k;
            }
            if (in_log) {
                first = df.n_done;
                for (int r = 0, j = 0; r < n; ++r)
                    if (seq[r] == s) log_index_[static_cast<size_t>(r)] = first + j++;
                df.n_done += k;
            } else {
                defer_commit(s, states, pool);
            }
        }
        pass_first_.push_back(first);
    }
}

void SsmMixer::apply_conv(int il, HugeFloats& buf, int cap, int n, float* conv_state, int64_t c0, int64_t c1) {
    const int d_conv = spec_.ssm.d_conv;
    const int64_t n_keep = d_conv - 1;
    for (int p = 0; p < n; ++p) ssm::conv_shift(conv_state + c0 * n_keep, rec(buf, cap, il, p) + c0, d_conv, c1 - c0);
}

void SsmMixer::apply_head(int il, HugeFloats& buf, int cap, int n, float* head_state, int64_t h) {
    const SsmSpec& m = spec_.ssm;
    const int64_t d = m.d_state, nk = m.n_group, rf = m.dt_rank / nk;
    const int64_t kh = m.grouped_heads ? h / rf : h % nk;
    if (n <= 0) return;
    // All n rows in one pass over the head (their records follow each other, rec_floats_ apart).
    const float* r = rec(buf, cap, il, 0);
    kernels().ssm_delta_apply(head_state, r + rec_k_ + kh * d, r + rec_g_ + h, r + rec_delta_ + h * d, rec_floats_, n,
                              static_cast<int>(d), 1, 0, 1);
}

void SsmMixer::apply_heads(int il, HugeFloats& buf, int cap, int n, float* scan_state, int64_t h0, int64_t h1) {
    const int64_t d = spec_.ssm.d_state;
    // Head by head, its rows in order: one head's state stays in cache for all of them.
    for (int64_t h = h0; h < h1; ++h) apply_head(il, buf, cap, n, scan_state + h * d * d, h);
}

void SsmMixer::spare_of_pass(int il, RecurrentState& states) {
    pass_spare_.assign(pass_seqs_.size(), nullptr);
    for (size_t k = 0; k < pass_seqs_.size(); ++k)
        if (pass_first_[k] >= 0) pass_spare_[k] = states.spare(il, pass_seqs_[k]);
}

// The convolution of the pass's rows (SsmMixer::conv with SiLU), the state
// brought up to date first; a logged sequence's rows run on a thread's copy,
// recording their inputs, and leave the result in its spare block.
void SsmMixer::conv_deferred(int il, const SsmWeights& w, const int32_t* seq, int n, const float* src, RecurrentState& states,
                             const ThreadPool& pool) {
    const int d_conv = spec_.ssm.d_conv;
    const int64_t nc = n_conv_, n_keep = d_conv - 1;
    spare_of_pass(il, states);
    pool.parallel_for(nc, 64, [&](int64_t c0, int64_t c1, int) {
        for (size_t k = 0; k < pass_seqs_.size(); ++k) {
            const int s = pass_seqs_[k];
            float* st = reinterpret_cast<float*>(states.state(il, s));
            Deferred* df = static_cast<size_t>(s) < deferred_.size() ? &deferred_[static_cast<size_t>(s)] : nullptr;
            if (df && df->n_pend > 0 && df->pend_layer[static_cast<size_t>(il)]) apply_conv(il, df->pend, df->pend_cap, df->n_pend, st, c0, c1);
            float* cs = st;
            float* spare = nullptr;
            if (pass_first_[k] >= 0) {
                // The rows run on the thread's copy of its channels, which starts from the
                // spare where it continues the log's earlier rows, else from the live state
                // (and those rows); the spare gets the result, streamed.
                spare = reinterpret_cast<float*>(pass_spare_[k]);
                cs = thread_conv(static_cast<size_t>(nc * n_keep));
                const bool continues = pass_first_[k] > 0 && df->spare_rows[static_cast<size_t>(il)] == pass_first_[k];
                std::memcpy(cs + c0 * n_keep, (continues ? spare : st) + c0 * n_keep, static_cast<size_t>((c1 - c0) * n_keep) * sizeof(float));
                if (!continues) apply_conv(il, df->log, df->n_rows, pass_first_[k], cs, c0, c1);  // its rows of earlier passes
            }
            for (int r = 0; r < n; ++r) {
                if (seq[r] != s) continue;
                if (spare)  // a logged row's record: its input, this thread's channels
                    if (float* lr = log_row(il, r)) stream_copy(lr + c0, src + r * nc + c0, static_cast<size_t>(c1 - c0));
                ssm::conv_step(cs, src + r * nc, w.conv, w.conv_b, xc_.data() + r * nc, d_conv, c0, c1);
            }
            if (spare) stream_copy(spare + c0 * n_keep, cs + c0 * n_keep, static_cast<size_t>((c1 - c0) * n_keep));
        }
        stream_fence();
    });
    pool.parallel_for(static_cast<int64_t>(n) * nc, 4096, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) xc_[static_cast<size_t>(i)] = ops::silu(xc_[static_cast<size_t>(i)]);
    });
}

// The delta rule of the pass's rows over value heads: pending rows applied to
// the state by the sequence's first row (fused in its step: one pass over each
// head); a logged sequence's rows on a thread's copy of each head, recording k,
// g and δ, the last row's result in its spare block.
void SsmMixer::delta_rule_deferred(int il, const int32_t* seq, int n, RecurrentState& states, const ThreadPool& pool) {
    const SsmSpec& m = spec_.ssm;
    const int64_t d = m.d_state, nk = m.n_group, nv = m.dt_rank, dv = m.d_inner, nc = n_conv_, rf = nv / nk;
    const auto delta_step = kernels().ssm_delta;
    pool.parallel_for(nv, 1, [&](int64_t h0, int64_t h1, int) {
        for (size_t k = 0; k < pass_seqs_.size(); ++k) {
            const int s = pass_seqs_[k];
            float* st = reinterpret_cast<float*>(states.state(il, s) + conv_bytes_);
            Deferred* df = static_cast<size_t>(s) < deferred_.size() ? &deferred_[static_cast<size_t>(s)] : nullptr;
            bool pend = df && df->n_pend > 0 && df->pend_layer[static_cast<size_t>(il)];
            if (pend && pass_first_[k] > 0) {  // not expected (the log's first pass applied them): a pass of their own
                apply_heads(il, df->pend, df->pend_cap, df->n_pend, st, h0, h1);
                pend = false;
            }
            // The pending rows' records, key head kh_at's k and value head h_at's g and δ at index 0
            // (or the heads' own indices where both offsets are 0).
            const float* pr = pend ? rec(df->pend, df->pend_cap, il, 0) : nullptr;
            auto pending = [&](int64_t kh_at, int64_t h_at) {
                return ssm::DeltaRows{pr + rec_k_ + kh_at * d, pr + rec_g_ + h_at, pr + rec_delta_ + h_at * d, rec_floats_, df->n_pend};
            };
            if (pass_first_[k] < 0) {  // in place, as a plain decode
                for (int r = 0; r < n; ++r) {
                    if (seq[r] != s) continue;
                    const float* x = xc_.data() + r * nc;
                    const float* a = alpha_.data() + r * nv;
                    const float* b = beta_.data() + r * nv;
                    float* y = y_.data() + r * dv;
                    if (!m.grouped_heads) {
                        const ssm::DeltaRows pd = pend ? pending(0, 0) : ssm::DeltaRows{};
                        delta_step(st, x, x + nk * d, x + 2 * nk * d, a, b, y, static_cast<int>(d), static_cast<int>(nk),
                                   static_cast<int>(h0), static_cast<int>(h1), nullptr, nullptr, pend ? &pd : nullptr, false);
                    } else {
                        for (int64_t hv = h0; hv < h1; ++hv) {
                            const int64_t g = hv / rf;
                            const ssm::DeltaRows pd = pend ? pending(g, 0) : ssm::DeltaRows{};
                            delta_step(st, x + g * d, x + nk * d + g * d, x + 2 * nk * d, a, b, y, static_cast<int>(d), 1,
                                       static_cast<int>(hv), static_cast<int>(hv + 1), nullptr, nullptr, pend ? &pd : nullptr, false);
                        }
                    }
                    pend = false;  // applied with the sequence's first row
                }
                continue;
            }
            // A logged sequence: per head, its rows of this pass run on the thread's
            // copy of the head (in cache), the first reading the live head (bringing
            // it up to date with the pending rows there) or, in a later pass of the
            // log, the spare's; the last writes the spare's head, streamed (written
            // once, not read before the log ends: its lines need not be fetched).
            float* spare = reinterpret_cast<float*>(pass_spare_[k] + conv_bytes_);
            const bool continues = pass_first_[k] > 0 && df->spare_rows[static_cast<size_t>(il)] == pass_first_[k];
            const int n_s = static_cast<int>(std::count(seq, seq + n, s));
            float* local = n_s > 1 || (pass_first_[k] > 0 && !continues) ? thread_head(static_cast<size_t>(d * d)) : nullptr;
            for (int64_t h = h0; h < h1; ++h) {
                float* hs = spare + h * d * d;
                float* cur = continues ? hs : st + h * d * d;  // where the head's state is now
                bool first = !continues;                        // cur is the live head: the pending rows apply there
                if (pass_first_[k] > 0 && !continues) {  // the spare does not hold the earlier rows: redo them
                    std::memcpy(local, cur, static_cast<size_t>(d * d) * sizeof(float));
                    apply_head(il, df->log, df->n_rows, pass_first_[k], local, h);
                    cur = local;
                    first = false;
                }
                const int64_t kh = m.grouped_heads ? h / rf : h % nk;
                const bool first_of_kh = m.grouped_heads ? h % rf == 0 : h < nk;  // the value head that records kh's k
                const ssm::DeltaRows pd = pend && first ? pending(kh, h) : ssm::DeltaRows{};
                for (int r = 0, i_s = 0; r < n; ++r) {
                    if (seq[r] != s) continue;
                    const bool last = ++i_s == n_s;
                    float* out = last ? hs : local;
                    float* lr = log_row(il, r);  // null for the log's last row (kept only by the swap)
                    const float* x = xc_.data() + r * nc;
                    if (lr) {  // the row's record: this head's g, its key head's k (δ from the step)
                        lr[rec_g_ + h] = alpha_[static_cast<size_t>(r * nv + h)];
                        if (first_of_kh) stream_copy(lr + rec_k_ + kh * d, x + nk * d + kh * d, static_cast<size_t>(d));
                    }
                    delta_step(out, x + kh * d, x + nk * d + kh * d, x + 2 * nk * d + h * d, alpha_.data() + r * nv + h,
                               beta_.data() + r * nv + h, y_.data() + r * dv + h * d, static_cast<int>(d), 1, 0, 1,
                               lr ? lr + rec_delta_ + h * d : nullptr, cur == out ? nullptr : cur,
                               first && pd.n_rows > 0 ? &pd : nullptr, last);
                    cur = out;
                    first = false;
                }
            }
            stream_fence();
        }
    });
    // This layer's pending rows are in the state now; a logged sequence's spare holds its rows so far.
    for (size_t k = 0; k < pass_seqs_.size(); ++k) {
        const size_t s = static_cast<size_t>(pass_seqs_[k]);
        if (s >= deferred_.size()) continue;
        deferred_[s].pend_layer[static_cast<size_t>(il)] = 0;
        if (pass_first_[k] >= 0) deferred_[s].spare_rows[static_cast<size_t>(il)] = deferred_[s].n_done;
    }
}

void SsmMixer::apply_pending(int seq, RecurrentState& states, const ThreadPool& pool) {
    Deferred& df = deferred_[static_cast<size_t>(seq)];
    const int64_t nc = n_conv_, nv = spec_.ssm.dt_rank;
    for (int il = 0; il < spec_.n_layer && df.n_pend > 0; ++il) {
        if (!df.pend_layer[static_cast<size_t>(il)]) continue;
        float* st = reinterpret_cast<float*>(states.state(il, seq));
        float* scan = reinterpret_cast<float*>(states.state(il, seq) + conv_bytes_);
        // Threads take value heads; the first also the convolution (small beside them).
        pool.parallel_for(nv, 1, [&](int64_t h0, int64_t h1, int) {
            if (h0 == 0) apply_conv(il, df.pend, df.pend_cap, df.n_pend, st, 0, nc);
            apply_heads(il, df.pend, df.pend_cap, df.n_pend, scan, h0, h1);
        });
        df.pend_layer[static_cast<size_t>(il)] = 0;
    }
    df.n_pend = 0;
}

// The log's kept rows become the pending rows (any still pending applied first).
void SsmMixer::defer_commit(int seq, RecurrentState& states, const ThreadPool& pool) {
    if (static_cast<size_t>(seq) >= deferred_.size()) return;
    Deferred& df = deferred_[static_cast<size_t>(seq)];
    if (df.pos0 < 0) return;
    const int kept = std::min(df.n_valid, df.n_done);
    bool spare_holds_all = kept > 0 && kept == df.n_done;
    for (int il = 0; il < spec_.n_layer && spare_holds_all; ++il)
        spare_holds_all = !spec_.layers[static_cast<size_t>(il)].has_recurrent_state() ||
                          (df.spare_rows[static_cast<size_t>(il)] == kept && !df.pend_layer[static_cast<size_t>(il)]);
    if (spare_holds_all) {
        // Every evaluated row kept: the spare is the state after them (the pending
        // rows were applied to the live state before its first row read it).
        states.swap_spare(seq);
        df.n_pend = 0;
    } else if (kept > 0) {
        // The log's last row has no record (log_row): it can be kept only by the swap above.
        if (kept == df.n_rows)
            throw Error("internal: the delta net's log kept every row without its spare block holding them", ErrorKind::Internal);
        if (std::find(df.pend_layer.begin(), df.pend_layer.end(), 1) != df.pend_layer.end()) apply_pending(seq, states, pool);
        std::swap(df.pend, df.log);
        df.pend_cap = df.n_rows;
        df.n_pend = kept;
        for (int il = 0; il < spec_.n_layer; ++il)
            df.pend_layer[static_cast<size_t>(il)] = spec_.layers[static_cast<size_t>(il)].has_recurrent_state() ? 1 : 0;
    }
    df.pos0 = -1;
    df.n_rows = df.n_done = df.n_valid = 0;
    std::fill(df.spare_rows.begin(), df.spare_rows.end(), -1);
}

void SsmMixer::flush(int seq, RecurrentState& states, const ThreadPool& pool) {
    if (!defers_ || static_cast<size_t>(seq) >= deferred_.size()) return;
    defer_commit(seq, states, pool);
    apply_pending(seq, states, pool);
}

void SsmMixer::drop(int seq) {
    if (!defers_) {
        if (static_cast<size_t>(seq) < logs_.size()) logs_[static_cast<size_t>(seq)].pos0 = -1;
        return;
    }
    if (static_cast<size_t>(seq) >= deferred_.size()) return;
    Deferred& df = deferred_[static_cast<size_t>(seq)];
    df.pos0 = -1;
    df.n_rows = df.n_done = df.n_valid = df.n_pend = 0;
    std::fill(df.pend_layer.begin(), df.pend_layer.end(), 0);
    std::fill(df.spare_rows.begin(), df.spare_rows.end(), -1);
}

}  // namespace kiln
