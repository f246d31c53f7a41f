// Format detection over every real template in tests/data/shared/templates. The
// expected table was written by reading each template: its reasoning markers,
// whether its generation prompt can open them, whether it reads enable_thinking /
// thinking, its tool-call syntax and its end-of-turn markers. A template added to
// the folder fails the test until it has a row.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "kiln/reply_format.h"
#include "support/test_support.h"

using kiln::ReasoningSyntax;
using kiln::ReplyFraming;
using kiln::ToolSyntax;

namespace {

struct Row {
    ReplyFraming framing;
    ReasoningSyntax reasoning;
    const char* open;
    const char* close;
    bool prompt_can_open;
    bool can_disable;
    ToolSyntax tools;
    const char* tool_open;
    const char* tool_close;
    std::vector<std::string> end_markers;
};

constexpr auto M = ReplyFraming::Markers;
constexpr auto None = ReasoningSyntax::None;
constexpr auto Tags = ReasoningSyntax::Tags;
constexpr auto Channels = ReasoningSyntax::Channels;
const char* const think = "<think>";
const char* const unthink = "</think>";
const char* const eos_ds = "<｜end▁of▁sentence｜>";

const std::map<std::string, Row>& table() {
    static const std::map<std::string, Row> rows = {
        // Reasoning first, [BEGIN FINAL RESPONSE] closes it: every reply starts inside.
        {"Apriel-1.6-15b-Thinker-fixed.jinja",
         {M, Tags, "", "[BEGIN FINAL RESPONSE]", true, false, ToolSyntax::TaggedJson, "<tool_calls>", "</tool_calls>", {"<|end|>"}}},
        {"ByteDance-Seed-OSS.jinja",
         {M, Tags, "<seed:think>", "</seed:think>", false, false, ToolSyntax::QwenXml, "<seed:tool_call>",
          "</seed:tool_call>", {"<seed:eos>"}}},
        {"CohereForAI-c4ai-command-r-plus-tool_use.jinja",
         {M, None, "", "", false, false, ToolSyntax::CommandR, "Action:", "", {"<|END_OF_TURN_TOKEN|>"}}},
        {"CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
         {M, Tags, "<|START_THINKING|>", "<|END_THINKING|>", false, true, ToolSyntax::TaggedJson, "<|START_ACTION|>",
          "<|END_ACTION|>", {"<|END_OF_TURN_TOKEN|>"}}},
        {"GLM-4.6.jinja",
         {M, Tags, think, unthink, false, true, ToolSyntax::GlmXml, "<tool_call>", "</tool_call>",
          {"<|observation|>", "<|user|>"}}},
        {"GigaChat3-10B-A1.8B.jinja",
         {M, None, "", "", false, false, ToolSyntax::GigaChat, "function call<|role_sep|>", "", {}}},
        // Unsloth's SmolLM3 template has no tool syntax.
        {"HuggingFaceTB-SmolLM3-3B.jinja",
         {M, Tags, think, unthink, false, true, ToolSyntax::None, "", "", {"<|im_end|>"}}},
        {"Kimi-K2-Thinking.jinja",
         {M, Tags, think, unthink, false, false, ToolSyntax::Kimi, "<|tool_calls_section_begin|>",
          "<|tool_calls_section_end|>", {"<|im_end|>"}}},
        {"Kimi-K3.jinja",
         {M, Tags, "<|open|>think<|sep|>", "<|close|>think<|sep|>", true, true, ToolSyntax::KimiXtml,
          "<|open|>tools<|sep|>", "<|close|>tools<|sep|>", {"<|end_of_msg|>", "<|close|>message<|sep|>"}}},
        // LFM2 lists tools between <|tool_list_start|> … and answers with <|tool_call_start|>[f(x=1)].
        {"LFM2-8B-A1B.jinja",
         {M, None, "", "", false, false, ToolSyntax::Pythonic, "<|tool_call_start|>", "<|tool_call_end|>", {"<|im_end|>"}}},
        {"LFM2.5-8B-A1B.jinja",
         {M, Tags, think, unthink, false, false, ToolSyntax::Pythonic, "<|tool_call_start|>", "<|tool_call_end|>",
          {"<|im_end|>"}}},
        {"MiniMax-M1.jinja",
         {M, None, "", "", false, false, ToolSyntax::TaggedJson, "<tool_calls>", "</tool_calls>", {"<end_of_sentence>"}}},
        {"MiniMax-M2.jinja",
         {M, Tags, think, unthink, true, false, ToolSyntax::InvokeXml, "<minimax:tool_call>", "</minimax:tool_call>",
          {"[e~["}}},
        {"Mistral-Small-3.2-24B-Instruct-2506.jinja",
         {M, None, "", "", false, false, ToolSyntax::MistralArgs, "[TOOL_CALLS]", "", {}}},
        {"NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja",
         {M, Tags, think, unthink, true, true, ToolSyntax::QwenXml, "<tool_call>", "</tool_call>", {"<|im_end|>"}}},
        // Thinking is switched by /think in the messages (ns.enable_thinking), not by a variable.
        {"NVIDIA-Nemotron-Nano-v2.jinja",
         {M, Tags, think, unthink, true, false, ToolSyntax::TaggedJson, "<TOOLCALL>", "</TOOLCALL>", {"<SPECIAL_12>"}}},
        {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
         {M, None, "", "", false, false, ToolSyntax::Hermes, "<tool_call>", "</tool_call>", {"<|im_end|>"}}},
        {"Qwen-Qwen2.5-7B-Instruct.jinja",
         {M, None, "", "", false, false, ToolSyntax::Hermes, "<tool_call>", "</tool_call>", {"<|im_end|>"}}},
        {"Qwen-Qwen3-0.6B.jinja",
         {M, Tags, think, unthink, false, true, ToolSyntax::Hermes, "<tool_call>", "</tool_call>", {"<|im_end|>"}}},
        {"Qwen3-Coder.jinja",
         {M, None, "", "", false, false, ToolSyntax::QwenXml, "<tool_call>", "</tool_call>", {"<|im_end|>"}}},
        {"Qwen3.5-4B.jinja",
         {M, Tags, think, unthink, true, true, ToolSyntax::QwenXml, "<tool_call>", "</tool_call>", {"<|im_end|>"}}},
        {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
         {M, Tags, think, unthink, true, false, ToolSyntax::DeepSeek, "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>",
          {eos_ds}}},
        {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
         {M, Tags, think, unthink, true, true, ToolSyntax::DeepSeek, "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>",
          {eos_ds}}},
        {"deepseek-ai-DeepSeek-V3.1.jinja",
         {M, Tags, think, unthink, true, true, ToolSyntax::DeepSeek, "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>",
          {eos_ds}}},
        // The think markers and DSML tags are built from variables (thinking_start_token, dsml_token).
        {"deepseek-ai-DeepSeek-V3.2.jinja",
         {M, Tags, think, unthink, true, true, ToolSyntax::InvokeXml, "<｜DSML｜function_calls>",
          "</｜DSML｜function_calls>", {eos_ds}}},
        {"deepseek-ai-DeepSeek-V4.jinja",
         {M, Tags, think, unthink, true, true, ToolSyntax::InvokeXml, "<｜DSML｜tool_calls>", "</｜DSML｜tool_calls>",
          {eos_ds}}},
        {"fireworks-ai-llama-3-firefunction-v2.jinja",
         {M, None, "", "", false, false, ToolSyntax::Firefunction, "functools", "", {"<|eot_id|>"}}},
        {"gemma4.jinja",
         {M, Tags, "<|channel>thought", "<channel|>", false, true, ToolSyntax::Gemma4, "<|tool_call>", "<tool_call|>",
          {"<turn|>"}}},
        {"google-gemma-2-2b-it.jinja", {M, None, "", "", false, false, ToolSyntax::None, "", "", {"<end_of_turn>"}}},
        {"google-gemma-3-it.jinja", {M, None, "", "", false, false, ToolSyntax::None, "", "", {"<end_of_turn>"}}},
        {"google-gemma-4-31B-it-interleaved.jinja",
         {M, Tags, "<|channel>thought", "<channel|>", false, true, ToolSyntax::Gemma4, "<|tool_call>", "<tool_call|>",
          {"<turn|>"}}},
        // Granite 3.3: `thinking` turns on <think>…</think><response>…</response>.
        {"ibm-granite-granite-3.3-2B-Instruct.jinja",
         {M, Tags, think, unthink, false, true, ToolSyntax::Granite, "<|tool_call|>", "", {"<|end_of_text|>"}}},
        {"ibm-granite-granite-4.0.jinja",
         {M, None, "", "", false, false, ToolSyntax::Hermes, "<tool_call>", "</tool_call>", {"<|end_of_text|>"}}},
        {"llama-cpp-deepseek-r1.jinja",
         {M, Tags, think, unthink, true, false, ToolSyntax::DeepSeek, "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>",
          {eos_ds}}},
        {"llama-cpp-lfm2.jinja",
         {M, None, "", "", false, false, ToolSyntax::Pythonic, "<|tool_call_start|>", "<|tool_call_end|>", {"<|im_end|>"}}},
        {"llama-cpp-microsoft-Phi-4-mini-instruct.jinja",
         {M, None, "", "", false, false, ToolSyntax::TaggedJson, "<|tool_call|>", "<|/tool_call|>", {"<|end|>"}}},
        // RWKV's prompt ends with " <think>" when enable_thinking is true; its turns end with a blank line.
        {"llama-cpp-rwkv-world.jinja", {M, Tags, think, unthink, true, true, ToolSyntax::None, "", "", {}}},
        {"meetkai-functionary-medium-v3.1.jinja",
         {M, None, "", "", false, false, ToolSyntax::FunctionaryV31, "<function=", "</function>",
          {"<|eot_id|>", "<|eom_id|>"}}},
        {"meetkai-functionary-medium-v3.2.jinja",
         {ReplyFraming::Recipients, None, "", "", false, false, ToolSyntax::FunctionaryV32, ">>>", "", {"<|eot_id|>"}}},
        {"meta-llama-Llama-3.1-8B-Instruct.jinja",
         {M, None, "", "", false, false, ToolSyntax::Llama3, "<|python_tag|>", "", {"<|eot_id|>", "<|eom_id|>"}}},
        {"meta-llama-Llama-3.2-3B-Instruct.jinja",
         {M, None, "", "", false, false, ToolSyntax::Llama3, "<|python_tag|>", "", {"<|eot_id|>"}}},
        {"microsoft-Phi-3.5-mini-instruct.jinja",
         {M, None, "", "", false, false, ToolSyntax::None, "", "", {"<|end|>", "<|user|>"}}},
        {"mistralai-Ministral-3-14B-Reasoning-2512.jinja",
         {M, Tags, "[THINK]", "[/THINK]", false, false, ToolSyntax::MistralArgs, "[TOOL_CALLS]", "", {}}},
        {"mistralai-Mistral-Nemo-Instruct-2407.jinja",
         {M, None, "", "", false, false, ToolSyntax::MistralJson, "[TOOL_CALLS]", "", {}}},
        {"moonshotai-Kimi-K2.jinja",
         {M, None, "", "", false, false, ToolSyntax::Kimi, "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>",
          {"<|im_end|>"}}},
        {"muse-glimmer.jinja",
         {ReplyFraming::Atem, Channels, "to=self<|message|>", "<|eom|>", false, false, ToolSyntax::Atem,
          "<atem:function_calls>", "</atem:function_calls>", {"<|eot|>"}}},
        // Sets enable_thinking = true itself (the switch is /no_think in the system message).
        {"nvidia-Llama-3_3-Nemotron-Super-49B-v1_5.jinja",
         {M, Tags, think, unthink, false, false, ToolSyntax::TaggedJson, "<TOOLCALL>", "</TOOLCALL>", {"<|eot_id|>"}}},
        {"openai-gpt-oss-120b.jinja",
         {ReplyFraming::Harmony, Channels, "<|channel|>analysis<|message|>", "<|end|>", false, false, ToolSyntax::GptOss,
          "to=functions.", "<|call|>", {"<|return|>", "<|call|>"}}},
        {"poolside-Laguna-S-2.1.jinja",
         {M, Tags, think, unthink, true, true, ToolSyntax::GlmXml, "<tool_call>", "</tool_call>", {"</assistant>", "〈|EOS|〉"}}},
        {"poolside-Laguna-XS.2.jinja",
         {M, Tags, think, unthink, true, true, ToolSyntax::GlmXml, "<tool_call>", "</tool_call>", {"</assistant>", "〈|EOS|〉"}}},
        {"unsloth-Apriel-1.5.jinja",
         {M, Tags, "", "[BEGIN FINAL RESPONSE]", true, false, ToolSyntax::TaggedJson, "<tool_calls>", "</tool_calls>",
          {"<|end|>", "<|user|>"}}},
        {"unsloth-mistral-Devstral-Small-2507.jinja",
         {M, None, "", "", false, false, ToolSyntax::MistralArgs, "[TOOL_CALLS]", "", {}}},
    };
    return rows;
}

std::string template_dir() { return kiln::test::data_path("shared/templates"); }

}  // namespace

TEST(ReplyFormatDetection, EveryTemplateInTheFolderIsInTheTable) {
    std::set<std::string> files;
    for (const auto& e : std::filesystem::directory_iterator(template_dir()))
        if (e.path().extension() == ".jinja") files.insert(e.path().filename().string());
    ASSERT_FALSE(files.empty());
    for (const std::string& f : files) EXPECT_TRUE(table().count(f)) << f << " has no row in the expected table";
    for (const auto& [f, row] : table()) EXPECT_TRUE(files.count(f)) << f << " is in the table but not in the folder";
}

TEST(ReplyFormatDetection, MatchesTheTable) {
    for (const auto& [file, want] : table()) {
        SCOPED_TRACE(file);
        std::string source = kiln::test::read_file(template_dir() + "/" + file);
        kiln::ChatFormat got = kiln::detect_chat_format(source);
        EXPECT_EQ(kiln::reply_framing_name(got.framing), kiln::reply_framing_name(want.framing));
        EXPECT_EQ(kiln::reasoning_syntax_name(got.reasoning.syntax), kiln::reasoning_syntax_name(want.reasoning));
        EXPECT_EQ(got.reasoning.open, want.open);
        EXPECT_EQ(got.reasoning.close, want.close);
        EXPECT_EQ(got.reasoning.prompt_can_open, want.prompt_can_open);
        EXPECT_EQ(got.can_disable_thinking(), want.can_disable);
        EXPECT_EQ(kiln::tool_syntax_name(got.tools.syntax), kiln::tool_syntax_name(want.tools));
        EXPECT_EQ(got.tools.open, want.tool_open);
        EXPECT_EQ(got.tools.close, want.tool_close);
        EXPECT_EQ(got.end_markers, want.end_markers);
        EXPECT_EQ(got.has_tools(), want.tools != ToolSyntax::None);
        EXPECT_EQ(got.has_reasoning(), want.reasoning != None);
    }
}

TEST(ReplyFormatDetection, WrappersAndIdStyles) {
    auto fmt = [](const char* f) {
        return kiln::detect_chat_format(kiln::test::read_file(template_dir() + "/" + f));
    };
    EXPECT_EQ(fmt("ibm-granite-granite-3.3-2B-Instruct.jinja").wrapper_markers,
              (std::vector<std::string>{"<response>", "</response>"}));
    EXPECT_EQ(fmt("CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja").wrapper_markers,
              (std::vector<std::string>{"<|START_RESPONSE|>", "<|END_RESPONSE|>"}));
    EXPECT_EQ(fmt("unsloth-Apriel-1.5.jinja").wrapper_markers, (std::vector<std::string>{"[END FINAL RESPONSE]"}));
    EXPECT_TRUE(fmt("Qwen-Qwen3-0.6B.jinja").wrapper_markers.empty());
    for (const char* f : {"mistralai-Mistral-Nemo-Instruct-2407.jinja", "Mistral-Small-3.2-24B-Instruct-2506.jinja",
                          "unsloth-mistral-Devstral-Small-2507.jinja", "mistralai-Ministral-3-14B-Reasoning-2512.jinja"})
        EXPECT_EQ(fmt(f).id_style, kiln::ToolCallIdStyle::Alnum9) << f;
    EXPECT_EQ(fmt("Qwen-Qwen3-0.6B.jinja").id_style, kiln::ToolCallIdStyle::OpenAi);
}

TEST(ReplyFormatDetection, VocabularyMarksSingleTokensAndGivesReasoning) {
    std::vector<std::string> specials = {"<think>", "</think>", "<tool_call>", "</tool_call>", "<|im_end|>"};
    std::string qwen3 = kiln::test::read_file(template_dir() + "/Qwen-Qwen3-0.6B.jinja");
    kiln::ChatFormat f = kiln::detect_chat_format(qwen3, specials);
    EXPECT_TRUE(f.reasoning.single_tokens);
    EXPECT_TRUE(f.tools.single_tokens);
    kiln::ChatFormat plain = kiln::detect_chat_format(qwen3);
    EXPECT_FALSE(plain.reasoning.single_tokens);
    EXPECT_FALSE(plain.tools.single_tokens);

    // A template that never mentions the markers: the vocabulary knows them.
    std::string qwen25 = kiln::test::read_file(template_dir() + "/Qwen-Qwen2.5-7B-Instruct.jinja");
    EXPECT_FALSE(kiln::detect_chat_format(qwen25).has_reasoning());
    kiln::ChatFormat v = kiln::detect_chat_format(qwen25, specials);
    EXPECT_EQ(v.reasoning.syntax, ReasoningSyntax::Tags);
    EXPECT_EQ(v.reasoning.open, "<think>");
    EXPECT_FALSE(v.can_disable_thinking());
    // …but a vocabulary never gives tools to a template without tool syntax.
    std::string gemma3 = kiln::test::read_file(template_dir() + "/google-gemma-3-it.jinja");
    EXPECT_FALSE(kiln::detect_chat_format(gemma3, specials).has_tools());
    // A throwing callback counts as "not a token".
    kiln::ChatFormat t = kiln::detect_chat_format(qwen3, [](std::string_view) -> bool { throw 1; });
    EXPECT_EQ(t.tools.syntax, ToolSyntax::Hermes);
}

TEST(ReplyFormatDetection, PromptOpensThinking) {
    auto fmt = [](const char* f) {
        return kiln::detect_chat_format(kiln::test::read_file(template_dir() + "/" + f));
    };
    kiln::ChatFormat qwen35 = fmt("Qwen3.5-4B.jinja");
    EXPECT_TRUE(kiln::prompt_opens_thinking(qwen35, "<|im_start|>assistant\n<think>\n"));
    EXPECT_FALSE(kiln::prompt_opens_thinking(qwen35, "<|im_start|>assistant\n<think>\n\n</think>\n\n"));
    EXPECT_FALSE(kiln::prompt_opens_thinking(qwen35, "<|im_start|>assistant\n"));
    EXPECT_TRUE(kiln::prompt_opens_thinking(fmt("Apriel-1.6-15b-Thinker-fixed.jinja"), "anything"));
    EXPECT_FALSE(kiln::prompt_opens_thinking(fmt("openai-gpt-oss-120b.jinja"), "<|start|>assistant"));
    EXPECT_FALSE(kiln::prompt_opens_thinking(fmt("Qwen-Qwen2.5-7B-Instruct.jinja"), "<think>"));
}

TEST(ReplyFormatDetection, UntrustedTemplatesNeverThrow) {
    const char* inputs[] = {"",
                            "{{",
                            "{%",
                            "{#",
                            "{{ 'unterminated }}",
                            "{% if add_generation_prompt %}{{ '<think>' + %}",
                            "{% set x = 'a\\u12' %}{{ x }}{% raw %}<think>",
                            "{% for %}{% endfor %}{% endfor %}{% endif %}",
                            "\xff\xfe{{ '\xc3' }}<tool_call>"};
    for (const char* s : inputs) EXPECT_NO_THROW(kiln::detect_chat_format(s)) << s;
    std::string deep(100000, '{');
    EXPECT_NO_THROW(kiln::detect_chat_format(deep));
    EXPECT_EQ(kiln::detect_chat_format("{% raw %}<think></think>{% endraw %}").reasoning.open, "<think>");
}
