// The chat-template wrapper: builds the render context from OpenAI-shaped
// messages and tools the way Hugging Face's apply_chat_template does.
#include "kiln/chat_template.h"

#include "chat/jinja/render.h"
#include "chat/jinja/value.h"
#include "kiln/error.h"

namespace kiln::chat {

namespace {

using ojson = nlohmann::ordered_json;

// The keys every chat request repeats, as shared immortal strings: building the
// context then allocates nothing for them.
jinja::Value key_value(const std::string& key) {
    // bucketed by length: a lookup compares a handful of candidates at most
    constexpr size_t k_max_len = 24;
    // Never destroyed: the strings are immortal and shared by every thread.
    static const auto& common = *[] {
        auto* out = new std::vector<std::vector<std::pair<std::string_view, jinja::Value>>>(k_max_len + 1);
        for (const char* k : {"role", "content", "name", "tool_calls", "tool_call_id", "id", "type", "function",
                              "arguments", "description", "parameters", "properties", "required", "enum", "items",
                              "text", "image", "image_url", "url", "thinking", "reasoning_content", "default", "title",
                              "additionalProperties", "minimum", "maximum"}) {
            auto* s = new jinja::StrObj(k);
            s->is_ascii();
            s->length();
            s->refs = jinja::HeapObject::k_immortal;
            (*out)[s->s.size()].emplace_back(s->s, jinja::Value::from_obj(s));
        }
        return out;
    }();
    if (key.size() <= k_max_len)
        for (const auto& [k, v] : common[key.size()])
            if (k == key) return v;
    return jinja::Value::string(key);
}

jinja::Value to_value(const ojson& j, int depth) {
    if (depth > jinja::k_max_nesting)
        throw kiln::Error("chat request: JSON nested more than " + std::to_string(jinja::k_max_nesting) + " levels");
    switch (j.type()) {
        case ojson::value_t::null: return jinja::Value::none();
        case ojson::value_t::boolean: return jinja::Value::boolean(j.get<bool>());
        case ojson::value_t::number_integer: return jinja::Value::integer(j.get<int64_t>());
        case ojson::value_t::number_unsigned: {
            uint64_t u = j.get<uint64_t>();
            if (u <= static_cast<uint64_t>(INT64_MAX)) return jinja::Value::integer(static_cast<int64_t>(u));
            return jinja::Value::floating(static_cast<double>(u));
        }
        case ojson::value_t::number_float: return jinja::Value::floating(j.get<double>());
        case ojson::value_t::string: return jinja::Value::string(j.get_ref<const std::string&>());
        case ojson::value_t::array: {
            jinja::Value out = jinja::Value::new_list();
            out.list().items.reserve(j.size());
            for (const auto& x : j) out.list().items.push_back(to_value(x, depth + 1));
            return out;
        }
        case ojson::value_t::object: {
            jinja::Value out = jinja::Value::new_dict();
            out.dict().entries.reserve(j.size());
            for (auto it = j.begin(); it != j.end(); ++it)
                out.dict().append_unique(key_value(it.key()), to_value(it.value(), depth + 1));
            return out;
        }
        default: throw kiln::Error("chat request: unsupported JSON value (binary)");
    }
}

// tool_calls with JSON-string arguments decoded into objects (OpenAI clients send
// strings; templates expect mappings).
jinja::Value tool_calls_value(const ojson& calls) {
    jinja::Value out = jinja::Value::new_list();
    for (const auto& call : calls) {
        if (!call.is_object()) {
            out.list().items.push_back(to_value(call, 2));
            continue;
        }
        auto decode_args = [](const ojson& fn) {
            jinja::Value v = jinja::Value::new_dict();
            for (auto it = fn.begin(); it != fn.end(); ++it) {
                jinja::Value x;
                if (it.key() == "arguments" && it.value().is_string()) {
                    ojson parsed = ojson::parse(it.value().get_ref<const std::string&>(), nullptr, false);
                    x = (!parsed.is_discarded() && parsed.is_object()) ? to_value(parsed, 4) : to_value(it.value(), 4);
                } else {
                    x = to_value(it.value(), 4);
                }
                v.dict().append_unique(key_value(it.key()), std::move(x));
            }
            return v;
        };
        const bool nested = call.contains("function") && call["function"].is_object();
        if (!nested) {
            out.list().items.push_back(decode_args(call));
            continue;
        }
        jinja::Value c = jinja::Value::new_dict();
        for (auto it = call.begin(); it != call.end(); ++it)
            c.dict().append_unique(key_value(it.key()),
                                   it.key() == "function" ? decode_args(it.value()) : to_value(it.value(), 3));
        out.list().items.push_back(std::move(c));
    }
    return out;
}

// One message, normalized as Hugging Face does before rendering: fields whose
// value is null are dropped; reasoning given as reasoning_content, thinking or
// reasoning is exposed as {"thinking": r, **message, "reasoning_content": r}.
jinja::Value message_value(const ojson& m, size_t index, bool parse_arguments) {
    if (!m.is_object())
        throw kiln::Error("chat messages[" + std::to_string(index) + "]: expected an object, found " + m.type_name());
    // Reasoning under the first of reasoning_content, thinking, reasoning that is set
    // (one pass over the keys: messages are small).
    const ojson* by_name[3] = {nullptr, nullptr, nullptr};
    for (auto it = m.begin(); it != m.end(); ++it) {
        const std::string& k = it.key();
        if (k.size() < 7 || it.value().is_null()) continue;
        if (k == "reasoning_content") by_name[0] = &it.value();
        else if (k == "thinking") by_name[1] = &it.value();
        else if (k == "reasoning") by_name[2] = &it.value();
    }
    const ojson* reasoning = by_name[0] ? by_name[0] : (by_name[1] ? by_name[1] : by_name[2]);
    jinja::Value out = jinja::Value::new_dict();
    jinja::DictObj& d = out.dict();
    d.entries.reserve(m.size() + 2);
    if (reasoning) d.append_unique(key_value("thinking"), to_value(by_name[1] ? *by_name[1] : *reasoning, 2));
    bool has_reasoning_content = false;
    for (auto it = m.begin(); it != m.end(); ++it) {
        if (it.value().is_null()) continue;
        const std::string& key = it.key();
        if (reasoning && key == "thinking") continue;  // placed first above
        jinja::Value v;
        if (reasoning && key == "reasoning_content") {
            v = to_value(*reasoning, 2);
            has_reasoning_content = true;
        } else if (parse_arguments && key == "tool_calls" && it.value().is_array()) {
            v = tool_calls_value(it.value());
        } else {
            v = to_value(it.value(), 2);
        }
        d.append_unique(key_value(key), std::move(v));
    }
    if (reasoning && !has_reasoning_content) d.append_unique(key_value("reasoning_content"), to_value(*reasoning, 2));
    return out;
}

}  // namespace

std::string apply_chat_template(const jinja::Template& tmpl, const ChatRequest& req) {
    if (!req.messages.is_array()) throw kiln::Error(std::string("chat messages: expected an array, found ") + req.messages.type_name());
    if (req.tools && !req.tools->is_array() && !req.tools->is_null())
        throw kiln::Error(std::string("chat tools: expected an array, found ") + req.tools->type_name());
    if (!req.extra.is_object()) throw kiln::Error(std::string("chat extra variables: expected an object, found ") + req.extra.type_name());

    // The context is built afresh for this render, under its own registry (which
    // breaks any cycle a template makes through it), so it is used without a copy.
    jinja::RenderRegistry registry;
    jinja::Value ctx = jinja::Value::new_dict();
    jinja::DictObj& d = ctx.dict();
    jinja::Value messages = jinja::Value::new_list();
    messages.list().items.reserve(req.messages.size());
    for (size_t n = 0; n < req.messages.size(); ++n)
        messages.list().items.push_back(message_value(req.messages[n], n, req.parse_tool_arguments));
    d.set_str("messages", std::move(messages));
    if (req.tools && !req.tools->is_null()) d.set_str("tools", to_value(*req.tools, 0));
    else if (req.tools_none_when_absent) d.set_str("tools", jinja::Value::none());
    d.set_str("add_generation_prompt", jinja::Value::boolean(req.add_generation_prompt));
    if (req.enable_thinking) {
        d.set_str("enable_thinking", jinja::Value::boolean(*req.enable_thinking));
        d.set_str("thinking", jinja::Value::boolean(*req.enable_thinking));
    }
    d.set_str("bos_token", jinja::Value::string(req.bos_token));
    d.set_str("eos_token", jinja::Value::string(req.eos_token));
    for (auto it = req.extra.begin(); it != req.extra.end(); ++it) d.set_str(it.key(), to_value(it.value(), 0));
    std::string out = jinja::render_owned(tmpl, ctx, req.render);
    ctx = jinja::Value();
    return out;
}

std::string apply_chat_template(std::string_view template_source, const ChatRequest& req) {
    jinja::Template tmpl(template_source);
    return apply_chat_template(tmpl, req);
}

std::vector<size_t> message_offsets(const jinja::Template& tmpl, const ChatRequest& request, std::string_view rendered) {
    std::vector<size_t> out;
    if (!request.messages.is_array()) return out;
    ChatRequest part = request;
    part.add_generation_prompt = false;
    const size_t n = request.messages.size();
    for (size_t k = 1; k <= n; ++k) {
        part.messages = nlohmann::ordered_json(request.messages.begin(), request.messages.begin() + static_cast<std::ptrdiff_t>(k));
        std::string text;
        try {
            text = apply_chat_template(tmpl, part);
        } catch (const std::exception&) {
            continue;  // e.g. a template that wants the conversation to end with a user turn
        }
        if (text.size() < rendered.size() && rendered.compare(0, text.size(), text) == 0 &&
            (out.empty() || text.size() > out.back()))
            out.push_back(text.size());
    }
    return out;
}

std::vector<int64_t> message_token_positions(const Tokenizer& tok, std::span<const TokenId> ids, std::string_view text,
                                             std::span<const size_t> offsets) {
    std::vector<int64_t> out;
    if (offsets.empty() || ids.empty()) return out;
    std::vector<size_t> start(ids.size());
    size_t at = 0;
    for (size_t i = 0; i < ids.size(); ++i) {
        start[i] = at;
        at += tok.token_piece(ids[i], true).size();
    }
    size_t skew = 0;  // a BOS the tokenizer added before the text
    if (at != text.size()) {
        const size_t bos = tok.token_piece(ids[0], true).size();
        if (ids[0] != tok.special().bos || at - bos != text.size()) return out;
        skew = bos;
    }
    size_t i = 0;
    for (size_t off : offsets) {
        while (i < ids.size() && start[i] < off + skew) ++i;
        if (i < ids.size() && start[i] == off + skew) out.push_back(static_cast<int64_t>(i));
    }
    return out;
}

ModelTemplate model_template(const gguf::File& file, std::string_view name) {
    ModelTemplate out;
    const auto& md = file.metadata();
    const std::string key = name.empty() ? std::string("tokenizer.chat_template") : "tokenizer.chat_template." + std::string(name);
    out.source = md.find_string(key);
    const auto bos = md.find_uint("tokenizer.ggml.bos_token_id");
    const auto eos = md.find_uint("tokenizer.ggml.eos_token_id");
    if ((bos || eos) && md.has("tokenizer.ggml.tokens")) {
        std::vector<std::string> tokens = file.read_strings("tokenizer.ggml.tokens");
        auto text = [&](const std::optional<uint64_t>& id, const char* what) -> std::string {
            if (!id) return "";
            if (*id >= tokens.size())
                throw kiln::Error("GGUF metadata 'tokenizer.ggml." + std::string(what) + "_token_id': " + std::to_string(*id) +
                                  " is out of range for " + std::to_string(tokens.size()) + " tokens (" + file.path() + ")");
            return tokens[*id];
        };
        out.bos_token = text(bos, "bos");
        out.eos_token = text(eos, "eos");
    }
    return out;
}

}  // namespace kiln::chat
