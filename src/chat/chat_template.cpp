// The chat-template wrapper: builds the render context from OpenAI-shaped
// messages and tools the way Hugging Face's apply_chat_template does.
#include "kiln/chat_template.h"

#include "chat/jinja/value.h"
#include "kiln/error.h"

namespace kiln::chat {

namespace {

using ojson = nlohmann::ordered_json;

jinja::Value to_value(const ojson& j, int depth) {
    if (depth > jinja::k_max_nesting) throw kiln::Error("chat request: JSON nested more than " + std::to_string(jinja::k_max_nesting) + " levels");
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
            for (auto it = j.begin(); it != j.end(); ++it) out.dict().set_str(it.key(), to_value(it.value(), depth + 1));
            return out;
        }
        default: throw kiln::Error("chat request: unsupported JSON value (binary)");
    }
}

// Hugging Face's normalization of one message: drop null fields, decode string
// tool-call arguments, alias reasoning under `thinking` and `reasoning_content`.
ojson normalize_message(const ojson& m, size_t index, bool parse_arguments) {
    if (!m.is_object()) throw kiln::Error("chat messages[" + std::to_string(index) + "]: expected an object, found " + m.type_name());
    ojson out = ojson::object();
    for (auto it = m.begin(); it != m.end(); ++it)
        if (!it.value().is_null()) out[it.key()] = it.value();
    if (parse_arguments && out.contains("tool_calls") && out["tool_calls"].is_array()) {
        for (auto& call : out["tool_calls"]) {
            if (!call.is_object()) continue;
            ojson* fn = call.contains("function") && call["function"].is_object() ? &call["function"] : &call;
            if (fn->contains("arguments") && (*fn)["arguments"].is_string()) {
                ojson parsed = ojson::parse((*fn)["arguments"].get<std::string>(), nullptr, false);
                if (!parsed.is_discarded() && parsed.is_object()) (*fn)["arguments"] = std::move(parsed);
            }
        }
    }
    const ojson* reasoning = nullptr;
    for (const char* key : {"reasoning_content", "thinking", "reasoning"}) {
        if (out.contains(key)) {
            reasoning = &out[key];
            break;
        }
    }
    if (!reasoning) return out;
    // {"thinking": r, **message, "reasoning_content": r}
    const ojson r = *reasoning;
    ojson aliased = ojson::object();
    aliased["thinking"] = r;
    for (auto it = out.begin(); it != out.end(); ++it) aliased[it.key()] = it.value();
    aliased["reasoning_content"] = r;
    return aliased;
}

}  // namespace

std::string apply_chat_template(const jinja::Template& tmpl, const ChatRequest& req) {
    if (!req.messages.is_array()) throw kiln::Error(std::string("chat messages: expected an array, found ") + req.messages.type_name());
    if (req.tools && !req.tools->is_array() && !req.tools->is_null())
        throw kiln::Error(std::string("chat tools: expected an array, found ") + req.tools->type_name());
    if (!req.extra.is_object()) throw kiln::Error(std::string("chat extra variables: expected an object, found ") + req.extra.type_name());

    jinja::Value ctx = jinja::Value::new_dict();
    jinja::DictObj& d = ctx.dict();
    jinja::Value messages = jinja::Value::new_list();
    messages.list().items.reserve(req.messages.size());
    for (size_t n = 0; n < req.messages.size(); ++n)
        messages.list().items.push_back(to_value(normalize_message(req.messages[n], n, req.parse_tool_arguments), 1));
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
    return tmpl.render(ctx, req.render);
}

std::string apply_chat_template(std::string_view template_source, const ChatRequest& req) {
    jinja::Template tmpl(template_source);
    return apply_chat_template(tmpl, req);
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
