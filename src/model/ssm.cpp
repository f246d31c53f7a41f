#include "model/ssm.h"

#include <algorithm>
#include <cstring>

#include "compute/kernels/kernels.h"
#include "compute/ssm.h"
#include "compute/ops.h"

namespace kiln {

namespace {

using u64 = uint64_t;

}  // namespace

int64_t ssm_conv_channels(const SsmSpec& m) {
    return m.kind == SsmKind::Mamba2 || m.kind == SsmKind::GatedDeltaNet ? m.d_inner + 2 * static_cast<int64_t>(m.n_group) * m.d_state
                                                                         : m.d_inner;
}

SsmWeights bind_ssm_weights(TensorSource& src, const std::string& p, const ModelSpec& s) {
    const SsmSpec& m = s.ssm;
    const int64_t e = s.n_embd, di = m.d_inner, ds = m.d_state, nc = ssm_conv_channels(m);
    if (m.kind == SsmKind::GatedDeltaNet) return bind_delta_net_weights(src, p, s);
    if (m.kind == SsmKind::Rwkv6 || m.kind == SsmKind::Rwkv6Qwen2) return bind_rwkv6_weights(src, p, s);
    if (m.kind == SsmKind::Rwkv7 || m.kind == SsmKind::Arwkv7) return bind_rwkv7_weights(src, p, s);
    SsmWeights w;
    if (m.kind == SsmKind::ShortConv) {
        w.conv = src.floats(p + "shortconv.conv.weight", {static_cast<u64>(m.d_conv), static_cast<u64>(di)}, true);
        w.in = src.matrix(p + "shortconv.in_proj.weight", e, 3 * di, true);
        w.out = src.matrix(p + "shortconv.out_proj.weight", di, e, true);
        return w;
    }
    w.conv = src.floats(p + "ssm_conv1d.weight", {static_cast<u64>(m.d_conv), static_cast<u64>(nc)}, true);
    w.conv_b = src.floats(p + "ssm_conv1d.bias", {static_cast<u64>(nc)}, true);
    w.out = src.matrix(p + "ssm_out.weight", di, e, true);
    if (m.kind == SsmKind::Mamba2) {
        const int64_t nh = m.dt_rank;
        w.in = src.matrix(p + "ssm_in.weight", e, di + nc + nh, true);
        w.dt_b = src.floats(p + "ssm_dt.bias", {static_cast<u64>(nh)}, true);
        w.A = src.floats(p + "ssm_a", {1, static_cast<u64>(nh)}, true);
        w.D = src.floats(p + "ssm_d", {1, static_cast<u64>(nh)}, true);
        w.norm = src.floats(p + "ssm_norm.weight", {static_cast<u64>(di / m.n_group), static_cast<u64>(m.n_group)}, !m.norm_optional);
    } else {
        w.in = src.matrix(p + "ssm_in.weight", e, 2 * di, true);
        w.x_proj = src.matrix(p + "ssm_x.weight", di, m.dt_rank + 2 * ds, true);
        w.dt_proj = src.matrix(p + "ssm_dt.weight", m.dt_rank, di, true);
        w.dt_b = src.floats(p + "ssm_dt.bias", {static_cast<u64>(di)}, true);
        w.A = src.floats(p + "ssm_a", {static_cast<u64>(ds), static_cast<u64>(di)}, true);
        w.D = src.floats(p + "ssm_d", {static_cast<u64>(di)}, true);
        if (m.dt_bc_norms) {
            w.dt_norm = src.floats(p + "ssm_dt_norm.weight", {static_cast<u64>(m.dt_rank)}, true);
            w.b_norm = src.floats(p + "ssm_b_norm.weight", {static_cast<u64>(ds)}, true);
            w.c_norm = src.floats(p + "ssm_c_norm.weight", {static_cast<u64>(ds)}, true);
        }
    }
    return w;
}

std::vector<Matrix*> ssm_matrices(SsmWeights& w) {
    std::vector<Matrix*> out;
    for (Matrix* m : {&w.in, &w.x_proj, &w.dt_proj, &w.out, &w.z_proj, &w.beta_proj, &w.alpha_proj, &w.beta_alpha_proj})
        if (!m->empty()) out.push_back(m);
    return out;
}

uint64_t ssm_state_bytes(const ModelSpec& s) {
    const SsmSpec& m = s.ssm;
    if (m.kind == SsmKind::None) return 0;
    const u64 conv = static_cast<u64>(m.d_conv - 1) * static_cast<u64>(ssm_conv_channels(m));
    // Delta net: a [d_state, d_state] matrix per value head (d_inner = heads x d_state).
    const u64 scan = m.kind == SsmKind::ShortConv ? 0 : static_cast<u64>(m.d_state) * static_cast<u64>(m.d_inner);
    return (conv + scan) * sizeof(float);
}

SsmMixer::SsmMixer(const ModelSpec& spec, int n_batch_max) : spec_(spec) {
    const SsmSpec& m = spec.ssm;
    const size_t b = static_cast<size_t>(n_batch_max);
    n_conv_ = ssm_conv_channels(m);
    d_in_proj_ = m.kind == SsmKind::Mamba2          ? m.d_inner + n_conv_ + m.dt_rank
                 : m.kind == SsmKind::ShortConv     ? 3 * static_cast<int64_t>(m.d_inner)
                 : m.kind == SsmKind::GatedDeltaNet ? n_conv_
                                                    : 2 * static_cast<int64_t>(m.d_inner);
    conv_bytes_ = static_cast<int64_t>(m.d_conv - 1) * n_conv_ * static_cast<int64_t>(sizeof(float));
    proj_.resize(b * static_cast<size_t>(d_in_proj_));
    xc_.resize(b * static_cast<size_t>(n_conv_));
    y_.resize(b * static_cast<size_t>(m.d_inner));
    g_.resize(b * static_cast<size_t>(m.d_inner));
    if (m.kind == SsmKind::Mamba2) {
        dt_.resize(b * static_cast<size_t>(m.dt_rank));
    } else if (m.kind == SsmKind::GatedDeltaNet) {
        defers_ = true;
        rec_k_ = n_conv_;
        rec_g_ = rec_k_ + static_cast<int64_t>(m.n_group) * m.d_state;
        rec_delta_ = rec_g_ + m.dt_rank;
        rec_floats_ = rec_delta_ + m.d_inner;
        z_.resize(b * static_cast<size_t>(m.d_inner));
        beta_.resize(b * static_cast<size_t>(m.dt_rank));
        alpha_.resize(b * static_cast<size_t>(m.dt_rank));
        if (m.grouped_heads) {
            ba_.resize(b * 2 * static_cast<size_t>(m.dt_rank));
            qkvz_.resize(b * static_cast<size_t>(2 * m.d_inner + 2 * m.n_group * m.d_state));
        }
    } else if (m.kind == SsmKind::Rwkv6 || m.kind == SsmKind::Rwkv6Qwen2) {
        // a, sx, xxx, the five mixes, r, k, v, g, w, y, b, c_k-in, c_r-in, c_r, c_v: n_embd each;
        // the mix's 5 mix_dim, the decay's decay_dim and the channel mix's n_ff.
        rw_.resize(b * static_cast<size_t>(20 * m.d_inner + 5 * m.rwkv_mix_dim + m.rwkv_decay_dim + m.rwkv_ff));
    } else if (m.kind == SsmKind::Rwkv7 || m.kind == SsmKind::Arwkv7) {
        // 22 n_embd-wide buffers (rwkv7.cpp), the low ranks and the channel mix.
        rw_.resize(b * static_cast<size_t>(22 * m.d_inner + m.rwkv_decay_dim + m.rwkv_iclr_dim + m.rwkv_value_dim +
                                           m.rwkv_gate_dim + m.rwkv_ff));
        v_first_.resize(b * static_cast<size_t>(m.d_inner));
    } else if (m.kind == SsmKind::Mamba1) {
        xdb_.resize(b * static_cast<size_t>(m.dt_rank + 2 * m.d_state));
        dtl_.resize(b * static_cast<size_t>(m.dt_rank));
        dt_.resize(b * static_cast<size_t>(m.d_inner));
        if (m.dt_bc_rms) ones_.assign(static_cast<size_t>(std::max(m.dt_rank, m.d_state)), 1.0f);
    }
}

// The convolution of the channels at src + src_offset of each row (rows of
// src_stride floats) into xc_, then SiLU if asked. Threads take channel ranges
// and walk the rows in order, so each sequence's convolution state advances row
// by row.
void SsmMixer::conv(int il, const SsmWeights& w, const int32_t* seq, int n, const float* src, int64_t src_stride,
                    int64_t src_offset, RecurrentState& states, const ThreadPool& pool, bool silu) {
    const int d_conv = spec_.ssm.d_conv;
    const int64_t nc = n_conv_;
    pool.parallel_for(nc, 64, [&](int64_t c0, int64_t c1, int) {
        for (int r = 0; r < n; ++r) {
            float* st = reinterpret_cast<float*>(states.state(il, seq[r]));
            ssm::conv_step(st, src + r * src_stride + src_offset, w.conv, w.conv_b, xc_.data() + r * nc, d_conv, c0, c1);
        }
    });
    if (!silu) return;
    pool.parallel_for(static_cast<int64_t>(n) * nc, 4096, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) xc_[static_cast<size_t>(i)] = ops::silu(xc_[static_cast<size_t>(i)]);
    });
}

void SsmMixer::eval(int il, const SsmWeights& w, const int32_t* seq, int n, const float* h, float* out, RecurrentState& states,
                    const ThreadPool& pool, MatmulScratch& mm, const Hook& hook) {
    switch (spec_.ssm.kind) {
        case SsmKind::Mamba2: return eval2(il, w, seq, n, h, out, states, pool, mm, hook);
        case SsmKind::Mamba1: return eval1(il, w, seq, n, h, out, states, pool, mm, hook);
        case SsmKind::ShortConv: return eval_shortconv(il, w, seq, n, h, out, states, pool, mm, hook);
        case SsmKind::GatedDeltaNet: return eval_delta_net(il, w, seq, n, h, out, states, pool, mm, hook);
        case SsmKind::Rwkv6:
        case SsmKind::Rwkv6Qwen2: return eval_rwkv6(il, w, seq, n, h, out, states, pool, mm, hook);
        case SsmKind::Rwkv7:
        case SsmKind::Arwkv7: return eval_rwkv7(il, w, seq, n, h, out, states, pool, mm, hook);
        case SsmKind::None: break;
    }
}

void SsmMixer::eval_shortconv(int il, const SsmWeights& w, const int32_t* seq, int n, const float* h, float* out,
                              RecurrentState& states, const ThreadPool& pool, MatmulScratch& mm, const Hook& hook) {
    const int64_t e = spec_.ssm.d_inner, np = d_in_proj_;
    // f32 [3 n_embd, n]: B | C | x
    matmul(w.in, h, n, proj_.data(), pool, mm);
    if (hook) hook("shortconv_in", il, proj_.data(), np, n);
    pool.parallel_for(n, 1, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* p = proj_.data() + r * np;
            float* bx = g_.data() + r * e;
            for (int64_t i = 0; i < e; ++i) bx[i] = p[i] * p[2 * e + i];
        }
    });
    log_part(il, n, 0, g_.data(), e, e);
    conv(il, w, seq, n, g_.data(), e, 0, states, pool, false);
    if (hook) hook("shortconv_conv", il, xc_.data(), e, n);
    pool.parallel_for(n, 1, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* c = proj_.data() + r * np + e;
            const float* x = xc_.data() + r * e;
            float* y = y_.data() + r * e;
            for (int64_t i = 0; i < e; ++i) y[i] = c[i] * x[i];
        }
    });
    matmul(w.out, y_.data(), n, out, pool, mm);
    if (hook) hook("shortconv_out", il, out, spec_.n_embd, n);
}

void SsmMixer::eval2(int il, const SsmWeights& w, const int32_t* seq, int n, const float* h, float* out, RecurrentState& states,
                     const ThreadPool& pool, MatmulScratch& mm, const Hook& hook) {
    const SsmSpec& m = spec_.ssm;
    const int64_t di = m.d_inner, ds = m.d_state, nh = m.dt_rank, hd = di / nh, ng = m.n_group, nc = n_conv_, np = d_in_proj_;
    auto dump = [&](const char* name, const float* data, int64_t per_row) {
        if (hook) hook(name, il, data, per_row, n);
    };
    // f32 [d_in_proj, n]: z [d_inner] | x B C [n_conv] | dt [n_head]
    matmul(w.in, h, n, proj_.data(), pool, mm);
    dump("ssm_in", proj_.data(), np);
    log_part(il, n, 0, proj_.data() + di, np, nc);
    conv(il, w, seq, n, proj_.data(), np, di, states, pool, true);
    dump("ssm_conv", xc_.data(), nc);
    for (int r = 0; r < n; ++r)
        for (int64_t k = 0; k < nh; ++k) dt_[static_cast<size_t>(r * nh + k)] = proj_[static_cast<size_t>(r * np + di + nc + k)] + w.dt_b[k];
    log_part(il, n, nc, xc_.data(), nc, nc);
    log_part(il, n, 2 * nc, dt_.data(), nh, nh);
    // The scan: threads take heads, each walks the rows in order.
    const auto scan2 = kernels().ssm_scan2;
    pool.parallel_for(nh, 1, [&](int64_t h0, int64_t h1, int) {
        for (int r = 0; r < n; ++r) {
            float* st = reinterpret_cast<float*>(states.state(il, seq[r]) + conv_bytes_);
            const float* xr = xc_.data() + r * nc;
            scan2(st, xr, dt_.data() + r * nh, w.A, xr + di, xr + di + ng * ds, y_.data() + r * di, static_cast<int>(ds),
                            static_cast<int>(hd), static_cast<int>(nh), static_cast<int>(ng), static_cast<int>(h0), static_cast<int>(h1));
        }
    });
    dump("ssm_scan", y_.data(), di);
    // y + D·x, gated by SiLU(z), RMS-normed per group (where the layer has the norm).
    const auto silu_mul = kernels().silu_mul;
    const auto rms_norm = kernels().rms_norm;
    const int64_t gw = di / ng;
    pool.parallel_for(n, 1, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) {
            float* y = y_.data() + r * di;
            const float* x = xc_.data() + r * nc;
            for (int64_t i = 0; i < di; ++i) y[i] += x[i] * w.D[i / hd];
            float* g = g_.data() + r * di;
            std::memcpy(g, proj_.data() + r * np, static_cast<size_t>(di) * sizeof(float));
            silu_mul(g, y, di);
            if (w.norm)
                for (int64_t k = 0; k < ng; ++k) rms_norm(g + k * gw, w.norm + k * gw, g + k * gw, gw, spec_.norm_eps);
        }
    });
    dump("ssm_norm", g_.data(), di);
    matmul(w.out, g_.data(), n, out, pool, mm);
    dump("mamba_out", out, spec_.n_embd);
}

void SsmMixer::eval1(int il, const SsmWeights& w, const int32_t* seq, int n, const float* h, float* out, RecurrentState& states,
                     const ThreadPool& pool, MatmulScratch& mm, const Hook& hook) {
    const SsmSpec& m = spec_.ssm;
    const int64_t di = m.d_inner, ds = m.d_state, dr = m.dt_rank, nxdb = dr + 2 * ds, np = d_in_proj_;
    auto dump = [&](const char* name, const float* data, int64_t per_row) {
        if (hook) hook(name, il, data, per_row, n);
    };
    // f32 [2 d_inner, n]: x | z
    matmul(w.in, h, n, proj_.data(), pool, mm);
    dump("ssm_in", proj_.data(), np);
    log_part(il, n, 0, proj_.data(), np, di);
    conv(il, w, seq, n, proj_.data(), np, 0, states, pool, true);
    dump("ssm_conv", xc_.data(), di);
    matmul(w.x_proj, xc_.data(), n, xdb_.data(), pool, mm);
    for (int r = 0; r < n; ++r)
        std::memcpy(dtl_.data() + r * dr, xdb_.data() + r * nxdb, static_cast<size_t>(dr) * sizeof(float));
    if (w.dt_norm || spec_.ssm.dt_bc_rms) {
        // jamba: dt_low, B and C each RMS-normed with its weight; FalconMamba
        // without weights (times ones: exact).
        const auto rms_norm = kernels().rms_norm;
        const float eps = spec_.norm_eps;
        const float* dt_w = w.dt_norm ? w.dt_norm : ones_.data();
        const float* b_w = w.b_norm ? w.b_norm : ones_.data();
        const float* c_w = w.c_norm ? w.c_norm : ones_.data();
        for (int r = 0; r < n; ++r) {
            float* dtl = dtl_.data() + r * dr;
            float* bc = xdb_.data() + r * nxdb + dr;
            rms_norm(dtl, dt_w, dtl, dr, eps);
            rms_norm(bc, b_w, bc, ds, eps);
            rms_norm(bc + ds, c_w, bc + ds, ds, eps);
        }
    }
    matmul(w.dt_proj, dtl_.data(), n, dt_.data(), pool, mm);
    for (int r = 0; r < n; ++r) ops::add(dt_.data() + r * di, w.dt_b, di);
    log_part(il, n, di, xc_.data(), di, di);
    log_part(il, n, 2 * di, dt_.data(), di, di);
    log_part(il, n, 3 * di, xdb_.data() + dr, nxdb, 2 * ds);
    pool.parallel_for(di, 16, [&](int64_t c0, int64_t c1, int) {
        for (int r = 0; r < n; ++r) {
            float* st = reinterpret_cast<float*>(states.state(il, seq[r]) + conv_bytes_);
            const float* bc = xdb_.data() + r * nxdb + dr;
            ssm::scan1_step(st, xc_.data() + r * di, dt_.data() + r * di, w.A, bc, bc + ds, y_.data() + r * di,
                            static_cast<int>(ds), c0, c1);
        }
    });
    dump("ssm_scan", y_.data(), di);
    const auto silu_mul = kernels().silu_mul;
    pool.parallel_for(n, 1, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) {
            float* y = y_.data() + r * di;
            const float* x = xc_.data() + r * di;
            for (int64_t i = 0; i < di; ++i) y[i] += x[i] * w.D[i];
            float* g = g_.data() + r * di;
            std::memcpy(g, proj_.data() + r * np + di, static_cast<size_t>(di) * sizeof(float));
            silu_mul(g, y, di);
        }
    });
    dump("ssm_gate", g_.data(), di);
    matmul(w.out, g_.data(), n, out, pool, mm);
    dump("mamba_out", out, spec_.n_embd);
}

}  // namespace kiln
