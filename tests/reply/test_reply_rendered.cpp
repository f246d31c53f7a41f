// Assistant turns as each real template renders them (tests/golden/reply, made by
// tools/reply_fixtures.py with Python jinja2): the format detected from the
// template must read back the tool calls, text and reasoning the turn was rendered
// from, and every split of the text must give the same events.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "reply/reply_harness.h"
#include "support/test_support.h"

using nlohmann::json;

namespace {

const json& fixture() {
    static const json doc = json::parse(kiln::test::read_file(kiln::test::golden_path("reply/rendered_turns.json")));
    return doc;
}

// Where a template puts a field somewhere else than text / reasoning.
struct Moved {
    const char* why;
    bool content_is_reasoning;
};
const std::map<std::string, Moved>& moved() {
    static const std::map<std::string, Moved> m = {
        // GPT-OSS renders the content of a tool-calling turn into the analysis channel.
        {"openai-gpt-oss-120b.jinja/call_after_text", {"content goes to the analysis channel", true}},
    };
    return m;
}

// Renders that are not a turn a model writes.
const std::map<std::string, const char*>& unrealistic() {
    static const std::map<std::string, const char*> m = {
        {"NVIDIA-Nemotron-Nano-v2.jinja/call_after_text",
         "a final assistant message is split into a text turn and a second tool-call turn"},
        {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja/call_after_text",
         "the content is rendered as a second assistant turn after the tool calls"},
    };
    return m;
}

// Templates with a tool syntax that never write tool calls into an assistant turn.
const std::set<std::string> k_no_rendered_calls = {
    "CohereForAI-c4ai-command-r-plus-tool_use.jinja",  // renders the turn after a system turn, not at the prompt
    "ibm-granite-granite-3.3-2B-Instruct.jinja",       // renders message content only
    "LFM2-8B-A1B.jinja",                               // lists tools, renders content only
    "llama-cpp-lfm2.jinja",
};

}  // namespace

TEST(ReplyRendered, FixtureCoversEveryTemplateWithTools) {
    std::set<std::string> with_cases;
    for (const json& c : fixture()["cases"])
        if (!c["calls"].empty()) with_cases.insert(c["template"].get<std::string>());
    for (const auto& e : std::filesystem::directory_iterator(kiln::test::data_path("shared/templates"))) {
        std::string name = e.path().filename().string();
        kiln::ChatFormat f = kiln::detect_chat_format(kiln::test::read_file(e.path().string()));
        // Those are covered by the hand-written parser tests.
        if (f.has_tools() && !k_no_rendered_calls.count(name)) {
            EXPECT_TRUE(with_cases.count(name)) << name << ": no rendered tool-call turn";
        }
    }
    EXPECT_GE(fixture()["cases"].size(), 150u);
}

TEST(ReplyRendered, TemplatesReadBackWhatTheyRendered) {
    const json& doc = fixture();
    int checked = 0;
    for (const json& c : doc["cases"]) {
        std::string tmpl = c["template"], name = c["case"];
        SCOPED_TRACE(tmpl + " / " + name);
        if (unrealistic().count(tmpl + "/" + name)) continue;
        kiln::ChatFormat f = kiln::test::format_of(tmpl);
        kiln::ReplyOptions o;
        o.tools = doc["tools"];
        std::string reply = c["reply"];
        // A prompt that opens the think block is followed, in the rendered history,
        // by the closing marker only when the template keeps the reasoning; when it
        // drops it (R1 distills, turns without reasoning_content), the rendered turn
        // is what a model writes after its reasoning.
        o.starts_in_thinking = kiln::prompt_opens_thinking(f, c["prompt_tail"].get<std::string>()) &&
                               reply.find(f.reasoning.close) != std::string::npos;

        json events = kiln::test::parse_whole(f, o, reply);
        json calls = json::array();
        std::string text, thinking;
        std::vector<std::string> errors;
        std::string end;
        for (const json& e : events) {
            if (e.contains("text")) text += e["text"].get<std::string>();
            if (e.contains("thinking")) thinking += e["thinking"].get<std::string>();
            if (e.contains("call")) {
                calls.push_back({{"name", e["call"]["name"]}, {"arguments", e["call"]["arguments"]}});
                EXPECT_FALSE(e["call"]["id"].get<std::string>().empty());
            }
            if (e.contains("error")) errors.push_back(e["error"]);
            if (e.contains("end")) end = e["end"];
        }
        std::string want_text = c["content"], want_thinking = c["reasoning"];
        auto m = moved().find(tmpl + "/" + name);
        if (m != moved().end() && m->second.content_is_reasoning) {
            want_thinking = want_text;
            want_text.clear();
        }
        EXPECT_TRUE(errors.empty()) << json(errors).dump() << "\nreply: " << reply;
        EXPECT_EQ(calls, c["calls"]) << "reply: " << reply;
        EXPECT_EQ(text, want_text) << "reply: " << reply;
        EXPECT_EQ(thinking, want_thinking) << "reply: " << reply;
        EXPECT_EQ(end, c["calls"].empty() ? "stop" : "tool_calls");
        // Every split gives the same events.
        EXPECT_EQ(kiln::test::check_all_splits(f, o, reply, events), "");
        ++checked;
    }
    EXPECT_GT(checked, 0);
}

// The next turn: the assistant message assistant_message() builds from a parsed
// call, and the tool result after it, rendered by each template with jinja2.
TEST(ReplyRendered, MultiTurnMessagesRenderThroughTheTemplates) {
    const json& mt = fixture()["multi_turn"];
    const json& fx_call = mt["messages"][1]["tool_calls"][0];
    kiln::ReplyMessage reply;
    reply.tool_calls.push_back({fx_call["id"], fx_call["function"]["name"], fx_call["function"]["arguments"]});
    // Exactly the messages the fixture rendered.
    EXPECT_EQ(kiln::assistant_message(reply), mt["messages"][1]);
    EXPECT_EQ(kiln::tool_result_message(reply.tool_calls[0], mt["messages"][2]["content"]), mt["messages"][2]);

    // Templates whose tool syntax wants something else from the history.
    const std::map<std::string, const char*> known = {
        {"deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja", "wants content null and arguments as a JSON string"},
        {"meetkai-functionary-medium-v3.2.jinja", "concatenates arguments as a string"},
        {"ibm-granite-granite-3.3-2B-Instruct.jinja", "does not render tool calls in the history"},
        {"LFM2-8B-A1B.jinja", "does not render tool calls in the history"},
        {"llama-cpp-lfm2.jinja", "does not render tool calls in the history"},
    };
    for (const auto& [file, result] : mt["results"].items()) {
        kiln::ChatFormat f = kiln::test::format_of(file);
        if (!f.has_tools()) continue;
        if (known.count(file)) {
            EXPECT_NE(result, "ok") << file << " now renders: drop it from the known list";
            continue;
        }
        EXPECT_EQ(result, "ok") << file;
    }
}
