#include "compute/ops.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "kiln/quant.h"

namespace kiln::ops {

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    const float s = 1.0f / std::sqrt(mean + eps);
    if (w) {
        for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * s) * w[i];
    } else {
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
    }
}

void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t n, float eps) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i]);
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    double var = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float d = x[i] - mean;
        y[i] = d;
        var += static_cast<double>(d * d);
    }
    const float s = 1.0f / std::sqrt(static_cast<float>(var / static_cast<double>(n)) + eps);
    for (int64_t i = 0; i < n; ++i) {
        float v = y[i] * s;
        if (w) v *= w[i];
        if (b) v += b[i];
        y[i] = v;
    }
}

void scale(float* x, int64_t n, float s) {
    for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

void add(float* y, const float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] += x[i];
}

void add_to(float* y, const float* a, const float* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void softcap(float* x, int64_t n, float cap) {
    const float inv = 1.0f / cap;
    for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] * inv) * cap;
}

float silu(float x) { return x / (1.0f + std::exp(-x)); }
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

float gelu(float x) {
    // tanh approximation, as ggml_gelu and the Gemma reference implementation.
    constexpr float k_sqrt_2_over_pi = 0.79788456080286535587989211986876f;
    constexpr float k_coef = 0.044715f;
    return 0.5f * x * (1.0f + std::tanh(k_sqrt_2_over_pi * x * (1.0f + k_coef * x * x)));
}

void silu_mul(float* gate, const float* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) gate[i] = silu(gate[i]) * up[i];
}

// GELU of every f16 value, rounded to f16: ggml's CPU GELU (GGML_GELU_FP16)
// rounds the input to f16 and looks the result up, so llama.cpp's Gemma output
// carries this approximation (relative error up to ~4e-3). kiln uses the same
// table so its logits track llama.cpp's instead of differing systematically.
// One padding entry lets SIMD gathers read 32 bits at the last index.
const uint16_t* gelu_f16_table() {
    static const std::vector<uint16_t> table = [] {
        std::vector<uint16_t> t((1 << 16) + 1, 0);
        for (uint32_t i = 0; i < (1u << 16); ++i)
            t[i] = quant::fp32_to_fp16(gelu(quant::fp16_to_fp32(static_cast<uint16_t>(i))));
        return t;
    }();
    return table.data();
}

float gelu_table(float x) {
    if (x <= -10.0f) return 0.0f;
    if (x >= 10.0f) return x;
    return quant::fp16_to_fp32(gelu_f16_table()[quant::fp32_to_fp16(x)]);
}

void gelu_mul(float* gate, const float* up, int64_t n) {
    for (int64_t i = 0; i < n; ++i) gate[i] = gelu_table(gate[i]) * up[i];
}

void softmax(float* x, int64_t n) {
    float mx = -INFINITY;
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
    if (mx == -INFINITY) {
        for (int64_t i = 0; i < n; ++i) x[i] = 0.0f;
        return;
    }
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const float e = std::exp(x[i] - mx);
        x[i] = e;
        sum += e;
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void softmax_with_sink(float* x, int64_t n, float sink) {
    float mx = sink;
    for (int64_t i = 0; i < n; ++i) mx = std::max(mx, x[i]);
    double sum = std::exp(sink - mx);
    for (int64_t i = 0; i < n; ++i) {
        const float e = std::exp(x[i] - mx);
        x[i] = e;
        sum += e;
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t i = 0; i < n; ++i) x[i] *= inv;
}

namespace {

// YaRN correction range: the dimensions whose wavelength crosses the original
// context between beta_fast and beta_slow rotations.
float yarn_corr_dim(int n_dims, int n_ctx_orig, float n_rot, float base) {
    return static_cast<float>(n_dims) * std::log(static_cast<float>(n_ctx_orig) / (n_rot * 2.0f * static_cast<float>(M_PI))) /
           (2.0f * std::log(base));
}

}  // namespace

void rope_cache(const RopeParams& p, int64_t pos, float* cache) {
    const float theta_scale = std::pow(p.freq_base, -2.0f / static_cast<float>(p.n_dims));
    float corr[2] = {0.0f, 0.0f};
    if (p.ext_factor != 0.0f && p.n_ctx_orig > 0) {
        float start = std::floor(yarn_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_fast, p.freq_base));
        float end = std::ceil(yarn_corr_dim(p.n_dims, p.n_ctx_orig, p.beta_slow, p.freq_base));
        corr[0] = std::max(0.0f, start);
        corr[1] = std::min(static_cast<float>(p.n_dims - 1), end);
    }
    // theta advances by repeated multiplication, as ggml's rope cache does, so the
    // angles round the same way.
    float theta = static_cast<float>(pos);
    for (int i0 = 0; i0 < p.n_dims; i0 += 2) {
        const float ff = p.freq_factors ? p.freq_factors[i0 / 2] : 1.0f;
        const float theta_extrap = theta / ff;
        float theta_interp = p.freq_scale * theta_extrap;
        float t = theta_interp;
        float mscale = p.attn_factor;
        if (p.ext_factor != 0.0f) {
            const float y = (static_cast<float>(i0 / 2) - corr[0]) / std::max(0.001f, corr[1] - corr[0]);
            const float ramp = (1.0f - std::min(1.0f, std::max(0.0f, y))) * p.ext_factor;
            t = theta_interp * (1.0f - ramp) + theta_extrap * ramp;
            mscale *= 1.0f + 0.1f * std::log(1.0f / p.freq_scale);
        }
        cache[i0] = std::cos(t) * mscale;
        cache[i0 + 1] = std::sin(t) * mscale;
        theta *= theta_scale;
    }
}

void rope_apply(const RopeParams& p, const float* cache, float* x, int64_t n_heads, int64_t head_dim) {
    const int n_dims = p.n_dims;
    for (int64_t h = 0; h < n_heads; ++h) {
        float* v = x + h * head_dim;
        if (p.layout == RopeLayout::Norm) {
            for (int i0 = 0; i0 < n_dims; i0 += 2) {
                const float c = cache[i0], s = cache[i0 + 1];
                const float x0 = v[i0], x1 = v[i0 + 1];
                v[i0] = x0 * c - x1 * s;
                v[i0 + 1] = x0 * s + x1 * c;
            }
        } else {
            const int half = n_dims / 2;
            for (int i0 = 0; i0 < n_dims; i0 += 2) {
                const float c = cache[i0], s = cache[i0 + 1];
                const int a = i0 / 2;
                const float x0 = v[a], x1 = v[a + half];
                v[a] = x0 * c - x1 * s;
                v[a + half] = x0 * s + x1 * c;
            }
        }
    }
}

}  // namespace kiln::ops
