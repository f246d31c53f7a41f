// RWKV-6 (rwkv6) as a member of SsmMixer (src/model/ssm.h): the whole block —
// time mix (token shift, the data-dependent lerps, WKV6, the per-head group norm,
// the SiLU gate) and channel mix (token shift, squared-ReLU key, sigmoid
// receptance) with their LayerNorms and residual adds — since both halves keep
// per-sequence state (the two token-shift rows and the WKV matrices). Operation
// by operation as llama.cpp's graph (src/models/rwkv6-base.cpp there), so the
// element-wise steps round as ggml's do. Rows are evaluated in batch order, the
// token shifts and WKV walking each sequence's rows in position order, so a
// row's result never depends on how its sequence was split into batches.
#include <cmath>
#include <cstring>

#include "compute/kernels/kernels.h"
#include "compute/ops.h"
#include "compute/ssm.h"
#include "kiln/error.h"
#include "model/ssm.h"

namespace kiln {

SsmWeights bind_rwkv6_weights(TensorSource& src, const std::string& p, const ModelSpec& s) {
    using u64 = uint64_t;
    const SsmSpec& m = s.ssm;
    const int64_t e = s.n_embd, hs = m.d_state, nh = e / hs, md = m.rwkv_mix_dim, dd = m.rwkv_decay_dim, ff = m.rwkv_ff;
    const u64 ue = static_cast<u64>(e);
    SsmWeights w;
    SsmWeights::Rwkv6& r = w.rwkv;
    // QRWKV: the time mix alone (the layer's attn_norm, FFN and its norm are bound by weights.cpp).
    const bool qrwkv = m.kind == SsmKind::Rwkv6Qwen2;
    const int64_t nkv = qrwkv && m.rwkv_kv_heads > 0 ? m.rwkv_kv_heads * hs : e;
    if (!qrwkv) {
        r.norm = src.floats(p + "attn_norm.weight", {ue}, true);
        r.norm_b = src.floats(p + "attn_norm.bias", {ue}, true);
        r.norm2 = src.floats(p + "attn_norm_2.weight", {ue}, true);
        r.norm2_b = src.floats(p + "attn_norm_2.bias", {ue}, true);
    }
    r.lerp_x = src.floats(p + "time_mix_lerp_x.weight", {ue}, true);
    // The converter stacks the five lerps into one (llama.cpp also takes them
    // separately for older files; those are refused here: a load error naming them).
    r.lerp_fused = src.floats(p + "time_mix_lerp_fused.weight", {ue, 1, 1, 5}, true);
    r.w1 = src.matrix(p + "time_mix_w1.weight", e, 5 * md, true);
    r.w2 = src.floats(p + "time_mix_w2.weight", {static_cast<u64>(md), ue, 5}, true);
    if (!qrwkv) r.first = src.floats(p + "time_mix_first.weight", {static_cast<u64>(hs), static_cast<u64>(nh)}, true);
    r.decay = src.floats(p + "time_mix_decay.weight", {ue}, true);
    r.decay_w1 = src.matrix(p + "time_mix_decay_w1.weight", e, dd, true);
    r.decay_w2 = src.matrix(p + "time_mix_decay_w2.weight", dd, e, true);
    r.key = src.matrix(p + "time_mix_key.weight", e, nkv, true);
    r.value = src.matrix(p + "time_mix_value.weight", e, nkv, true);
    r.receptance = src.matrix(p + "time_mix_receptance.weight", e, e, true);
    r.gate = src.matrix(p + "time_mix_gate.weight", e, e, true);
    r.output = src.matrix(p + "time_mix_output.weight", e, e, true);
    if (qrwkv) {
        r.key_b = src.floats(p + "time_mix_key.bias", {static_cast<u64>(nkv)}, false);
        r.value_b = src.floats(p + "time_mix_value.bias", {static_cast<u64>(nkv)}, false);
        r.receptance_b = src.floats(p + "time_mix_receptance.bias", {ue}, false);
        return w;
    }
    r.ln = src.floats(p + "time_mix_ln.weight", {ue}, true);
    r.ln_b = src.floats(p + "time_mix_ln.bias", {ue}, true);
    r.c_lerp_k = src.floats(p + "channel_mix_lerp_k.weight", {ue}, true);
    r.c_lerp_r = src.floats(p + "channel_mix_lerp_r.weight", {ue}, true);
    r.c_key = src.matrix(p + "channel_mix_key.weight", e, ff, true);
    r.c_value = src.matrix(p + "channel_mix_value.weight", ff, e, true);
    r.c_receptance = src.matrix(p + "channel_mix_receptance.weight", e, e, true);
    return w;
}

void SsmMixer::eval_rwkv6(int il, const SsmWeights& w, const int32_t* seq, int n, const float* x, float* out,
                          RecurrentState& states, const ThreadPool& pool, MatmulScratch& mm, const Hook& hook) {
    const SsmSpec& m = spec_.ssm;
    const SsmWeights::Rwkv6& rw = w.rwkv;
    const int64_t e = spec_.n_embd, hs = m.d_state, nh = e / hs, md = m.rwkv_mix_dim, dd = m.rwkv_decay_dim, ff = m.rwkv_ff;
    const int64_t rows = n;
    auto dump = [&](const char* name, const float* data, int64_t per_row) {
        if (hook) hook(name, il, data, per_row, n);
    };
    // Buffers, each [width, n]: e-wide ones first.
    float* base = rw_.data();
    auto take = [&](int64_t width) {
        float* p = base;
        base += width * rows;
        return p;
    };
    float* a = take(e);      // attn_norm output
    float* sx = take(e);     // shift(a) - a, later shift(b) - b
    float* xxx = take(e);
    float* mix[5];           // xw, xk, xv, xr, xg
    for (float*& p : mix) p = take(e);
    float* r = take(e);
    float* k = take(e);
    float* v = take(e);
    float* g = take(e);
    float* wd = take(e);     // the decay w
    float* y = take(e);
    float* bn = take(e);     // attn_norm_2 output
    float* ck = take(e);
    float* cr = take(e);
    float* crr = take(e);
    float* cv = take(e);
    float* mid = take(5 * md);  // tanh(w1 · xxx)
    float* dmid = take(dd);     // tanh(decay_w1 · xw)
    float* ckk = take(ff);      // relu(c_key · ck)²

    const float eps = spec_.norm_eps;
    const bool qrwkv = m.kind == SsmKind::Rwkv6Qwen2;  // x: the normed rows; out: the time mix's output alone
    const int64_t nkv = qrwkv && m.rwkv_kv_heads > 0 ? m.rwkv_kv_heads * hs : e;
    // The token shift of the rows `in` (state part `slot`: 0 time mix, 1 channel
    // mix): d = prev - in, then the state holds the row, sequence by sequence in
    // batch order.
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

    // ---- time mix
    if (qrwkv)
        std::memcpy(a, x, static_cast<size_t>(n * e) * sizeof(float));
    else
        rows_for([&](int64_t t) { ops::layer_norm(x + t * e, rw.norm, rw.norm_b, a + t * e, e, eps); });
    dump("attn_norm", a, e);
    log_part(il, n, 0, a, e, e);
    shift(a, sx, 0);
    rows_for([&](int64_t t) {
        for (int64_t i = 0; i < e; ++i) xxx[t * e + i] = sx[t * e + i] * rw.lerp_x[i] + a[t * e + i];
    });
    matmul(rw.w1, xxx, n, mid, pool, mm);
    rows_for([&](int64_t t) {
        float* mt = mid + t * 5 * md;
        for (int64_t i = 0; i < 5 * md; ++i) mt[i] = std::tanh(mt[i]);
        // Part p: w2[p] · mid[p], then (+ lerp_fused[p]) · sx + a.
        for (int p = 0; p < 5; ++p) {
            const float* w2 = rw.w2 + static_cast<int64_t>(p) * md * e;
            const float* lp = rw.lerp_fused + static_cast<int64_t>(p) * e;
            const float* mp = mt + p * md;
            float* o = mix[p] + t * e;
            for (int64_t i = 0; i < e; ++i) {
                const float* wr = w2 + i * md;
                float acc = 0.0f;
                for (int64_t j = 0; j < md; ++j) acc += wr[j] * mp[j];
                o[i] = (acc + lp[i]) * sx[t * e + i] + a[t * e + i];
            }
        }
    });
    {
        // QRWKV's K / V of fewer heads go to ck / cr (free until the channel mix), repeated below.
        const Matrix* ws[] = {&rw.receptance, &rw.key, &rw.value, &rw.gate};
        const float* ins[] = {mix[3], mix[1], mix[2], mix[4]};
        float* ys[] = {r, nkv < e ? ck : k, nkv < e ? cr : v, g};
        for (int i = 0; i < 4; ++i) matmul(*ws[i], ins[i], n, ys[i], pool, mm);
    }
    matmul(rw.decay_w1, mix[0], n, dmid, pool, mm);
    rows_for([&](int64_t t) {
        for (int64_t i = 0; i < dd; ++i) dmid[t * dd + i] = std::tanh(dmid[t * dd + i]);
        for (int64_t i = 0; i < e; ++i) g[t * e + i] = qrwkv ? ops::sigmoid(g[t * e + i]) : ops::silu(g[t * e + i]);
        if (!qrwkv) return;
        float* kt = (nkv < e ? ck : k) + t * nkv;
        float* vt = (nkv < e ? cr : v) + t * nkv;
        if (rw.receptance_b) ops::add(r + t * e, rw.receptance_b, e);
        if (rw.key_b) ops::add(kt, rw.key_b, nkv);
        if (rw.value_b) ops::add(vt, rw.value_b, nkv);
        if (nkv < e) {
            // Head h reads K / V head h / (n_head / kv heads) (ggml_repeat of [hs, 1, n_kv]).
            const int64_t per = nh / m.rwkv_kv_heads;
            for (int64_t h = 0; h < nh; ++h) {
                std::memcpy(k + t * e + h * hs, kt + (h / per) * hs, static_cast<size_t>(hs) * sizeof(float));
                std::memcpy(v + t * e + h * hs, vt + (h / per) * hs, static_cast<size_t>(hs) * sizeof(float));
            }
        }
    });
    matmul(rw.decay_w2, dmid, n, wd, pool, mm);
    rows_for([&](int64_t t) {
        for (int64_t i = 0; i < e; ++i) {
            wd[t * e + i] = std::exp(-std::exp(wd[t * e + i] + rw.decay[i]));
            if (qrwkv) k[t * e + i] = k[t * e + i] - k[t * e + i] * wd[t * e + i];
        }
    });
    {
        int64_t at = 2 * e;
        for (const float* p : {k, v, r, wd}) {
            log_part(il, n, at, p, e, e);
            at += e;
        }
    }
    // WKV (QRWKV: gated linear attention): threads take heads, each walks the rows in order.
    const int64_t shift_floats = (qrwkv ? 1 : 2) * e;
    const float gla_scale = 1.0f / std::sqrt(static_cast<float>(hs));
    const auto wkv6 = kernels().rwkv_wkv6;
    const auto gla = kernels().rwkv_gla;
    pool.parallel_for(nh, 1, [&](int64_t h0, int64_t h1, int) {
        for (int t = 0; t < n; ++t) {
            float* st = reinterpret_cast<float*>(states.state(il, seq[t])) + shift_floats;
            const int64_t o = static_cast<int64_t>(t) * e;
            if (qrwkv)
                gla(st, k + o, v + o, r + o, wd + o, y + o, static_cast<int>(hs), gla_scale, static_cast<int>(h0), static_cast<int>(h1));
            else
                wkv6(st, k + o, v + o, r + o, rw.first, wd + o, y + o, static_cast<int>(hs), static_cast<int>(h0), static_cast<int>(h1));
        }
    });
    dump("wkv6", y, e);
    if (qrwkv) {
        rows_for([&](int64_t t) {
            for (int64_t i = 0; i < e; ++i) y[t * e + i] *= g[t * e + i];
        });
        matmul(rw.output, y, n, out, pool, mm);
        return;
    }
    // Group norm per head (eps 64e-5, as llama.cpp), then · ln + ln_b, then · g.
    rows_for([&](int64_t t) {
        float* yt = y + t * e;
        for (int64_t h = 0; h < nh; ++h) ops::layer_norm(yt + h * hs, nullptr, nullptr, yt + h * hs, hs, 64e-5f);
        for (int64_t i = 0; i < e; ++i) yt[i] = (yt[i] * rw.ln[i] + rw.ln_b[i]) * g[t * e + i];
    });
    matmul(rw.output, y, n, out, pool, mm);
    rows_for([&](int64_t t) {
        for (int64_t i = 0; i < e; ++i) out[t * e + i] += x[t * e + i];  // ffn_inp = time mix + input
    });
    dump("ffn_inp", out, e);

    // ---- channel mix (out holds the stream from here)
    rows_for([&](int64_t t) { ops::layer_norm(out + t * e, rw.norm2, rw.norm2_b, bn + t * e, e, eps); });
    dump("ffn_norm", bn, e);
    log_part(il, n, e, bn, e, e);
    shift(bn, sx, 1);
    rows_for([&](int64_t t) {
        for (int64_t i = 0; i < e; ++i) {
            ck[t * e + i] = sx[t * e + i] * rw.c_lerp_k[i] + bn[t * e + i];
            cr[t * e + i] = sx[t * e + i] * rw.c_lerp_r[i] + bn[t * e + i];
        }
    });
    matmul(rw.c_receptance, cr, n, crr, pool, mm);
    matmul(rw.c_key, ck, n, ckk, pool, mm);
    rows_for([&](int64_t t) {
        for (int64_t i = 0; i < ff; ++i) {
            const float z = std::max(ckk[t * ff + i], 0.0f);
            ckk[t * ff + i] = z * z;
        }
    });
    matmul(rw.c_value, ckk, n, cv, pool, mm);
    const bool halve = m.rwkv_rescale_every > 0 && (il + 1) % m.rwkv_rescale_every == 0;
    rows_for([&](int64_t t) {
        for (int64_t i = 0; i < e; ++i) {
            const float rr = ops::sigmoid(crr[t * e + i]);
            float o = rr * cv[t * e + i] + out[t * e + i];
            if (halve) o *= 0.5f;
            out[t * e + i] = o;
        }
    });
    dump("l_out", out, e);
}

}  // namespace kiln
