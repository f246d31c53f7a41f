// End to end on a real model: a get_weather tool round trip (call, result, final
// answer) through the library API, with the usage counts checked.
//
// Neither real model has a tool-capable template (SmolLM2's is plain ChatML,
// Gemma 3's file has none), so the test gives a copy of SmolLM2 the Qwen 2.5
// template (tagged JSON tool calls, ChatML turns that match SmolLM2's
// vocabulary), rewriting the GGUF's metadata with kiln's writer. SmolLM2-135M
// does not call tools on its own, so the first reply is prefilled with the
// opening of a call and the model writes the arguments and the closing tag.
#include <gtest/gtest.h>

#include "kiln/chat.h"
#include "kiln/gguf/writer.h"
#include "support/test_support.h"

namespace {

std::string rewrite_with_template(const std::string& src_path, const std::string& template_source, const std::string& out) {
    kiln::gguf::File src = kiln::gguf::File::open(src_path);
    kiln::gguf::Writer w;
    w.metadata() = kiln::gguf::materialize_metadata(src);
    w.metadata().add("tokenizer.chat_template", kiln::gguf::Value::string(template_source));
    for (const auto& t : src.tensors()) w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
    w.write(out);
    return out;
}

const char* k_tools = R"([{"type": "function", "function": {"name": "get_weather",
  "description": "Get the current weather in a city",
  "parameters": {"type": "object", "properties": {"location": {"type": "string", "description": "The city"}},
                 "required": ["location"]}}}])";

}  // namespace

TEST(ToolRoundTrip, GetWeatherCallResultAndAnswer) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string path = rewrite_with_template(
        kiln::test::smollm2_path(), kiln::test::read_file(kiln::test::data_path("shared/templates/Qwen-Qwen2.5-7B-Instruct.jinja")),
        kiln::test::temp_dir() + "/smollm2-tools.gguf");
    auto model = kiln::Model::load(path);
    kiln::ChatOptions options;
    options.context = {.n_ctx = 2048, .n_batch = 256};
    kiln::ChatSession chat(model, options);
    ASSERT_TRUE(chat.format().has_tools());
    EXPECT_EQ(chat.template_origin(), "file");

    kiln::ChatTurnOptions turn;
    turn.tools = nlohmann::json::parse(k_tools);
    turn.generate.sampling = kiln::SamplingParams::greedy();
    turn.generate.max_tokens = 40;
    turn.assistant_prefix = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"";
    chat.add_user("What is the weather like in Paris right now?");

    const size_t prompt_without_prefix = model->tokenizer().encode(chat.render(turn)).size();
    std::vector<kiln::ToolCall> calls;
    std::string text;
    kiln::ChatReply first = chat.reply(turn, [&](const kiln::ReplyEvent& e) {
        if (const auto* c = std::get_if<kiln::ToolCall>(&e)) calls.push_back(*c);
        if (const auto* t = std::get_if<kiln::TextDelta>(&e)) text += t->text;
        return true;
    });
    ASSERT_EQ(calls.size(), 1u) << "model wrote: " << text;
    EXPECT_EQ(calls[0].name, "get_weather");
    ASSERT_TRUE(calls[0].arguments.contains("location")) << calls[0].arguments.dump();
    EXPECT_FALSE(calls[0].arguments["location"].get<std::string>().empty());
    EXPECT_EQ(calls[0].id.rfind("call_", 0), 0u);
    std::printf("[ figures  ] first reply: finish %s, text after the call: '%s'\n",
                std::string(kiln::reply_finish_name(first.finish)).c_str(), text.c_str());
    EXPECT_EQ(first.finish, kiln::ReplyFinish::ToolCalls);
    EXPECT_GT(first.usage.prompt_tokens, 50);
    EXPECT_EQ(first.usage.reused_prompt_tokens, 0);
    EXPECT_GT(first.usage.completion_tokens, 0);
    std::printf("[ figures  ] call %s(%s); usage: prompt %d, reused %d, completion %d\n", calls[0].name.c_str(),
                calls[0].arguments.dump().c_str(), first.usage.prompt_tokens, first.usage.reused_prompt_tokens,
                first.usage.completion_tokens);
    // The history now holds the assistant's call with arguments as an object.
    const auto& last = chat.messages().back();
    EXPECT_EQ(last["role"], "assistant");
    EXPECT_TRUE(last["tool_calls"][0]["function"]["arguments"].is_object());

    chat.add_tool_result(calls[0], R"({"temperature_c": 18, "condition": "sunny"})");
    turn.assistant_prefix.clear();
    turn.generate.max_tokens = 48;
    std::string answer;
    kiln::ChatReply second = chat.reply(turn, [&](const kiln::ReplyEvent& e) {
        if (const auto* t = std::get_if<kiln::TextDelta>(&e)) answer += t->text;
        return true;
    });
    EXPECT_FALSE(answer.empty());
    EXPECT_TRUE(second.message.tool_calls.empty());
    EXPECT_NE(second.finish, kiln::ReplyFinish::ToolCalls);
    // The second turn reuses the first turn's prompt from the cache (up to where the
    // template writes the assistant's call back, which the prefill spelt differently)
    // and prefills only the rest.
    EXPECT_GE(second.usage.reused_prompt_tokens, static_cast<int>(prompt_without_prefix) - 2);
    EXPECT_LT(second.usage.reused_prompt_tokens, second.usage.prompt_tokens);
    std::printf("[ figures  ] answer: %s\n[ figures  ] usage: prompt %d, reused %d, completion %d\n", answer.c_str(),
                second.usage.prompt_tokens, second.usage.reused_prompt_tokens, second.usage.completion_tokens);
}
