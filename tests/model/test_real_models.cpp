// SmolLM2-135M (Q4_1) and Gemma 3 270M (Q4_K_M) against llama.cpp.
//
// Bit-for-bit agreement is not possible: both models carry huge activations
// (residual values in the thousands) that amplify a one-level difference in an
// 8-bit activation block, and the order of float sums inside llama.cpp's SIMD
// kernels is its own. llama.cpp itself moves by as much when only its attention
// path changes (flash attention on vs off). The fixtures record that spread, and
// the tests hold kiln to it (docs/numerics.md):
//  * the largest logit difference is at most 1.5 x llama.cpp's own spread over
//    the model's prompts;
//  * wherever llama.cpp is decisive (best minus second-best logit >= 1), kiln's
//    argmax is llama.cpp's;
//  * greedy continuations equal llama.cpp's token for token until a step where
//    llama.cpp's own margin is below 1 (a near-tie), whose margin is printed.
// With streaming attention (ContextOptions::flash_attn) the same bounds against
// the same (flash attention off) fixtures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kiln/context.h"
#include "model/model_fixture.h"
#include "support/test_support.h"

namespace {

constexpr float k_decisive_margin = 1.0f;
constexpr float k_spread_factor = 1.5f;

void check_model(const std::string& key, const std::string& path, bool stream = false) {
    kiln::test::ModelFixture fx = kiln::test::load_model_fixture(key);
    auto model = kiln::Model::load(path);
    ASSERT_EQ(model->n_vocab(), fx.n_vocab);
    float spread = 0;
    for (const auto& p : fx.prompts) spread = std::max(spread, p.self_max_diff);
    ASSERT_GT(spread, 0.0f) << "fixture lacks llama.cpp's self-noise (rerun tools/model_fixtures.py)";
    const float bound = k_spread_factor * spread;
    float worst = 0;
    int decisive = 0, positions = 0;
    for (const auto& p : fx.prompts) {
        SCOPED_TRACE(key + "/" + p.name);
        kiln::Context ctx(model, {.n_ctx = 2048, .n_batch = 256, .flash_attn = stream});
        std::vector<float> logits;
        ctx.decode(p.tokens, &logits);
        float max_diff = 0;
        int mismatches = 0;
        for (size_t r = 0; r < p.tokens.size(); ++r) {
            const float* row = logits.data() + r * static_cast<size_t>(fx.n_vocab);
            const int32_t am = static_cast<int32_t>(std::max_element(row, row + fx.n_vocab) - row);
            const float margin = p.top_logits[r][0] - p.top_logits[r][1];
            ++positions;
            if (margin >= k_decisive_margin) {
                ++decisive;
                EXPECT_EQ(am, p.argmax[r]) << "position " << r << ": llama.cpp is decisive (margin " << margin << ")";
            }
            if (am != p.argmax[r]) ++mismatches;
            for (int k = 0; k < fx.top; ++k)
                max_diff = std::max(max_diff, std::fabs(row[p.top_ids[r][static_cast<size_t>(k)]] - p.top_logits[r][static_cast<size_t>(k)]));
            for (size_t k = 0; k < fx.random_ids.size(); ++k)
                max_diff = std::max(max_diff, std::fabs(row[fx.random_ids[k]] - p.random_logits[r][k]));
        }
        std::printf("[ figures  ] %s/%-15s %5zu positions: max |logit diff| %.3f (llama.cpp FA on/off: %.3f); "
                    "argmax differs at %d (llama.cpp FA on/off: %d)\n",
                    key.c_str(), p.name.c_str(), p.tokens.size(), max_diff, p.self_max_diff, mismatches,
                    p.self_argmax_changes);
        EXPECT_LE(max_diff, bound);
        worst = std::max(worst, max_diff);
    }
    std::printf("[ figures  ] %s%s: worst max |logit diff| %.3f, bound %.3f (1.5 x llama.cpp's own %.3f); "
                "%d of %d positions decisive, all equal\n",
                key.c_str(), stream ? " (streaming attention)" : "", worst, bound, spread, decisive, positions);
}

void check_greedy(const std::string& key, const std::string& path, bool stream = false) {
    kiln::test::ModelFixture fx = kiln::test::load_model_fixture(key);
    auto model = kiln::Model::load(path);
    for (const auto& p : fx.prompts) {
        if (p.greedy.empty()) continue;
        SCOPED_TRACE(key + "/" + p.name);
        kiln::Context ctx(model, {.n_ctx = 2048, .n_batch = 256, .flash_attn = stream});
        ctx.decode(p.tokens);
        size_t same = 0;
        for (size_t i = 0; i < p.greedy.size(); ++i) {
            auto l = ctx.last_logits();
            int32_t tok = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
            if (tok != p.greedy[i]) {
                EXPECT_LT(p.greedy_margins[i], k_decisive_margin)
                    << "step " << i << ": kiln " << tok << ", llama.cpp " << p.greedy[i];
                std::printf("[ figures  ] %s/%s: parts from llama.cpp at step %zu, where llama.cpp's margin is %.4f\n",
                            key.c_str(), p.name.c_str(), i, p.greedy_margins[i]);
                break;
            }
            ++same;
            ctx.decode(std::span<const int32_t>(&tok, 1));
        }
        std::printf("[ figures  ] %s/%s: %zu of %zu greedy tokens equal\n", key.c_str(), p.name.c_str(), same, p.greedy.size());
    }
}

}  // namespace

TEST(RealModels, SmolLM2LogitsMatchLlamaCpp) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    check_model("smollm2", kiln::test::smollm2_path());
}

TEST(RealModels, Gemma3LogitsMatchLlamaCpp) {
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    check_model("gemma3", kiln::test::gemma3_path());
}

TEST(RealModels, SmolLM2GreedyMatchesLlamaCpp) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    check_greedy("smollm2", kiln::test::smollm2_path());
}

TEST(RealModels, Gemma3GreedyMatchesLlamaCpp) {
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    check_greedy("gemma3", kiln::test::gemma3_path());
}

TEST(RealModels, SmolLM2StreamingAttentionMatchesLlamaCpp) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    check_model("smollm2", kiln::test::smollm2_path(), true);
    check_greedy("smollm2", kiln::test::smollm2_path(), true);
}

TEST(RealModels, Gemma3StreamingAttentionMatchesLlamaCpp) {
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    check_model("gemma3", kiln::test::gemma3_path(), true);
    check_greedy("gemma3", kiln::test::gemma3_path(), true);
}
