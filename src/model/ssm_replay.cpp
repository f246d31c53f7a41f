// SsmMixer's replay log (src/model/ssm.h): what rolling a sequence back into the
// rows of a verification batch needs, so that a rejected draft costs the
// recurrences of the kept rows instead of a forward pass over them. A log row
// holds, per recurrent layer, the inputs the mixer's recurrence read for that row
// (layouts below); replay feeds them to the same kernels in the same order, from
// the state saved before the rows, so the result is bit-identical to having
// evaluated only the kept rows (every recurrence here is position by position,
// and each head / channel is independent of how threads split them).
//
// The delta net does not keep this log: it defers its rows instead (ssm_deferred.cpp).
//
// A log row's layout, f32, per kind:
//   Mamba-2     conv input [n_conv] | x B C after the conv [n_conv] | dt + bias [n_head]
//   Mamba-1     conv input [d_inner] | x after the conv [d_inner] | dt [d_inner] | B C [2 d_state]
//   ShortConv   conv input (B · x) [d_inner]
//   RWKV-7      attn_norm row [e] | ffn_norm row [e] | r w k v a b of the WKV [6 e]
//   RWKV-6      attn_norm row [e] | ffn_norm row [e] | k v r w of the WKV / GLA [4 e]
#include <algorithm>
#include <cmath>
#include <cstring>

#include "compute/kernels/kernels.h"
#include "compute/ssm.h"
#include "model/ssm.h"

namespace kiln {

namespace {

int64_t log_floats_for(const ModelSpec& s) {
    const SsmSpec& m = s.ssm;
    const int64_t nc = ssm_conv_channels(m), e = s.n_embd;
    switch (m.kind) {
        case SsmKind::Mamba2: return 2 * nc + m.dt_rank;
        case SsmKind::Mamba1: return 3 * static_cast<int64_t>(m.d_inner) + 2 * static_cast<int64_t>(m.d_state);
        case SsmKind::ShortConv: return m.d_inner;
        case SsmKind::Rwkv7:
        case SsmKind::Arwkv7: return 8 * e;
        case SsmKind::Rwkv6:
        case SsmKind::Rwkv6Qwen2: return 6 * e;
        case SsmKind::GatedDeltaNet:  // deferred rows (ssm_deferred.cpp)
        case SsmKind::None: break;
    }
    return 0;
}

// A copy of n bytes split across the pool: one thread does not reach the memory's bandwidth.
void parallel_copy(uint8_t* dst, const uint8_t* src, size_t n, const ThreadPool& pool) {
    constexpr int64_t k_chunk = 64 << 10;
    const int64_t n_chunks = static_cast<int64_t>((n + k_chunk - 1) / k_chunk);
    pool.parallel_for(n_chunks, 1, [&](int64_t c0, int64_t c1, int) {
        const size_t b = static_cast<size_t>(c0 * k_chunk), e = std::min(n, static_cast<size_t>(c1 * k_chunk));
        std::memcpy(dst + b, src + b, e - b);
    });
}

}  // namespace

uint64_t SsmMixer::log_bytes_needed(const ModelSpec& spec, int n_seq, int n_rows) {
    const SsmSpec& m = spec.ssm;
    if (m.kind == SsmKind::None) return 0;
    int n_recurrent = 0;
    for (const LayerSpec& l : spec.layers) n_recurrent += l.has_recurrent_state() ? 1 : 0;
    uint64_t per_row = 0, base = 0;
    if (m.kind == SsmKind::GatedDeltaNet) {
        // Two record buffers (the pending rows and the log), and the state's spare
        // block (RecurrentState::spare: a logged pass writes its rows' state there).
        per_row = 2 * sizeof(float) *
                  static_cast<uint64_t>(ssm_conv_channels(m) + static_cast<int64_t>(m.n_group) * m.d_state + m.dt_rank + m.d_inner);
        base = (ssm_state_bytes(spec) + 63) / 64 * 64 * static_cast<uint64_t>(n_recurrent);
    } else {
        per_row = sizeof(float) * static_cast<uint64_t>(log_floats_for(spec));
        base = ssm_state_bytes(spec) * static_cast<uint64_t>(n_recurrent);
    }
    return static_cast<uint64_t>(n_seq) *
           (base + per_row * static_cast<uint64_t>(spec.n_layer) * static_cast<uint64_t>(std::max(n_rows, 0)));
}

void SsmMixer::log_start(int seq, int64_t pos0, int n_rows, RecurrentState& states, const ThreadPool& pool) {
    if (defers_) {
        defer_commit(seq, states, pool);  // an earlier log's kept rows: pending
        Deferred& df = deferred(seq);
        df.pos0 = pos0;
        df.n_rows = df.n_valid = n_rows;
        df.n_done = 0;
        const size_t need = static_cast<size_t>(spec_.n_layer) * static_cast<size_t>(n_rows) * static_cast<size_t>(rec_floats_);
        if (df.log.size() < need) df.log.resize(need);
        std::fill(df.spare_rows.begin(), df.spare_rows.end(), -1);
        states.spare(0, seq);  // allocated here, not by the pass's threads
        return;
    }
    if (log_floats_ == 0) log_floats_ = log_floats_for(spec_);
    if (logs_.size() < static_cast<size_t>(states.n_seq())) logs_.resize(static_cast<size_t>(states.n_seq()));
    RowLog& lg = logs_[static_cast<size_t>(seq)];
    const std::span<const uint8_t> live = states.live(seq);
    if (lg.base.size() != live.size()) lg.base.resize(live.size());
    parallel_copy(lg.base.data(), live.data(), live.size(), pool);
    lg.pos0 = pos0;
    lg.n_rows = n_rows;
    lg.n_valid = n_rows;
    const size_t need = static_cast<size_t>(spec_.n_layer) * static_cast<size_t>(n_rows) * static_cast<size_t>(log_floats_);
    if (lg.rows.size() < need) lg.rows.resize(need);
}

void SsmMixer::log_stop(int seq, RecurrentState& states, const ThreadPool& pool) {
    if (defers_) return defer_commit(seq, states, pool);
    if (static_cast<size_t>(seq) < logs_.size()) logs_[static_cast<size_t>(seq)].pos0 = -1;
}

void SsmMixer::log_truncate(int seq, int n) {
    if (defers_) {
        if (static_cast<size_t>(seq) >= deferred_.size()) return;
        Deferred& df = deferred_[static_cast<size_t>(seq)];
        df.n_valid = std::clamp(n, 0, std::min(df.n_valid, df.n_done));
        return;
    }
    if (static_cast<size_t>(seq) >= logs_.size()) return;
    RowLog& lg = logs_[static_cast<size_t>(seq)];
    lg.n_valid = std::clamp(n, 0, lg.n_valid);
}

void SsmMixer::set_pass_rows(const int32_t* seq, const int64_t* pos, int n, RecurrentState& states, const ThreadPool& pool) {
    if (defers_) return defer_pass_rows(seq, pos, n, states, pool);
    if (logs_.empty()) return;  // nothing was ever logged: log_index_ stays empty
    log_index_.assign(static_cast<size_t>(n), -1);
    log_seq_.assign(seq, seq + n);
    for (int r = 0; r < n; ++r) {
        if (static_cast<size_t>(seq[r]) >= logs_.size()) continue;
        const RowLog& lg = logs_[static_cast<size_t>(seq[r])];
        if (lg.pos0 < 0 || pos[r] < lg.pos0 || pos[r] >= lg.pos0 + lg.n_rows) continue;
        log_index_[static_cast<size_t>(r)] = static_cast<int32_t>(pos[r] - lg.pos0);
    }
}

bool SsmMixer::can_replay(int seq, int64_t n_keep) const {
    if (defers_) {
        if (static_cast<size_t>(seq) >= deferred_.size()) return false;
        const Deferred& df = deferred_[static_cast<size_t>(seq)];
        return df.pos0 >= 0 && n_keep >= df.pos0 && n_keep <= df.pos0 + std::min(df.n_valid, df.n_done);
    }
    if (static_cast<size_t>(seq) >= logs_.size()) return false;
    const RowLog& lg = logs_[static_cast<size_t>(seq)];
    return lg.pos0 >= 0 && n_keep >= lg.pos0 && n_keep <= lg.pos0 + lg.n_valid;
}

int64_t SsmMixer::log_start_pos(int seq) const {
    return defers_ ? deferred_[static_cast<size_t>(seq)].pos0 : logs_[static_cast<size_t>(seq)].pos0;
}

uint64_t SsmMixer::log_bytes() const {
    uint64_t b = 0;
    for (const RowLog& lg : logs_) b += lg.base.capacity() + lg.rows.capacity() * sizeof(float);
    for (const Deferred& df : deferred_) b += (df.pend.capacity() + df.log.capacity()) * sizeof(float);
    return b;
}

float* SsmMixer::log_row(int il, int r) {
    if (log_index_.empty()) return nullptr;
    const int32_t idx = log_index_[static_cast<size_t>(r)];
    if (idx < 0) return nullptr;
    if (defers_) {
        // The log's last row is kept only where every row is, which swaps the spare
        // in (ssm_deferred.cpp): nothing ever redoes it, so it has no record.
        Deferred& df = deferred_[static_cast<size_t>(log_seq_[static_cast<size_t>(r)])];
        return idx + 1 < df.n_rows ? rec(df.log, df.n_rows, il, idx) : nullptr;
    }
    RowLog& lg = logs_[static_cast<size_t>(log_seq_[static_cast<size_t>(r)])];
    return lg.rows.data() + (static_cast<size_t>(il) * static_cast<size_t>(lg.n_rows) + static_cast<size_t>(idx)) *
                                static_cast<size_t>(log_floats_);
}

void SsmMixer::log_part(int il, int n, int64_t at, const float* src, int64_t stride, int64_t count) {
    if (log_index_.empty()) return;
    for (int r = 0; r < n; ++r)
        if (float* row = log_row(il, r)) std::memcpy(row + at, src + r * stride, static_cast<size_t>(count) * sizeof(float));
}

void SsmMixer::replay_layer(int il, const SsmWeights& w, int seq, int n_rows, RecurrentState& states, const ThreadPool& pool) {
    if (defers_) return;  // the kept rows are pending: nothing to restore
    const SsmSpec& m = spec_.ssm;
    const RowLog& lg = logs_[static_cast<size_t>(seq)];
    uint8_t* layer = states.state(il, seq);
    parallel_copy(layer, lg.base.data() + (layer - states.live(seq).data()), states.state_bytes(il), pool);
    if (n_rows <= 0) return;
    auto row = [&](int r) {
        return lg.rows.data() + (static_cast<size_t>(il) * static_cast<size_t>(lg.n_rows) + static_cast<size_t>(r)) *
                                    static_cast<size_t>(log_floats_);
    };
    float* st = reinterpret_cast<float*>(states.state(il, seq));
    const int64_t nc = n_conv_, e = spec_.n_embd;
    float* scan = reinterpret_cast<float*>(states.state(il, seq) + conv_bytes_);
    const size_t y_width = static_cast<size_t>(std::max<int64_t>(m.d_inner, e));
    if (replay_y_.size() < static_cast<size_t>(n_rows) * y_width) replay_y_.resize(static_cast<size_t>(n_rows) * y_width);
    float* y = replay_y_.data();
    auto conv_rows = [&] {
        for (int r = 0; r < n_rows; ++r) ssm::conv_shift(st, row(r), m.d_conv, nc);
    };
    switch (m.kind) {
        case SsmKind::Mamba2: {
            conv_rows();
            const int64_t di = m.d_inner, ds = m.d_state, nh = m.dt_rank, hd = di / nh, ng = m.n_group;
            const auto scan2 = kernels().ssm_scan2;
            pool.parallel_for(nh, 1, [&](int64_t h0, int64_t h1, int) {
                for (int r = 0; r < n_rows; ++r) {
                    const float* xr = row(r) + nc;
                    scan2(scan, xr, row(r) + 2 * nc, w.A, xr + di, xr + di + ng * ds, y + static_cast<size_t>(r) * y_width,
                          static_cast<int>(ds), static_cast<int>(hd), static_cast<int>(nh), static_cast<int>(ng),
                          static_cast<int>(h0), static_cast<int>(h1));
                }
            });
            return;
        }
        case SsmKind::Mamba1: {
            conv_rows();
            const int64_t di = m.d_inner, ds = m.d_state;
            pool.parallel_for(di, 16, [&](int64_t c0, int64_t c1, int) {
                for (int r = 0; r < n_rows; ++r) {
                    const float* bc = row(r) + 3 * di;
                    ssm::scan1_step(scan, row(r) + di, row(r) + 2 * di, w.A, bc, bc + ds, y + static_cast<size_t>(r) * y_width,
                                    static_cast<int>(ds), c0, c1);
                }
            });
            return;
        }
        case SsmKind::ShortConv: conv_rows(); return;
        case SsmKind::GatedDeltaNet: return;  // deferred (above)
        case SsmKind::Rwkv7:
        case SsmKind::Arwkv7: {
            const bool arwkv = m.kind == SsmKind::Arwkv7;
            const int64_t hs = m.d_state, nh = e / hs, shift_floats = (arwkv ? 1 : 2) * e;
            const auto wkv7 = kernels().rwkv_wkv7;
            pool.parallel_for(nh, 1, [&](int64_t h0, int64_t h1, int) {
                for (int r = 0; r < n_rows; ++r) {
                    const float* p = row(r) + 2 * e;  // r w k v a b
                    wkv7(st + shift_floats, p, p + e, p + 2 * e, p + 3 * e, p + 4 * e, p + 5 * e, y + static_cast<size_t>(r) * y_width,
                         static_cast<int>(hs), static_cast<int>(h0), static_cast<int>(h1));
                }
            });
            std::memcpy(st, row(n_rows - 1), static_cast<size_t>(shift_floats) * sizeof(float));
            return;
        }
        case SsmKind::Rwkv6:
        case SsmKind::Rwkv6Qwen2: {
            const bool qrwkv = m.kind == SsmKind::Rwkv6Qwen2;
            const int64_t hs = m.d_state, nh = e / hs, shift_floats = (qrwkv ? 1 : 2) * e;
            const float gla_scale = 1.0f / std::sqrt(static_cast<float>(hs));
            const auto wkv6 = kernels().rwkv_wkv6;
            const auto gla = kernels().rwkv_gla;
            pool.parallel_for(nh, 1, [&](int64_t h0, int64_t h1, int) {
                for (int r = 0; r < n_rows; ++r) {
                    const float* p = row(r) + 2 * e;  // k v r w
                    float* yr = y + static_cast<size_t>(r) * y_width;
                    if (qrwkv)
                        gla(st + shift_floats, p, p + e, p + 2 * e, p + 3 * e, yr, static_cast<int>(hs), gla_scale,
                            static_cast<int>(h0), static_cast<int>(h1));
                    else
                        wkv6(st + shift_floats, p, p + e, p + 2 * e, w.rwkv.first, p + 3 * e, yr, static_cast<int>(hs),
                             static_cast<int>(h0), static_cast<int>(h1));
                }
            });
            std::memcpy(st, row(n_rows - 1), static_cast<size_t>(shift_floats) * sizeof(float));
            return;
        }
        case SsmKind::None: return;
    }
}

}  // namespace kiln
