// Forced tool calls: for every template of tests/data/shared/templates whose tool
// syntax kiln can constrain, random texts that the call grammar accepts are read
// back by the ReplyParser (with that template's format) as calls of the offered
// tools, with the arguments the grammar wrote, no text and no errors; text the
// grammar is handed that breaks a tool's schema is rejected. The other syntaxes
// are refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstdio>
#include <random>

#include "kiln/error.h"
#include "kiln/reply.h"
#include "kiln/tool_grammar.h"
#include "reply/reply_harness.h"

namespace {

using nlohmann::json;
using kiln::ChatFormat;
using kiln::Grammar;
using kiln::GrammarMatcher;
using kiln::MatchStatus;
using kiln::ToolChoice;

const json k_tools = json::parse(R"([
  {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string", "maxLength": 12},
      "unit": {"enum": ["celsius", "fahrenheit"]}}, "required": ["city"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
    "properties": {"a": {"type": "integer", "minimum": -100, "maximum": 100}, "b": {"type": "integer"}},
    "required": ["a", "b"], "additionalProperties": false}}},
  {"type": "function", "function": {"name": "ping", "parameters": {"type": "object", "properties": {
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 3}}, "additionalProperties": false}}}
])");

std::vector<std::string> template_files() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(std::string(KILN_SOURCE_DIR) + "/tests/data/shared/templates"))
        if (e.path().extension() == ".jinja") out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

// A random text the grammar accepts: bytes drawn among those it allows (JSON's
// structural bytes preferred, so strings end), until it may stop. (The tools'
// schemas have no free-form numbers: a random exponent such as 1e600 is valid
// JSON that nlohmann::json, and so the reply parser, cannot read.)
std::optional<std::string> random_text(GrammarMatcher m, std::mt19937& rng) {
    std::string text;
    const std::string structural = "\"}],:0123456789tfn";
    for (int step = 0; step < 4000; ++step) {
        if (m.is_complete() && (rng() % 3 == 0 || !m.can_accept(std::string(1, ' ')))) {
            bool more = false;
            for (int b = 0; b < 256 && !more; ++b) more = m.can_accept(std::string(1, static_cast<char>(b)));
            if (!more || rng() % 2 == 0) return text;
        }
        std::vector<char> ok, preferred;
        for (int b = 0; b < 256; ++b) {
            const std::string s(1, static_cast<char>(b));
            if (!m.can_accept(s)) continue;
            ok.push_back(s[0]);
            if (structural.find(s[0]) != std::string::npos) preferred.push_back(s[0]);
        }
        if (ok.empty()) return m.is_complete() ? std::optional(text) : std::nullopt;
        // Plain letters inside strings keep the texts readable; UTF-8 lead bytes
        // would need their continuation, which the walk finds anyway.
        const auto& pool = (!preferred.empty() && rng() % 10 < 6) ? preferred : ok;
        char c = pool[rng() % pool.size()];
        if (static_cast<unsigned char>(c) >= 0x80 && rng() % 4 != 0) {
            std::vector<char> ascii;
            for (char o : ok)
                if (static_cast<unsigned char>(o) < 0x80) ascii.push_back(o);
            if (!ascii.empty()) c = ascii[rng() % ascii.size()];
        }
        EXPECT_TRUE(m.accept_bytes(std::string(1, c)));
        text += c;
    }
    return std::nullopt;
}

json parse_reply(const ChatFormat& f, bool starts_in_thinking, const std::string& text) {
    kiln::ReplyOptions o;
    o.starts_in_thinking = starts_in_thinking;
    o.tools = k_tools;
    o.id_seed = 1;
    return kiln::test::parse_whole(f, o, text, kiln::ReplyFinish::Stop);
}

void check_calls(const json& events, const std::string& text, const std::set<std::string>& names, size_t max_calls) {
    size_t calls = 0;
    for (const json& e : events) {
        if (e.contains("call")) {
            ++calls;
            const json& c = e["call"];
            EXPECT_TRUE(names.count(c["name"].get<std::string>())) << c.dump() << "\n" << text;
            EXPECT_TRUE(c["arguments"].is_object()) << text;
            if (c["name"] == "get_weather") {
                EXPECT_TRUE(c["arguments"].contains("city")) << text;
                EXPECT_LE(c["arguments"]["city"].get<std::string>().size(), 12u * 4) << text;
            }
            if (c["name"] == "add") {
                EXPECT_TRUE(c["arguments"]["a"].is_number_integer()) << text;
                EXPECT_GE(c["arguments"]["a"].get<int64_t>(), -100) << text;
                EXPECT_LE(c["arguments"]["a"].get<int64_t>(), 100) << text;
            }
        } else {
            EXPECT_TRUE(e.contains("thinking") || e.contains("end")) << "unexpected event " << e.dump() << " in\n" << text;
        }
    }
    EXPECT_GE(calls, 1u) << text;
    EXPECT_LE(calls, max_calls) << text;
}

TEST(ToolGrammar, EveryConstrainableTemplateRoundTripsThroughTheParser) {
    int constrained = 0, refused = 0, checked = 0, attempts = 0;
    std::mt19937 rng(23);
    for (const std::string& file : template_files()) {
        SCOPED_TRACE(file);
        const ChatFormat f = kiln::test::format_of(file);
        if (!f.has_tools()) continue;
        if (!kiln::tool_syntax_can_constrain(f.tools.syntax)) {
            ++refused;
            try {
                kiln::tool_call_constraint(f, k_tools, {});
                ADD_FAILURE() << "expected a refusal";
            } catch (const kiln::Error& e) {
                EXPECT_NE(std::string(e.what()).find(std::string(kiln::tool_syntax_name(f.tools.syntax))), std::string::npos)
                    << e.what();
                EXPECT_EQ(e.kind(), kiln::ErrorKind::Unsupported);
            }
            continue;
        }
        ++constrained;
        for (bool thinking : {false, true}) {
            if (thinking && f.reasoning.syntax != kiln::ReasoningSyntax::Tags) continue;
            // Required, parallel: any tools, one or more calls.
            kiln::ToolCallConstraintOptions o;
            o.starts_in_thinking = thinking;
            const kiln::ToolCallConstraint c = kiln::tool_call_constraint(f, k_tools, o);
            EXPECT_TRUE(c.triggers.empty());
            for (int round = 0; round < 5; ++round) {
                GrammarMatcher m(c.grammar);
                std::string prefix;
                // The reasoning the prompt opened, or one the model opens itself.
                if (thinking) prefix = "Let me see. " + f.reasoning.close + "\n";
                else if (f.reasoning.syntax == kiln::ReasoningSyntax::Tags && !f.reasoning.open.empty() && round % 2)
                    prefix = f.reasoning.open + "hmm <b>" + f.reasoning.close;
                ASSERT_TRUE(m.accept_bytes(prefix)) << prefix;
                ++attempts;
                auto text = random_text(m, rng);
                if (!text) continue;
                ++checked;
                check_calls(parse_reply(f, thinking, prefix + *text), prefix + *text, {"get_weather", "add", "ping"}, 1000);
            }
            // Named: exactly one call of that tool.
            o.choice = ToolChoice::Named;
            o.name = "add";
            const kiln::ToolCallConstraint named = kiln::tool_call_constraint(f, k_tools, o);
            for (int round = 0; round < 4; ++round) {
                GrammarMatcher m(named.grammar);
                const std::string prefix = thinking ? "ok " + f.reasoning.close : "";
                ASSERT_TRUE(m.accept_bytes(prefix));
                auto text = random_text(m, rng);
                if (!text) continue;
                check_calls(parse_reply(f, thinking, prefix + *text), prefix + *text, {"add"}, 1);
            }
        }
        // Auto: a lazy grammar whose text starts with its trigger (Llama 3's bare
        // JSON has no trigger: refused, the server leaves auto free).
        kiln::ToolCallConstraintOptions a;
        a.choice = ToolChoice::Auto;
        if (f.tools.syntax == kiln::ToolSyntax::Llama3) {
            EXPECT_THROW(kiln::tool_call_constraint(f, k_tools, a), kiln::Error);
            continue;
        }
        const kiln::ToolCallConstraint lazy = kiln::tool_call_constraint(f, k_tools, a);
        ASSERT_EQ(lazy.triggers.size(), 1u);
        for (int round = 0; round < 3; ++round) {
            GrammarMatcher m(lazy.grammar);
            ASSERT_TRUE(m.accept_bytes(lazy.triggers[0]));
            auto text = random_text(m, rng);
            if (!text) continue;
            const std::string reply = "I will call it. " + lazy.triggers[0] + *text;
            const json events = parse_reply(f, false, reply);
            size_t calls = 0;
            for (const json& e : events) calls += e.contains("call");
            EXPECT_GE(calls, 1u) << reply << "\n" << events.dump();
        }
    }
    std::printf("%d templates constrained, %d refused; %d of %d random calls checked\n", constrained, refused, checked,
                attempts);
    EXPECT_GE(constrained, 10);
    EXPECT_GE(refused, 5);
    EXPECT_GE(checked * 5, attempts * 4);  // most walks end within their bound
}

TEST(ToolGrammar, ArgumentsFollowTheSchema) {
    const ChatFormat f = kiln::test::format_of("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja");
    ASSERT_EQ(f.tools.syntax, kiln::ToolSyntax::Hermes);
    const Grammar g = kiln::tool_call_constraint(f, k_tools, {}).grammar;
    auto status = [&](const std::string& s) { return kiln::validate(g, s).status; };
    EXPECT_EQ(status("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"),
              MatchStatus::Complete);
    EXPECT_EQ(status("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>\n"
                     "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>"),
              MatchStatus::Complete);
    EXPECT_EQ(status("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 101, \"b\": 2}}\n</tool_call>"),
              MatchStatus::Rejected);
    EXPECT_EQ(status("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"town\": \"Paris\"}}\n</tool_call>"),
              MatchStatus::Rejected);
    EXPECT_EQ(status("<tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>"), MatchStatus::Rejected);
    EXPECT_EQ(status("Sure! <tool_call>"), MatchStatus::Rejected);
    kiln::ToolCallConstraintOptions single;
    single.parallel = false;
    const Grammar one = kiln::tool_call_constraint(f, k_tools, single).grammar;
    EXPECT_EQ(kiln::validate(one, "<tool_call>\n{\"name\": \"ping\", \"arguments\": {}}\n</tool_call>\n<tool_call>").status,
              MatchStatus::Rejected);
}

TEST(ToolGrammar, ErrorsNameTheToolAndConstruct) {
    const ChatFormat f = kiln::test::format_of("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja");
    kiln::ToolCallConstraintOptions named;
    named.choice = ToolChoice::Named;
    named.name = "missing";
    try {
        kiln::tool_call_constraint(f, k_tools, named);
        ADD_FAILURE();
    } catch (const kiln::Error& e) {
        EXPECT_NE(std::string(e.what()).find("'missing'"), std::string::npos) << e.what();
        EXPECT_EQ(e.kind(), kiln::ErrorKind::InvalidInput);
    }
    const json bad = json::parse(R"([{"type":"function","function":{"name":"f","parameters":
        {"type":"object","properties":{"x":{"not":{"enum":["a"]}}}}}}])");
    try {
        kiln::tool_call_constraint(f, bad, {});
        ADD_FAILURE();
    } catch (const kiln::Error& e) {
        EXPECT_NE(std::string(e.what()).find("tool 'f' parameters"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("not"), std::string::npos) << e.what();
    }
    const json not_object = json::parse(R"([{"type":"function","function":{"name":"f","parameters":{"type":"string"}}}])");
    EXPECT_THROW(kiln::tool_call_constraint(f, not_object, {}), kiln::Error);
    ChatFormat plain;
    EXPECT_THROW(kiln::tool_call_constraint(plain, k_tools, {}), kiln::Error);
}

}  // namespace
