#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "kiln/error.h"
#include "kiln/sampling.h"

namespace kiln {

namespace {

// splitmix64: small, well-distributed, and identical on every platform.
uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

using Candidates = std::vector<std::pair<float, int32_t>>;  // (logit, token), sorted by logit descending when noted

void sort_desc(Candidates& c) {
    std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
}

// Probabilities of sorted candidates (softmax over what is left).
std::vector<double> probabilities(const Candidates& c) {
    std::vector<double> p(c.size());
    if (c.empty()) return p;
    const double mx = c[0].first;
    double sum = 0;
    for (size_t i = 0; i < c.size(); ++i) {
        p[i] = std::exp(static_cast<double>(c[i].first) - mx);
        sum += p[i];
    }
    for (double& x : p) x /= sum;
    return p;
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, int n_vocab) : params_(params), n_vocab_(n_vocab), rng_state_(params.seed) {
    if (n_vocab <= 0) throw Error("sampler: empty vocabulary");
    for (const auto& [tok, bias] : params.logit_bias)
        if (tok < 0 || tok >= n_vocab)
            throw Error("logit bias for token " + std::to_string(tok) + ": outside the vocabulary of " + std::to_string(n_vocab));
    if (params.top_p <= 0.0f) throw Error("top_p must be greater than 0");
    if (params.typical_p <= 0.0f) throw Error("typical_p must be greater than 0");
    if (params.repeat_penalty <= 0.0f) throw Error("repeat_penalty must be greater than 0");
}

double Sampler::next_uniform() { return static_cast<double>(splitmix64(rng_state_) >> 11) * 0x1.0p-53; }

int32_t Sampler::sample(std::span<const float> logits, std::span<const int32_t> recent) {
    if (static_cast<int>(logits.size()) != n_vocab_) throw Error("sampler: logits have the wrong size");
    const SamplingParams& p = params_;
    candidates_.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) candidates_[i] = {logits[i], static_cast<int32_t>(i)};
    for (const auto& [tok, bias] : p.logit_bias) candidates_[static_cast<size_t>(tok)].first += bias;

    // Penalties over the recent window.
    const bool penalties = p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
    if (penalties && p.penalty_last_n != 0 && !recent.empty()) {
        size_t n = p.penalty_last_n < 0 ? recent.size() : std::min(recent.size(), static_cast<size_t>(p.penalty_last_n));
        std::unordered_map<int32_t, int> counts;
        for (size_t i = recent.size() - n; i < recent.size(); ++i) counts[recent[i]]++;
        for (const auto& [tok, count] : counts) {
            if (tok < 0 || tok >= n_vocab_) continue;
            float& l = candidates_[static_cast<size_t>(tok)].first;
            if (p.repeat_penalty != 1.0f) l = l > 0 ? l / p.repeat_penalty : l * p.repeat_penalty;
            l -= static_cast<float>(count) * p.frequency_penalty + p.presence_penalty;
        }
    }

    // Log-probabilities of the raw distribution, for reporting.
    auto report = [&](int32_t chosen) {
        double mx = -std::numeric_limits<double>::infinity();
        for (float l : logits) mx = std::max(mx, static_cast<double>(l));
        double sum = 0;
        for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
        const double lse = mx + std::log(sum);
        last_logprob_ = static_cast<float>(logits[static_cast<size_t>(chosen)] - lse);
        last_top_.clear();
        if (p.n_probs > 0) {
            std::vector<int32_t> ids(logits.size());
            for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
            size_t k = std::min(ids.size(), static_cast<size_t>(p.n_probs));
            std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](int32_t a, int32_t b) {
                return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
                       (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
            });
            for (size_t i = 0; i < k; ++i)
                last_top_.push_back({ids[i], static_cast<float>(logits[static_cast<size_t>(ids[i])] - lse)});
        }
        return chosen;
    };

    if (p.temperature <= 0.0f) {
        size_t best = 0;
        for (size_t i = 1; i < candidates_.size(); ++i)
            if (candidates_[i].first > candidates_[best].first) best = i;
        return report(candidates_[best].second);
    }

    // Drop banned tokens, then sort.
    candidates_.erase(std::remove_if(candidates_.begin(), candidates_.end(),
                                     [](const auto& c) { return std::isinf(c.first) && c.first < 0; }),
                      candidates_.end());
    if (candidates_.empty()) throw Error("sampler: every token is banned by the logit bias");
    if (p.top_k > 0 && static_cast<size_t>(p.top_k) < candidates_.size()) {
        std::partial_sort(candidates_.begin(), candidates_.begin() + p.top_k, candidates_.end(),
                          [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
        candidates_.resize(static_cast<size_t>(p.top_k));
    } else {
        sort_desc(candidates_);
    }

    if (p.typical_p < 1.0f && candidates_.size() > 1) {
        // Keep the tokens whose surprise is closest to the distribution's entropy.
        std::vector<double> prob = probabilities(candidates_);
        double entropy = 0;
        for (double q : prob) entropy -= q > 0 ? q * std::log(q) : 0;
        std::vector<size_t> order(candidates_.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
            return std::fabs(-std::log(prob[a]) - entropy) < std::fabs(-std::log(prob[b]) - entropy);
        });
        double cum = 0;
        size_t keep = 0;
        for (; keep < order.size(); ++keep) {
            cum += prob[order[keep]];
            if (cum >= p.typical_p) {
                ++keep;
                break;
            }
        }
        keep = std::max<size_t>(1, std::min(keep, order.size()));
        Candidates kept;
        for (size_t i = 0; i < keep; ++i) kept.push_back(candidates_[order[i]]);
        sort_desc(kept);
        candidates_ = std::move(kept);
    }
    if (p.top_p < 1.0f && candidates_.size() > 1) {
        std::vector<double> prob = probabilities(candidates_);
        double cum = 0;
        size_t keep = candidates_.size();
        for (size_t i = 0; i < prob.size(); ++i) {
            cum += prob[i];
            if (cum >= p.top_p) {
                keep = i + 1;
                break;
            }
        }
        candidates_.resize(keep);
    }
    if (p.min_p > 0.0f && candidates_.size() > 1) {
        // Relative to the best token: keep p >= min_p * p_max, i.e. logit >= max + log(min_p).
        const float threshold = candidates_[0].first + std::log(p.min_p);
        size_t keep = 1;
        while (keep < candidates_.size() && candidates_[keep].first >= threshold) ++keep;
        candidates_.resize(keep);
    }

    for (auto& c : candidates_) c.first /= p.temperature;
    std::vector<double> prob = probabilities(candidates_);
    const double u = next_uniform();
    double cum = 0;
    for (size_t i = 0; i < prob.size(); ++i) {
        cum += prob[i];
        if (u < cum) return report(candidates_[i].second);
    }
    return report(candidates_.back().second);
}

}  // namespace kiln
