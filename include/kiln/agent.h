// An agent loop over ChatSession: the model calls tools, kiln checks each call
// against the tool's JSON Schema, runs it, writes the result back through the
// chat template and lets the model go on, until it answers without a call, a
// step limit is reached or the run is cancelled (docs/agent.md).
//
//   kiln::ToolSet tools;
//   kiln::AgentTool add;
//   add.name = "add";
//   add.description = "Adds two numbers";
//   add.parameters = nlohmann::ordered_json::parse(R"({"type": "object", "properties":
//       {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]})");
//   add.handler = [](const nlohmann::json& args, const kiln::ToolInvocation&) {
//       return kiln::ToolResult{std::to_string(args["a"].get<double>() + args["b"].get<double>())};
//   };
//   tools.add(std::move(add));
//   chat.add_user("What is 2 + 3?");
//   kiln::AgentResult r = kiln::run_agent(chat, tools, {}, {.on_event = show});
//
// A bad call (unknown tool, arguments that do not match the schema, a declined
// approval, a handler that throws or times out) is answered with an error result,
// so the model sees what went wrong; nothing of it ends the run or the session.
// A call the reply parser could not read at all (no name or id to answer) is sent
// back as a user turn quoting the parser's error, and the model replies again.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/chat.h"
#include "kiln/reply.h"

namespace kiln {

struct ToolResult {
    std::string content;    // what the model reads
    bool is_error = false;  // sent as "error: <content>"
};

// What a handler may need while it runs.
struct ToolInvocation {
    std::chrono::milliseconds timeout{60000};   // the run's tool timeout
    const std::atomic<bool>* cancel = nullptr;  // the run's cancel flag (may be null)
};

using ToolHandler = std::function<ToolResult(const nlohmann::json& arguments, const ToolInvocation& invocation)>;

struct AgentTool {
    std::string name;  // [A-Za-z0-9_.-]{1,64}, unique in a ToolSet
    std::string description;
    // The JSON Schema of the arguments object (key order kept: the validator
    // expects an object's keys in the schema's order, and kiln writes them so).
    nlohmann::ordered_json parameters = nlohmann::ordered_json{{"type", "object"}};
    ToolHandler handler;
    std::string origin = "built-in";  // shown to the user: "skills", "MCP server 'calc'", ...
    bool needs_approval = false;      // ask AgentCallbacks::approve before each call
};

// The tools offered to the model, each with its compiled argument schema.
class ToolSet {
public:
    ToolSet();
    ~ToolSet();
    ToolSet(ToolSet&&) noexcept;
    ToolSet& operator=(ToolSet&&) noexcept;

    // Throws kiln::Error naming the tool: a bad or duplicate name, no handler,
    // parameters that are not an object schema or cannot be enforced exactly (the
    // keyword is named, as Grammar::from_json_schema does).
    void add(AgentTool tool);
    const AgentTool* find(std::string_view name) const;
    std::vector<const AgentTool*> tools() const;  // in the order added
    size_t size() const;
    bool empty() const { return size() == 0; }

    // The OpenAI tool definitions for the chat template: [{"type": "function",
    // "function": {"name", "description", "parameters"}}, ...].
    nlohmann::json definitions() const;

    // Empty when `arguments` match the tool's schema; otherwise why not, for the model.
    std::string check_arguments(const AgentTool& tool, const nlohmann::json& arguments) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

struct AgentOptions {
    // The options of each reply. tools is replaced by the ToolSet's definitions;
    // assistant_prefix applies to the first reply of the run only.
    ChatTurnOptions turn;
    // Model replies per run. The calls of the last allowed reply are still run
    // and answered (the history stays well formed); then the run ends with StepLimit.
    int max_steps = 8;
    std::chrono::milliseconds tool_timeout{60000};  // passed to each handler
};

struct AgentCallbacks {
    ReplyCallback on_event;  // every reply's event stream (false stops that reply)
    // Asked before each call of a tool with needs_approval; false declines it
    // (the model gets an error result). Without it such calls are declined.
    std::function<bool(const ToolCall& call, const AgentTool& tool)> approve;
    // Before a call runs (after the schema check and approval).
    std::function<void(const ToolCall& call, const AgentTool& tool)> on_call;
    // After each call is answered, with what the model will read.
    std::function<void(const ToolCall& call, const ToolResult& result)> on_result;
    // After a reply's unreadable calls (the parser's ReplyError items) were sent
    // back to the model as a user turn, with that turn's text.
    std::function<void(const std::string& text)> on_malformed;
};

enum class AgentFinish {
    Answer,     // the model replied without calls
    Length,     // the last reply hit the token limit or the context
    StepLimit,  // max_steps replies, the last one with calls (readable or not)
    Cancelled,  // the cancel flag or a callback stopped it
};
std::string_view agent_finish_name(AgentFinish finish);  // "answer", "length", "step_limit", "cancelled"

struct AgentToolRun {
    ToolCall call;
    ToolResult result;
};

struct AgentResult {
    AgentFinish finish = AgentFinish::Answer;
    std::vector<ChatReply> replies;   // one per step, in order
    std::vector<AgentToolRun> calls;  // every call of the run, answered, in order
    std::vector<std::string> malformed_calls;  // the ReplyError messages sent back to the model
    Usage usage;                      // summed over the replies
    double prefill_seconds = 0, decode_seconds = 0;
    SpecStats spec;                   // summed over the replies
};

// Runs the loop on the conversation as it stands (the caller added the user's
// message). Tool results and assistant messages are appended to chat's history.
AgentResult run_agent(ChatSession& chat, const ToolSet& tools, const AgentOptions& options = {},
                      const AgentCallbacks& callbacks = {});

// Skills: each folder under `dir` with a SKILL.md whose front matter (between
// "---" lines) gives `name:` and `description:`. The text is never run.
struct Skill {
    std::string name, description;
    std::string folder;  // its path
    std::string path;    // SKILL.md
};
// Throws kiln::Error naming the file and line for a missing or malformed front
// matter, a missing name or description, or two skills of one name.
std::vector<Skill> load_skills(const std::string& dir);
// One tool, "skills": without arguments it lists the skills by description; with
// {"name": N} it returns N's SKILL.md and names the other files in its folder.
AgentTool skills_tool(std::vector<Skill> skills);

}  // namespace kiln
