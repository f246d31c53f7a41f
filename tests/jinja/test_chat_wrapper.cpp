// The chat-template wrapper: Hugging Face's message normalization, tools and
// thinking variables, extra variables, the GGUF helper, and the CLI.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "jinja_test_util.h"
#include "support/test_support.h"
#include "kiln/chat_template.h"
#include "kiln/gguf/writer.h"

namespace kiln::test {
namespace {

std::string apply(const std::string& tmpl, chat::ChatRequest req) { return chat::apply_chat_template(tmpl, req); }

TEST(ChatWrapper, DropsNullFields) {
    chat::ChatRequest req;
    req.messages = ojson::parse(R"([{"role": "assistant", "content": null, "tool_calls": null, "name": "x"}])");
    EXPECT_EQ(apply("{{ messages[0]|tojson }}", req), R"({"role": "assistant", "name": "x"})");
}

TEST(ChatWrapper, DecodesStringArguments) {
    chat::ChatRequest req;
    req.messages = ojson::parse(R"([{"role": "assistant", "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "f", "arguments": "{\"city\": \"Paris\", \"n\": 2}"}},
        {"id": "2", "type": "function", "function": {"name": "g", "arguments": "not json"}}]}])");
    const std::string t = "{% for c in messages[0].tool_calls %}{{ c.function.arguments|tojson }};{% endfor %}";
    EXPECT_EQ(apply(t, req), R"({"city": "Paris", "n": 2};"not json";)");
    req.parse_tool_arguments = false;
    EXPECT_EQ(apply(t, req), R"("{\"city\": \"Paris\", \"n\": 2}";"not json";)");
}

TEST(ChatWrapper, AliasesReasoningAsHuggingFace) {
    // {"thinking": r, **message, "reasoning_content": r}
    chat::ChatRequest req;
    req.messages = ojson::parse(R"([{"role": "assistant", "content": "a", "reasoning": "r"},
                                    {"role": "assistant", "reasoning_content": "q", "content": "b"}])");
    EXPECT_EQ(apply("{{ messages|tojson }}", req),
              R"([{"thinking": "r", "role": "assistant", "content": "a", "reasoning": "r", "reasoning_content": "r"}, )"
              R"({"thinking": "q", "role": "assistant", "reasoning_content": "q", "content": "b"}])");
}

TEST(ChatWrapper, ToolsUndefinedUnlessDeclared) {
    chat::ChatRequest req;
    const std::string t = "{{ tools is defined }}|{{ tools is none }}|{{ tools|length if tools is defined and tools }}";
    EXPECT_EQ(apply(t, req), "False|False|");
    req.tools_none_when_absent = true;
    EXPECT_EQ(apply(t, req), "True|True|");
    req.tools = ojson::parse(R"([{"type": "function", "function": {"name": "f"}}])");
    EXPECT_EQ(apply(t, req), "True|False|1");
}

TEST(ChatWrapper, ThinkingAndGenerationPrompt) {
    chat::ChatRequest req;
    const std::string t = "{{ enable_thinking is defined }}{{ thinking is defined }}|{{ add_generation_prompt }}";
    EXPECT_EQ(apply(t, req), "FalseFalse|True");
    req.enable_thinking = false;
    req.add_generation_prompt = false;
    EXPECT_EQ(apply("{{ enable_thinking }}{{ thinking }}|{{ add_generation_prompt }}", req), "FalseFalse|False");
}

TEST(ChatWrapper, BosEosAndExtraVariables) {
    chat::ChatRequest req;
    req.bos_token = "<s>";
    req.eos_token = "</s>";
    req.extra = ojson::parse(R"({"date_string": "26 Jul 2024", "eos_token": "<|end|>", "n": [1, 2]})");
    EXPECT_EQ(apply("{{ bos_token }}{{ date_string }}{{ eos_token }}{{ n|sum }}", req), "<s>26 Jul 2024<|end|>3");
}

TEST(ChatWrapper, ContentParts) {
    chat::ChatRequest req;
    req.messages = ojson::parse(R"([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}}]}])");
    EXPECT_EQ(apply("{% for p in messages[0].content %}{{ p.type }},{% endfor %}", req), "text,image_url,");
}

TEST(ChatWrapper, RejectsMalformedInput) {
    chat::ChatRequest req;
    req.messages = ojson::parse(R"({"role": "user"})");
    EXPECT_THROW(apply("x", req), kiln::Error);
    req.messages = ojson::parse(R"([1])");
    EXPECT_THROW(apply("x", req), kiln::Error);
    req.messages = ojson::array();
    req.tools = ojson::parse(R"({"a": 1})");
    EXPECT_THROW(apply("x", req), kiln::Error);
}

TEST(ChatWrapper, TemplateErrorsPropagate) {
    chat::ChatRequest req;
    req.messages = ojson::parse(R"([{"role": "system", "content": "x"}])");
    try {
        apply("{% if messages[0].role == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}", req);
        FAIL();
    } catch (const jinja::TemplateError& e) {
        EXPECT_TRUE(e.raised());
        EXPECT_EQ(e.message(), "System role not supported");
    }
}

TEST(ModelTemplateHelper, ReadsTemplateAndSpecialTokens) {
    gguf::Writer w;
    w.metadata().add("general.architecture", gguf::Value::string("llama"));
    w.metadata().add("tokenizer.chat_template", gguf::Value::string("{{ bos_token }}{{ messages[0].content }}"));
    w.metadata().add("tokenizer.chat_template.tool_use", gguf::Value::string("TOOLS"));
    std::vector<gguf::Value> tokens;
    for (const char* t : {"<unk>", "<s>", "</s>", "hi"}) tokens.push_back(gguf::Value::string(t));
    w.metadata().add("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::String, tokens));
    w.metadata().add("tokenizer.ggml.bos_token_id", gguf::Value::u32(1));
    w.metadata().add("tokenizer.ggml.eos_token_id", gguf::Value::u32(2));
    const std::string path = temp_dir() + "/chat_template.gguf";
    w.write(path);
    gguf::File f = gguf::File::open(path);
    chat::ModelTemplate mt = chat::model_template(f);
    ASSERT_TRUE(mt.source);
    EXPECT_EQ(mt.bos_token, "<s>");
    EXPECT_EQ(mt.eos_token, "</s>");
    EXPECT_EQ(*chat::model_template(f, "tool_use").source, "TOOLS");
    EXPECT_FALSE(chat::model_template(f, "nope").source);

    chat::ChatRequest req;
    req.messages = ojson::parse(R"([{"role": "user", "content": "hello"}])");
    req.bos_token = mt.bos_token;
    EXPECT_EQ(chat::apply_chat_template(*mt.source, req), "<s>hello");
}

TEST(ModelTemplateHelper, BadTokenIdIsAnError) {
    gguf::Writer w;
    w.metadata().add("tokenizer.ggml.tokens", gguf::Value::array(gguf::ValueType::String, {gguf::Value::string("a")}));
    w.metadata().add("tokenizer.ggml.bos_token_id", gguf::Value::u32(7));
    const std::string path = temp_dir() + "/bad_bos.gguf";
    w.write(path);
    gguf::File f = gguf::File::open(path);
    EXPECT_THROW(chat::model_template(f), kiln::Error);
}

// `kiln template` writes exactly the rendered prompt (compared with jinja2's).
TEST(Cli, TemplateCommandMatchesGolden) {
    const std::string kiln = std::string(KILN_BINARY_DIR) + "/kiln";
    if (!std::filesystem::exists(kiln)) KILN_SKIP_MISSING("kiln binary not built");
    const ojson cases = load_json(golden_path("jinja/cases.json"));
    const ojson expected = load_json(golden_path("jinja/templates/Qwen-Qwen3-0.6B.json")).at("results");
    for (const auto& c : cases.at("cases")) {
        const std::string name = c.at("name").get<std::string>();
        if (name == "unicode" || name == "reasoning_history") {
            const std::string dir = temp_dir();
            write_file(dir + "/m.json", c.at("messages").dump());
            std::string cmd = kiln + " template " + data_path("shared/templates/Qwen-Qwen3-0.6B.jinja") + " --messages " +
                              dir + "/m.json --bos-token '<|bos|>' --eos-token '<|eos|>'";
            if (c.contains("thinking")) cmd += c.at("thinking").get<bool>() ? " --thinking on" : " --thinking off";
            if (!c.at("add_generation_prompt").get<bool>()) cmd += " --no-generation-prompt";
            cmd += " > " + dir + "/out.txt";
            ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
            EXPECT_EQ(read_file(dir + "/out.txt"), expected.at(name).at("output").get<std::string>()) << name;
        }
    }
}

TEST(Cli, TemplateCommandFromGguf) {
    KILN_REQUIRE_MODEL(smollm2_path());
    const std::string kiln = std::string(KILN_BINARY_DIR) + "/kiln";
    if (!std::filesystem::exists(kiln)) KILN_SKIP_MISSING("kiln binary not built");
    const ojson m = load_json(golden_path("jinja/models/smollm2.json"));
    const ojson cases = load_json(golden_path("jinja/cases.json"));
    const ojson& c = cases.at("cases").at(1);  // system + user
    const std::string dir = temp_dir();
    write_file(dir + "/m2.json", c.at("messages").dump());
    std::string cmd = kiln + " template " + smollm2_path() + " --messages " + dir + "/m2.json > " + dir + "/out2.txt";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    EXPECT_EQ(read_file(dir + "/out2.txt"), m.at("results").at(c.at("name").get<std::string>()).at("output").get<std::string>());
}

}  // namespace
}  // namespace kiln::test
