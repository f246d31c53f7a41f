// The sampler chain and its stages (kiln/sampling.h). Each stage reproduces one
// step of llama.cpp's sampler chain semantics; the order and the tie-breaking
// (higher logit first, then lower token id) are fixed so that a seed reproduces
// a run on every platform.
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

bool before(const TokenCandidate& a, const TokenCandidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.token < b.token);
}

void sort_desc(Candidates& c) {
    if (c.sorted) return;
    std::sort(c.items.begin(), c.items.end(), before);
    c.sorted = true;
}

// Probabilities of sorted candidates (softmax over what is left).
std::vector<double> probabilities(const std::vector<TokenCandidate>& c) {
    std::vector<double> p(c.size());
    if (c.empty()) return p;
    const double mx = c[0].logit;
    double sum = 0;
    for (size_t i = 0; i < c.size(); ++i) {
        p[i] = std::exp(static_cast<double>(c[i].logit) - mx);
        sum += p[i];
    }
    for (double& x : p) x /= sum;
    return p;
}

// The candidate of a token: at its index while the list is the whole
// vocabulary in id order (the stages before any sort), by bisection while it is
// in id order with entries removed (a constraint keeps only the allowed tokens),
// else found by a scan.
TokenCandidate* find(Candidates& c, int32_t token) {
    if (token >= 0 && static_cast<size_t>(token) < c.items.size() && c.items[static_cast<size_t>(token)].token == token)
        return &c.items[static_cast<size_t>(token)];
    if (!c.sorted) {
        auto it = std::lower_bound(c.items.begin(), c.items.end(), token,
                                   [](const TokenCandidate& t, int32_t id) { return t.token < id; });
        if (it != c.items.end() && it->token == token) return &*it;
    }
    for (TokenCandidate& t : c.items)
        if (t.token == token) return &t;
    return nullptr;
}

class LogitBias : public SamplerStage {
public:
    explicit LogitBias(std::vector<std::pair<int32_t, float>> bias) : bias_(std::move(bias)) {}
    std::string_view name() const override { return "logit_bias"; }
    void apply(Candidates& c) override {
        for (const auto& [tok, b] : bias_)
            if (TokenCandidate* t = find(c, tok)) t->logit += b;
    }

private:
    std::vector<std::pair<int32_t, float>> bias_;
};

// Repetition, presence and frequency penalties over the last n accepted tokens
// (prompt included).
class Penalties : public SamplerStage {
public:
    explicit Penalties(const SamplingParams& p) : p_(p) {}
    std::string_view name() const override { return "penalties"; }
    void apply(Candidates& c) override {
        if (history_.empty()) return;
        const size_t n = p_.penalty_last_n < 0 ? history_.size() : std::min(history_.size(), static_cast<size_t>(p_.penalty_last_n));
        std::unordered_map<int32_t, int> counts;
        for (size_t i = history_.size() - n; i < history_.size(); ++i) counts[history_[i]]++;
        for (const auto& [tok, count] : counts) {
            TokenCandidate* t = find(c, tok);
            if (!t) continue;
            float& l = t->logit;
            if (p_.repeat_penalty != 1.0f) l = l > 0 ? l / p_.repeat_penalty : l * p_.repeat_penalty;
            l -= static_cast<float>(count) * p_.frequency_penalty + p_.presence_penalty;
        }
    }
    void accept(int32_t token) override { remember(token); }
    void accept_prompt(std::span<const int32_t> tokens) override {
        for (int32_t t : tokens) remember(t);
    }
    void reset() override { history_.clear(); }

private:
    void remember(int32_t token) {
        history_.push_back(token);
        // Keep the window (and a little more, to trim rarely).
        if (p_.penalty_last_n >= 0 && history_.size() > 2 * static_cast<size_t>(p_.penalty_last_n) + 64)
            history_.erase(history_.begin(), history_.end() - p_.penalty_last_n);
    }
    SamplingParams p_;
    std::vector<int32_t> history_;
};

// Argmax: the first of the highest logits.
class Greedy : public SamplerStage {
public:
    std::string_view name() const override { return "greedy"; }
    void apply(Candidates& c) override {
        if (c.items.empty()) throw Error("sampler: no candidate token left");
        size_t best = 0;
        for (size_t i = 1; i < c.items.size(); ++i)
            if (before(c.items[i], c.items[best])) best = i;
        c.selected = c.items[best].token;
    }
};

// Tokens banned by a -inf logit (bias or constraint) leave the candidates.
class DropBanned : public SamplerStage {
public:
    std::string_view name() const override { return "drop_banned"; }
    void apply(Candidates& c) override {
        c.items.erase(std::remove_if(c.items.begin(), c.items.end(),
                                     [](const TokenCandidate& t) { return std::isinf(t.logit) && t.logit < 0; }),
                      c.items.end());
        if (c.items.empty()) throw Error("sampler: every token is banned (logit bias or constraint)");
    }
};

class TopK : public SamplerStage {
public:
    explicit TopK(int k) : k_(k) {}
    std::string_view name() const override { return "top_k"; }
    void apply(Candidates& c) override {
        if (k_ > 0 && static_cast<size_t>(k_) < c.items.size()) {
            std::partial_sort(c.items.begin(), c.items.begin() + k_, c.items.end(), before);
            c.items.resize(static_cast<size_t>(k_));
            c.sorted = true;
        } else {
            sort_desc(c);
        }
    }

private:
    int k_;
};

// Keeps the tokens whose surprise is closest to the distribution's entropy.
class Typical : public SamplerStage {
public:
    explicit Typical(float p) : p_(p) {}
    std::string_view name() const override { return "typical_p"; }
    void apply(Candidates& c) override {
        if (c.items.size() <= 1) return;
        sort_desc(c);
        std::vector<double> prob = probabilities(c.items);
        double entropy = 0;
        for (double q : prob) entropy -= q > 0 ? q * std::log(q) : 0;
        std::vector<size_t> order(c.items.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
            return std::fabs(-std::log(prob[a]) - entropy) < std::fabs(-std::log(prob[b]) - entropy);
        });
        double cum = 0;
        size_t keep = 0;
        for (; keep < order.size(); ++keep) {
            cum += prob[order[keep]];
            if (cum >= p_) {
                ++keep;
                break;
            }
        }
        keep = std::max<size_t>(1, std::min(keep, order.size()));
        std::vector<TokenCandidate> kept;
        for (size_t i = 0; i < keep; ++i) kept.push_back(c.items[order[i]]);
        c.items = std::move(kept);
        c.sorted = false;
        sort_desc(c);
    }

private:
    float p_;
};

// The smallest set of the best tokens whose probability reaches p.
class TopP : public SamplerStage {
public:
    explicit TopP(float p) : p_(p) {}
    std::string_view name() const override { return "top_p"; }
    void apply(Candidates& c) override {
        if (c.items.size() <= 1) return;
        sort_desc(c);
        std::vector<double> prob = probabilities(c.items);
        double cum = 0;
        for (size_t i = 0; i < prob.size(); ++i) {
            cum += prob[i];
            if (cum >= p_) {
                c.items.resize(i + 1);
                return;
            }
        }
    }

private:
    float p_;
};

// Relative to the best token: keeps p >= min_p * p_max, i.e. logit >= max + log(min_p).
class MinP : public SamplerStage {
public:
    explicit MinP(float p) : p_(p) {}
    std::string_view name() const override { return "min_p"; }
    void apply(Candidates& c) override {
        if (c.items.size() <= 1) return;
        sort_desc(c);
        const float threshold = c.items[0].logit + std::log(p_);
        size_t keep = 1;
        while (keep < c.items.size() && c.items[keep].logit >= threshold) ++keep;
        c.items.resize(keep);
    }

private:
    float p_;
};

class Temperature : public SamplerStage {
public:
    explicit Temperature(float t) : t_(t) {}
    std::string_view name() const override { return "temperature"; }
    void apply(Candidates& c) override {
        for (TokenCandidate& t : c.items) t.logit /= t_;
    }

private:
    float t_;
};

// Draws from the softmax of what is left, with the sequence's own generator.
class Draw : public SamplerStage {
public:
    explicit Draw(uint64_t seed) : seed_(seed), state_(seed) {}
    std::string_view name() const override { return "dist"; }
    void apply(Candidates& c) override {
        sort_desc(c);
        std::vector<double> prob = probabilities(c.items);
        const double u = static_cast<double>(splitmix64(state_) >> 11) * 0x1.0p-53;  // [0, 1)
        double cum = 0;
        for (size_t i = 0; i < prob.size(); ++i) {
            cum += prob[i];
            if (u < cum) {
                c.selected = c.items[i].token;
                return;
            }
        }
        c.selected = c.items.back().token;
    }
    void reset() override { state_ = seed_; }

private:
    uint64_t seed_, state_;
};

}  // namespace

Sampler::Sampler(const SamplingParams& p, int n_vocab) : params_(p), n_vocab_(n_vocab) {
    if (n_vocab <= 0) throw Error("sampler: empty vocabulary");
    for (const auto& [tok, bias] : p.logit_bias)
        if (tok < 0 || tok >= n_vocab)
            throw Error("logit bias for token " + std::to_string(tok) + ": outside the vocabulary of " + std::to_string(n_vocab));
    if (p.top_p <= 0.0f) throw Error("top_p must be greater than 0");
    if (p.typical_p <= 0.0f) throw Error("typical_p must be greater than 0");
    if (p.repeat_penalty <= 0.0f) throw Error("repeat_penalty must be greater than 0");
    if (!p.logit_bias.empty()) stages_.push_back(std::make_unique<LogitBias>(p.logit_bias));
    const bool penalties = p.repeat_penalty != 1.0f || p.presence_penalty != 0.0f || p.frequency_penalty != 0.0f;
    if (penalties && p.penalty_last_n != 0) stages_.push_back(std::make_unique<Penalties>(p));
    if (p.temperature <= 0.0f) {
        stages_.push_back(std::make_unique<Greedy>());
        return;
    }
    stages_.push_back(std::make_unique<DropBanned>());
    stages_.push_back(std::make_unique<TopK>(p.top_k));
    if (p.typical_p < 1.0f) stages_.push_back(std::make_unique<Typical>(p.typical_p));
    if (p.top_p < 1.0f) stages_.push_back(std::make_unique<TopP>(p.top_p));
    if (p.min_p > 0.0f) stages_.push_back(std::make_unique<MinP>(p.min_p));
    stages_.push_back(std::make_unique<Temperature>(p.temperature));
    stages_.push_back(std::make_unique<Draw>(p.seed));
}

Sampler::~Sampler() = default;
Sampler::Sampler(Sampler&&) noexcept = default;
Sampler& Sampler::operator=(Sampler&&) noexcept = default;

void Sampler::add_constraint(std::unique_ptr<SamplerStage> stage) { stages_.insert(stages_.begin(), std::move(stage)); }

int32_t Sampler::sample(std::span<const float> logits) {
    if (static_cast<int>(logits.size()) != n_vocab_) throw Error("sampler: logits have the wrong size", ErrorKind::Internal);
    Candidates& c = candidates_;
    c.items.resize(logits.size());
    for (size_t i = 0; i < logits.size(); ++i) c.items[i] = {static_cast<int32_t>(i), logits[i]};
    c.sorted = false;
    c.selected = -1;
    for (auto& stage : stages_) stage->apply(c);
    if (c.selected < 0) throw Error("sampler: the chain selected no token", ErrorKind::Internal);
    if (params_.logprobs || params_.n_probs > 0) {
        report(logits, c.selected);
    } else {
        last_logprob_ = std::numeric_limits<float>::quiet_NaN();
        last_top_.clear();
    }
    return c.selected;
}

void Sampler::accept(int32_t token) {
    for (auto& stage : stages_) stage->accept(token);
}

void Sampler::accept_prompt(std::span<const int32_t> tokens) {
    for (auto& stage : stages_) stage->accept_prompt(tokens);
}

void Sampler::reset() {
    for (auto& stage : stages_) stage->reset();
}

std::vector<std::string_view> Sampler::stage_names() const {
    std::vector<std::string_view> names;
    for (const auto& s : stages_) names.push_back(s->name());
    return names;
}

void Sampler::report(std::span<const float> logits, int32_t chosen) {
    double mx = -std::numeric_limits<double>::infinity();
    for (float l : logits) mx = std::max(mx, static_cast<double>(l));
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
    const double lse = mx + std::log(sum);
    last_logprob_ = static_cast<float>(logits[static_cast<size_t>(chosen)] - lse);
    last_top_.clear();
    if (params_.n_probs > 0) {
        std::vector<int32_t> ids(logits.size());
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(i);
        size_t k = std::min(ids.size(), static_cast<size_t>(params_.n_probs));
        std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), [&](int32_t a, int32_t b) {
            return logits[static_cast<size_t>(a)] > logits[static_cast<size_t>(b)] ||
                   (logits[static_cast<size_t>(a)] == logits[static_cast<size_t>(b)] && a < b);
        });
        for (size_t i = 0; i < k; ++i) last_top_.push_back({ids[i], static_cast<float>(logits[static_cast<size_t>(ids[i])] - lse)});
    }
}

}  // namespace kiln
