// The agent conversation llama.cpp users ask for (its issues #20153, #22746,
// #23013): 20 turns on a hybrid model (recurrent layers, whose state cannot be
// cut back), each appending the reply, a tool result and a user message. No turn
// re-prefills the whole conversation: each evaluates only what follows the
// previous prompt, plus at most the message that starts there (the reply, which
// the template writes back differently from how it was generated), because the
// previous prompt left a checkpoint where its generation prompt starts.
//
// CI runs a tiny qwen35 at under 2k tokens. The long check (README) runs the
// same on any hybrid GGUF: KILN_AGENT_MODEL=path [KILN_AGENT_CTX=n] [KILN_AGENT_FILL=tokens per tool result].
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "kiln/chat.h"
#include "kiln/gguf/writer.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

std::string tool_text(int turn, int words) {
    std::string s = "{\"turn\": " + std::to_string(turn) + ", \"rows\": [";
    for (int i = 0; i < words; ++i) s += (i ? ", " : "") + std::to_string((turn * 7919 + i * 104729) % 1000);
    return s + "]}";
}

void run_agent_conversation(const std::string& model_path, int n_ctx, int fill_words) {
    auto model = kiln::Model::load(model_path);
    kiln::ChatOptions options;
    options.context = {.n_ctx = n_ctx, .n_batch = 64};
    options.template_source = kiln::test::read_file(kiln::test::data_path("shared/templates/Qwen3.5-4B.jinja"));
    kiln::ChatSession chat(model, options);
    chat.set_system("You are an agent. Call tools, read their results, answer briefly.");
    chat.add_user("Start by listing the files.");
    kiln::ChatTurnOptions turn;
    turn.generate.sampling = kiln::SamplingParams::greedy();
    turn.generate.max_tokens = 6;
    turn.generate.ignore_eos = true;
    turn.generate.spec.mode = kiln::SpecMode::Off;
    int prev_prompt = 0;
    std::string figures;  // (prompt, reused) per turn
    for (int k = 0; k < 20; ++k) {
        const kiln::ChatReply r = chat.reply(turn);
        const int prompt = r.usage.prompt_tokens, reused = r.usage.reused_prompt_tokens;
        if (k == 0) {
            EXPECT_EQ(reused, 0);
        } else {
            EXPECT_GT(reused, 0) << "turn " << k << ": a full re-prefill";
            // What follows the previous prompt, and at most the few tokens of its
            // generation prompt before that (the start of the reply's message).
            EXPECT_GE(reused, prev_prompt - 16) << "turn " << k << " of prompt " << prompt << " after " << prev_prompt;
        }
        prev_prompt = prompt;
        figures += " (" + std::to_string(prompt) + ", " + std::to_string(reused) + ")";
        if (std::getenv("KILN_AGENT_VERBOSE")) std::printf("turn %d: prompt %d reused %d\n", k, prompt, reused);
        chat.add_message({{"role", "tool"}, {"content", tool_text(k, fill_words)}});
        chat.add_user("Thanks. Next step " + std::to_string(k + 1) + ", please.");
    }
    EXPECT_GT(prev_prompt, 20 * fill_words);  // the conversation grew as meant
    std::printf("(prompt tokens, reused) per turn:%s\n", figures.c_str());
}

}  // namespace

TEST(AgentConversation, TwentyToolTurnsOnAHybridNeverReprefillEverything) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string tiny = kiln::test::temp_dir() + "/agent-tiny-qwen35-512.gguf";
    kiln::test::write_tiny_model("qwen35", kiln::test::smollm2_path(), tiny);
    // The tiny model says 512 positions; this conversation takes 2k.
    const std::string path = kiln::test::temp_dir() + "/agent-tiny-qwen35.gguf";
    {
        kiln::gguf::File src = kiln::gguf::File::open(tiny);
        kiln::gguf::Writer w;
        w.metadata() = kiln::gguf::materialize_metadata(src);
        w.metadata().add("qwen35.context_length", kiln::gguf::Value::u32(2048));
        for (const auto& t : src.tensors()) w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
        w.write(path);
    }
    run_agent_conversation(path, 2048, 6);
}

TEST(AgentConversation, LongCheckOnAGivenHybridModel) {
    const char* path = std::getenv("KILN_AGENT_MODEL");
    if (!path) GTEST_SKIP() << "a long check: set KILN_AGENT_MODEL to a hybrid GGUF (README, long checks)";
    const char* ctx = std::getenv("KILN_AGENT_CTX");
    const char* fill = std::getenv("KILN_AGENT_FILL");
    run_agent_conversation(path, ctx ? std::atoi(ctx) : 32768, fill ? std::atoi(fill) : 600);
}
