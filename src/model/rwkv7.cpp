// RWKV-7 ("Goose", rwkv7) as a member of SsmMixer (src/model/ssm.h): the whole
// block as RWKV-6's (rwkv6.cpp) with RWKV-7's time mix, operation by operation
// as llama.cpp's graph (src/models/rwkv7-base.cpp there):
//   a' = LN(x); sx = shift(a') - a'; x_m = sx · lerp_fused[m] + a' for m in r, w, k, v, a, g
//   r = receptance · xr;  w = exp(-0.606531 · sigmoid(w0 + w2 · tanh(w1 · xw)))
//   k = key · xk;  v = value · xv, and past the first layer
//       v += (v_first - v) · sigmoid(v0 + v2 · (v1 · xv))   (v_first: the first layer's v of the row)
//   g = g2 · sigmoid(g1 · xg);  a = sigmoid(a0 + a2 · (a1 · xa))
//   kk = L2_heads(k · k_k);  k += a · (k · k_a) - k · k_a
//   y = wkv7(r, w, k, v, -kk, kk · a);  y = GroupNorm_heads(y) · ln + ln_b
//   y += v · Σ_head(k · r · r_k);  x += output · (y · g)
//   b' = LN2(x); x += c_value · relu(c_key · (b' + (shift(b') - b') · c_lerp_k))²
// ARWKV (arwkv7) keeps only the time mix, as an ordinary mixer on the RMS-normed
// rows (its FFN is the layer's gated FFN; one token-shift row): without the gate
// tensors there is no g (five mixes), and without time_mix_ln no group norm, as
// llama.cpp's graph decides by presence.
#include <cmath>
#include <cstring>

#include "compute/kernels/kernels.h"
#include "compute/ops.h"
#include "compute/ssm.h"
#include "kiln/error.h"
#include "model/ssm.h"

namespace kiln {

SsmWeights bind_rwkv7_weights(TensorSource& src, const std::string& p, const ModelSpec& s) {
    using u64 = uint64_t;
    const SsmSpec& m = s.ssm;
    const int64_t e = s.n_embd, ff = m.rwkv_ff;
    const u64 ue = static_cast<u64>(e);
    SsmWeights w;
    SsmWeights::Rwkv7& r = w.rwkv7;
    const bool arwkv = m.kind == SsmKind::Arwkv7;  // the layer binds attn_norm / the FFN; no channel mix
    if (!arwkv) {
        r.norm = src.floats(p + "attn_norm.weight", {ue}, true);
        r.norm_b = src.floats(p + "attn_norm.bias", {ue}, true);
        r.norm2 = src.floats(p + "attn_norm_2.weight", {ue}, true);
        r.norm2_b = src.floats(p + "attn_norm_2.bias", {ue}, true);
    }
    // The gate by presence (ARWKV; RWKV-7's loader requires it): five mixes without it.
    r.gate = !arwkv || src.has(p + "time_mix_g1.weight") || src.has(p + "time_mix_g2.weight");
    if (r.gate && m.rwkv_gate_dim <= 0)
        throw Error("tensor '" + p + "time_mix_g1.weight': a gate, but GGUF metadata 'attention.gate_lora_rank' gives no rank");
    r.lerp_fused = src.floats(p + "time_mix_lerp_fused.weight", {ue, 1, 1, r.gate ? 6u : 5u}, true);
    r.w0 = src.floats(p + "time_mix_w0.weight", {ue}, true);
    r.w1 = src.matrix(p + "time_mix_w1.weight", e, m.rwkv_decay_dim, true);
    r.w2 = src.matrix(p + "time_mix_w2.weight", m.rwkv_decay_dim, e, true);
    r.a0 = src.floats(p + "time_mix_a0.weight", {ue}, true);
    r.a1 = src.matrix(p + "time_mix_a1.weight", e, m.rwkv_iclr_dim, true);
    r.a2 = src.matrix(p + "time_mix_a2.weight", m.rwkv_iclr_dim, e, true);
    // The first layer's value-mix tensors exist (of the iclr rank, as llama.cpp
    // creates them) but its graph never reads them: the first layer's v is v_first.
    const bool first = p == "blk.0.";
    const int64_t vr = first ? m.rwkv_iclr_dim : m.rwkv_value_dim;
    r.v0 = src.floats(p + "time_mix_v0.weight", {ue}, true);
    r.v1 = src.matrix(p + "time_mix_v1.weight", e, vr, true);
    r.v2 = src.matrix(p + "time_mix_v2.weight", vr, e, true);
    if (r.gate) {
        r.g1 = src.matrix(p + "time_mix_g1.weight", e, m.rwkv_gate_dim, true);
        r.g2 = src.matrix(p + "time_mix_g2.weight", m.rwkv_gate_dim, e, true);
    }
    r.k_k = src.floats(p + "time_mix_k_k.weight", {ue}, true);
    r.k_a = src.floats(p + "time_mix_k_a.weight", {ue}, true);
    r.r_k = src.floats(p + "time_mix_r_k.weight", {ue}, true);
    r.key = src.matrix(p + "time_mix_key.weight", e, e, true);
    r.value = src.matrix(p + "time_mix_value.weight", e, e, true);
    r.receptance = src.matrix(p + "time_mix_receptance.weight", e, e, true);
    // The group norm: required in RWKV-7, by presence (weight and bias together) in ARWKV.
    const bool ln = !arwkv || src.has(p + "time_mix_ln.weight") || src.has(p + "time_mix_ln.bias");
    r.ln = src.floats(p + "time_mix_ln.weight", {ue}, ln);
    r.ln_b = src.floats(p + "time_mix_ln.bias", {ue}, ln);
    r.output = src.matrix(p + "time_mix_output.weight", e, e, true);
    if (!arwkv) {
        r.c_lerp_k = src.floats(p + "channel_mix_lerp_k.weight", {ue}, true);
        r.c_key = src.matrix(p + "channel_mix_key.weight", e, ff, true);
        r.c_value = src.matrix(p + "channel_mix_value.weight", ff, e, true);
    }
    return w;
}

void SsmMixer::eval_rwkv7(int il, const SsmWeights& w, const int32_t* seq, int n, const float* x, float* out,
                          RecurrentState& states, const ThreadPool& pool, MatmulScratch& mm, const Hook& hook) {
    const SsmSpec& m = spec_.ssm;
    const SsmWeights::Rwkv7& rw = w.rwkv7;
    const int64_t e = spec_.n_embd, hs = m.d_state, nh = e / hs, ff = m.rwkv_ff;
    const int64_t ld = m.rwkv_decay_dim, la = m.rwkv_iclr_dim, lv = m.rwkv_value_dim, lg = m.rwkv_gate_dim;
    auto dump = [&](const char* name, const float* data, int64_t per_row) {
        if (hook) hook(name, il, data, per_row, n);
    };
    float* base = rw_.data();
    auto take = [&](int64_t width) {
        float* p = base;
        base += width * n;
        return p;
    };
    float* a_in = take(e);  // attn_norm output
    float* sx = take(e);
    float* mix[6];          // xr, xw, xk, xv, xa, xg
    for (float*& p : mix) p = take(e);
    float* r = take(e);
    float* wd = take(e);
    float* k = take(e);
    float* v = take(e);
    float* g = take(e);
    float* av = take(e);    // a
    float* kk = take(e);    // -kk, the WKV's a argument
    float* kb = take(e);    // kk · a, its b argument
    float* y = take(e);
    float* t1 = take(e);    // v's mix gate
    float* bn = take(e);    // attn_norm_2 output
    float* ck = take(e);
    float* cv = take(e);
    float* mw = take(ld);
    float* ma = take(la);
    float* mv = take(lv);
    float* mg = take(lg);
    float* ckk = take(ff);
    const float eps = spec_.norm_eps;
    auto shift = [&](const float* in, float* d, int slot) {
        for (int t = 0; t < n; ++t) {
            float* prev = reinterpret_cast<float*>(states.state(il, seq[t])) + slot * e;
            const float* row = in + t * e;
            for (int64_t i = 0; i < e; ++i) d[t * e + i] = prev[i] - row[i];
            std::memcpy(prev, row, static_cast<size_t>(e) * sizeof(float));
        }
    };
    auto rows_for = [&](auto&& f) {
        pool.parallel_for(n, 4, [&](int64_t t0, int64_t t1, int) {
            for (int64_t t = t0; t < t1; ++t) f(t);
        });
    };
    auto sigmoid = [](float z) { return ops::sigmoid(z); };

    // ---- time mix
    const bool arwkv = m.kind == SsmKind::Arwkv7;  // x: the normed rows; out: the time mix's output alone
    const int n_mix = rw.gate ? 6 : 5;
    if (arwkv)
        std::memcpy(a_in, x, static_cast<size_t>(n * e) * sizeof(float));
    else
        rows_for([&](int64_t t) { ops::layer_norm(x + t * e, rw.norm, rw.norm_b, a_in + t * e, e, eps); });
    dump("attn_norm", a_in, e);
    log_part(il, n, 0, a_in, e, e);
    shift(a_in, sx, 0);
    rows_for([&](int64_t t) {
        for (int p = 0; p < n_mix; ++p) {
            const float* lp = rw.lerp_fused + static_cast<int64_t>(p) * e;
            for (int64_t i = 0; i < e; ++i) mix[p][t * e + i] = sx[t * e + i] * lp[i] + a_in[t * e + i];
        }
    });
    matmul(rw.receptance, mix[0], n, r, pool, mm);
    matmul(rw.w1, mix[1], n, mw, pool, mm);
    matmul(rw.key, mix[2], n, k, pool, mm);
    matmul(rw.value, mix[3], n, v, pool, mm);
    matmul(rw.a1, mix[4], n, ma, pool, mm);
    if (rw.gate) matmul(rw.g1, mix[5], n, mg, pool, mm);
    rows_for([&](int64_t t) {
        for (int64_t i = 0; i < ld; ++i) mw[t * ld + i] = std::tanh(mw[t * ld + i]);
        if (rw.gate)
            for (int64_t i = 0; i < lg; ++i) mg[t * lg + i] = sigmoid(mg[t * lg + i]);
    });
    matmul(rw.w2, mw, n, wd, pool, mm);
    matmul(rw.a2, ma, n, av, pool, mm);
    if (rw.gate) matmul(rw.g2, mg, n, g, pool, mm);
    const bool first = il == 0;
    if (!first) {
        matmul(rw.v1, mix[3], n, mv, pool, mm);
        matmul(rw.v2, mv, n, t1, pool, mm);
    }
    rows_for([&](int64_t t) {
        const int64_t o = t * e;
        for (int64_t i = 0; i < e; ++i) {
            wd[o + i] = std::exp(sigmoid(wd[o + i] + rw.w0[i]) * -0.606531f);
            av[o + i] = sigmoid(av[o + i] + rw.a0[i]);
        }
        if (first) {
            std::memcpy(v_first_.data() + o, v + o, static_cast<size_t>(e) * sizeof(float));
        } else {
            const float* vf = v_first_.data() + o;
            for (int64_t i = 0; i < e; ++i) v[o + i] = v[o + i] + (vf[i] - v[o + i]) * sigmoid(t1[o + i] + rw.v0[i]);
        }
        // kk = L2 norm per head of k · k_k (ggml_l2_norm: the sum of squares in double, eps 1e-12).
        for (int64_t i = 0; i < e; ++i) kk[o + i] = k[o + i] * rw.k_k[i];
        for (int64_t h = 0; h < nh; ++h) {
            float* q = kk + o + h * hs;
            double sum = 0.0;
            for (int64_t i = 0; i < hs; ++i) sum += static_cast<double>(q[i] * q[i]);
            const float scale = 1.0f / std::fmax(std::sqrt(static_cast<float>(sum)), 1e-12f);
            for (int64_t i = 0; i < hs; ++i) q[i] *= scale;
        }
        for (int64_t i = 0; i < e; ++i) {
            const float ka = k[o + i] * rw.k_a[i];
            k[o + i] = k[o + i] + (av[o + i] * ka - ka);
            kb[o + i] = kk[o + i] * av[o + i];
            kk[o + i] = -kk[o + i];
        }
    });
    {
        int64_t at = 2 * e;  // the WKV's inputs, for a replay (ssm_replay.cpp)
        for (const float* p : {r, wd, k, v, kk, kb}) {
            log_part(il, n, at, p, e, e);
            at += e;
        }
    }
    const int64_t shift_floats = (arwkv ? 1 : 2) * e;  // the token-shift rows before the WKV state
    const auto wkv7 = kernels().rwkv_wkv7;
    pool.parallel_for(nh, 1, [&](int64_t h0, int64_t h1, int) {
        for (int t = 0; t < n; ++t) {
            float* st = reinterpret_cast<float*>(states.state(il, seq[t])) + shift_floats;
            const int64_t o = static_cast<int64_t>(t) * e;
            wkv7(st, r + o, wd + o, k + o, v + o, kk + o, kb + o, y + o, static_cast<int>(hs), static_cast<int>(h0), static_cast<int>(h1));
        }
    });
    dump("wkv7", y, e);
    rows_for([&](int64_t t) {
        const int64_t o = t * e;
        float* yt = y + o;
        if (rw.ln) {
            for (int64_t h = 0; h < nh; ++h) ops::layer_norm(yt + h * hs, nullptr, nullptr, yt + h * hs, hs, 64e-5f);
            for (int64_t i = 0; i < e; ++i) yt[i] = yt[i] * rw.ln[i] + rw.ln_b[i];
        }
        for (int64_t h = 0; h < nh; ++h) {
            double rk = 0.0;  // ggml_sum_rows accumulates in double
            for (int64_t i = 0; i < hs; ++i) {
                const int64_t c = h * hs + i;
                rk += static_cast<double>(k[o + c] * r[o + c] * rw.r_k[c]);
            }
            const float rkf = static_cast<float>(rk);
            for (int64_t i = 0; i < hs; ++i) yt[h * hs + i] = yt[h * hs + i] + v[o + h * hs + i] * rkf;
        }
        if (rw.gate)
            for (int64_t i = 0; i < e; ++i) yt[i] *= g[o + i];
    });
    matmul(rw.output, y, n, out, pool, mm);
    if (arwkv) return;  // the layer adds the residual and runs its FFN
    rows_for([&](int64_t t) {
        for (int64_t i = 0; i < e; ++i) out[t * e + i] += x[t * e + i];
    });
    dump("ffn_inp", out, e);

    // ---- channel mix
    rows_for([&](int64_t t) { ops::layer_norm(out + t * e, rw.norm2, rw.norm2_b, bn + t * e, e, eps); });
    dump("ffn_norm", bn, e);
    log_part(il, n, e, bn, e, e);
    shift(bn, sx, 1);
    rows_for([&](int64_t t) {
        for (int64_t i = 0; i < e; ++i) ck[t * e + i] = sx[t * e + i] * rw.c_lerp_k[i] + bn[t * e + i];
    });
    matmul(rw.c_key, ck, n, ckk, pool, mm);
    rows_for([&](int64_t t) {
        for (int64_t i = 0; i < ff; ++i) {
            const float z = std::max(ckk[t * ff + i], 0.0f);
            ckk[t * ff + i] = z * z;
        }
    });
    matmul(rw.c_value, ckk, n, cv, pool, mm);
    rows_for([&](int64_t t) {
        for (int64_t i = 0; i < e; ++i) out[t * e + i] = cv[t * e + i] + out[t * e + i];
    });
    dump("l_out", out, e);
}

}  // namespace kiln
