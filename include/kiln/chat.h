// A conversation with a model: messages rendered through the model's chat
// template, the reply generated with prefix reuse and parsed into a typed event
// stream (text, thinking, tool calls, errors, usage).
//
//   auto model = kiln::Model::load(path);
//   kiln::ChatSession chat(model);
//   chat.add_user("What's the weather in Paris?");
//   chat.reply({}, [](const kiln::ReplyEvent& e) { ...; return true; });
//   // tool calls: chat.add_tool_result(call, "{\"temp\": 18}"); chat.reply(...)
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "kiln/engine.h"
#include "kiln/reply.h"
#include "kiln/reply_format.h"

namespace kiln {

// What a conversation does when it no longer fits the context.
enum class ContextPolicy {
    Stop,        // the reply ends with finish reason length (the default)
    DropOldest,  // the oldest turns are left out of the prompt, keeping the system
                 // prompt and the latest turns, so the reply has room
};

struct ChatOptions {
    ContextOptions context;
    ContextPolicy context_policy = ContextPolicy::Stop;
    // A Jinja template to use instead of the file's (e.g. a model without one).
    std::optional<std::string> template_source;
};

struct ChatTurnOptions {
    GenerateOptions generate;             // max tokens, sampling, stop strings, cancel
    std::optional<bool> thinking;         // enable_thinking / thinking for the template
    nlohmann::json tools;                 // OpenAI tool definitions (array) or null
    bool include_reasoning_in_history = false;  // send reasoning back to the template next turn
    // Assistant prefill: text the reply starts with (appended after the generation
    // prompt; the model continues it). It is part of the reply's events and message.
    std::string assistant_prefix;
};

struct ChatReply {
    ReplyMessage message;
    ReplyFinish finish = ReplyFinish::Stop;
    Usage usage;
    double prefill_seconds = 0, decode_seconds = 0;
    SpecStats spec;  // speculative decoding's counts
};

using ReplyCallback = std::function<bool(const ReplyEvent&)>;  // false stops generating

class ChatSession {
public:
    explicit ChatSession(std::shared_ptr<const Model> model, const ChatOptions& options = {});
    ~ChatSession();

    const ChatFormat& format() const;
    // Where the template came from: "file", "option", or "built-in ..." for models without one.
    const std::string& template_origin() const;
    Session& session();

    nlohmann::ordered_json& messages();
    void set_system(const std::string& text);  // replaces or inserts the first system message
    void add_user(const std::string& text);
    void add_message(nlohmann::ordered_json message);
    void add_tool_result(const ToolCall& call, const std::string& content);
    void reset();  // forget the messages (the cached prefix stays until the next prompt)

    // Renders the conversation with the generation prompt.
    std::string render(const ChatTurnOptions& options) const;
    // Turns left out of the last reply's prompt by ContextPolicy::DropOldest.
    int dropped_turns() const;

    // Generates the assistant's reply to the conversation so far, streams its
    // events, and appends the assistant message to the history. A reply with
    // complete tool calls finishes with ToolCalls (also when it then ran to the
    // token limit).
    ChatReply reply(const ChatTurnOptions& options, const ReplyCallback& on_event = nullptr);

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
