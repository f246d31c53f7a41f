// A conversation that outgrows its context: by default the reply stops with
// finish length; with DropOldest the oldest turns leave the prompt, the system
// prompt and the latest turn stay, and the reply has room.
#include <gtest/gtest.h>

#include "kiln/chat.h"
#include "kiln/error.h"
#include "kiln/context.h"
#include "kiln/engine.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

void fill(kiln::ChatSession& chat, int turns) {
    chat.set_system("You are terse.");
    for (int i = 0; i < turns; ++i) {
        chat.add_user("Tell me fact number " + std::to_string(i) + " about the sea, in detail please.");
        chat.add_message({{"role", "assistant"}, {"content", "The sea covers most of the planet and holds many creatures."}});
    }
    chat.add_user("And the last one?");
}

kiln::ChatTurnOptions greedy(int max_tokens) {
    kiln::ChatTurnOptions o;
    o.generate.max_tokens = max_tokens;
    o.generate.sampling = kiln::SamplingParams::greedy();
    o.generate.ignore_eos = true;
    return o;
}

}  // namespace

TEST(ContextPolicy, StopEndsWithLengthAndDropOldestMakesRoom) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto model = kiln::Model::load(kiln::test::smollm2_path());
    kiln::ChatOptions stop_opts;
    stop_opts.context.n_ctx = 256;
    kiln::ChatSession stop(model, stop_opts);
    fill(stop, 6);
    const size_t before = stop.messages().size();
    auto r = stop.reply(greedy(100));
    EXPECT_EQ(r.finish, kiln::ReplyFinish::Length);
    EXPECT_LT(r.usage.completion_tokens, 100);  // the context filled first
    EXPECT_EQ(stop.dropped_turns(), 0);

    kiln::ChatOptions drop_opts = stop_opts;
    drop_opts.context_policy = kiln::ContextPolicy::DropOldest;
    kiln::ChatSession drop(model, drop_opts);
    fill(drop, 6);
    r = drop.reply(greedy(100));
    EXPECT_GT(drop.dropped_turns(), 0);
    EXPECT_EQ(r.usage.completion_tokens, 100);  // room for the whole reply
    EXPECT_EQ(r.finish, kiln::ReplyFinish::Length);
    // The history itself is kept whole; only the prompt left turns out.
    EXPECT_EQ(drop.messages().size(), before + 1);
    // What was sent still has the system prompt and the last question.
    const std::string rendered = drop.render(greedy(100));
    EXPECT_NE(rendered.find("You are terse."), std::string::npos);
    EXPECT_NE(rendered.find("And the last one?"), std::string::npos);
}

TEST(ContextPolicy, ALatestTurnLongerThanTheContextIsAnError) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto model = kiln::Model::load(kiln::test::smollm2_path());
    kiln::ChatOptions o;
    o.context.n_ctx = 64;
    o.context_policy = kiln::ContextPolicy::DropOldest;
    kiln::ChatSession chat(model, o);
    std::string long_text;
    for (int i = 0; i < 40; ++i) long_text += "word" + std::to_string(i) + " ";
    chat.add_user(long_text);
    try {
        chat.reply(greedy(8));
        FAIL();
    } catch (const kiln::Error& e) {
        EXPECT_EQ(e.kind(), kiln::ErrorKind::ResourceExhausted);
        EXPECT_NE(std::string(e.what()).find("latest turn"), std::string::npos) << e.what();
    }
}

// After DropOldest leaves turns out, the prompt sent still gets checkpoints at
// its messages' starts (a sliding-window model returns to an earlier message only
// through one): the kept messages' starts, not the whole history's.
TEST(ContextPolicy, DroppedTurnsStillCheckpointTheKeptMessages) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string path = kiln::test::temp_dir() + "/drop-oldest-gemma3.gguf";
    kiln::test::write_tiny_model("gemma3", kiln::test::smollm2_path(), path);
    auto model = kiln::Model::load(path);
    kiln::ChatOptions o;
    o.context.n_ctx = 256;
    o.context_policy = kiln::ContextPolicy::DropOldest;
    kiln::ChatSession chat(model, o);
    fill(chat, 6);
    chat.reply(greedy(100));
    ASSERT_GT(chat.dropped_turns(), 0);
    const std::vector<int64_t> plan = chat.session().context().seq_planned_checkpoints(0);
    // The prompt's end adds two; the kept system prompt, turns and last question add theirs.
    ASSERT_GT(plan.size(), 4u) << "no message-start checkpoints after dropping turns";
    const int64_t n_prompt = plan.back();
    for (int64_t p : plan) EXPECT_LE(p, n_prompt);
    EXPECT_LT(plan.front(), 32);  // the first kept message starts near the front
}
