// The agent loop end to end on the real models, with the tools of three MCP
// servers (tests/data/agent/mcp_test_server.py: a working one, one that crashes
// on a call, one that answers malformed JSON) and the skills folder.
//
// Neither model's own template can call tools, so SmolLM2-135M gets Qwen 2.5's
// template (Hermes <tool_call> JSON, ChatML turns in SmolLM2's vocabulary) and
// Gemma 3 270M a Gemma-turn template with the same call syntax
// (tests/data/agent/gemma3-hermes-tools.jinja). Neither model opens a call by
// itself, so each run's first reply is prefilled with the whole call (the
// assistant-prefill technique of tests/chat/test_tool_round_trip.cpp): what is
// tested is what kiln does with a call — check, approve, run, answer through the
// template — and that the model then goes on from the result. Greedy, with few
// tokens per reply, to keep the suite fast.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "kiln/agent.h"
#include "kiln/chat.h"
#include "kiln/mcp.h"
#include "support/test_support.h"

namespace {

using namespace std::chrono_literals;

std::string call_text(const std::string& name, const std::string& args) {
    return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": " + args + "}\n</tool_call>";
}

std::shared_ptr<kiln::McpClient> start(const std::string& name, const std::string& mode,
                                       std::vector<std::string> allow) {
    kiln::McpServerConfig c;
    c.name = name;
    c.argv = {"python3", kiln::test::data_path("agent/mcp_test_server.py")};
    if (!mode.empty()) c.argv.push_back(mode);
    c.allow = std::move(allow);
    return std::make_shared<kiln::McpClient>(c, 10s);
}

struct Harness {
    std::shared_ptr<const kiln::Model> model;
    std::unique_ptr<kiln::ChatSession> chat;
    kiln::ToolSet tools;
    std::vector<std::shared_ptr<kiln::McpClient>> servers;
    bool approve = true;

    Harness(const std::string& path, const std::string& template_file, bool all_servers) {
        model = kiln::Model::load(path);
        kiln::ChatOptions o;
        o.context.n_ctx = 4096;
        o.context.n_batch = 512;
        o.template_source = kiln::test::read_file(kiln::test::data_path(template_file));
        chat = std::make_unique<kiln::ChatSession>(model, o);
        servers.push_back(start("calc", "", {"add", "fail", "hang"}));
        if (all_servers) {
            servers.push_back(start("crash", "--crash-on-call", {"*"}));
            servers.push_back(start("bad", "--malformed", {"*"}));
            tools.add(kiln::skills_tool(kiln::load_skills(kiln::test::data_path("agent/skills"))));
        }
        for (const auto& s : servers) {
            auto warnings = kiln::add_mcp_tools(tools, s);
            EXPECT_TRUE(warnings.empty()) << warnings[0];
        }
    }

    kiln::AgentResult run(const std::string& user, const std::string& prefix, kiln::AgentOptions o = {},
                          kiln::AgentCallbacks cb = {}) {
        chat->reset();  // the cached prefix (system prompt with the tools) stays
        chat->add_user(user);
        o.turn.generate.sampling = kiln::SamplingParams::greedy();
        if (o.turn.generate.max_tokens == 256) o.turn.generate.max_tokens = 6;
        o.turn.assistant_prefix = prefix;
        if (o.tool_timeout == 60s) o.tool_timeout = 10s;
        if (!cb.approve) cb.approve = [this](const kiln::ToolCall&, const kiln::AgentTool&) { return approve; };
        return kiln::run_agent(*chat, tools, o, cb);
    }

    std::string prompt() const {
        kiln::ChatTurnOptions t;
        t.tools = tools.definitions();
        return chat->render(t);
    }
};

// After a run whose first reply made calls: the model was given the results and
// replied again, without calls (or ran out of its few tokens).
void expect_resumed(const kiln::AgentResult& r) {
    ASSERT_GE(r.replies.size(), 2u);
    EXPECT_EQ(r.replies[0].finish, kiln::ReplyFinish::ToolCalls);
    EXPECT_GT(r.replies[1].usage.completion_tokens, 0);
    EXPECT_TRUE(r.finish == kiln::AgentFinish::Answer || r.finish == kiln::AgentFinish::Length ||
                r.finish == kiln::AgentFinish::StepLimit)
        << kiln::agent_finish_name(r.finish);
}

std::string answer_text(const kiln::AgentResult& r) { return r.replies.back().message.content; }


void CallRunResultRenderedAndAnswered(Harness& hh) {
    ASSERT_TRUE(hh.chat->format().has_tools());
    kiln::AgentResult r = hh.run("What is 2 plus 3?", call_text("add", R"({"a": 2, "b": 3})"));
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].call.name, "add");
    EXPECT_FALSE(r.calls[0].result.is_error) << r.calls[0].result.content;
    EXPECT_EQ(r.calls[0].result.content, "5");
    expect_resumed(r);
    // The result went back through Qwen 2.5's template as a tool response.
    const std::string prompt = hh.prompt();
    EXPECT_NE(prompt.find("<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2, \"b\": 3}}\n</tool_call>"),
              std::string::npos)
        << prompt;
    EXPECT_NE(prompt.find("<|im_start|>user\n<tool_response>\n5\n</tool_response><|im_end|>"), std::string::npos) << prompt;
    // Usage is the sum over the replies; the second reused the first's prompt.
    kiln::Usage sum;
    for (const auto& reply : r.replies) {
        sum.prompt_tokens += reply.usage.prompt_tokens;
        sum.completion_tokens += reply.usage.completion_tokens;
        sum.reused_prompt_tokens += reply.usage.reused_prompt_tokens;
    }
    EXPECT_EQ(r.usage.prompt_tokens, sum.prompt_tokens);
    EXPECT_EQ(r.usage.completion_tokens, sum.completion_tokens);
    EXPECT_EQ(r.usage.reused_prompt_tokens, sum.reused_prompt_tokens);
    EXPECT_GT(r.replies[1].usage.reused_prompt_tokens, r.replies[0].usage.prompt_tokens / 2);
    std::printf("[ figures  ] %zu replies, usage: prompt %d (reused %d), completion %d; answer: '%s'\n", r.replies.size(),
                r.usage.prompt_tokens, r.usage.reused_prompt_tokens, r.usage.completion_tokens, answer_text(r).c_str());
}

void ParallelCallsRunInOrderAndAreAllAnswered(Harness& hh) {
    kiln::AgentResult r = hh.run("Add 1 and 2, and 3 and 4.",
                                   call_text("add", R"({"a": 1, "b": 2})") + "\n" + call_text("add", R"({"a": 3, "b": 4})"));
    ASSERT_GE(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].result.content, "3");
    EXPECT_EQ(r.calls[1].result.content, "7");
    expect_resumed(r);
    // History: the assistant's two calls, then one tool message per call, in order.
    const auto& m = hh.chat->messages();
    ASSERT_GE(m.size(), 4u);
    EXPECT_EQ(m[1]["role"], "assistant");
    ASSERT_EQ(m[1]["tool_calls"].size(), 2u);
    EXPECT_EQ(m[2]["role"], "tool");
    EXPECT_EQ(m[2]["tool_call_id"], m[1]["tool_calls"][0]["id"]);
    EXPECT_EQ(m[2]["content"], "3");
    EXPECT_EQ(m[3]["tool_call_id"], m[1]["tool_calls"][1]["id"]);
    EXPECT_EQ(m[3]["content"], "7");
}

void SchemaInvalidCallIsAnErrorResult(Harness& hh) {
    kiln::AgentResult r = hh.run("What is two plus 3?", call_text("add", R"({"a": "two", "b": 3})"));
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_TRUE(r.calls[0].result.is_error);
    EXPECT_NE(r.calls[0].result.content.find("do not match the parameters schema of 'add'"), std::string::npos)
        << r.calls[0].result.content;
    expect_resumed(r);
    EXPECT_NE(hh.prompt().find("<tool_response>\nerror: the arguments {\"a\":\"two\",\"b\":3} do not match"),
              std::string::npos);
    // An unknown tool, too.
    r = hh.run("Multiply 2 by 3.", call_text("multiply", R"({"a": 2, "b": 3})"));
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_TRUE(r.calls[0].result.is_error);
    EXPECT_EQ(r.calls[0].result.content.rfind("there is no tool 'multiply'; the tools are: skills, add, fail", 0), 0u)
        << r.calls[0].result.content;
    expect_resumed(r);
}

void FailingToolIsAnErrorResult(Harness& hh) {
    kiln::AgentResult r = hh.run("Try the failing tool.", call_text("fail", R"({"reason": "testing"})"));
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_TRUE(r.calls[0].result.is_error);
    EXPECT_EQ(r.calls[0].result.content, "the fail tool failed: testing");
    expect_resumed(r);
}

void HangingToolTimesOutAndTheServerGoesOn(Harness& hh) {
    kiln::AgentOptions o;
    o.tool_timeout = 1s;
    const auto t0 = std::chrono::steady_clock::now();
    kiln::AgentResult r = hh.run("Call the hanging tool.", call_text("hang", "{}"), o);
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_TRUE(r.calls[0].result.is_error);
    EXPECT_EQ(r.calls[0].result.content, "MCP server 'calc' did not answer tools/call within 1 s");
    expect_resumed(r);
    std::printf("[ figures  ] the run with the 1 s timeout took %.1f s\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    r = hh.run("What is 2 plus 3?", call_text("add", R"({"a": 2, "b": 3})"));
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].result.content, "5");
}

void CrashedServerIsAnErrorResultAndTheChatGoesOn(Harness& hh) {
    kiln::AgentResult r = hh.run("Add 1 and 1 with the other server.", call_text("crash_add", R"({"a": 1, "b": 1})"));
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_TRUE(r.calls[0].result.is_error);
    EXPECT_NE(r.calls[0].result.content.find("MCP server 'crash' exited with status 3 (during tools/call)"),
              std::string::npos)
        << r.calls[0].result.content;
    expect_resumed(r);
    r = hh.run("Again, please.", call_text("crash_add", R"({"a": 1, "b": 1})"));
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].result.content, "MCP server 'crash' is not running (exited with status 3)");
    r = hh.run("What is 2 plus 3?", call_text("add", R"({"a": 2, "b": 3})"));
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].result.content, "5");
}

void MalformedAnswerIsAnErrorResult(Harness& hh) {
    kiln::AgentResult r = hh.run("Add 1 and 1 with the bad server.", call_text("bad_add", R"({"a": 1, "b": 1})"));
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_TRUE(r.calls[0].result.is_error);
    EXPECT_NE(r.calls[0].result.content.find("MCP server 'bad' wrote malformed MCP message: not JSON"), std::string::npos)
        << r.calls[0].result.content;
    expect_resumed(r);
}

// A call the parser cannot read has no id for a tool result: it goes back as a
// user turn quoting the error, and the model replies again.
void UnreadableCallIsSentBackAndTheModelGoesOn(Harness& hh) {
    std::vector<std::string> sent;
    kiln::AgentCallbacks cb;
    cb.on_malformed = [&](const std::string& text) { sent.push_back(text); };
    kiln::AgentResult r = hh.run("What is 2 plus 3?", "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 2,, }}\n</tool_call>",
                                 {}, cb);
    EXPECT_TRUE(r.calls.empty());
    ASSERT_EQ(r.malformed_calls.size(), 1u);
    EXPECT_EQ(r.malformed_calls[0].rfind("malformed tool call: ", 0), 0u) << r.malformed_calls[0];
    ASSERT_EQ(sent.size(), 1u);
    ASSERT_GE(r.replies.size(), 2u);
    EXPECT_EQ(r.replies[0].finish, kiln::ReplyFinish::Stop);
    EXPECT_EQ(r.replies[0].message.errors.size(), 1u);
    EXPECT_GT(r.replies[1].usage.completion_tokens, 0);
    // History: the assistant's reply, then the error as a user turn, then the next reply.
    const auto& m = hh.chat->messages();
    ASSERT_GE(m.size(), 4u);
    EXPECT_EQ(m[1]["role"], "assistant");
    EXPECT_EQ(m[2]["role"], "user");
    EXPECT_EQ(m[2]["content"], sent[0]);
    EXPECT_EQ(sent[0].rfind("error: your tool call could not be read (malformed tool call: ", 0), 0u) << sent[0];
    EXPECT_NE(hh.prompt().find("<|im_start|>user\nerror: your tool call could not be read"), std::string::npos);
    // The session goes on: a good call next works.
    r = hh.run("What is 2 plus 3?", call_text("add", R"({"a": 2, "b": 3})"));
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].result.content, "5");
    EXPECT_TRUE(r.malformed_calls.empty());
}

void DeclinedApprovalIsAnErrorResult(Harness& hh) {
    hh.approve = false;
    std::vector<std::string> asked;
    kiln::AgentCallbacks cb;
    cb.approve = [&](const kiln::ToolCall& c, const kiln::AgentTool& t) {
        asked.push_back(c.name + " from " + t.origin);
        return false;
    };
    // env is not in calc's allow list: it is asked for; add is allowed: it is not.
    kiln::AgentResult r = hh.run("Show the environment and add 1 and 1.",
                                   call_text("env", "{}") + "\n" + call_text("add", R"({"a": 1, "b": 1})"), {}, cb);
    ASSERT_GE(r.calls.size(), 2u);
    EXPECT_EQ(asked, (std::vector<std::string>{"env from MCP server 'calc'"}));
    EXPECT_TRUE(r.calls[0].result.is_error);
    EXPECT_EQ(r.calls[0].result.content, "the user declined to run env");
    EXPECT_EQ(r.calls[1].result.content, "2");
}

void SkillIsLoadedThroughItsTool(Harness& hh) {
    kiln::AgentResult r = hh.run("How many centimetres is an inch?", call_text("skills", R"({"name": "unit-convert"})"));
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_FALSE(r.calls[0].result.is_error);
    EXPECT_NE(r.calls[0].result.content.find("1 inch = 2.54 cm"), std::string::npos);
    EXPECT_NE(r.calls[0].result.content.find("- scripts/convert.py"), std::string::npos);
    expect_resumed(r);
}

void StepLimitAndCancellation(Harness& hh) {
    kiln::AgentOptions o;
    o.max_steps = 1;
    kiln::AgentResult r = hh.run("What is 2 plus 3?", call_text("add", R"({"a": 2, "b": 3})"), o);
    EXPECT_EQ(r.finish, kiln::AgentFinish::StepLimit);
    ASSERT_EQ(r.replies.size(), 1u);
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].result.content, "5");  // the last reply's calls are still answered
    EXPECT_EQ(hh.chat->messages().back()["role"], "tool");

    // Cancelled after the first of two calls: the second is answered as not run.
    std::atomic<bool> cancel{false};
    kiln::AgentOptions c;
    c.turn.generate.cancel = &cancel;
    kiln::AgentCallbacks cb;
    cb.on_result = [&](const kiln::ToolCall&, const kiln::ToolResult&) { cancel = true; };
    r = hh.run("Add 1 and 2, and 3 and 4.",
                 call_text("add", R"({"a": 1, "b": 2})") + "\n" + call_text("add", R"({"a": 3, "b": 4})"), c, cb);
    EXPECT_EQ(r.finish, kiln::AgentFinish::Cancelled);
    ASSERT_EQ(r.calls.size(), 2u);
    EXPECT_EQ(r.calls[0].result.content, "3");
    EXPECT_EQ(r.calls[1].result.content, "cancelled before add ran");
    EXPECT_EQ(r.replies.size(), 1u);
}


// A scenario of the groups below, named in failure messages.
#define SCENARIO(f)          \
    do {                     \
        SCOPED_TRACE(#f);    \
        hh->approve = true;  \
        f(*hh);              \
    } while (0)

std::unique_ptr<Harness> smollm2() {
    return std::make_unique<Harness>(kiln::test::smollm2_path(), "shared/templates/Qwen-Qwen2.5-7B-Instruct.jinja", true);
}

}  // namespace

// One test per group, so that the model, the servers and the prompt with the
// tools are set up once per group (ctest runs each test in a process of its own).
TEST(AgentSmolLM2, CallsResultsAndTheLoop) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto hh = smollm2();
    SCENARIO(CallRunResultRenderedAndAnswered);
    SCENARIO(ParallelCallsRunInOrderAndAreAllAnswered);
    SCENARIO(SkillIsLoadedThroughItsTool);
    SCENARIO(StepLimitAndCancellation);
}

TEST(AgentSmolLM2, BadCallsAndBrokenServersAreErrorResults) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto hh = smollm2();
    SCENARIO(SchemaInvalidCallIsAnErrorResult);
    SCENARIO(FailingToolIsAnErrorResult);
    SCENARIO(HangingToolTimesOutAndTheServerGoesOn);
    SCENARIO(CrashedServerIsAnErrorResultAndTheChatGoesOn);
    SCENARIO(MalformedAnswerIsAnErrorResult);
    SCENARIO(UnreadableCallIsSentBackAndTheModelGoesOn);
    SCENARIO(DeclinedApprovalIsAnErrorResult);
}

// Gemma 3 270M through the Gemma-turn tool template: the call runs, its result is
// rendered as a <tool_response> user turn, and the model replies after it.
TEST(AgentGemma3, CallRunResultRenderedAndAnswered) {
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    Harness g(kiln::test::gemma3_path(), "agent/gemma3-hermes-tools.jinja", false);
    ASSERT_TRUE(g.chat->format().has_tools());
    kiln::AgentResult r = g.run("What is 2 plus 3?", call_text("add", R"({"a": 2, "b": 3})"));
    ASSERT_GE(r.calls.size(), 1u);
    EXPECT_EQ(r.calls[0].result.content, "5");
    expect_resumed(r);
    const std::string prompt = g.prompt();
    EXPECT_NE(prompt.find("<start_of_turn>user\n<tool_response>\n5\n</tool_response><end_of_turn>\n<start_of_turn>model\n"),
              std::string::npos)
        << prompt;
    std::printf("[ figures  ] gemma: %zu replies, usage: prompt %d (reused %d), completion %d; answer: '%s'\n",
                r.replies.size(), r.usage.prompt_tokens, r.usage.reused_prompt_tokens, r.usage.completion_tokens,
                answer_text(r).c_str());
}
