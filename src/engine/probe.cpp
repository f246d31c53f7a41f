// Probe: a sequence stepped token by token with statistics read through the
// tensor hook. The hook sees each layer's Q and K rows (after the optional
// per-head norm and RoPE: the last of Qcur / Qcur_normed / Qcur_rope is what
// attention uses) and the residual stream (l_out). Keys are kept per layer so
// the last token's attention weights can be recomputed as the forward pass
// computes them (scale, soft-cap, sliding window, grouped KV heads), in double
// precision from the f32 rows: the cache's f16 rounding is not applied, so the
// weights agree with the forward pass's to about 1e-3 (statistics, not logits).
#include "kiln/probe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "kiln/context.h"
#include "kiln/error.h"
#include "model/internals.h"

namespace kiln {

struct Probe::Impl {
    std::shared_ptr<const Model> model;
    ProbeOptions options;
    const ModelSpec* spec = nullptr;
    std::unique_ptr<Context> ctx;

    // Per layer: the keys of every position so far, f32 [n_head_kv * head_dim_k, n_past]
    // (attention statistics only), and this pass's pending Q (last row) / K (all rows).
    std::vector<std::vector<float>> keys;
    std::vector<std::vector<float>> pending_k;
    std::vector<std::vector<float>> last_q;
    std::vector<LayerStats> layers;
    std::vector<std::vector<HeadStats>> heads;
    std::vector<int64_t> kv_visible;

    void hook(const char* name, int layer, const float* data, int64_t per_row, int64_t rows);
    void attention_stats(int il);
};

namespace {

bool starts_with(const char* s, const char* prefix) { return std::strncmp(s, prefix, std::strlen(prefix)) == 0; }

}  // namespace

void Probe::Impl::hook(const char* name, int il, const float* data, int64_t per_row, int64_t rows) {
    if (il < 0 || rows <= 0) return;
    const size_t l = static_cast<size_t>(il);
    if (options.layer_stats && std::strcmp(name, "l_out") == 0) {
        const float* x = data + (rows - 1) * per_row;
        double sum = 0, sq = 0, mx = -INFINITY, mn = INFINITY;
        for (int64_t i = 0; i < per_row; ++i) {
            sum += x[i];
            sq += static_cast<double>(x[i]) * x[i];
            mx = std::max<double>(mx, x[i]);
            mn = std::min<double>(mn, x[i]);
        }
        const double mean = sum / static_cast<double>(per_row);
        LayerStats& s = layers[l];
        s.norm = std::sqrt(sq);
        s.mean = mean;
        s.std = std::sqrt(std::max(0.0, sq / static_cast<double>(per_row) - mean * mean));
        s.max = mx;
        s.min = mn;
        return;
    }
    if (!options.attention_stats) return;
    if (starts_with(name, "Qcur")) {
        last_q[l].assign(data + (rows - 1) * per_row, data + rows * per_row);
    } else if (starts_with(name, "Kcur")) {
        pending_k[l].assign(data, data + rows * per_row);
    } else if (std::strcmp(name, "kqv_out") == 0) {
        keys[l].insert(keys[l].end(), pending_k[l].begin(), pending_k[l].end());
        attention_stats(il);
    }
}

void Probe::Impl::attention_stats(int il) {
    const LayerSpec& ls = spec->layers[static_cast<size_t>(il)];
    const int64_t dk = ls.head_dim_k;
    const int64_t nk = static_cast<int64_t>(ls.n_head_kv) * dk;
    // A shared-KV layer (gemma4) attends over its source layer's keys.
    const std::vector<float>& k = keys[static_cast<size_t>(ls.kv_source >= 0 ? ls.kv_source : il)];
    const std::vector<float>& q = last_q[static_cast<size_t>(il)];
    const int64_t n_pos = static_cast<int64_t>(k.size()) / nk;
    const int64_t pos = n_pos - 1;  // the pass's last row
    const int64_t first = ls.sliding && spec->sliding_window > 0 ? std::max<int64_t>(0, pos - spec->sliding_window + 1) : 0;
    kv_visible[static_cast<size_t>(il)] = pos - first + 1;
    const double scale = spec->attention_scale > 0.0f ? spec->attention_scale : 1.0 / std::sqrt(static_cast<double>(dk));
    const int group = ls.n_head / ls.n_head_kv;
    std::vector<HeadStats>& out = heads[static_cast<size_t>(il)];
    out.assign(static_cast<size_t>(ls.n_head), {});
    std::vector<double> w(static_cast<size_t>(pos - first + 1));
    std::vector<int64_t> order(w.size());
    for (int h = 0; h < ls.n_head; ++h) {
        const float* qh = q.data() + static_cast<int64_t>(h) * dk;
        const int64_t g = h / group;
        double mx = -INFINITY;
        for (int64_t p = first; p <= pos; ++p) {
            const float* kh = k.data() + p * nk + g * dk;
            double dot = 0;
            for (int64_t d = 0; d < dk; ++d) dot += static_cast<double>(qh[d]) * kh[d];
            double s = dot * scale;
            if (spec->attn_softcap > 0.0f) s = spec->attn_softcap * std::tanh(s / spec->attn_softcap);
            w[static_cast<size_t>(p - first)] = s;
            mx = std::max(mx, s);
        }
        double sum = 0;
        for (double& x : w) sum += (x = std::exp(x - mx));
        double entropy = 0;
        for (double& x : w) {
            x /= sum;
            if (x > 0) entropy -= x * std::log2(x);
        }
        HeadStats& hs = out[static_cast<size_t>(h)];
        hs.entropy = entropy;
        std::iota(order.begin(), order.end(), 0);
        const size_t n_top = std::min(order.size(), static_cast<size_t>(std::max(0, options.attention_top)));
        std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n_top), order.end(), [&](int64_t a, int64_t b) {
            return w[static_cast<size_t>(a)] != w[static_cast<size_t>(b)] ? w[static_cast<size_t>(a)] > w[static_cast<size_t>(b)] : a < b;
        });
        for (size_t i = 0; i < n_top; ++i) hs.top.emplace_back(first + order[i], w[static_cast<size_t>(order[i])]);
    }
}

Probe::Probe(std::shared_ptr<const Model> model, const ProbeOptions& options) : impl_(std::make_unique<Impl>()) {
    Impl& im = *impl_;
    if (!model) throw Error("probe: no model", ErrorKind::InvalidInput);
    if (options.top_k < 1) throw Error("probe: top_k must be at least 1, found " + std::to_string(options.top_k), ErrorKind::InvalidInput);
    im.model = std::move(model);
    im.options = options;
    im.spec = &ModelInternals::spec(*im.model);
    if (options.attention_stats && im.spec->memory != MemoryKind::Kv)
        throw Error("probe: attention statistics need an attention model ('" + im.spec->arch + "' is not one)",
                    ErrorKind::Unsupported);
    ContextOptions co;
    co.n_ctx = options.n_ctx;
    co.n_threads = options.n_threads;
    co.n_seq_max = 1;
    im.ctx = std::make_unique<Context>(im.model, co);
    const size_t n_layer = static_cast<size_t>(im.spec->n_layer);
    im.keys.resize(n_layer);
    im.pending_k.resize(n_layer);
    im.last_q.resize(n_layer);
    im.layers.resize(n_layer);
    im.heads.resize(n_layer);
    im.kv_visible.resize(n_layer);
    if (options.layer_stats || options.attention_stats)
        im.ctx->set_tensor_hook([&im](const char* name, int layer, const float* data, int64_t per_row, int64_t rows) {
            im.hook(name, layer, data, per_row, rows);
        });
}

Probe::~Probe() = default;

ProbeStep Probe::feed(std::span<const TokenId> tokens) {
    Impl& im = *impl_;
    if (tokens.empty()) throw Error("probe: no tokens to feed", ErrorKind::InvalidInput);
    const int64_t before = im.ctx->n_past();
    if (before + static_cast<int64_t>(tokens.size()) > im.ctx->n_ctx())
        throw Error("probe: " + std::to_string(tokens.size()) + " more tokens do not fit: the sequence holds " +
                        std::to_string(before) + " of " + std::to_string(im.ctx->n_ctx()) + " positions",
                    ErrorKind::ResourceExhausted);
    try {
        im.ctx->decode(tokens);
    } catch (...) {
        im.ctx->keep_prefix(before);
        for (size_t l = 0; l < im.keys.size(); ++l) {
            const size_t nk = static_cast<size_t>(im.spec->layers[l].n_head_kv) * static_cast<size_t>(im.spec->layers[l].head_dim_k);
            im.keys[l].resize(std::min(im.keys[l].size(), static_cast<size_t>(before) * nk));
        }
        throw;
    }
    ProbeStep step;
    step.n_past = im.ctx->n_past();
    step.n_ctx = im.ctx->n_ctx();
    std::span<const float> logits = im.ctx->last_logits();
    const float mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
    std::vector<TokenId> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    const size_t k = std::min(ids.size(), static_cast<size_t>(im.options.top_k));
    std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](TokenId a, TokenId b) {
        return logits[static_cast<size_t>(a)] != logits[static_cast<size_t>(b)] ? logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)]
                                                                                 : a < b;
    });
    for (size_t i = 0; i < k; ++i) {
        const float l = logits[static_cast<size_t>(ids[i])];
        step.candidates.push_back({ids[i], l, std::exp(static_cast<double>(l) - mx) / sum});
    }
    if (im.options.layer_stats) step.layers = im.layers;
    if (im.options.attention_stats) {
        step.heads = im.heads;
        step.kv_visible = im.kv_visible;
    } else {
        for (const LayerSpec& l : im.spec->layers)
            step.kv_visible.push_back(l.sliding && im.spec->sliding_window > 0 ? std::min<int64_t>(step.n_past, im.spec->sliding_window)
                                                                                : step.n_past);
    }
    return step;
}

int64_t Probe::n_past() const { return impl_->ctx->n_past(); }
const std::vector<TokenId>& Probe::tokens() const { return impl_->ctx->history(); }
const Model& Probe::model() const { return *impl_->model; }
const ProbeOptions& Probe::options() const { return impl_->options; }

}  // namespace kiln
