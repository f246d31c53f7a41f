// DESIGN principle 4: a prompt row's logits are bit-identical whether the prompt
// is prefilled in one chunk, in several, or decoded token by token; and prefix
// reuse gives exactly a cold run's output.
#include <gtest/gtest.h>

#include <cstring>

#include "kiln/context.h"
#include "model/model_fixture.h"
#include "support/test_support.h"

namespace {

std::vector<float> all_logits(std::shared_ptr<const kiln::Model> model, const std::vector<int32_t>& tokens, int n_batch,
                              int n_threads, bool stream) {
    kiln::Context ctx(model, {.n_ctx = 1024, .n_batch = n_batch, .flash_attn = stream, .n_threads = n_threads});
    std::vector<float> out;
    if (n_batch == 1) {
        for (int32_t t : tokens) {
            ctx.decode(std::span<const int32_t>(&t, 1));
            auto l = ctx.last_logits();
            out.insert(out.end(), l.begin(), l.end());
        }
        return out;
    }
    ctx.decode(tokens, &out);
    return out;
}

void check_invariance(const std::string& path, const std::vector<int32_t>& tokens, bool stream = false) {
    auto model = kiln::Model::load(path);
    std::vector<float> reference = all_logits(model, tokens, 256, 2, stream);
    for (int n_batch : {1, 7, 32}) {
        for (int n_threads : {1, 2, 3}) {  // 3: decode splits query heads unevenly
            std::vector<float> got = all_logits(model, tokens, n_batch, n_threads, stream);
            ASSERT_EQ(got.size(), reference.size());
            EXPECT_EQ(std::memcmp(got.data(), reference.data(), got.size() * sizeof(float)), 0)
                << "n_batch " << n_batch << ", threads " << n_threads << " differ from one chunk";
        }
    }
}

}  // namespace

TEST(BatchInvariance, SmolLM2ChunkingIsBitExact) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto fx = kiln::test::load_model_fixture("smollm2");
    check_invariance(kiln::test::smollm2_path(), fx.prompts[4].tokens);  // "code", 71 tokens
}

TEST(BatchInvariance, Gemma3ChunkingIsBitExact) {
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    auto fx = kiln::test::load_model_fixture("gemma3");
    check_invariance(kiln::test::gemma3_path(), fx.prompts[4].tokens);
}

// Streaming attention (ContextOptions::flash_attn): the same invariance.
TEST(BatchInvariance, SmolLM2StreamingAttentionChunkingIsBitExact) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto fx = kiln::test::load_model_fixture("smollm2");
    check_invariance(kiln::test::smollm2_path(), fx.prompts[4].tokens, true);
}

TEST(PrefixReuse, SecondTurnPrefillsOnlyNewTokensAndEqualsColdRun) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto fx = kiln::test::load_model_fixture("smollm2");
    auto model = kiln::Model::load(kiln::test::smollm2_path());
    const auto& first = fx.prompts[2].tokens;  // chatml_turn
    std::vector<int32_t> second = first;
    second.insert(second.end(), {28, 4182, 30, 2, 198, 1, 4093, 198});
    kiln::Context warm(model, {.n_ctx = 512, .n_batch = 16});
    warm.decode(first);
    // Keep the common prefix, evaluate only the rest.
    ASSERT_TRUE(warm.keep_prefix(static_cast<int64_t>(first.size())));
    std::vector<int32_t> rest(second.begin() + static_cast<std::ptrdiff_t>(first.size()), second.end());
    warm.decode(rest);
    EXPECT_EQ(warm.n_past(), static_cast<int64_t>(second.size()));
    kiln::Context cold(model, {.n_ctx = 512, .n_batch = 16});
    cold.decode(second);
    auto a = warm.last_logits(), b = cold.last_logits();
    ASSERT_EQ(a.size(), b.size());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0);
}
