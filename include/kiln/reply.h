// A reply as a typed stream: the text a model generates, fed as the engine
// streams it, becomes Text, Thinking and ToolCall events, Error items that do
// not end the stream, and a final ReplyEnd with the usage and finish reason.
//
//   kiln::ChatFormat format = kiln::detect_chat_format(template_source, vocab_has_token);
//   kiln::ReplyParser parser(format, {.starts_in_thinking = kiln::prompt_opens_thinking(format, prompt),
//                                     .tools = tools_json});
//   auto result = session.generate(ids, options, [&](const kiln::TokenEvent& e) {
//       for (const kiln::ReplyEvent& ev : parser.push(e.text)) show(ev);
//       return !parser.done();          // an end marker arrived: stop generating
//   });
//   for (const kiln::ReplyEvent& ev : parser.finish(kiln::ReplyFinish::Stop, usage)) show(ev);
//   messages.push_back(kiln::assistant_message(parser.message()));   // next turn
//
// The events do not depend on how the text is split into deltas (adjacent deltas
// of one kind concatenate to the same text for every split). Markers, stop
// strings and end markers never reach the Text stream, whole or in part: text
// that may be the start of one is held back until it is known not to be.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/reply_format.h"

namespace kiln {

struct TextDelta {
    std::string text;
};

struct ThinkingDelta {
    std::string text;
};

// A tool call's opening, as soon as its name is known. Its arguments follow as
// ToolCallArguments pieces, then the ToolCall itself: every call comes as
// ToolCallStart, ToolCallArguments..., ToolCall (the pieces concatenate to
// ToolCall::arguments_text). Where the model writes the arguments as a JSON
// object (Hermes <tool_call>, Mistral, Llama 3 JSON, Command R, ... bodies of
// {"name", "arguments"} objects), the pieces stream as it writes them; other
// syntaxes send them in one piece when the call is complete. A call whose
// arguments turn out malformed after it started ends in a ReplyError instead.
struct ToolCallStart {
    std::string id;
    std::string name;
};

struct ToolCallArguments {
    std::string id;    // the ToolCallStart it continues
    std::string text;  // the next piece of ToolCall::arguments_text
};

struct ToolCall {
    std::string id;
    std::string name;
    nlohmann::json arguments = nlohmann::json::object();  // always a JSON object
    // The arguments as text: the model's own JSON text of the object where it
    // wrote one (what ToolCallArguments streamed), else the compact dump.
    std::string arguments_text;
};

// A malformed tool call ("malformed tool call: <body>"); the stream goes on.
struct ReplyError {
    std::string message;
};

enum class ReplyFinish { Stop, Length, ToolCalls, Cancelled };
std::string_view reply_finish_name(ReplyFinish finish);  // "stop", "length", "tool_calls", "cancelled"

struct Usage {
    int prompt_tokens = 0;
    int reused_prompt_tokens = 0;  // prompt tokens served from the cached prefix
    int completion_tokens = 0;
    int reasoning_tokens = 0;      // completion tokens spent inside reasoning (filled by the parser)
};

struct ReplyEnd {
    ReplyFinish finish = ReplyFinish::Stop;
    Usage usage;
    std::string stop_string;  // the ReplyOptions::stop entry that ended the reply, if one did
};

using ReplyEvent = std::variant<TextDelta, ThinkingDelta, ToolCallStart, ToolCallArguments, ToolCall, ReplyError, ReplyEnd>;

// Everything a reply said, accumulated by the parser.
struct ReplyMessage {
    std::string content;    // the text
    std::string reasoning;  // the thinking
    std::vector<ToolCall> tool_calls;
    std::vector<std::string> errors;
};

// Tool-call ids: call_ + 24 letters and digits (or 9 for Mistral templates).
// Deterministic under a seed, for tests.
class ToolCallIds {
public:
    explicit ToolCallIds(ToolCallIdStyle style = ToolCallIdStyle::OpenAi,
                         std::optional<std::uint64_t> seed = std::nullopt);
    std::string next();

private:
    ToolCallIdStyle style_;
    std::mt19937_64 rng_;
};

struct ReplyOptions {
    // Generation starts inside a reasoning block: prompt_opens_thinking(format, prompt).
    bool starts_in_thinking = false;
    // Extra stop strings (the format's end markers are always active).
    std::vector<std::string> stop;
    // The OpenAI tool definitions offered to the model (an array of
    // {"type": "function", "function": {"name", "parameters"}}; may be null). XML-style
    // syntaxes write every argument as text: the parameter's schema type decides
    // whether "42" is a number or a string. Without a schema, text that reads as a
    // JSON number, boolean, null, object or array becomes one.
    nlohmann::json tools;
    // Seed for generated tool-call ids (tests); random when absent.
    std::optional<std::uint64_t> id_seed;
};

class ReplyParser {
public:
    explicit ReplyParser(ChatFormat format, ReplyOptions options = {});
    ~ReplyParser();
    ReplyParser(ReplyParser&&) noexcept;
    ReplyParser& operator=(ReplyParser&&) noexcept;

    // Feeds the next piece of generated text (one push per generated token gives
    // the reasoning token count). Returns the events it completes.
    std::vector<ReplyEvent> push(std::string_view delta);

    // Ends the reply: flushes held text, reports an unfinished tool call as an
    // error, and appends ReplyEnd. Stop becomes ToolCalls when the reply called a
    // tool; Cancelled becomes Stop when the parser itself saw the end (done()).
    // usage.reasoning_tokens is filled in. Further pushes are ignored.
    std::vector<ReplyEvent> finish(ReplyFinish finish, Usage usage = {});

    // An end marker or stop string has arrived: the rest of the text is ignored,
    // so generation can stop.
    bool done() const;

    const ReplyMessage& message() const;
    const ChatFormat& format() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// Parses a complete reply in one go (tests, non-streaming callers).
std::vector<ReplyEvent> parse_reply(const ChatFormat& format, std::string_view text, ReplyOptions options = {},
                                    ReplyFinish finish = ReplyFinish::Stop, Usage usage = {});

// The assistant message for the next render, OpenAI-shaped:
//   {"role": "assistant", "content": "...", "reasoning_content": "...",
//    "tool_calls": [{"id", "type": "function", "function": {"name", "arguments": {…}}}]}
// with arguments as objects (what templates iterate over); content is "" (not null)
// when the reply only called tools, since many templates fail on null;
// reasoning_content only when include_reasoning and non-empty.
nlohmann::json assistant_message(const ReplyMessage& reply, bool include_reasoning = true);

// The tool result for the next render: {"role": "tool", "tool_call_id", "name", "content"}.
nlohmann::json tool_result_message(const ToolCall& call, std::string content);

}  // namespace kiln
