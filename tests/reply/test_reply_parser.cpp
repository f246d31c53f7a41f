// The reply parser on realistic model outputs of every syntax, fed in every
// split (whole, each single cut, byte by byte, pairs of cuts, random cuts), plus
// malformed bodies, stop strings and end markers.
#include <gtest/gtest.h>

#include "reply/reply_harness.h"

using kiln::ChatFormat;
using kiln::ReplyFinish;
using kiln::ReplyOptions;
using kiln::test::check_all_splits;
using kiln::test::format_of;
using nlohmann::json;

namespace {

// Expected events; generated ids follow the harness's seed.
class Expect {
public:
    explicit Expect(const ChatFormat& f) : ids_(f.id_style, 1234) {}
    Expect& text(std::string t) { return add({{"text", std::move(t)}}); }
    Expect& thinking(std::string t) { return add({{"thinking", std::move(t)}}); }
    Expect& call(std::string name, json args, std::string id = "") {
        if (id.empty()) id = ids_.next();
        return add({{"call", {{"id", id}, {"name", std::move(name)}, {"arguments", std::move(args)}}}});
    }
    Expect& error(std::string body) { return add({{"error", "malformed tool call: " + std::move(body)}}); }
    // A malformed call whose arguments object had begun: it may have been
    // announced while streaming, so it took an id.
    Expect& announced_error(std::string body) {
        ids_.next();
        return error(std::move(body));
    }
    json end(const char* finish) {
        events_.push_back({{"end", finish}});
        return events_;
    }

private:
    Expect& add(json e) {
        events_.push_back(std::move(e));
        return *this;
    }
    kiln::ToolCallIds ids_;
    json events_ = json::array();
};

const json k_tools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {
     "location": {"type": "string"}, "days": {"type": "integer"}, "zip": {"type": "string"}}}}},
  {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object", "properties": {
     "timezone": {"type": "string"}}}}}
])");

ReplyOptions thinking_open() {
    ReplyOptions o;
    o.starts_in_thinking = true;
    return o;
}

ReplyOptions with_tools(bool starts_in_thinking = false) {
    ReplyOptions o;
    o.tools = k_tools;
    o.starts_in_thinking = starts_in_thinking;
    return o;
}

#define EXPECT_SPLITS(format, options, text, expected) \
    EXPECT_EQ(check_all_splits(format, options, text, expected), "")

}  // namespace

// ---- <think> tags + Hermes JSON (Qwen 3) -------------------------------------

TEST(ReplyParser, Qwen3ThinkingThenTwoCalls) {
    ChatFormat f = format_of("Qwen-Qwen3-0.6B.jinja");
    std::string text =
        "<think>\nThe user wants the weather in Paris and the time. I'll call both tools.\n</think>\n\n"
        "I'll look that up.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\", "
        "\"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"timezone\": "
        "\"Europe/Paris\"}}\n</tool_call><|im_end|>";
    json want = Expect(f)
                    .thinking("The user wants the weather in Paris and the time. I'll call both tools.")
                    .text("I'll look that up.")
                    .call("get_weather", {{"location", "Paris"}, {"days", 2}})
                    .call("get_time", {{"timezone", "Europe/Paris"}})
                    .end("tool_calls");
    EXPECT_SPLITS(f, ReplyOptions(), text, want);
}

TEST(ReplyParser, Qwen3AnswerEndsAtImEnd) {
    ChatFormat f = format_of("Qwen-Qwen3-0.6B.jinja");
    std::string text = "<think>\n2 + 2 = 4.\n</think>\n\nThe answer is **4**.<|im_end|>\n<|im_start|>user\nignored";
    EXPECT_SPLITS(f, ReplyOptions(), text, Expect(f).thinking("2 + 2 = 4.").text("The answer is **4**.").end("stop"));
}

TEST(ReplyParser, Qwen3EmptyThinkBlockWhenThinkingIsOff) {
    ChatFormat f = format_of("Qwen-Qwen3-0.6B.jinja");
    EXPECT_SPLITS(f, ReplyOptions(), "<think>\n\n</think>\n\nHello! How can I help?",
                  Expect(f).text("Hello! How can I help?").end("stop"));
}

TEST(ReplyParser, ClosingMarkerWithoutOpeningIsDropped) {
    ChatFormat f = format_of("Qwen-Qwen3-0.6B.jinja");
    EXPECT_SPLITS(f, ReplyOptions(), "Sure.</think> Here it is.", Expect(f).text("Sure. Here it is.").end("stop"));
}

TEST(ReplyParser, Qwen3UnfinishedThinkingIsThinking) {
    ChatFormat f = format_of("Qwen-Qwen3-0.6B.jinja");
    EXPECT_EQ(check_all_splits(f, ReplyOptions(), "<think>\nStill thinking about", Expect(f).thinking("Still thinking about").end("length"),
                               ReplyFinish::Length),
              "");
}

// ---- generation starts inside the think block ------------------------------------

TEST(ReplyParser, DeepSeekR1DistillStartsInThinking) {
    ChatFormat f = format_of("deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja");
    ASSERT_TRUE(kiln::prompt_opens_thinking(f, "<｜User｜>Hi<｜Assistant｜><think>\n"));
    std::string text =
        "Okay, the user says hi. I should greet them.\n</think>\n\nHello! How can I help you today?"
        "<｜end▁of▁sentence｜>";
    EXPECT_SPLITS(f, thinking_open(), text,
                  Expect(f).thinking("Okay, the user says hi. I should greet them.")
                      .text("Hello! How can I help you today?")
                      .end("stop"));
}

TEST(ReplyParser, DeepSeekR1ToolCall) {
    ChatFormat f = format_of("llama-cpp-deepseek-r1.jinja");
    std::string text =
        "I need the weather tool.\n</think>\n\n<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>"
        "get_weather\n```json\n{\"location\": \"Tokyo\", \"days\": 1}\n```<｜tool▁call▁end｜>\n"
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{\"timezone\": \"Asia/Tokyo\"}\n```"
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>";
    EXPECT_SPLITS(f, thinking_open(), text,
                  Expect(f).thinking("I need the weather tool.")
                      .call("get_weather", {{"location", "Tokyo"}, {"days", 1}})
                      .call("get_time", {{"timezone", "Asia/Tokyo"}})
                      .end("tool_calls"));
}

TEST(ReplyParser, DeepSeekV31ToolCall) {
    ChatFormat f = format_of("deepseek-ai-DeepSeek-V3.1.jinja");
    std::string text =
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{\"location\": \"Tokyo\"}"
        "<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜>";
    EXPECT_SPLITS(f, ReplyOptions(), text, Expect(f).call("get_weather", {{"location", "Tokyo"}}).end("tool_calls"));
}

TEST(ReplyParser, Qwen35XmlStartsInThinking) {
    ChatFormat f = format_of("Qwen3.5-4B.jinja");
    std::string text =
        "The user asks for São Paulo's forecast.\n</think>\n\n<tool_call>\n<function=get_weather>\n"
        "<parameter=location>\nSão Paulo\n</parameter>\n<parameter=days>\n3\n</parameter>\n"
        "<parameter=zip>\n01000\n</parameter>\n</function>\n</tool_call><|im_end|>";
    EXPECT_SPLITS(f, with_tools(true), text,
                  Expect(f).thinking("The user asks for São Paulo's forecast.")
                      .call("get_weather", {{"location", "São Paulo"}, {"days", 3}, {"zip", "01000"}})
                      .end("tool_calls"));
}

TEST(ReplyParser, QwenXmlWithoutSchemaReadsJsonLookingValues) {
    ChatFormat f = format_of("Qwen3-Coder.jinja");
    std::string text =
        "<tool_call>\n<function=run>\n<parameter=code>\nprint(\"hi\")\n    x = 1\n</parameter>\n"
        "<parameter=count>\n2\n</parameter>\n<parameter=flags>\n[\"-v\", \"-x\"]\n</parameter>\n</function>\n"
        "</tool_call>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).call("run", {{"code", "print(\"hi\")\n    x = 1"}, {"count", 2}, {"flags", {"-v", "-x"}}})
                      .end("tool_calls"));
}

TEST(ReplyParser, SeedOssThinkAndXmlCall) {
    ChatFormat f = format_of("ByteDance-Seed-OSS.jinja");
    std::string text =
        "<seed:think>Need the forecast.</seed:think>Sure.<seed:tool_call>\n<function=get_weather>\n"
        "<parameter=location>Paris</parameter>\n</function>\n</seed:tool_call><seed:eos>";
    EXPECT_SPLITS(f, with_tools(), text,
                  Expect(f).thinking("Need the forecast.").text("Sure.").call("get_weather", {{"location", "Paris"}}).end("tool_calls"));
}

// ---- Gemma 4 ------------------------------------------------------------------

TEST(ReplyParser, Gemma4ChannelThoughtAndCall) {
    ChatFormat f = format_of("gemma4.jinja");
    std::string text =
        "<|channel>thought\nThe user wants the weather; call the tool.<channel|>Let me look that up."
        "<|tool_call>call:get_weather{days:3,location:<|\"|>Paris, France<|\"|>,metric:true,"
        "options:{hourly:false,fields:[<|\"|>temp<|\"|>,<|\"|>wind<|\"|>]}}<tool_call|><turn|>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).thinking("The user wants the weather; call the tool.")
                      .text("Let me look that up.")
                      .call("get_weather", {{"days", 3},
                                            {"location", "Paris, France"},
                                            {"metric", true},
                                            {"options", {{"hourly", false}, {"fields", {"temp", "wind"}}}}})
                      .end("tool_calls"));
}

TEST(ReplyParser, Gemma4MalformedCallIsAnErrorAndTheStreamGoesOn) {
    ChatFormat f = format_of("gemma4.jinja");
    std::string text = "<|tool_call>call:get_weather{location:<|\"|>Paris}<tool_call|>Sorry, let me retry.";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).error("<|tool_call>call:get_weather{location:<|\"|>Paris}").text("Sorry, let me retry.").end("stop"));
}

// ---- GPT-OSS (harmony channels) -------------------------------------------------

TEST(ReplyParser, GptOssAnalysisThenToolCall) {
    ChatFormat f = format_of("openai-gpt-oss-120b.jinja");
    std::string text =
        "<|channel|>analysis<|message|>User wants the weather in Tokyo. Use get_weather.<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
        "{\"location\":\"Tokyo\"}<|call|>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).thinking("User wants the weather in Tokyo. Use get_weather.")
                      .call("get_weather", {{"location", "Tokyo"}})
                      .end("tool_calls"));
}

TEST(ReplyParser, GptOssFinalAnswer) {
    ChatFormat f = format_of("openai-gpt-oss-120b.jinja");
    std::string text =
        "<|channel|>analysis<|message|>Simple greeting.<|end|><|start|>assistant<|channel|>final<|message|>"
        "Hello! How can I help?<|return|>";
    EXPECT_SPLITS(f, ReplyOptions(), text, Expect(f).thinking("Simple greeting.").text("Hello! How can I help?").end("stop"));
}

TEST(ReplyParser, GptOssTextWithoutHeader) {
    ChatFormat f = format_of("openai-gpt-oss-120b.jinja");
    EXPECT_SPLITS(f, ReplyOptions(), "Hello there<|return|>", Expect(f).text("Hello there").end("stop"));
}

// ---- Granite ------------------------------------------------------------------

TEST(ReplyParser, Granite3ToolCallList) {
    ChatFormat f = format_of("ibm-granite-granite-3.3-2B-Instruct.jinja");
    std::string text =
        "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Boston\"}}, "
        "{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"America/New_York\"}}]<|end_of_text|>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).call("get_weather", {{"location", "Boston"}})
                      .call("get_time", {{"timezone", "America/New_York"}})
                      .end("tool_calls"));
}

TEST(ReplyParser, Granite3ThinkingAndResponseWrapper) {
    ChatFormat f = format_of("ibm-granite-granite-3.3-2B-Instruct.jinja");
    std::string text = "<think>The user asks 2+2.</think><response>2 + 2 = 4.</response><|end_of_text|>";
    EXPECT_SPLITS(f, ReplyOptions(), text, Expect(f).thinking("The user asks 2+2.").text("2 + 2 = 4.").end("stop"));
}

TEST(ReplyParser, GraniteNotJsonAfterMarkerIsAnError) {
    ChatFormat f = format_of("ibm-granite-granite-3.3-2B-Instruct.jinja");
    std::string text = "<|tool_call|>I cannot call tools.\nSorry about that.";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).error("<|tool_call|>I cannot call tools.").text("Sorry about that.").end("stop"));
}

// ---- Llama 3.x ----------------------------------------------------------------

TEST(ReplyParser, Llama31BareJsonCall) {
    ChatFormat f = format_of("meta-llama-Llama-3.1-8B-Instruct.jinja");
    std::string text = "{\"name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\", \"days\": 2}}<|eom_id|>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).call("get_weather", {{"location", "Paris"}, {"days", 2}}).end("tool_calls"));
}

TEST(ReplyParser, Llama32BareJsonTypedCallAfterWhitespace) {
    ChatFormat f = format_of("meta-llama-Llama-3.2-3B-Instruct.jinja");
    std::string text = "\n {\"type\": \"function\", \"name\": \"get_time\", \"parameters\": {\"timezone\": \"UTC\"}}";
    EXPECT_SPLITS(f, ReplyOptions(), text, Expect(f).call("get_time", {{"timezone", "UTC"}}).end("tool_calls"));
}

TEST(ReplyParser, Llama31PythonTagBuiltinTool) {
    ChatFormat f = format_of("meta-llama-Llama-3.1-8B-Instruct.jinja");
    std::string text = "<|python_tag|>brave_search.call(query=\"weather in Paris\", count=3)<|eom_id|>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).call("brave_search", {{"query", "weather in Paris"}, {"count", 3}}).end("tool_calls"));
}

TEST(ReplyParser, Llama31PythonTagCode) {
    ChatFormat f = format_of("meta-llama-Llama-3.1-8B-Instruct.jinja");
    std::string text = "<|python_tag|>import math\nprint(math.sqrt(2))<|eom_id|>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).call("python", {{"code", "import math\nprint(math.sqrt(2))"}}).end("tool_calls"));
}

TEST(ReplyParser, Llama31JsonThatIsNotACallIsText) {
    ChatFormat f = format_of("meta-llama-Llama-3.1-8B-Instruct.jinja");
    EXPECT_SPLITS(f, ReplyOptions(), "{\"answer\": 42, \"unit\": \"none\"} is the JSON.<|eot_id|>",
                  Expect(f).text("{\"answer\": 42, \"unit\": \"none\"} is the JSON.").end("stop"));
    EXPECT_SPLITS(f, ReplyOptions(), "The set {1, 2} has {\"name\": \"x\", \"parameters\": {}} inside.",
                  Expect(f).text("The set {1, 2} has {\"name\": \"x\", \"parameters\": {}} inside.").end("stop"));
}

TEST(ReplyParser, Llama31TruncatedBareCallIsAnError) {
    ChatFormat f = format_of("meta-llama-Llama-3.1-8B-Instruct.jinja");
    EXPECT_EQ(check_all_splits(f, ReplyOptions(), "{\"name\": \"get_weather\", \"parameters\": {\"loc",
                               Expect(f).error("{\"name\": \"get_weather\", \"parameters\": {\"loc").end("length"),
                               ReplyFinish::Length),
              "");
}

// ---- Mistral ------------------------------------------------------------------

TEST(ReplyParser, MistralNemoJsonListWithModelIds) {
    ChatFormat f = format_of("mistralai-Mistral-Nemo-Instruct-2407.jinja");
    std::string text =
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}, \"id\": \"a1b2c3d4e\"}, "
        "{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"CET\"}}]";
    Expect e(f);
    e.call("get_weather", {{"location", "Paris"}}, "a1b2c3d4e");
    EXPECT_SPLITS(f, ReplyOptions(), text, e.call("get_time", {{"timezone", "CET"}}).end("tool_calls"));
}

TEST(ReplyParser, MistralSmallNameCallIdArgs) {
    ChatFormat f = format_of("Mistral-Small-3.2-24B-Instruct-2506.jinja");
    std::string text = "I'll check.[TOOL_CALLS]get_weather[CALL_ID]abc123xyz[ARGS]{\"location\": \"Paris\"}";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).text("I'll check.").call("get_weather", {{"location", "Paris"}}, "abc123xyz").end("tool_calls"));
}

TEST(ReplyParser, DevstralSeveralNameArgsCalls) {
    ChatFormat f = format_of("unsloth-mistral-Devstral-Small-2507.jinja");
    std::string text =
        "[TOOL_CALLS]get_weather[ARGS]{\"location\": \"Paris\", \"days\": 1}[TOOL_CALLS]get_time[ARGS]{}"
        "\nDone.";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).call("get_weather", {{"location", "Paris"}, {"days", 1}})
                      .call("get_time", json::object())
                      .text("Done.")
                      .end("tool_calls"));
}

TEST(ReplyParser, MinistralThinkTags) {
    ChatFormat f = format_of("mistralai-Ministral-3-14B-Reasoning-2512.jinja");
    std::string text = "[THINK]The user greets me.[/THINK]Hello! [TOOL_CALLS]get_time[ARGS]{\"timezone\": \"UTC\"}";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).thinking("The user greets me.").text("Hello!").call("get_time", {{"timezone", "UTC"}}).end("tool_calls"));
}

TEST(ReplyParser, MistralArgsWithoutArgsMarkerIsAnError) {
    ChatFormat f = format_of("unsloth-mistral-Devstral-Small-2507.jinja");
    EXPECT_SPLITS(f, ReplyOptions(), "[TOOL_CALLS]get_weather{\"location\": \"Paris\"}",
                  Expect(f).error("[TOOL_CALLS]get_weather{\"location\": \"Paris\"}").end("stop"));
}

// ---- Hermes / tagged JSON -----------------------------------------------------

TEST(ReplyParser, HermesShapesOfArguments) {
    ChatFormat f = format_of("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja");
    std::string text =
        "<tool_call>\n{\"arguments\": {\"symbol\": \"TSLA\"}, \"name\": \"get_stock\"}\n</tool_call>\n"
        "<tool_call>\n{\"name\": \"a\", \"arguments\": \"{\\\"x\\\": 1}\"}\n</tool_call>\n"
        "<tool_call>\n{\"type\": \"function\", \"function\": {\"name\": \"b\", \"arguments\": {\"y\": [1, 2]}}}\n</tool_call>\n"
        "<tool_call>\n{\"function\": \"c\", \"parameters\": null}\n</tool_call>\n"
        "<tool_call>\n```json\n{\"name\": \"d\", \"parameters\": {\"z\": true}}\n```\n</tool_call><|im_end|>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).call("get_stock", {{"symbol", "TSLA"}})
                      .call("a", {{"x", 1}})
                      .call("b", {{"y", {1, 2}}})
                      .call("c", json::object())
                      .call("d", {{"z", true}})
                      .end("tool_calls"));
}

TEST(ReplyParser, HermesMalformedBodiesAreErrorsAndTheStreamGoesOn) {
    ChatFormat f = format_of("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja");
    std::string text =
        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": }\n</tool_call>"
        "Retrying.<tool_call>{\"arguments\": {}}</tool_call>"
        "<tool_call>{\"name\": \"f\", \"arguments\": [1, 2]}</tool_call>"
        "<tool_call>[{\"name\": \"ok\", \"arguments\": {}}, {\"arguments\": {}}]</tool_call>After.";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).announced_error("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": }")
                      .text("Retrying.")
                      .error("<tool_call>{\"arguments\": {}}")
                      .error("<tool_call>{\"name\": \"f\", \"arguments\": [1, 2]}")
                      .call("ok", json::object())
                      .error("{\"arguments\":{}}")
                      .text("After.")
                      .end("tool_calls"));
}

TEST(ReplyParser, HermesTruncatedCallAtLengthIsAnError) {
    ChatFormat f = format_of("Qwen-Qwen2.5-7B-Instruct.jinja");
    EXPECT_EQ(check_all_splits(f, ReplyOptions(), "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"argum",
                               Expect(f).text("Checking.").error("<tool_call>\n{\"name\": \"get_weather\", \"argum").end("length"),
                               ReplyFinish::Length),
              "");
}

TEST(ReplyParser, HermesUnclosedButCompleteCallAtTheEnd) {
    ChatFormat f = format_of("Qwen-Qwen2.5-7B-Instruct.jinja");
    EXPECT_SPLITS(f, ReplyOptions(), "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {}}\n",
                  Expect(f).call("get_time", json::object()).end("tool_calls"));
}

TEST(ReplyParser, NemotronToolcallList) {
    ChatFormat f = format_of("NVIDIA-Nemotron-Nano-v2.jinja");
    std::string text =
        "I need to check.\n</think>\n\n<TOOLCALL>[{\"name\": \"get_weather\", \"arguments\": {\"location\": "
        "\"Paris\"}}]</TOOLCALL>\n<SPECIAL_12>";
    EXPECT_SPLITS(f, thinking_open(), text,
                  Expect(f).thinking("I need to check.").call("get_weather", {{"location", "Paris"}}).end("tool_calls"));
}

TEST(ReplyParser, MiniMaxM1ObjectsOnSeparateLines) {
    ChatFormat f = format_of("MiniMax-M1.jinja");
    std::string text =
        "<tool_calls>\n{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}\n"
        "{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"CET\"}}\n</tool_calls><end_of_sentence>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).call("get_weather", {{"location", "Paris"}}).call("get_time", {{"timezone", "CET"}}).end("tool_calls"));
}

TEST(ReplyParser, AprielReasoningThenFinalResponseAndCall) {
    ChatFormat f = format_of("Apriel-1.6-15b-Thinker-fixed.jinja");
    std::string text =
        "The user asks for the weather. I will call the tool.\n[BEGIN FINAL RESPONSE]\nChecking now.\n"
        "<tool_calls>[{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}]</tool_calls>\n<|end|>";
    ASSERT_TRUE(kiln::prompt_opens_thinking(f, "<|begin_assistant|>\nHere are my reasoning steps:\n"));
    EXPECT_SPLITS(f, thinking_open(), text,
                  Expect(f).thinking("The user asks for the weather. I will call the tool.")
                      .text("Checking now.")
                      .call("get_weather", {{"location", "Paris"}})
                      .end("tool_calls"));
    // A call straight out of the reasoning ends it.
    EXPECT_SPLITS(f, thinking_open(), "Need weather.\n<tool_calls>[{\"name\": \"get_time\", \"arguments\": {}}]</tool_calls>",
                  Expect(f).thinking("Need weather.").call("get_time", json::object()).end("tool_calls"));
}

TEST(ReplyParser, Apriel15EndFinalResponseIsDropped) {
    ChatFormat f = format_of("unsloth-Apriel-1.5.jinja");
    EXPECT_SPLITS(f, thinking_open(), "Easy.\n[BEGIN FINAL RESPONSE]\nIt is 4.\n[END FINAL RESPONSE]\n<|end|>",
                  Expect(f).thinking("Easy.").text("It is 4.").end("stop"));
}

TEST(ReplyParser, Phi4MiniTaggedJson) {
    ChatFormat f = format_of("llama-cpp-microsoft-Phi-4-mini-instruct.jinja");
    std::string text = "<|tool_call|>{\"name\": \"get_time\", \"arguments\": {\"timezone\": \"UTC\"}}<|/tool_call|><|end|>";
    EXPECT_SPLITS(f, ReplyOptions(), text, Expect(f).call("get_time", {{"timezone", "UTC"}}).end("tool_calls"));
}

TEST(ReplyParser, CommandR7bThinkingActionAndResponse) {
    ChatFormat f = format_of("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja");
    std::string call =
        "<|START_THINKING|>I will call the weather tool.<|END_THINKING|><|START_ACTION|>[\n"
        "    {\"tool_call_id\": \"0\", \"tool_name\": \"get_weather\", \"parameters\": {\"location\": \"Paris\"}}\n"
        "]<|END_ACTION|><|END_OF_TURN_TOKEN|>";
    EXPECT_SPLITS(f, ReplyOptions(), call,
                  Expect(f).thinking("I will call the weather tool.").call("get_weather", {{"location", "Paris"}}).end("tool_calls"));
    EXPECT_SPLITS(f, ReplyOptions(), "<|START_RESPONSE|>It is sunny.<|END_RESPONSE|><|END_OF_TURN_TOKEN|>",
                  Expect(f).text("It is sunny.").end("stop"));
}

TEST(ReplyParser, CommandRPlusFencedActionList) {
    ChatFormat f = format_of("CohereForAI-c4ai-command-r-plus-tool_use.jinja");
    std::string text =
        "Action:\n```json\n[\n    {\n        \"tool_name\": \"internet_search\",\n        \"parameters\": "
        "{\"query\": \"weather Paris\"}\n    }\n]\n```<|END_OF_TURN_TOKEN|>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).call("internet_search", {{"query", "weather Paris"}}).end("tool_calls"));
}

TEST(ReplyParser, FirefunctionFunctools) {
    ChatFormat f = format_of("fireworks-ai-llama-3-firefunction-v2.jinja");
    std::string text = " functools[{\"name\": \"get_weather\", \"arguments\": {\"location\": \"Paris\"}}]<|eot_id|>";
    EXPECT_SPLITS(f, ReplyOptions(), text, Expect(f).call("get_weather", {{"location", "Paris"}}).end("tool_calls"));
}

TEST(ReplyParser, GigaChatFunctionCallRole) {
    ChatFormat f = format_of("GigaChat3-10B-A1.8B.jinja");
    std::string text =
        "Сейчас проверю.<|message_sep|>\n\nfunction call<|role_sep|>\n{\"name\": \"get_weather\", \"arguments\": "
        "{\"location\": \"Москва\"}}<|message_sep|>\n\n";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).text("Сейчас проверю.").call("get_weather", {{"location", "Москва"}}).end("tool_calls"));
}

// ---- Kimi ---------------------------------------------------------------------

TEST(ReplyParser, KimiK2SectionsKeepTheModelIds) {
    ChatFormat f = format_of("Kimi-K2-Thinking.jinja");
    std::string text =
        "<think>Use the tool.</think>Checking.<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
        "<|tool_call_argument_begin|>{\"location\": \"Paris\"}<|tool_call_end|><|tool_call_begin|>functions.get_time:1"
        "<|tool_call_argument_begin|>{\"timezone\": \"CET\"}<|tool_call_end|><|tool_calls_section_end|><|im_end|>";
    Expect e(f);
    e.thinking("Use the tool.").text("Checking.");
    e.call("get_weather", {{"location", "Paris"}}, "functions.get_weather:0");
    EXPECT_SPLITS(f, ReplyOptions(), text, e.call("get_time", {{"timezone", "CET"}}, "functions.get_time:1").end("tool_calls"));
}

TEST(ReplyParser, KimiK3Xtml) {
    ChatFormat f = format_of("Kimi-K3.jinja");
    std::string text =
        "Need the weather.<|close|>think<|sep|><|open|>response<|sep|>Checking.<|close|>response<|sep|>"
        "<|open|>tools<|sep|><|open|>call tool=\"get_weather\" index=\"1\"<|sep|>"
        "<|open|>argument key=\"location\" type=\"string\"<|sep|>Paris &amp; Lyon<|close|>argument<|sep|>"
        "<|open|>argument key=\"days\" type=\"number\"<|sep|>3<|close|>argument<|sep|><|close|>call<|sep|>"
        "<|open|>call tool=\"get_time\" index=\"2\"<|sep|><|open|>json type=\"object\"<|sep|>{\"timezone\": \"CET\"}"
        "<|close|>json<|sep|><|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|><|end_of_msg|>";
    EXPECT_SPLITS(f, thinking_open(), text,
                  Expect(f).thinking("Need the weather.")
                      .text("Checking.")
                      .call("get_weather", {{"location", "Paris &amp; Lyon"}, {"days", 3}})
                      .call("get_time", {{"timezone", "CET"}})
                      .end("tool_calls"));
}

// ---- GLM / Laguna ---------------------------------------------------------------

TEST(ReplyParser, Glm46ArgKeyValue) {
    ChatFormat f = format_of("GLM-4.6.jinja");
    std::string text =
        "\n<think>Need weather.</think>\nLet me check.\n<tool_call>get_weather\n<arg_key>location</arg_key>\n"
        "<arg_value>Beijing</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>"
        "<|observation|>";
    EXPECT_SPLITS(f, with_tools(), text,
                  Expect(f).thinking("Need weather.")
                      .text("Let me check.")
                      .call("get_weather", {{"location", "Beijing"}, {"days", 2}})
                      .end("tool_calls"));
}

TEST(ReplyParser, LagunaStartsInThinking) {
    ChatFormat f = format_of("poolside-Laguna-S-2.1.jinja");
    std::string text =
        "Weather question.</think>On it.<tool_call>get_weather<arg_key>location</arg_key><arg_value>Oslo"
        "</arg_value></tool_call></assistant>";
    EXPECT_SPLITS(f, with_tools(true), text,
                  Expect(f).thinking("Weather question.").text("On it.").call("get_weather", {{"location", "Oslo"}}).end("tool_calls"));
}

// ---- invoke XML (MiniMax M2, DeepSeek DSML, ATEM) ---------------------------------

TEST(ReplyParser, MiniMaxM2InvokeStartsInThinking) {
    ChatFormat f = format_of("MiniMax-M2.jinja");
    std::string text =
        "The user wants weather.\n</think>\n\n<minimax:tool_call>\n<invoke name=\"get_weather\">\n"
        "<parameter name=\"location\">Paris</parameter>\n<parameter name=\"days\">2</parameter>\n</invoke>\n"
        "</minimax:tool_call>[e~[\n";
    EXPECT_SPLITS(f, with_tools(true), text,
                  Expect(f).thinking("The user wants weather.").call("get_weather", {{"location", "Paris"}, {"days", 2}}).end("tool_calls"));
}

TEST(ReplyParser, DeepSeekV32Dsml) {
    ChatFormat f = format_of("deepseek-ai-DeepSeek-V3.2.jinja");
    std::string text =
        "Need the tool.</think>\n\n<｜DSML｜function_calls>\n<｜DSML｜invoke name=\"get_weather\">\n"
        "<｜DSML｜parameter name=\"location\" string=\"true\">123</｜DSML｜parameter>\n"
        "<｜DSML｜parameter name=\"days\" string=\"false\">3</｜DSML｜parameter>\n</｜DSML｜invoke>\n"
        "</｜DSML｜function_calls><｜end▁of▁sentence｜>";
    EXPECT_SPLITS(f, thinking_open(), text,
                  Expect(f).thinking("Need the tool.").call("get_weather", {{"location", "123"}, {"days", 3}}).end("tool_calls"));
}

TEST(ReplyParser, MuseGlimmerAtemChannels) {
    ChatFormat f = format_of("muse-glimmer.jinja");
    std::string text =
        " to=self<|message|>Need weather.<|eom|><|start|>assistant to=get_weather<|message|><atem:function_calls>\n"
        "<atem:invoke name=\"get_weather\">\n<atem:parameter name=\"location\">Paris</atem:parameter>\n"
        "</atem:invoke>\n</atem:function_calls><|eot|>";
    EXPECT_SPLITS(f, with_tools(), text,
                  Expect(f).thinking("Need weather.").call("get_weather", {{"location", "Paris"}}).end("tool_calls"));
}

// ---- pythonic, functionary ---------------------------------------------------------

TEST(ReplyParser, Lfm2PythonicCalls) {
    ChatFormat f = format_of("LFM2.5-8B-A1B.jinja");
    std::string text =
        "<|tool_call_start|>[get_weather(location='Paris', days=3), get_time(timezone=\"UTC\", dst=False)]"
        "<|tool_call_end|>Checking now.<|im_end|>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).call("get_weather", {{"location", "Paris"}, {"days", 3}})
                      .call("get_time", {{"timezone", "UTC"}, {"dst", false}})
                      .text("Checking now.")
                      .end("tool_calls"));
    EXPECT_SPLITS(f, ReplyOptions(), "<|tool_call_start|>[get_weather('Paris')]<|tool_call_end|>",
                  Expect(f).error("<|tool_call_start|>[get_weather('Paris')]").end("stop"));
}

TEST(ReplyParser, FunctionaryV31FunctionTag) {
    ChatFormat f = format_of("meetkai-functionary-medium-v3.1.jinja");
    std::string text = "Let me see.<function=get_weather>{\"location\": \"Paris\"}</function><|eom_id|>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).text("Let me see.").call("get_weather", {{"location", "Paris"}}).end("tool_calls"));
}

TEST(ReplyParser, FunctionaryV32Recipients) {
    ChatFormat f = format_of("meetkai-functionary-medium-v3.2.jinja");
    std::string text = "all\nLet me check.>>>get_weather\n{\"location\": \"Paris\"}>>>python\nprint(1)<|eot_id|>";
    EXPECT_SPLITS(f, ReplyOptions(), text,
                  Expect(f).text("Let me check.")
                      .call("get_weather", {{"location", "Paris"}})
                      .call("python", {{"code", "print(1)"}})
                      .end("tool_calls"));
}

// ---- stop strings and end markers never leak -------------------------------------------

TEST(ReplyParser, StopStringsNeverLeak) {
    ChatFormat f = format_of("Qwen-Qwen3-0.6B.jinja");
    ReplyOptions o;
    o.stop = {"###", "END OF ANSWER"};
    EXPECT_SPLITS(f, o, "Answer: 4 ### ignored", Expect(f).text("Answer: 4").end("stop"));
    EXPECT_SPLITS(f, o, "<think>a</think>Answer END OF ANSWER", Expect(f).thinking("a").text("Answer").end("stop"));
    // A partial end marker or stop string at the end of a cut-off reply is not text either.
    EXPECT_EQ(check_all_splits(f, o, "Hello<|im_", Expect(f).text("Hello").end("length"), ReplyFinish::Length), "");
    EXPECT_EQ(check_all_splits(f, o, "Hello END OF", Expect(f).text("Hello").end("length"), ReplyFinish::Length), "");
    // But a partial tool or reasoning marker is ordinary text.
    EXPECT_EQ(check_all_splits(f, o, "a < b <tool", Expect(f).text("a < b <tool").end("length"), ReplyFinish::Length), "");
}

// The stop string that ended a reply is named in ReplyEnd (Anthropic's
// stop_sequence); a format's own end marker or a length cut names none.
TEST(ReplyParser, ReplyEndNamesTheStopString) {
    ChatFormat f = format_of("Qwen-Qwen3-0.6B.jinja");
    ReplyOptions o;
    o.stop = {"###", "END OF ANSWER"};
    auto ended_by = [&](const std::string& text, ReplyFinish finish = ReplyFinish::Stop) {
        std::string by = "?";
        for (size_t cut = 0; cut <= text.size(); ++cut) {  // every split of the text gives the same answer
            kiln::ReplyParser p(f, o);
            p.push(text.substr(0, cut));
            p.push(text.substr(cut));
            auto end = p.finish(finish);
            const auto* e = std::get_if<kiln::ReplyEnd>(&end.back());
            if (!e) return std::string("no ReplyEnd");
            if (by != "?" && by != e->stop_string) return "split " + std::to_string(cut) + " gave " + e->stop_string;
            by = e->stop_string;
        }
        return by;
    };
    EXPECT_EQ(ended_by("Answer: 4 ### ignored"), "###");
    EXPECT_EQ(ended_by("<think>a</think>Answer END OF ANSWER ### x"), "END OF ANSWER");
    EXPECT_EQ(ended_by("Answer<|im_end|> ###"), "");
    EXPECT_EQ(ended_by("Answer END OF", ReplyFinish::Length), "");
}

TEST(ReplyParser, NoTextBeforeAnEndMarkerEverLeaksPartially) {
    // Each push's own output never contains the start of an end marker.
    ChatFormat f = format_of("Qwen-Qwen3-0.6B.jinja");
    std::string text = "Hi <|im_end|>";
    for (size_t cut = 0; cut <= text.size(); ++cut) {
        kiln::ReplyParser p(f);
        std::string seen;
        for (auto& e : p.push(text.substr(0, cut)))
            if (auto* t = std::get_if<kiln::TextDelta>(&e)) seen += t->text;
        EXPECT_EQ(seen.find('<'), std::string::npos) << cut;
    }
}

// ---- events, finish reasons, usage ----------------------------------------------------

TEST(ReplyParser, DoneAfterEndMarkerAndCancelledBecomesStop) {
    ChatFormat f = format_of("Qwen-Qwen3-0.6B.jinja");
    kiln::ReplyParser p(f);
    p.push("Hi<|im_e");
    EXPECT_FALSE(p.done());
    p.push("nd|>");
    EXPECT_TRUE(p.done());
    EXPECT_TRUE(p.push("more text").empty());
    auto end = p.finish(ReplyFinish::Cancelled, {.prompt_tokens = 10, .reused_prompt_tokens = 4, .completion_tokens = 3});
    ASSERT_EQ(end.size(), 1u);
    auto* e = std::get_if<kiln::ReplyEnd>(&end[0]);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->finish, ReplyFinish::Stop);
    EXPECT_EQ(e->usage.prompt_tokens, 10);
    EXPECT_EQ(e->usage.reused_prompt_tokens, 4);
    EXPECT_EQ(e->usage.completion_tokens, 3);
    EXPECT_EQ(e->usage.reasoning_tokens, 0);
    EXPECT_EQ(p.message().content, "Hi");
    EXPECT_TRUE(p.finish(ReplyFinish::Stop).empty());  // finish once
}

TEST(ReplyParser, ReasoningTokensCountPushesInsideReasoning) {
    ChatFormat f = format_of("Qwen-Qwen3-0.6B.jinja");
    kiln::ReplyParser p(f);
    for (const char* tok : {"<think>", "\n", "Two", " plus", " two", ".", "\n", "</think>", "\n\n", "Four", "."}) p.push(tok);
    auto end = p.finish(ReplyFinish::Stop, {.completion_tokens = 11});
    auto* e = std::get_if<kiln::ReplyEnd>(&end.back());
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->usage.reasoning_tokens, 8);  // <think> … </think>
    EXPECT_EQ(p.message().reasoning, "Two plus two.");
    EXPECT_EQ(p.message().content, "Four.");

    kiln::ReplyParser q(f, thinking_open());
    for (const char* tok : {"Hmm", "", ".", "</th", "ink>", "Hi"}) q.push(tok);
    auto end2 = q.finish(ReplyFinish::Length);
    auto* e2 = std::get_if<kiln::ReplyEnd>(&end2.back());
    ASSERT_NE(e2, nullptr);
    EXPECT_EQ(e2->usage.reasoning_tokens, 5);
    EXPECT_EQ(e2->finish, ReplyFinish::Length);
}

TEST(ReplyParser, TextBeforeACallStreamsBeforeTheCallCompletes) {
    ChatFormat f = format_of("Qwen-Qwen3-0.6B.jinja");
    ReplyOptions o;
    o.id_seed = 7;
    kiln::ReplyParser p(f, o);
    auto a = p.push("Let me check the weather for you. ");
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(std::get<kiln::TextDelta>(a[0]).text, "Let me check the weather for you.");
    // The call is announced as soon as its name is known and its arguments begin,
    // and the arguments stream as the model writes them.
    auto b = p.push("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Par");
    ASSERT_EQ(b.size(), 2u);
    const auto& start = std::get<kiln::ToolCallStart>(b[0]);
    EXPECT_EQ(start.name, "get_weather");
    EXPECT_EQ(std::get<kiln::ToolCallArguments>(b[1]).text, "{\"city\": \"Par");
    auto c = p.push("is\"}}\n</tool_call>");
    ASSERT_EQ(c.size(), 2u);
    EXPECT_EQ(std::get<kiln::ToolCallArguments>(c[0]).text, "is\"}");
    const auto& call = std::get<kiln::ToolCall>(c[1]);
    EXPECT_EQ(call.name, "get_weather");
    EXPECT_EQ(call.id, start.id);
    EXPECT_EQ(call.arguments_text, "{\"city\": \"Paris\"}");  // the model's own text
    EXPECT_EQ(call.arguments, (json{{"city", "Paris"}}));
    auto end = p.finish(ReplyFinish::Stop);
    EXPECT_EQ(std::get<kiln::ReplyEnd>(end.back()).finish, ReplyFinish::ToolCalls);
}

TEST(ReplyParser, ToolCallIds) {
    kiln::ToolCallIds a(kiln::ToolCallIdStyle::OpenAi, 99), b(kiln::ToolCallIdStyle::OpenAi, 99);
    std::string id = a.next();
    EXPECT_EQ(id, b.next());
    EXPECT_EQ(id.size(), 29u);
    EXPECT_EQ(id.rfind("call_", 0), 0u);
    EXPECT_NE(a.next(), id);
    kiln::ToolCallIds m(kiln::ToolCallIdStyle::Alnum9, 1);
    std::string mid = m.next();
    EXPECT_EQ(mid.size(), 9u);
    for (char c : mid) EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(c)));
    // Mistral templates get Mistral ids.
    ChatFormat f = format_of("mistralai-Mistral-Nemo-Instruct-2407.jinja");
    EXPECT_EQ(f.id_style, kiln::ToolCallIdStyle::Alnum9);
}

TEST(ReplyParser, InvalidUtf8InArgumentsIsReplaced) {
    ChatFormat f = format_of("Qwen3-Coder.jinja");
    auto events = kiln::parse_reply(f, "<tool_call>\n<function=f>\n<parameter=x>\nab\xff\xfe" "c\n</parameter>\n</function>\n</tool_call>");
    ASSERT_GE(events.size(), 3u);  // start, arguments, call
    auto& call = std::get<kiln::ToolCall>(events[2]);
    EXPECT_EQ(std::get<kiln::ToolCallArguments>(events[1]).text, call.arguments_text);
    EXPECT_EQ(call.arguments["x"], "ab\xEF\xBF\xBD\xEF\xBF\xBD" "c");
    EXPECT_NO_THROW(call.arguments.dump());
}

// Megabytes pushed a few bytes at a time: every mode must stay linear (a
// quadratic rescan would not finish).
TEST(ReplyParser, LongRepliesStayLinear) {
    std::string filler;
    for (int i = 0; i < 200000; ++i) filler += "abc ";  // 800 KB
    struct Case {
        const char* tmpl;
        std::string text;
        bool thinking;
    };
    const Case cases[] = {
        {"Qwen-Qwen3-0.6B.jinja", filler, false},                                                      // text
        {"Qwen-Qwen3-0.6B.jinja", filler + "</think>ok", true},                                         // reasoning
        {"Qwen-Qwen3-0.6B.jinja", "<tool_call>{\"name\": \"f\", \"arguments\": {\"x\": \"" + filler + "\"}}</tool_call>", false},
        {"ibm-granite-granite-3.3-2B-Instruct.jinja", "<|tool_call|>[{\"name\": \"f\", \"arguments\": {\"x\": \"" + filler + "\"}}]", false},
        {"meta-llama-Llama-3.1-8B-Instruct.jinja", "{\"name\": \"f\", \"parameters\": {\"x\": \"" + filler + "\"}}", false},
        {"openai-gpt-oss-120b.jinja", "<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"x\": \"" + filler + "\"}<|call|>", false},
        {"openai-gpt-oss-120b.jinja", "<|channel|>analysis<|message|>" + filler + "<|end|>", false},
    };
    for (const Case& c : cases) {
        ChatFormat f = format_of(c.tmpl);
        ReplyOptions o;
        o.starts_in_thinking = c.thinking;
        kiln::ReplyParser p(f, o);
        for (size_t i = 0; i < c.text.size(); i += 4) p.push(std::string_view(c.text).substr(i, 4));
        p.finish(ReplyFinish::Stop);
        const kiln::ReplyMessage& m = p.message();
        EXPECT_TRUE(m.errors.empty()) << c.tmpl;
        EXPECT_GE(m.content.size() + m.reasoning.size() + (m.tool_calls.empty() ? 0 : m.tool_calls[0].arguments["x"].get<std::string>().size()),
                  filler.size() - 1)
            << c.tmpl;
    }
}
