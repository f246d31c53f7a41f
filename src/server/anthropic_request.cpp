#include "anthropic_request.h"

namespace kiln::server {

namespace {

// A text-or-blocks value as text (system prompts, tool results).
std::string blocks_text(const Json& v, const std::string& where) {
    if (v.is_string()) return v.get<std::string>();
    if (!v.is_array()) throw bad_field(where, "expected a string or an array of content blocks");
    std::string text;
    for (size_t i = 0; i < v.size(); ++i) {
        const Json& b = v[i];
        const std::string w = where + "[" + std::to_string(i) + "]";
        if (block_type(b, w) != "text")
            throw bad_field(w + ".type", "only text blocks are supported here");
        auto t = get_string(b, "text");
        if (!t) throw bad_field(w + ".text", "missing");
        text += *t;
    }
    return text;
}

}  // namespace

Json anthropic_to_chat_body(const Json& body) {
    Json messages = Json::array();
    if (const Json* system = field(body, "system")) messages.push_back({{"role", "system"}, {"content", blocks_text(*system, "system")}});
    const Json* in = get_array(body, "messages");
    if (!in) throw bad_field("messages", "missing");
    if (in->empty()) throw bad_field("messages", "must hold at least one message");
    for (size_t i = 0; i < in->size(); ++i) {
        const Json& m = (*in)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!m.is_object()) throw bad_field(where, "expected an object");
        auto role = get_string(m, "role");
        if (!role || (*role != "user" && *role != "assistant")) throw bad_field(where + ".role", "expected 'user' or 'assistant'");
        const Json* content = field(m, "content");
        if (!content) throw bad_field(where + ".content", "missing");
        if (content->is_string()) {
            messages.push_back({{"role", *role}, {"content", *content}});
            continue;
        }
        if (!content->is_array()) throw bad_field(where + ".content", "expected a string or an array of content blocks");
        std::string text, thinking;
        Json tool_calls = Json::array();
        for (size_t k = 0; k < content->size(); ++k) {
            const Json& b = (*content)[k];
            const std::string w = where + ".content[" + std::to_string(k) + "]";
            if (!b.is_object()) throw bad_field(w, "expected a content block");
            const std::string type = block_type(b, w);
            if (type == "text") {
                text += get_string(b, "text").value_or("");
            } else if (type == "thinking" && *role == "assistant") {
                thinking += get_string(b, "thinking").value_or("");
            } else if (type == "redacted_thinking" && *role == "assistant") {
            } else if (type == "tool_use" && *role == "assistant") {
                auto id = get_string(b, "id");
                auto name = get_string(b, "name");
                if (!id || !name) throw bad_field(w, "a tool_use block needs id and name");
                const Json* input = get_object(b, "input");
                tool_calls.push_back({{"id", *id}, {"type", "function"},
                                      {"function", {{"name", *name}, {"arguments", input ? *input : Json::object()}}}});
            } else if (type == "tool_result" && *role == "user") {
                auto id = get_string(b, "tool_use_id");
                if (!id) throw bad_field(w + ".tool_use_id", "missing");
                const Json* c = field(b, "content");
                messages.push_back({{"role", "tool"}, {"tool_call_id", *id},
                                    {"content", c ? blocks_text(*c, w + ".content") : std::string()}});
            } else {
                throw ApiError(400, "'" + w + ".type': '" + type + "' blocks are not supported in " + *role + " messages",
                               w + ".type", "unsupported_value");
            }
        }
        if (!text.empty() || !tool_calls.empty() || !thinking.empty() || *role == "assistant") {
            Json msg = {{"role", *role}, {"content", text}};
            if (!thinking.empty()) msg["reasoning_content"] = thinking;
            if (!tool_calls.empty()) msg["tool_calls"] = tool_calls;
            messages.push_back(std::move(msg));
        }
    }
    Json chat = {{"messages", messages}};
    if (const Json* tools = get_array(body, "tools")) {
        Json out = Json::array();
        for (size_t i = 0; i < tools->size(); ++i) {
            const Json& t = (*tools)[i];
            const std::string w = "tools[" + std::to_string(i) + "]";
            if (!t.is_object()) throw bad_field(w, "expected an object");
            out.push_back(flat_function_tool(t, w, "input_schema"));
        }
        chat["tools"] = out;
    }
    if (const Json* tc = get_object(body, "tool_choice")) {
        const std::string type = get_string(*tc, "type").value_or("");
        if (type == "auto" || type == "none") chat["tool_choice"] = type;
        else if (type == "any") chat["tool_choice"] = "required";
        else if (type == "tool") {
            auto name = get_string(*tc, "name");
            if (!name) throw bad_field("tool_choice.name", "missing");
            chat["tool_choice"] = Json{{"type", "function"}, {"function", {{"name", *name}}}};
        } else {
            throw bad_field("tool_choice.type", "expected auto, any, tool or none");
        }
        if (auto one = get_bool(*tc, "disable_parallel_tool_use")) chat["parallel_tool_calls"] = !*one;
    }
    if (const Json* thinking = get_object(body, "thinking")) {
        const std::string type = get_string(*thinking, "type").value_or("");
        if (type != "enabled" && type != "disabled") throw bad_field("thinking.type", "expected 'enabled' or 'disabled'");
        chat["chat_template_kwargs"] = {{"enable_thinking", type == "enabled"}};
    }
    return chat;
}

}  // namespace kiln::server
