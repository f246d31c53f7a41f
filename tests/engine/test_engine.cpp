// The step-wise Engine: several sequences generated together give exactly what
// each gives alone; a prompt that shares a prefix with another slot copies its
// cells; full slots, cancellation and a constraint stage.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/engine.h"
#include "kiln/error.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

std::shared_ptr<const kiln::Model> model() {
    static std::shared_ptr<const kiln::Model> m = kiln::Model::load(kiln::test::smollm2_path());
    return m;
}

kiln::GenerateOptions options(uint64_t seed, float temperature, int max_tokens) {
    kiln::GenerateOptions o;
    o.max_tokens = max_tokens;
    o.sampling.temperature = temperature;
    o.sampling.seed = seed;
    o.sampling.repeat_penalty = 1.1f;  // history per sequence
    o.ignore_eos = true;
    return o;
}

std::vector<int32_t> prompt_of(const std::string& text) { return model()->tokenizer().encode(text); }

// Bans every token but one.
class OnlyToken : public kiln::SamplerStage {
public:
    OnlyToken(int32_t t, std::vector<int32_t>& accepted) : t_(t), accepted_(accepted) {}
    std::string_view name() const override { return "only"; }
    void apply(kiln::Candidates& c) override {
        for (auto& x : c.items)
            if (x.token != t_) x.logit = -INFINITY;
    }
    void accept(int32_t token) override { accepted_.push_back(token); }

private:
    int32_t t_;
    std::vector<int32_t>& accepted_;  // the stage ends with its sequence
};

class EngineTest : public ::testing::Test {
protected:
    void SetUp() override { KILN_REQUIRE_MODEL(kiln::test::smollm2_path()); }
};

}  // namespace

TEST_F(EngineTest, SequencesTogetherEqualEachAlone) {
    const std::vector<std::string> texts = {"Once upon a time", "The three primary colors are",
                                            "def fibonacci(n):\n    ", "Paris is the capital of"};
    std::vector<kiln::GenerationResult> alone;
    for (size_t i = 0; i < texts.size(); ++i) {
        kiln::Session s(model(), {.n_ctx = 128});
        alone.push_back(s.generate(prompt_of(texts[i]), options(10 + i, i % 2 ? 0.0f : 0.9f, 20)));
    }
    kiln::Engine engine(model(), {.n_ctx = 128, .n_seq_max = 4});
    std::vector<kiln::SeqId> ids;
    std::vector<std::string> streamed(texts.size());
    for (size_t i = 0; i < texts.size(); ++i)
        ids.push_back(engine.submit(prompt_of(texts[i]), options(10 + i, i % 2 ? 0.0f : 0.9f, 20), [&, i](const kiln::TokenEvent& e) {
            streamed[i] += e.text;
            return true;
        }));
    EXPECT_THROW(
        {
            try {
                engine.submit(prompt_of("one more"), options(1, 0.0f, 4));
            } catch (const kiln::Error& e) {
                EXPECT_EQ(e.kind(), kiln::ErrorKind::ResourceExhausted);
                throw;
            }
        },
        kiln::Error);
    while (engine.busy()) engine.step();
    for (size_t i = 0; i < texts.size(); ++i) {
        const auto& r = engine.result(ids[i]);
        EXPECT_EQ(r.tokens, alone[i].tokens) << texts[i];
        EXPECT_EQ(r.text, alone[i].text);
        EXPECT_EQ(streamed[i], r.text);
        EXPECT_EQ(r.finish, kiln::FinishReason::Length);
    }
}

TEST_F(EngineTest, SharedPrefixIsCopiedFromABusySlot) {
    const std::string system = "You are a helpful assistant who answers in one short sentence about geography. ";
    auto a = prompt_of(system + "Where is Lyon?");
    auto b = prompt_of(system + "Where is Kyoto?");
    size_t common = 0;
    while (a[common] == b[common]) ++common;
    kiln::Engine engine(model(), {.n_ctx = 128, .n_seq_max = 2});
    const kiln::SeqId sa = engine.submit(a, options(1, 0.0f, 12));
    engine.step();  // a's prompt is evaluated, it is generating
    const kiln::SeqId sb = engine.submit(b, options(1, 0.0f, 12));
    EXPECT_NE(sa, sb);
    while (engine.busy()) engine.step();
    EXPECT_EQ(engine.result(sb).reused_tokens, static_cast<int>(common));
    kiln::Session cold(model(), {.n_ctx = 128});
    EXPECT_EQ(engine.result(sb).tokens, cold.generate(b, options(1, 0.0f, 12)).tokens);
    // A free slot that holds the prompt is reused in place.
    const kiln::SeqId again = engine.submit(a, options(1, 0.0f, 4));
    EXPECT_EQ(again, sa);
    while (engine.busy()) engine.step();
    EXPECT_EQ(engine.result(again).reused_tokens, static_cast<int>(a.size()) - 1);
}

TEST_F(EngineTest, CancelEndsOneSequenceAndKeepsTheOthers) {
    kiln::Engine engine(model(), {.n_ctx = 128, .n_seq_max = 2});
    const kiln::SeqId x = engine.submit(prompt_of("Hello"), options(1, 0.0f, 30));
    const kiln::SeqId y = engine.submit(prompt_of("Goodbye"), options(1, 0.0f, 30));
    engine.step();
    engine.step();
    engine.cancel(x);
    EXPECT_TRUE(engine.finished(x));
    EXPECT_EQ(engine.result(x).finish, kiln::FinishReason::Cancelled);
    EXPECT_EQ(engine.n_active(), 1);
    while (engine.busy()) engine.step();
    EXPECT_EQ(engine.result(y).completion_tokens, 30);
}

TEST_F(EngineTest, AConstraintStageDecidesEveryToken) {
    kiln::Session s(model(), {.n_ctx = 128});
    std::vector<int32_t> accepted;
    auto r = s.generate(prompt_of("Hi"), options(3, 0.8f, 6), nullptr, std::make_unique<OnlyToken>(504, accepted));
    EXPECT_EQ(r.tokens, std::vector<int32_t>(6, 504));
    EXPECT_EQ(accepted, r.tokens);  // every generated token was accepted by the stage
}
