// The expert router: keys into MoeSpec, and one token's logits into its experts
// and their weights, step for step as llama.cpp's build_moe_ffn (the oracle).
#include <algorithm>
#include <cmath>

#include "kiln/error.h"
#include "model/moe.h"

namespace kiln {

namespace {


// Indices 0..n-1 ordered by value, largest first. std::sort with the comparator
// of ggml's CPU argsort (GGML_SORT_ORDER_DESC) over the same initial order, so
// equal values come out in the order llama.cpp picks them (for up to 16 values
// libstdc++ sorts by insertion: the lower index first).
void argsort_desc(const float* v, int n, std::vector<int32_t>& order) {
    order.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
    std::sort(order.begin(), order.end(), [v](int32_t a, int32_t b) { return v[a] > v[b]; });
}

}  // namespace

void read_moe_hparams(ArchConfig& c, const MoeDefaults& d) {
    MoeSpec& m = c.spec.moe;
    m.n_expert = c.count("expert_count", true);
    m.n_expert_used = c.count("expert_used_count", true);
    if (m.n_expert <= 0 || m.n_expert_used <= 0 || m.n_expert_used > m.n_expert)
        throw Error("GGUF metadata '" + c.key("expert_used_count") + "': " + std::to_string(m.n_expert_used) + " of " +
                    std::to_string(m.n_expert) + " experts (" + c.key("expert_count") + ") cannot be selected");
    m.gating = d.gating;
    m.norm_weights = d.norm_weights;
    const auto gating = c.metadata.find_uint(c.key("expert_gating_func"));
    const auto norm = c.metadata.find_bool(c.key("expert_weights_norm"));
    const double scale = c.metadata.find_float(c.key("expert_weights_scale")).value_or(0.0);
    const int n_group = c.count("expert_group_count", false);
    const int n_group_used = c.count("expert_group_used_count", false);
    if (!d.from_keys) {
        auto refuse = [&](const char* name, const std::string& what) {
            throw Error("GGUF metadata '" + c.key(name) + "': " + what + " is not supported for architecture '" + c.spec.arch +
                            "' (its routing is fixed)",
                        ErrorKind::Unsupported);
        };
        if (gating && *gating != 0 && *gating != static_cast<uint64_t>(d.gating)) refuse("expert_gating_func", "gating " + std::to_string(*gating));
        if (norm && *norm != d.norm_weights) refuse("expert_weights_norm", *norm ? "true" : "false");
        if (d.scale_from_key)
            m.weights_scale = scale == 0.0 ? 1.0f : static_cast<float>(scale);
        else if (scale != 0.0 && scale != 1.0)
            refuse("expert_weights_scale", std::to_string(scale));
        if (n_group > 1) refuse("expert_group_count", std::to_string(n_group));
    } else {
        if (gating && *gating != 0) {
            if (*gating != 1 && *gating != 2 && *gating != 3)
                throw Error("GGUF metadata '" + c.key("expert_gating_func") + "': gating function " + std::to_string(*gating) +
                                " is not supported (1 softmax, 2 sigmoid, 3 softmax over the selected)",
                            ErrorKind::Unsupported);
            m.gating = static_cast<ExpertGating>(*gating);
        }
        if (norm) m.norm_weights = *norm;
        m.weights_scale = scale == 0.0 ? 1.0f : static_cast<float>(scale);  // 0: unset, as llama.cpp reads it
        m.n_group = n_group;
        m.n_group_used = n_group_used;
    }
    if (m.n_group > 1) {
        if (m.n_expert % m.n_group != 0 || m.n_expert / m.n_group < 2 || m.n_group_used <= 0 || m.n_group_used > m.n_group ||
            m.n_group_used * (m.n_expert / m.n_group) < m.n_expert_used)
            throw Error("GGUF metadata '" + c.key("expert_group_count") + "' / '" + c.key("expert_group_used_count") + "': " +
                        std::to_string(m.n_group_used) + " of " + std::to_string(m.n_group) + " groups of " +
                        std::to_string(m.n_expert) + " experts cannot hold " + std::to_string(m.n_expert_used) + " selected ones");
    }
    m.n_leading_dense = c.count("leading_dense_block_count", false);
    if (m.n_leading_dense > c.spec.n_layer)
        throw Error("GGUF metadata '" + c.key("leading_dense_block_count") + "': " + std::to_string(m.n_leading_dense) +
                    " exceeds the " + std::to_string(c.spec.n_layer) + " layers");
}

void route_token(const MoeSpec& m, const float* logits, const float* selection_bias, int32_t* selected, float* weights,
                 RouterScratch& s) {
    const int n = m.n_expert, k = m.n_expert_used;
    s.probs.assign(logits, logits + n);
    float* p = s.probs.data();
    switch (m.gating) {
        case ExpertGating::Softmax: ops::softmax(p, n); break;
        case ExpertGating::Sigmoid:
            for (int i = 0; i < n; ++i) p[i] = 1.0f / (1.0f + std::exp(-p[i]));
            break;
        case ExpertGating::SoftmaxWeight: break;  // softmax after selection
    }
    // The selection bias shifts which experts win, not their weights.
    s.selection.assign(m.select_on_logits ? logits : p, (m.select_on_logits ? logits : p) + n);
    float* sel = s.selection.data();
    if (selection_bias)
        for (int i = 0; i < n; ++i) sel[i] += selection_bias[i];
    if (m.n_group > 1) {
        // A group's score is the sum of its two best; the other groups' experts drop out.
        const int per = n / m.n_group;
        s.group_score.resize(static_cast<size_t>(m.n_group));
        for (int g = 0; g < m.n_group; ++g) {
            argsort_desc(sel + g * per, per, s.order);
            s.group_score[static_cast<size_t>(g)] =
                static_cast<float>(static_cast<double>(sel[g * per + s.order[0]]) + static_cast<double>(sel[g * per + s.order[1]]));
        }
        argsort_desc(s.group_score.data(), m.n_group, s.group_order);
        for (int g = 0; g < m.n_group; ++g) {
            bool kept = false;
            for (int u = 0; u < m.n_group_used; ++u) kept |= s.group_order[static_cast<size_t>(u)] == g;
            if (!kept)
                for (int i = 0; i < per; ++i) sel[g * per + i] = -INFINITY;
        }
    }
    argsort_desc(sel, n, s.order);
    for (int j = 0; j < k; ++j) {
        selected[j] = s.order[static_cast<size_t>(j)];
        weights[j] = p[selected[j]];
    }
    if (m.gating == ExpertGating::SoftmaxWeight) ops::softmax(weights, k);
    if (m.norm_weights) {
        double sum = 0.0;
        for (int j = 0; j < k; ++j) sum += weights[j];
        // As llama.cpp: the sum clamped to the smallest normal f16 before dividing.
        const float d = std::max(static_cast<float>(sum), 6.103515625e-5f);
        for (int j = 0; j < k; ++j) weights[j] /= d;
    }
    if (m.weights_scale != 1.0f)
        for (int j = 0; j < k; ++j) weights[j] *= m.weights_scale;
}

}  // namespace kiln
