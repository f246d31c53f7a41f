// The agent loop (kiln/agent.h): reply, check and run each tool call, answer it
// through the template, reply again.
#include "kiln/agent.h"

#include <deque>
#include <exception>
#include <optional>

#include "kiln/constraint.h"
#include "kiln/error.h"

namespace kiln {

namespace {

bool valid_tool_name(std::string_view name) {
    if (name.empty() || name.size() > 64) return false;
    for (char c : name)
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.'))
            return false;
    return true;
}

// The arguments with every object's keys in the schema's order: the schema's
// `properties` first, then the rest as nlohmann::json sorts them. The validator
// reads an object's keys in the grammar's order (docs/structured_output.md),
// while a model may write them in any order and JSON objects are unordered.
nlohmann::ordered_json in_schema_order(const nlohmann::json& value, const nlohmann::ordered_json* schema) {
    if (value.is_array()) {
        nlohmann::ordered_json out = nlohmann::ordered_json::array();
        const nlohmann::ordered_json* items = nullptr;
        if (schema && schema->is_object()) {
            auto it = schema->find("items");
            if (it != schema->end() && it->is_object()) items = &*it;
        }
        for (const auto& v : value) out.push_back(in_schema_order(v, items));
        return out;
    }
    if (!value.is_object()) return nlohmann::ordered_json(value);
    nlohmann::ordered_json out = nlohmann::ordered_json::object();
    const nlohmann::ordered_json* props = nullptr;
    if (schema && schema->is_object()) {
        auto it = schema->find("properties");
        if (it != schema->end() && it->is_object()) props = &*it;
    }
    if (props)
        for (const auto& [key, sub] : props->items()) {
            auto v = value.find(key);
            if (v != value.end()) out[key] = in_schema_order(*v, &sub);
        }
    for (const auto& [key, v] : value.items())
        if (!out.contains(key)) out[key] = in_schema_order(v, nullptr);
    return out;
}

std::string shown(const std::string& text, size_t limit = 200) {
    return text.size() <= limit ? text : text.substr(0, limit) + "...";
}

}  // namespace

struct ToolSet::Impl {
    struct Entry {
        AgentTool tool;
        Grammar schema;
    };
    std::deque<Entry> entries;  // a deque: the AgentTool pointers handed out stay valid as tools are added
};

ToolSet::ToolSet() : impl_(std::make_unique<Impl>()) {}
ToolSet::~ToolSet() = default;
ToolSet::ToolSet(ToolSet&&) noexcept = default;
ToolSet& ToolSet::operator=(ToolSet&&) noexcept = default;

void ToolSet::add(AgentTool tool) {
    if (!valid_tool_name(tool.name))
        throw Error("tool '" + tool.name + "' (" + tool.origin + "): a name is 1-64 of A-Z a-z 0-9 _ - .",
                    ErrorKind::InvalidInput);
    if (find(tool.name))
        throw Error("tool '" + tool.name + "' (" + tool.origin + "): a tool of that name is already offered (" +
                        find(tool.name)->origin + ")",
                    ErrorKind::InvalidInput);
    if (!tool.handler) throw Error("tool '" + tool.name + "': no handler", ErrorKind::InvalidInput);
    if (!tool.parameters.is_object() || tool.parameters.value("type", "") != "object")
        throw Error("tool '" + tool.name + "' (" + tool.origin + "): parameters must be a JSON Schema of type \"object\"",
                    ErrorKind::InvalidInput);
    std::optional<Grammar> g;
    try {
        g = Grammar::from_json_schema(tool.parameters.dump(), {.any_whitespace = true});
    } catch (const Error& e) {
        throw Error("tool '" + tool.name + "' (" + tool.origin + "): its argument schema cannot be checked: " + e.what(),
                    ErrorKind::Unsupported);
    }
    impl_->entries.push_back({std::move(tool), std::move(*g)});
}

const AgentTool* ToolSet::find(std::string_view name) const {
    for (const auto& e : impl_->entries)
        if (e.tool.name == name) return &e.tool;
    return nullptr;
}

std::vector<const AgentTool*> ToolSet::tools() const {
    std::vector<const AgentTool*> out;
    for (const auto& e : impl_->entries) out.push_back(&e.tool);
    return out;
}

size_t ToolSet::size() const { return impl_->entries.size(); }

nlohmann::json ToolSet::definitions() const {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& e : impl_->entries)
        out.push_back({{"type", "function"},
                       {"function",
                        {{"name", e.tool.name},
                         {"description", e.tool.description},
                         {"parameters", nlohmann::json::parse(e.tool.parameters.dump())}}}});
    return out;
}

std::string ToolSet::check_arguments(const AgentTool& tool, const nlohmann::json& arguments) const {
    const Impl::Entry* entry = nullptr;
    for (const auto& e : impl_->entries)
        if (&e.tool == &tool) entry = &e;
    if (!entry) return "tool '" + tool.name + "' is not in this tool set";
    const std::string text = in_schema_order(arguments, &tool.parameters).dump();
    MatchResult m = validate(entry->schema, text);
    if (m.status == MatchStatus::Complete) return "";
    std::string why = "the arguments " + shown(text) + " do not match the parameters schema of '" + tool.name + "': ";
    if (m.status == MatchStatus::Incomplete)
        why += "something required is missing";
    else
        why += "not valid from byte " + std::to_string(m.offset) + " ('" + shown(text.substr(m.offset), 40) + "')";
    return why + "; the schema is " + shown(tool.parameters.dump(), 600);
}

std::string_view agent_finish_name(AgentFinish finish) {
    switch (finish) {
        case AgentFinish::Answer: return "answer";
        case AgentFinish::Length: return "length";
        case AgentFinish::StepLimit: return "step_limit";
        case AgentFinish::Cancelled: return "cancelled";
    }
    return "?";
}

namespace {

bool cancelled(const std::atomic<bool>* flag) { return flag && flag->load(std::memory_order_relaxed); }

// Checks, approves and runs one call. Never throws: every failure is an error result.
ToolResult run_call(const ToolSet& tools, const ToolCall& call, const AgentOptions& options,
                    const AgentCallbacks& cb) {
    const AgentTool* tool = tools.find(call.name);
    if (!tool) {
        std::string names;
        for (const AgentTool* t : tools.tools()) names += (names.empty() ? "" : ", ") + t->name;
        return {"there is no tool '" + call.name + "'; the tools are: " + (names.empty() ? "(none)" : names), true};
    }
    if (std::string why = tools.check_arguments(*tool, call.arguments); !why.empty()) return {why, true};
    if (tool->needs_approval && !(cb.approve && cb.approve(call, *tool)))
        return {"the user declined to run " + call.name, true};
    if (cancelled(options.turn.generate.cancel)) return {"cancelled before " + call.name + " ran", true};
    if (cb.on_call) cb.on_call(call, *tool);
    try {
        return tool->handler(call.arguments, ToolInvocation{options.tool_timeout, options.turn.generate.cancel});
    } catch (const std::exception& e) {
        return {call.name + " failed: " + e.what(), true};
    } catch (...) {
        return {call.name + " failed", true};
    }
}

// What the model reads after a reply with calls the parser could not read.
std::string malformed_call_message(const std::vector<std::string>& errors) {
    std::string text = errors.size() == 1 ? "error: your tool call could not be read (" + shown(errors[0], 600) + ")."
                                          : "error: " + std::to_string(errors.size()) +
                                                " of your tool calls could not be read:";
    if (errors.size() > 1)
        for (const std::string& e : errors) text += "\n- " + shown(e, 600);
    return text + "\nWrite the call again in the tool-call format, with the arguments as one JSON object, "
                  "or answer without a tool.";
}

void add_usage(Usage& sum, const Usage& u) {
    sum.prompt_tokens += u.prompt_tokens;
    sum.reused_prompt_tokens += u.reused_prompt_tokens;
    sum.completion_tokens += u.completion_tokens;
    sum.reasoning_tokens += u.reasoning_tokens;
}

}  // namespace

AgentResult run_agent(ChatSession& chat, const ToolSet& tools, const AgentOptions& options,
                      const AgentCallbacks& callbacks) {
    if (options.max_steps < 1)
        throw Error("agent: max_steps must be at least 1, not " + std::to_string(options.max_steps),
                    ErrorKind::InvalidInput);
    AgentResult out;
    ChatTurnOptions turn = options.turn;
    turn.tools = tools.empty() ? nlohmann::json() : tools.definitions();
    for (int step = 0;; ++step) {
        if (step > 0) turn.assistant_prefix.clear();
        ChatReply reply = chat.reply(turn, callbacks.on_event);
        add_usage(out.usage, reply.usage);
        out.prefill_seconds += reply.prefill_seconds;
        out.decode_seconds += reply.decode_seconds;
        out.spec += reply.spec;
        out.replies.push_back(reply);
        const auto& calls = reply.message.tool_calls;
        // A call the parser could not read (a ReplyError) has no id to answer with
        // a tool result, so it goes back as a user turn that quotes the error; it
        // is answered only when the reply ended by itself (not cut by the token
        // limit or cancelled, where a retry would only be cut again).
        const auto& malformed = reply.message.errors;
        const bool answer_malformed = !malformed.empty() && reply.finish != ReplyFinish::Cancelled &&
                                      reply.finish != ReplyFinish::Length;
        if (calls.empty() && !answer_malformed) {
            out.finish = reply.finish == ReplyFinish::Cancelled ? AgentFinish::Cancelled
                         : reply.finish == ReplyFinish::Length  ? AgentFinish::Length
                                                                : AgentFinish::Answer;
            return out;
        }
        // The calls are in the history now: every one gets its answer, in order,
        // whatever happens, so the next render is well formed.
        const bool stop_now = reply.finish == ReplyFinish::Cancelled;
        for (const ToolCall& call : calls) {
            ToolResult result = stop_now ? ToolResult{"cancelled before " + call.name + " ran", true}
                                         : run_call(tools, call, options, callbacks);
            chat.add_tool_result(call, result.is_error ? "error: " + result.content : result.content);
            if (callbacks.on_result) callbacks.on_result(call, result);
            out.calls.push_back({call, std::move(result)});
        }
        if (answer_malformed) {
            const std::string text = malformed_call_message(malformed);
            chat.add_user(text);
            if (callbacks.on_malformed) callbacks.on_malformed(text);
            out.malformed_calls.insert(out.malformed_calls.end(), malformed.begin(), malformed.end());
        }
        if (stop_now || cancelled(options.turn.generate.cancel)) {
            out.finish = AgentFinish::Cancelled;
            return out;
        }
        if (step + 1 >= options.max_steps) {
            out.finish = AgentFinish::StepLimit;
            return out;
        }
    }
}

}  // namespace kiln
