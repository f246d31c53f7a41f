// Replies back into the conversation: tool-call ids, and the OpenAI-shaped
// assistant and tool messages the next render of the template takes.
#include "kiln/reply.h"

namespace kiln {

using nlohmann::json;

std::string_view reply_finish_name(ReplyFinish finish) {
    switch (finish) {
        case ReplyFinish::Stop: return "stop";
        case ReplyFinish::Length: return "length";
        case ReplyFinish::ToolCalls: return "tool_calls";
        case ReplyFinish::Cancelled: return "cancelled";
    }
    return "stop";
}

ToolCallIds::ToolCallIds(ToolCallIdStyle style, std::optional<std::uint64_t> seed) : style_(style) {
    if (seed) {
        rng_.seed(*seed);
    } else {
        std::random_device rd;
        rng_.seed((static_cast<std::uint64_t>(rd()) << 32) ^ rd());
    }
}

std::string ToolCallIds::next() {
    static constexpr char k_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    std::uniform_int_distribution<size_t> pick(0, sizeof(k_alphabet) - 2);
    // Mistral templates refuse any id that is not 9 letters and digits.
    bool mistral = style_ == ToolCallIdStyle::Alnum9;
    std::string id = mistral ? "" : "call_";
    for (int i = 0, n = mistral ? 9 : 24; i < n; ++i) id += k_alphabet[pick(rng_)];
    return id;
}

json assistant_message(const ReplyMessage& reply, bool include_reasoning) {
    json msg = {{"role", "assistant"}};
    // "" rather than OpenAI's null for a tool-only turn: many templates test
    // `'…' in message.content` or concatenate it, which fails on null (Qwen 3,
    // GPT-OSS, Mistral, LFM2.5 — see tests/golden/reply/rendered_turns.json).
    msg["content"] = reply.content;
    if (include_reasoning && !reply.reasoning.empty()) msg["reasoning_content"] = reply.reasoning;
    if (!reply.tool_calls.empty()) {
        json calls = json::array();
        for (const ToolCall& c : reply.tool_calls)
            calls.push_back({{"id", c.id},
                             {"type", "function"},
                             {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
        msg["tool_calls"] = std::move(calls);
    }
    return msg;
}

json tool_result_message(const ToolCall& call, std::string content) {
    return {{"role", "tool"}, {"tool_call_id", call.id}, {"name", call.name}, {"content", std::move(content)}};
}

}  // namespace kiln
