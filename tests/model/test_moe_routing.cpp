// The expert router (model/moe.h) on hand-made logits: each gating function,
// renormalization, scale, selection bias, group-limited selection and ties; and
// the routing keys read from metadata, with contradictions refused by name.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "kiln/error.h"
#include "model/moe.h"

namespace kiln {
namespace {

struct Routed {
    std::vector<int32_t> ids;
    std::vector<float> w;
};

Routed route(const MoeSpec& m, std::vector<float> logits, const float* bias = nullptr) {
    Routed r{std::vector<int32_t>(static_cast<size_t>(m.n_expert_used)), std::vector<float>(static_cast<size_t>(m.n_expert_used))};
    RouterScratch s;
    route_token(m, logits.data(), bias, r.ids.data(), r.w.data(), s);
    return r;
}

MoeSpec spec(int n, int k, ExpertGating g = ExpertGating::Softmax, bool norm = false) {
    MoeSpec m;
    m.n_expert = n;
    m.n_expert_used = k;
    m.gating = g;
    m.norm_weights = norm;
    return m;
}

TEST(MoeRouting, SoftmaxTopKKeepsTheSelectedMassOrRenormalizes) {
    const std::vector<float> logits = {0.0f, 2.0f, -1.0f, 1.0f};
    double z = 0;
    for (float l : logits) z += std::exp(static_cast<double>(l));
    auto kept = route(spec(4, 2), logits);
    EXPECT_EQ(kept.ids, (std::vector<int32_t>{1, 3}));
    EXPECT_NEAR(kept.w[0], std::exp(2.0) / z, 1e-6);
    EXPECT_NEAR(kept.w[1], std::exp(1.0) / z, 1e-6);
    auto norm = route(spec(4, 2, ExpertGating::Softmax, true), logits);
    EXPECT_EQ(norm.ids, kept.ids);
    EXPECT_NEAR(norm.w[0] + norm.w[1], 1.0f, 1e-6);
    EXPECT_NEAR(norm.w[0] / norm.w[1], std::exp(1.0), 1e-5);
    MoeSpec scaled = spec(4, 2, ExpertGating::Softmax, true);
    scaled.weights_scale = 2.5f;
    auto s = route(scaled, logits);
    EXPECT_FLOAT_EQ(s.w[0], norm.w[0] * 2.5f);
}

TEST(MoeRouting, TiesGoToTheLowerIndexAsLlamaCpp) {
    // Experts 1 and 2 tie at the top-1 boundary, 0 and 3 at the top-3 one.
    auto one = route(spec(4, 1), {0.5f, 3.0f, 3.0f, 0.5f});
    EXPECT_EQ(one.ids, (std::vector<int32_t>{1}));
    auto three = route(spec(4, 3), {0.5f, 3.0f, 3.0f, 0.5f});
    EXPECT_EQ(three.ids, (std::vector<int32_t>{1, 2, 0}));
    // All equal: the first k, in index order.
    auto flat = route(spec(8, 3), std::vector<float>(8, 1.0f));
    EXPECT_EQ(flat.ids, (std::vector<int32_t>{0, 1, 2}));
}

TEST(MoeRouting, SigmoidWithSelectionBiasWeighsByTheUnbiasedProbabilities) {
    const std::vector<float> logits = {1.0f, 0.0f, 0.5f, -1.0f};
    const std::vector<float> bias = {0.0f, 2.0f, 0.0f, 0.0f};  // lifts expert 1 into the top 2
    auto r = route(spec(4, 2, ExpertGating::Sigmoid), logits, bias.data());
    EXPECT_EQ(r.ids, (std::vector<int32_t>{1, 0}));
    EXPECT_FLOAT_EQ(r.w[0], 1.0f / (1.0f + std::exp(-0.0f)));
    EXPECT_FLOAT_EQ(r.w[1], 1.0f / (1.0f + std::exp(-1.0f)));
}

TEST(MoeRouting, SoftmaxWeightSelectsOnLogitsThenSoftmaxesTheSelected) {
    auto r = route(spec(4, 2, ExpertGating::SoftmaxWeight), {3.0f, -2.0f, 1.0f, 0.0f});
    EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 2}));
    EXPECT_NEAR(r.w[0], 1.0 / (1.0 + std::exp(-2.0)), 1e-6);
    EXPECT_NEAR(r.w[0] + r.w[1], 1.0f, 1e-6);
}

TEST(MoeRouting, GroupLimitedSelectionKeepsTheBestGroupsByTheirTopTwo) {
    // 4 groups of 2 experts: g0 {5, 0}, g1 {3, 3}, g2 {4, -9}, g3 {1, 1} (logits).
    MoeSpec m = spec(8, 2, ExpertGating::Sigmoid);
    m.n_group = 4;
    m.n_group_used = 2;
    const std::vector<float> logits = {5.0f, 0.0f, 3.0f, 3.0f, 4.0f, -9.0f, 1.0f, 1.0f};
    // Sigmoid sums: g0 0.993+0.5=1.49, g1 0.953*2=1.90, g2 0.982+0.0001=0.98, g3 1.46:
    // groups 1 and 0 compete, so expert 4 (the second largest logit) is out, and
    // of the tied experts 2 and 3 the lower index wins.
    auto r = route(m, logits);
    EXPECT_EQ(r.ids, (std::vector<int32_t>{0, 2}));
}

TEST(MoeRouting, KeysAreReadAndContradictionsRefusedByName) {
    ModelSpec s;
    s.arch = "qwen3moe";
    s.n_layer = 4;
    gguf::Metadata md;
    md.add("qwen3moe.expert_count", gguf::Value::u32(8));
    md.add("qwen3moe.expert_used_count", gguf::Value::u32(2));
    ArchConfig c{md, "qwen3moe.", s};
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
    EXPECT_EQ(s.moe.n_expert, 8);
    EXPECT_TRUE(s.moe.norm_weights);

    md.add("qwen3moe.expert_weights_norm", gguf::Value::boolean(false));
    try {
        read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true});
        FAIL() << "a contradicting key was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Unsupported);
        EXPECT_NE(std::string(e.what()).find("qwen3moe.expert_weights_norm"), std::string::npos) << e.what();
    }
    // A family that reads the keys takes them.
    md.add("qwen3moe.expert_gating_func", gguf::Value::u32(2));
    md.add("qwen3moe.expert_weights_scale", gguf::Value::f32(2.5f));
    read_moe_hparams(c, {.gating = ExpertGating::Softmax, .norm_weights = true, .from_keys = true});
    EXPECT_EQ(s.moe.gating, ExpertGating::Sigmoid);
    EXPECT_FALSE(s.moe.norm_weights);
    EXPECT_FLOAT_EQ(s.moe.weights_scale, 2.5f);

    gguf::Metadata bad;
    bad.add("qwen3moe.expert_count", gguf::Value::u32(4));
    bad.add("qwen3moe.expert_used_count", gguf::Value::u32(5));
    ArchConfig cb{bad, "qwen3moe.", s};
    EXPECT_THROW(read_moe_hparams(cb, {}), Error);
    gguf::Metadata missing;
    missing.add("qwen3moe.expert_count", gguf::Value::u32(4));
    ArchConfig cm{missing, "qwen3moe.", s};
    try {
        read_moe_hparams(cm, {});
        FAIL();
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("qwen3moe.expert_used_count"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace kiln
