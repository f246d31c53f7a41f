#include "compute/ssm.h"

#include <cmath>

namespace kiln::ssm {

namespace {

// Σ a[i] · b[i] in the 16 lanes of the scans, folded in halves.
float lane_dot(const float* a, const float* b, int n) {
    float lane[k_scan_lanes] = {};
    for (int i = 0; i < n; ++i) lane[i % k_scan_lanes] += a[i] * b[i];
    for (int w = k_scan_lanes / 2; w > 0; w /= 2)
        for (int k = 0; k < w; ++k) lane[k] += lane[k + w];
    return lane[0];
}

}  // namespace

float softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }

void conv_step(float* state, const float* x, const float* w, const float* bias, float* y, int d_conv, int64_t c0, int64_t c1) {
    const int n_keep = d_conv - 1;
    for (int64_t c = c0; c < c1; ++c) {
        float* s = state + c * n_keep;
        const float* wc = w + c * d_conv;
        // The sum in float, term by term as ggml_ssm_conv (not a double-accumulating dot).
        float sum = 0.0f;
        for (int j = 0; j < n_keep; ++j) sum += s[j] * wc[j];
        sum += x[c] * wc[n_keep];
        y[c] = bias ? sum + bias[c] : sum;
        for (int j = 0; j + 1 < n_keep; ++j) s[j] = s[j + 1];
        if (n_keep > 0) s[n_keep - 1] = x[c];
    }
}

void conv_shift(float* state, const float* x, int d_conv, int64_t n) {
    const int n_keep = d_conv - 1;
    if (n_keep <= 0) return;
    for (int64_t c = 0; c < n; ++c) {
        float* s = state + c * n_keep;
        for (int j = 0; j + 1 < n_keep; ++j) s[j] = s[j + 1];
        s[n_keep - 1] = x[c];
    }
}

void scan2_step(float* state, const float* x, const float* dt, const float* A, const float* B, const float* C, float* y,
                int d_state, int head_dim, int n_head, int n_group, int h0, int h1) {
    const int heads_per_group = n_head / n_group;
    for (int h = h0; h < h1; ++h) {
        const float dt_sp = softplus(dt[h]);
        const float dA = std::exp(dt_sp * A[h]);
        const int g = h / heads_per_group;
        const float* Bg = B + static_cast<int64_t>(g) * d_state;
        const float* Cg = C + static_cast<int64_t>(g) * d_state;
        for (int d = 0; d < head_dim; ++d) {
            const int64_t ii = static_cast<int64_t>(h) * head_dim + d;
            float* s = state + ii * d_state;
            const float x_dt = x[ii] * dt_sp;
            float lane[k_scan_lanes] = {};
            for (int i = 0; i < d_state; ++i) {
                const float v = s[i] * dA + Bg[i] * x_dt;
                lane[i % k_scan_lanes] += v * Cg[i];
                s[i] = v;
            }
            for (int w = k_scan_lanes / 2; w > 0; w /= 2)
                for (int k = 0; k < w; ++k) lane[k] += lane[k + w];
            y[ii] = lane[0];
        }
    }
}

void scan1_step(float* state, const float* x, const float* dt, const float* A, const float* B, const float* C, float* y,
                int d_state, int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
        const float dt_sp = softplus(dt[c]);
        const float x_dt = x[c] * dt_sp;
        float* s = state + c * d_state;
        const float* Ac = A + c * d_state;
        float sum = 0.0f;
        for (int i = 0; i < d_state; ++i) {
            const float v = s[i] * std::exp(dt_sp * Ac[i]) + B[i] * x_dt;
            sum += v * C[i];
            s[i] = v;
        }
        y[c] = sum;
    }
}

void delta_step(float* state, const float* q, const float* k, const float* v, const float* g, const float* beta, float* y, int d,
                int n_k_heads, int h0, int h1, float* deltas, float* from, const DeltaRows* pending, bool /*stream: a store hint*/) {
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    for (int h = h0; h < h1; ++h) {
        const float decay = std::exp(g[h]);
        const float* kh = k + static_cast<int64_t>(h % n_k_heads) * d;
        const float* qh = q + static_cast<int64_t>(h % n_k_heads) * d;
        float* m = state + static_cast<int64_t>(h) * d * d;
        float* src = (from ? from : state) + static_cast<int64_t>(h) * d * d;
        for (int j = 0; j < d; ++j) {
            float* row = m + static_cast<int64_t>(j) * d;
            float* old = src + static_cast<int64_t>(j) * d;
            // The pending positions first, as delta_apply does them.
            for (int p = 0; pending && p < pending->n_rows; ++p) {
                const int64_t o = p * pending->stride;
                const float pd = std::exp(pending->g[o + h]);
                const float* pk = pending->k + o + static_cast<int64_t>(h % n_k_heads) * d;
                const float delta = pending->deltas[o + static_cast<int64_t>(h) * d + j];
                for (int i = 0; i < d; ++i) old[i] *= pd;
                for (int i = 0; i < d; ++i) old[i] += pk[i] * delta;
            }
            for (int i = 0; i < d; ++i) row[i] = old[i] * decay;
            const float delta = (v[static_cast<int64_t>(h) * d + j] - lane_dot(row, kh, d)) * beta[h];
            for (int i = 0; i < d; ++i) row[i] += kh[i] * delta;
            y[static_cast<int64_t>(h) * d + j] = lane_dot(row, qh, d) * scale;
            if (deltas) deltas[static_cast<int64_t>(h) * d + j] = delta;
        }
    }
}

void delta_apply(float* state, const float* k, const float* g, const float* deltas, int64_t stride, int n_rows, int d,
                 int n_k_heads, int h0, int h1) {
    for (int h = h0; h < h1; ++h) {
        float* m = state + static_cast<int64_t>(h) * d * d;
        for (int j = 0; j < d; ++j) {
            float* row = m + static_cast<int64_t>(j) * d;
            for (int p = 0; p < n_rows; ++p) {
                const float decay = std::exp(g[p * stride + h]);
                const float* kh = k + p * stride + static_cast<int64_t>(h % n_k_heads) * d;
                const float delta = deltas[p * stride + static_cast<int64_t>(h) * d + j];
                for (int i = 0; i < d; ++i) row[i] *= decay;
                for (int i = 0; i < d; ++i) row[i] += kh[i] * delta;
            }
        }
    }
}

void wkv6_step(float* state, const float* k, const float* v, const float* r, const float* u, const float* w, float* y, int d,
               int h0, int h1) {
    for (int h = h0; h < h1; ++h) {
        const int64_t o = static_cast<int64_t>(h) * d;
        float* s = state + o * d;
        float* yh = y + o;
        for (int j = 0; j < d; ++j) yh[j] = 0.0f;
        for (int i = 0; i < d; ++i) {
            const float ki = k[o + i], ri = r[o + i], ui = u[o + i], wi = w[o + i];
            float* si = s + static_cast<int64_t>(i) * d;
            for (int j = 0; j < d; ++j) {
                const float kv = v[o + j] * ki;
                const float prev = si[j];
                yh[j] = std::fma(std::fma(kv, ui, prev), ri, yh[j]);
                si[j] = std::fma(prev, wi, kv);
            }
        }
    }
}

void gla_step(float* state, const float* k, const float* v, const float* q, const float* g, float* y, int d, float scale, int h0,
              int h1) {
    for (int h = h0; h < h1; ++h) {
        const int64_t o = static_cast<int64_t>(h) * d;
        float* s = state + o * d;
        float* yh = y + o;
        for (int j = 0; j < d; ++j) yh[j] = 0.0f;
        for (int i = 0; i < d; ++i) {
            const float ki = k[o + i], qi = q[o + i] * scale, gi = g[o + i];
            float* si = s + static_cast<int64_t>(i) * d;
            for (int j = 0; j < d; ++j) {
                const float st = std::fma(si[j], gi, v[o + j] * ki);
                si[j] = st;
                yh[j] = std::fma(st, qi, yh[j]);
            }
        }
    }
}

void wkv7_step(float* state, const float* r, const float* w, const float* k, const float* v, const float* a, const float* b,
               float* y, int d, int h0, int h1) {
    for (int h = h0; h < h1; ++h) {
        const int64_t o = static_cast<int64_t>(h) * d;
        float* s = state + o * d;
        for (int i = 0; i < d; ++i) {
            // S[i][j] at j·d + i: row i is a column of the stored matrix.
            float sa = 0.0f;
            for (int j = 0; j < d; ++j) sa = std::fma(a[o + j], s[static_cast<int64_t>(j) * d + i], sa);
            const float vi = v[o + i];
            float out = 0.0f;
            for (int j = 0; j < d; ++j) {
                float& sij = s[static_cast<int64_t>(j) * d + i];
                const float st = std::fma(sa, b[o + j], std::fma(sij, w[o + j], vi * k[o + j]));
                sij = st;
                out = std::fma(st, r[o + j], out);
            }
            y[o + i] = out;
        }
    }
}

}  // namespace kiln::ssm
