// The sampler chain: each stage's effect on a known distribution, greedy,
// reproducibility under a seed, logit bias, penalties, log-probabilities.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "kiln/error.h"
#include "kiln/sampling.h"

using kiln::Sampler;
using kiln::SamplingParams;

namespace {

// logits = log of the given probabilities (unnormalised is fine).
std::vector<float> logits_of(const std::vector<double>& probs) {
    std::vector<float> l;
    for (double p : probs) l.push_back(static_cast<float>(std::log(p)));
    return l;
}

std::map<int32_t, int> histogram(SamplingParams p, const std::vector<float>& logits, int n, std::vector<int32_t> recent = {}) {
    Sampler s(p, static_cast<int>(logits.size()));
    s.accept_prompt(recent);
    std::map<int32_t, int> h;
    for (int i = 0; i < n; ++i) h[s.sample(logits)]++;
    return h;
}

SamplingParams plain() {
    SamplingParams p;
    p.temperature = 1.0f;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.seed = 7;
    return p;
}

// One step of a fresh sampler whose history (the penalties' window) is `recent`.
int32_t sample_after(const SamplingParams& p, const std::vector<float>& logits, const std::vector<int32_t>& recent) {
    Sampler s(p, static_cast<int>(logits.size()));
    s.accept_prompt(recent);
    return s.sample(logits);
}

}  // namespace

TEST(Sampler, GreedyPicksTheArgmax) {
    auto l = logits_of({0.1, 0.5, 0.3, 0.1});
    Sampler s(SamplingParams::greedy(), 4);
    for (int i = 0; i < 10; ++i) EXPECT_EQ(s.sample(l), 1);
}

TEST(Sampler, TemperatureOneFollowsTheDistribution) {
    auto h = histogram(plain(), logits_of({0.5, 0.3, 0.2}), 20000);
    EXPECT_NEAR(h[0] / 20000.0, 0.5, 0.02);
    EXPECT_NEAR(h[1] / 20000.0, 0.3, 0.02);
    EXPECT_NEAR(h[2] / 20000.0, 0.2, 0.02);
}

TEST(Sampler, SameSeedSameSequence) {
    auto l = logits_of({0.25, 0.25, 0.25, 0.25});
    Sampler a(plain(), 4), b(plain(), 4);
    for (int i = 0; i < 200; ++i) EXPECT_EQ(a.sample(l), b.sample(l));
    SamplingParams other = plain();
    other.seed = 8;
    Sampler c(other, 4);
    Sampler d(plain(), 4);
    int differ = 0;
    for (int i = 0; i < 200; ++i) differ += c.sample(l) != d.sample(l);
    EXPECT_GT(differ, 50);
}

TEST(Sampler, TopKKeepsTheKBest) {
    auto p = plain();
    p.top_k = 2;
    auto h = histogram(p, logits_of({0.4, 0.3, 0.2, 0.1}), 5000);
    EXPECT_EQ(h.count(2) + h.count(3), 0u);
    EXPECT_NEAR(h[0] / 5000.0, 0.4 / 0.7, 0.03);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
    auto p = plain();
    p.top_p = 0.75f;  // 0.5 + 0.3 >= 0.75
    auto h = histogram(p, logits_of({0.5, 0.3, 0.15, 0.05}), 5000);
    EXPECT_EQ(h.count(2) + h.count(3), 0u);
    EXPECT_GT(h[1], 0);
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
    auto p = plain();
    p.min_p = 0.5f;  // keep p >= 0.25
    auto h = histogram(p, logits_of({0.5, 0.3, 0.15, 0.05}), 5000);
    EXPECT_EQ(h.count(2) + h.count(3), 0u);
}

TEST(Sampler, TypicalPKeepsTokensNearTheEntropy) {
    auto p = plain();
    // H = 1.33 nats; surprise of token 0 is 0.92, of the others 1.61: the tail is
    // closer to the entropy, and three tail tokens (0.6) reach typical_p = 0.5.
    p.typical_p = 0.5f;
    auto h = histogram(p, logits_of({0.4, 0.2, 0.2, 0.2}), 2000);
    EXPECT_EQ(h.count(0), 0u);
    // A dominant token is the most typical when the tail is flat and small.
    p.typical_p = 0.3f;
    auto g = histogram(p, logits_of({0.7, 0.1, 0.1, 0.1}), 500);
    EXPECT_EQ(g[0], 500);
}

TEST(Sampler, LowTemperatureSharpens) {
    auto p = plain();
    p.temperature = 0.1f;
    auto h = histogram(p, logits_of({0.5, 0.4, 0.1}), 2000);
    EXPECT_GT(h[0], 1500);
}

TEST(Sampler, LogitBiasBansAndBoosts) {
    auto p = SamplingParams::greedy();
    p.logit_bias = {{1, -INFINITY}};
    Sampler s(p, 3);
    EXPECT_EQ(s.sample(logits_of({0.1, 0.8, 0.1})), 0);
    auto q = plain();
    q.logit_bias = {{0, -INFINITY}, {1, -INFINITY}};
    auto h = histogram(q, logits_of({0.45, 0.45, 0.1}), 100);
    EXPECT_EQ(h[2], 100);
    EXPECT_THROW(Sampler(SamplingParams{.logit_bias = {{5, 1.0f}}}, 3), kiln::Error);
}

TEST(Sampler, RepetitionPresenceAndFrequencyPenalties) {
    auto l = logits_of({0.4, 0.35, 0.25});
    auto p = SamplingParams::greedy();
    p.repeat_penalty = 1.5f;
    p.penalty_last_n = 4;
    // Token 0 is recent: its logit log(0.4) < 0 is multiplied by 1.5 and drops below token 1.
    EXPECT_EQ(sample_after(p, l, {0}), 1);
    // Outside the window: no penalty.
    EXPECT_EQ(sample_after(p, l, {0, 2, 2, 2, 2}), 0);
    auto f = SamplingParams::greedy();
    f.frequency_penalty = 0.1f;
    EXPECT_EQ(sample_after(f, l, {0}), 0);        // one occurrence: -0.1, still first
    EXPECT_EQ(sample_after(f, l, {0, 0, 0}), 1);  // three: -0.3
    auto pr = SamplingParams::greedy();
    pr.presence_penalty = 0.2f;
    EXPECT_EQ(sample_after(pr, l, {0, 0, 0}), 1);  // once, whatever the count
}

TEST(Sampler, ReportsLogprobsOfTheModelDistribution) {
    auto p = SamplingParams::greedy();
    p.n_probs = 2;
    Sampler s(p, 3);
    s.sample(logits_of({0.5, 0.3, 0.2}));
    EXPECT_NEAR(s.last_logprob(), std::log(0.5), 1e-5);
    ASSERT_EQ(s.last_top().size(), 2u);
    EXPECT_EQ(s.last_top()[0].token, 0);
    EXPECT_EQ(s.last_top()[1].token, 1);
    EXPECT_NEAR(s.last_top()[1].logprob, std::log(0.3), 1e-5);
    // The chosen token's alone on request; neither unless asked (NaN, not a number that looks real).
    auto one = SamplingParams::greedy();
    one.logprobs = true;
    Sampler s1(one, 3);
    EXPECT_EQ(s1.sample(logits_of({0.2, 0.5, 0.3})), 1);
    EXPECT_NEAR(s1.last_logprob(), std::log(0.5), 1e-5);
    EXPECT_TRUE(s1.last_top().empty());
    Sampler s0(SamplingParams::greedy(), 3);
    EXPECT_EQ(s0.sample(logits_of({0.2, 0.5, 0.3})), 1);
    EXPECT_TRUE(std::isnan(s0.last_logprob()));
    EXPECT_TRUE(s0.last_top().empty());
}

TEST(Sampler, GreedyIsAChainOfOneStageAndAConstraintGoesFirst) {
    Sampler g(SamplingParams::greedy(), 4);
    EXPECT_EQ(g.stage_names(), (std::vector<std::string_view>{"greedy"}));
    auto p = plain();
    p.repeat_penalty = 1.2f;
    p.logit_bias = {{1, 0.5f}};
    Sampler s(p, 4);
    EXPECT_EQ(s.stage_names(), (std::vector<std::string_view>{"logit_bias", "penalties", "drop_banned", "top_k", "temperature", "dist"}));
    struct Ban3 : kiln::SamplerStage {
        std::string_view name() const override { return "ban3"; }
        void apply(kiln::Candidates& c) override {
            for (auto& x : c.items)
                if (x.token == 3) x.logit = -INFINITY;
        }
    };
    g.add_constraint(std::make_unique<Ban3>());
    EXPECT_EQ(g.stage_names().front(), "ban3");
    EXPECT_EQ(g.sample(logits_of({0.1, 0.2, 0.3, 0.4})), 2);  // 3 is the best but banned
}
