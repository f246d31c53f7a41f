// The gated delta net mixer (Qwen3.5's and Qwen3-Next's linear-attention
// layers), a member of SsmMixer (src/model/ssm.h): binding, and evaluation in
// batch order with the recurrence row by row (compute/ssm.h, delta_step), as the
// other recurrent mixers. Qwen3-Next differs in its tensors' layout only
// (SsmSpec::grouped_heads): the same arithmetic per value head.
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
    if (m.grouped_heads && !src.has(p + "attn_qkv.weight") && src.has(p + "ssm_in.weight")) {
        // The older converters' one projection of q, k, v and z per key head.
        w.in = src.matrix(p + "ssm_in.weight", e, nc + m.d_inner, true);
        w.in_qkvz = true;
    } else {
        w.in = src.matrix(p + "attn_qkv.weight", e, nc, true);
        w.z_proj = src.matrix(p + "attn_gate.weight", e, m.d_inner, true);
    }
    if (m.grouped_heads) {
        w.beta_alpha_proj = src.matrix(p + "ssm_ba.weight", e, 2 * nv, true);
    } else {
        w.beta_proj = src.matrix(p + "ssm_beta.weight", e, nv, true);
        w.alpha_proj = src.matrix(p + "ssm_alpha.weight", e, nv, true);
    }
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
    const int64_t rf = nv / nk;  // value heads per key head
    if (!m.grouped_heads) {
        const Matrix* ws[] = {&w.in, &w.z_proj, &w.beta_proj, &w.alpha_proj};
        float* ys[] = {proj_.data(), z_.data(), beta_.data(), alpha_.data()};
        matmul_many(ws, h, n, ys, pool, mm);
    } else {
        // qwen3next: beta and alpha per key head [beta x rf | alpha x rf], and
        // with ssm_in, q | k | v x rf | z x rf per key head, gathered here into
        // the attn_qkv / attn_gate layout (q of all key heads, k, v; z).
        const int64_t nq = nc + dv;
        if (w.in_qkvz) {
            const Matrix* ws[] = {&w.in, &w.beta_alpha_proj};
            float* ys[] = {qkvz_.data(), ba_.data()};
            matmul_many(ws, h, n, ys, pool, mm);
        } else {
            const Matrix* ws[] = {&w.in, &w.z_proj, &w.beta_alpha_proj};
            float* ys[] = {proj_.data(), z_.data(), ba_.data()};
            matmul_many(ws, h, n, ys, pool, mm);
        }
        pool.parallel_for(n, 16, [&](int64_t r0, int64_t r1, int) {
            for (int64_t r = r0; r < r1; ++r) {
                const float* ba = ba_.data() + r * 2 * nv;
                for (int64_t g = 0; g < nk; ++g)
                    for (int64_t j = 0; j < rf; ++j) {
                        beta_[static_cast<size_t>(r * nv + g * rf + j)] = ba[g * 2 * rf + j];
                        alpha_[static_cast<size_t>(r * nv + g * rf + j)] = ba[g * 2 * rf + rf + j];
                    }
                if (!w.in_qkvz) continue;
                const float* src = qkvz_.data() + r * nq;
                float* qkv = proj_.data() + r * nc;
                float* z = z_.data() + r * dv;
                const int64_t per = 2 * d + 2 * rf * d;  // one key head's q, k, v, z
                for (int64_t g = 0; g < nk; ++g) {
                    const float* s = src + g * per;
                    std::memcpy(qkv + g * d, s, static_cast<size_t>(d) * sizeof(float));
                    std::memcpy(qkv + nk * d + g * d, s + d, static_cast<size_t>(d) * sizeof(float));
                    std::memcpy(qkv + 2 * nk * d + g * rf * d, s + 2 * d, static_cast<size_t>(rf * d) * sizeof(float));
                    std::memcpy(z + g * rf * d, s + 2 * d + rf * d, static_cast<size_t>(rf * d) * sizeof(float));
                }
            }
        });
    }
    dump("linear_attn_qkv_mixed", proj_.data(), nc);
    conv_deferred(il, w, seq, n, proj_.data(), states, pool);
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
    // The recurrence: threads take value heads, each walks the rows in order (a
    // logged sequence's on a copy of the head, recording k, g and δ; pending rows
    // applied within the first row's step).
    delta_rule_deferred(il, seq, n, states, pool);
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
