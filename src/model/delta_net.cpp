// The gated delta net mixer (Qwen3.5's linear-attention layers), a member of
// SsmMixer (src/model/ssm.h): binding, and evaluation in batch order with the
// recurrence row by row (compute/ssm.h, delta_step), as the other recurrent mixers.
#include <cmath>
#include <cstring>

#include "compute/kernels/kernels.h"
#include "compute/ops.h"
#include "compute/ssm.h"
#include "model/ssm.h"

namespace kiln {

SsmWeights bind_delta_net_weights(TensorSource& src, const std::string& p, const ModelSpec& s) {
    using u64 = uint64_t;
    const SsmSpec& m = s.ssm;
    const int64_t e = s.n_embd, nv = m.dt_rank, nc = ssm_conv_channels(m);
    SsmWeights w;
    w.in = src.matrix(p + "attn_qkv.weight", e, nc, true);
    w.z_proj = src.matrix(p + "attn_gate.weight", e, m.d_inner, true);
    w.beta_proj = src.matrix(p + "ssm_beta.weight", e, nv, true);
    w.alpha_proj = src.matrix(p + "ssm_alpha.weight", e, nv, true);
    w.conv = src.floats(p + "ssm_conv1d.weight", {static_cast<u64>(m.d_conv), static_cast<u64>(nc)}, true);
    w.dt_b = src.floats(p + "ssm_dt.bias", {static_cast<u64>(nv)}, true);
    w.A = src.floats(p + "ssm_a", {static_cast<u64>(nv)}, true);
    w.norm = src.floats(p + "ssm_norm.weight", {static_cast<u64>(m.d_state)}, true);
    w.out = src.matrix(p + "ssm_out.weight", m.d_inner, e, true);
    return w;
}

void SsmMixer::eval_delta_net(int il, const SsmWeights& w, const int32_t* seq, int n, const float* h, float* out,
                              RecurrentState& states, const ThreadPool& pool, MatmulScratch& mm, const Hook& hook) {
    const SsmSpec& m = spec_.ssm;
    const int64_t d = m.d_state, nk = m.n_group, nv = m.dt_rank, dv = m.d_inner, nc = n_conv_;
    auto dump = [&](const char* name, const float* data, int64_t per_row) {
        if (hook) hook(name, il, data, per_row, n);
    };
    {
        const Matrix* ws[] = {&w.in, &w.z_proj, &w.beta_proj, &w.alpha_proj};
        float* ys[] = {proj_.data(), z_.data(), beta_.data(), alpha_.data()};
        matmul_many(ws, h, n, ys, pool, mm);
    }
    dump("linear_attn_qkv_mixed", proj_.data(), nc);
    conv(il, w, seq, n, proj_.data(), nc, 0, states, pool, true);
    dump("conv_output_silu", xc_.data(), nc);
    // Per row: q and k L2-normed per key head (as llama.cpp: RMSNorm with eps / d,
    // times 1 / sqrt(d)); the decay's log g and the write strength beta per value head.
    const auto rms_norm = kernels().rms_norm;
    const float eps = spec_.norm_eps / static_cast<float>(d), inv_sqrt_d = 1.0f / std::sqrt(static_cast<float>(d));
    pool.parallel_for(n, 1, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) {
            float* qk = xc_.data() + r * nc;
            for (int64_t hh = 0; hh < 2 * nk; ++hh) {
                rms_norm(qk + hh * d, nullptr, qk + hh * d, d, eps);
                ops::scale(qk + hh * d, d, inv_sqrt_d);
            }
            float* g = alpha_.data() + r * nv;
            float* beta = beta_.data() + r * nv;
            for (int64_t v = 0; v < nv; ++v) {
                g[v] = ssm::softplus(g[v] + w.dt_b[v]) * w.A[v];
                beta[v] = ops::sigmoid(beta[v]);
            }
        }
    });
    // The recurrence: threads take value heads, each walks the rows in order.
    const auto delta_step = kernels().ssm_delta;
    pool.parallel_for(nv, 1, [&](int64_t h0, int64_t h1, int) {
        for (int r = 0; r < n; ++r) {
            float* st = reinterpret_cast<float*>(states.state(il, seq[r]) + conv_bytes_);
            const float* x = xc_.data() + r * nc;
            delta_step(st, x, x + nk * d, x + 2 * nk * d, alpha_.data() + r * nv, beta_.data() + r * nv, y_.data() + r * dv,
                            static_cast<int>(d), static_cast<int>(nk), static_cast<int>(h0), static_cast<int>(h1));
        }
    });
    dump("delta_out", y_.data(), dv);
    // RMSNorm per value head with ssm_norm, times SiLU(z).
    const auto silu_mul = kernels().silu_mul;
    pool.parallel_for(n, 1, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) {
            float* y = y_.data() + r * dv;
            for (int64_t v = 0; v < nv; ++v) rms_norm(y + v * d, w.norm, y + v * d, d, spec_.norm_eps);
            float* g = g_.data() + r * dv;
            std::memcpy(g, z_.data() + r * dv, static_cast<size_t>(dv) * sizeof(float));
            silu_mul(g, y, dv);
        }
    });
    dump("final_output", g_.data(), dv);
    matmul(w.out, g_.data(), n, out, pool, mm);
    dump("linear_attn_out", out, spec_.n_embd);
}

}  // namespace kiln
