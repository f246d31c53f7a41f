// The capabilities report and the messages a reply turns into for the next turn.
#include <gtest/gtest.h>

#include "reply/reply_harness.h"
#include "support/test_support.h"

using nlohmann::json;

TEST(ReplyDescribe, Qwen3Report) {
    kiln::ChatFormat f = kiln::test::format_of("Qwen-Qwen3-0.6B.jinja");
    EXPECT_EQ(kiln::describe_chat_format(f),
              "framing:          markers\n"
              "reasoning:        tags  <think> … </think>\n"
              "  starts open:    no\n"
              "  can disable:    yes (enable_thinking / thinking)\n"
              "tools:            hermes  <tool_call> … </tool_call>\n"
              "  call ids:       call_ + 24 letters and digits\n"
              "end markers:      <|im_end|>\n"
              "capabilities:     reasoning=yes can_disable_thinking=yes tools=yes\n");
}

TEST(ReplyDescribe, ReportsOfOtherFamilies) {
    std::string gemma3 = kiln::describe_chat_format(kiln::test::format_of("google-gemma-3-it.jinja"));
    EXPECT_NE(gemma3.find("reasoning:        no\n"), std::string::npos) << gemma3;
    EXPECT_NE(gemma3.find("tools:            no\n"), std::string::npos) << gemma3;
    EXPECT_NE(gemma3.find("capabilities:     reasoning=no can_disable_thinking=no tools=no"), std::string::npos);

    std::string qwen35 = kiln::describe_chat_format(kiln::test::format_of("Qwen3.5-4B.jinja"));
    EXPECT_NE(qwen35.find("starts open:    when the generation prompt ends with the opening marker"), std::string::npos);
    EXPECT_NE(qwen35.find("qwen-xml  <tool_call> … </tool_call>"), std::string::npos) << qwen35;

    std::string oss = kiln::describe_chat_format(kiln::test::format_of("openai-gpt-oss-120b.jinja"));
    EXPECT_NE(oss.find("framing:          harmony"), std::string::npos) << oss;
    EXPECT_NE(oss.find("channels  <|channel|>analysis<|message|> … <|end|>"), std::string::npos) << oss;

    std::string granite = kiln::describe_chat_format(kiln::test::format_of("ibm-granite-granite-3.3-2B-Instruct.jinja"));
    EXPECT_NE(granite.find("dropped wrappers: <response>  </response>"), std::string::npos) << granite;

    std::string nemo = kiln::describe_chat_format(kiln::test::format_of("mistralai-Mistral-Nemo-Instruct-2407.jinja"));
    EXPECT_NE(nemo.find("call ids:       9 letters and digits"), std::string::npos) << nemo;
    EXPECT_NE(nemo.find("end markers:      (none)"), std::string::npos) << nemo;

    kiln::ChatFormat with_vocab = kiln::detect_chat_format(
        kiln::test::read_file(kiln::test::data_path("shared/templates/Qwen-Qwen3-0.6B.jinja")),
        std::vector<std::string>{"<think>", "</think>", "<tool_call>"});
    std::string v = kiln::describe_chat_format(with_vocab);
    EXPECT_NE(v.find("<think> … </think>  (single tokens)"), std::string::npos) << v;
    EXPECT_NE(v.find("</tool_call>  (single token)"), std::string::npos) << v;
}

TEST(ReplyMessages, AssistantMessageWithToolCalls) {
    kiln::ChatFormat f = kiln::test::format_of("Qwen-Qwen3-0.6B.jinja");
    kiln::ReplyOptions o;
    o.id_seed = 5;
    kiln::ReplyParser p(f, o);
    p.push("<think>\nNeed the weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
           "\"{\\\"location\\\": \\\"Paris\\\"}\"}\n</tool_call>");
    p.finish(kiln::ReplyFinish::Stop);
    const kiln::ReplyMessage& m = p.message();
    ASSERT_EQ(m.tool_calls.size(), 1u);
    std::string id = kiln::ToolCallIds(kiln::ToolCallIdStyle::OpenAi, 5).next();
    EXPECT_EQ(m.tool_calls[0].id, id);

    json msg = kiln::assistant_message(m);
    json want = {{"role", "assistant"},
                 {"content", ""},
                 {"reasoning_content", "Need the weather."},
                 {"tool_calls",
                  {{{"id", id},
                    {"type", "function"},
                    {"function", {{"name", "get_weather"}, {"arguments", {{"location", "Paris"}}}}}}}}};
    EXPECT_EQ(msg, want);
    // Arguments are objects, not JSON strings: templates iterate over them.
    EXPECT_TRUE(msg["tool_calls"][0]["function"]["arguments"].is_object());
    EXPECT_FALSE(kiln::assistant_message(m, false).contains("reasoning_content"));

    json result = kiln::tool_result_message(m.tool_calls[0], "{\"temperature\": 21}");
    EXPECT_EQ(result, (json{{"role", "tool"}, {"tool_call_id", id}, {"name", "get_weather"}, {"content", "{\"temperature\": 21}"}}));
}

TEST(ReplyMessages, AssistantMessageWithText) {
    kiln::ChatFormat f = kiln::test::format_of("google-gemma-3-it.jinja");
    kiln::ReplyParser p(f);
    p.push("Paris is the capital of France.<end_of_turn>");
    p.finish(kiln::ReplyFinish::Stop);
    EXPECT_EQ(kiln::assistant_message(p.message()),
              (json{{"role", "assistant"}, {"content", "Paris is the capital of France."}}));
    EXPECT_EQ(kiln::assistant_message(kiln::ReplyMessage{}), (json{{"role", "assistant"}, {"content", ""}}));
}

TEST(ReplyMessages, ErrorsAreCollected) {
    kiln::ChatFormat f = kiln::test::format_of("Qwen-Qwen3-0.6B.jinja");
    kiln::ReplyParser p(f);
    p.push("<tool_call>{oops}</tool_call>Fine.");
    auto end = p.finish(kiln::ReplyFinish::Stop);
    ASSERT_EQ(p.message().errors.size(), 1u);
    EXPECT_EQ(p.message().errors[0], "malformed tool call: <tool_call>{oops}");
    EXPECT_EQ(p.message().content, "Fine.");
    EXPECT_EQ(std::get<kiln::ReplyEnd>(end.back()).finish, kiln::ReplyFinish::Stop);
    EXPECT_EQ(kiln::reply_finish_name(kiln::ReplyFinish::ToolCalls), "tool_calls");
    EXPECT_EQ(kiln::reply_finish_name(kiln::ReplyFinish::Cancelled), "cancelled");
}
