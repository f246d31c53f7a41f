// Generation on a tiny random model: max tokens, stop strings, cancellation from
// another thread, callback stop, prefix reuse counts, a full context, determinism.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "kiln/engine.h"
#include "kiln/error.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

std::shared_ptr<const kiln::Model> tiny_model() {
    static std::shared_ptr<const kiln::Model> model = [] {
        const std::string path = kiln::test::temp_dir() + "/session-tiny-llama.gguf";
        kiln::test::write_tiny_model("llama", kiln::test::smollm2_path(), path);
        return kiln::Model::load(path);
    }();
    return model;
}

kiln::GenerateOptions sampled(int max_tokens) {
    kiln::GenerateOptions o;
    o.max_tokens = max_tokens;
    o.sampling.temperature = 1.0f;
    o.sampling.top_k = 0;
    o.sampling.top_p = 1.0f;
    o.sampling.min_p = 0.0f;
    o.sampling.seed = 3;
    o.ignore_eos = true;
    return o;
}

}  // namespace

class SessionTest : public ::testing::Test {
protected:
    void SetUp() override { KILN_REQUIRE_MODEL(kiln::test::smollm2_path()); }
};

TEST_F(SessionTest, MaxTokensEndsWithLength) {
    kiln::Session s(tiny_model(), {.n_ctx = 256});
    auto prompt = kiln::test::tiny_model_prompt();
    int events = 0;
    auto r = s.generate(prompt, sampled(10), [&](const kiln::TokenEvent&) { ++events; return true; });
    EXPECT_EQ(r.finish, kiln::FinishReason::Length);
    EXPECT_EQ(r.completion_tokens, 10);
    EXPECT_EQ(r.tokens.size(), 10u);
    EXPECT_GE(events, 10);
    EXPECT_EQ(r.prompt_tokens, static_cast<int>(prompt.size()));
}

TEST_F(SessionTest, SameSeedSameTokens) {
    auto prompt = kiln::test::tiny_model_prompt();
    kiln::Session a(tiny_model(), {.n_ctx = 256}), b(tiny_model(), {.n_ctx = 256});
    EXPECT_EQ(a.generate(prompt, sampled(24)).tokens, b.generate(prompt, sampled(24)).tokens);
}

TEST_F(SessionTest, StopStringEndsAndNeverLeaks) {
    kiln::Session s(tiny_model(), {.n_ctx = 256});
    auto prompt = kiln::test::tiny_model_prompt();
    auto free_run = s.generate(prompt, sampled(40));
    ASSERT_GT(free_run.text.size(), 6u);
    // Stop at a piece of the text the same seed produces.
    const std::string stop = free_run.text.substr(free_run.text.size() / 2, 3);
    auto o = sampled(40);
    o.stop = {stop};
    std::string streamed;
    auto r = s.generate(prompt, o, [&](const kiln::TokenEvent& e) { streamed += e.text; return true; });
    EXPECT_EQ(r.finish, kiln::FinishReason::Stop);
    EXPECT_EQ(r.stop_string, stop);
    EXPECT_EQ(streamed, r.text);
    EXPECT_EQ(r.text, free_run.text.substr(0, free_run.text.find(stop)));
}

TEST_F(SessionTest, CancelFromAnotherThread) {
    kiln::Session s(tiny_model(), {.n_ctx = 256});
    std::atomic<bool> cancel{false}, started{false};
    auto o = sampled(-1);
    o.cancel = &cancel;
    std::thread canceller([&] {
        while (!started.load()) std::this_thread::yield();
        cancel.store(true);
    });
    auto r = s.generate(kiln::test::tiny_model_prompt(), o, [&](const kiln::TokenEvent&) {
        started.store(true);
        return true;
    });
    canceller.join();
    EXPECT_EQ(r.finish, kiln::FinishReason::Cancelled);
    EXPECT_LT(r.completion_tokens, 200);
}

TEST_F(SessionTest, CallbackCanStop) {
    kiln::Session s(tiny_model(), {.n_ctx = 256});
    int n = 0;
    auto r = s.generate(kiln::test::tiny_model_prompt(), sampled(50), [&](const kiln::TokenEvent&) { return ++n < 5; });
    EXPECT_EQ(r.finish, kiln::FinishReason::Cancelled);
    EXPECT_EQ(r.completion_tokens, 5);
}

TEST_F(SessionTest, ContextFullEndsGeneration) {
    kiln::Session s(tiny_model(), {.n_ctx = 48});
    auto r = s.generate(kiln::test::tiny_model_prompt(), sampled(-1));  // 40-token prompt
    EXPECT_EQ(r.finish, kiln::FinishReason::ContextFull);
    EXPECT_EQ(s.context().n_past(), 48);
    EXPECT_EQ(r.completion_tokens, 9);  // 8 evaluated + the one that did not fit
    std::vector<int32_t> too_long(60, 5);
    EXPECT_THROW(s.generate(too_long, sampled(1)), kiln::Error);
}

TEST_F(SessionTest, PrefixReuseCountsAndEqualsColdRun) {
    auto prompt = kiln::test::tiny_model_prompt();
    kiln::Session warm(tiny_model(), {.n_ctx = 256, .n_batch = 8});
    auto first = warm.generate(prompt, sampled(6));
    EXPECT_EQ(first.reused_tokens, 0);
    // Next prompt: the previous prompt + its reply + more tokens.
    std::vector<int32_t> next = prompt;
    next.insert(next.end(), first.tokens.begin(), first.tokens.end());
    next.insert(next.end(), {100, 200, 300});
    auto second = warm.generate(next, sampled(8));
    // Everything evaluated before is reused (the last generated token was never
    // evaluated, so it is prefilled with the new ones).
    EXPECT_EQ(second.reused_tokens, static_cast<int>(prompt.size() + first.tokens.size() - 1));
    kiln::Session cold(tiny_model(), {.n_ctx = 256, .n_batch = 8});
    auto cold_run = cold.generate(next, sampled(8));
    EXPECT_EQ(second.tokens, cold_run.tokens);
    // The same prompt again reuses all but its last token.
    auto third = warm.generate(next, sampled(8));
    EXPECT_EQ(third.reused_tokens, static_cast<int>(next.size()) - 1);
    EXPECT_EQ(third.tokens, cold_run.tokens);
}
