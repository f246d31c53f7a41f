#include "chat/reply_tool_bodies.h"

#include <algorithm>

#include "chat/reply_text.h"

namespace kiln::reply_detail {

using nlohmann::json;

namespace {

constexpr size_t npos_sv = std::string_view::npos;

ParsedCall failed(std::string_view text) {
    ParsedCall c;
    c.error_text = std::string(text);
    return c;
}

ParsedCall make_call(std::string name, json arguments, std::string id = {}) {
    ParsedCall c;
    c.ok = true;
    c.name = valid_utf8(trim(name));
    c.arguments = std::move(arguments);
    c.id = std::move(id);
    if (c.name.empty()) {
        c.ok = false;
        c.error_text = "(no function name)";
    }
    return c;
}

// Arguments from JSON text (possibly fenced): an object, null, or a string holding one.
std::optional<json> arguments_from_text(std::string_view text) {
    std::string_view t = strip_code_fence(text);
    if (t.empty()) return json::object();
    auto v = parse_json(t);
    if (!v) return std::nullopt;
    return normalize_arguments(*v);
}

// Removes one leading and one trailing newline: XML-style syntaxes put the value
// on its own line.
std::string_view strip_one_newline(std::string_view v) {
    if (!v.empty() && v.front() == '\n') v.remove_prefix(1);
    else if (v.size() >= 2 && v.substr(0, 2) == "\r\n") v.remove_prefix(2);
    if (!v.empty() && v.back() == '\n') v.remove_suffix(1);
    if (!v.empty() && v.back() == '\r') v.remove_suffix(1);
    return v;
}

// The value of attribute `name="…"` in a tag's attribute text.
std::optional<std::string> attribute(std::string_view attrs, std::string_view name) {
    std::string key = std::string(name) + "=\"";
    size_t at = 0;
    while ((at = attrs.find(key, at)) != npos_sv) {
        if (at == 0 || is_space(attrs[at - 1])) {
            size_t start = at + key.size();
            size_t end = attrs.find('"', start);
            if (end == npos_sv) return std::nullopt;
            return xml_unescape(attrs.substr(start, end - start));
        }
        at += key.size();
    }
    return std::nullopt;
}

void json_calls(std::string_view body, std::vector<ParsedCall>& out);

void function_tag(std::string_view body, std::vector<ParsedCall>& out) {
    // NAME>{…}: functionary v3.1 and Hermes-style <function=NAME>{…}</function>.
    size_t gt = body.find('>');
    if (gt == npos_sv) return out.push_back(failed(body));
    std::string_view rest = body.substr(gt + 1);
    size_t close = rest.find("</function>");
    if (close != npos_sv) rest = rest.substr(0, close);
    auto args = arguments_from_text(rest);
    if (!args) return out.push_back(failed(body));
    out.push_back(make_call(std::string(body.substr(0, gt)), std::move(*args)));
}

void json_calls(std::string_view body, std::vector<ParsedCall>& out) {
    std::string_view b = strip_code_fence(body);
    if (b.substr(0, 10) == "<function=") return function_tag(b.substr(10), out);
    if (b.empty()) return out.push_back(failed(body));
    size_t pos = 0;
    while (pos < b.size()) {
        while (pos < b.size() && (is_space(b[pos]) || b[pos] == ',' || b[pos] == ';')) ++pos;
        if (pos >= b.size()) break;
        if (b[pos] != '{' && b[pos] != '[') return out.push_back(failed(b.substr(pos)));
        size_t end = json_value_end(b, pos);
        if (end == npos_sv) return out.push_back(failed(b.substr(pos)));
        std::string_view text = b.substr(pos, end - pos);
        auto value = parse_json(text);
        if (!value) {
            out.push_back(failed(text));
        } else if (value->is_array()) {
            for (const json& item : *value) out.push_back(read_call_object(item, item.dump(-1, ' ', false, json::error_handler_t::replace)));
        } else {
            out.push_back(read_call_object(*value, text));
        }
        pos = end;
    }
}

void mistral_args(std::string_view body, std::vector<ParsedCall>& out) {
    std::string_view t = trim(body);
    if (!t.empty() && (t.front() == '[' || t.front() == '{')) return json_calls(t, out);
    size_t args_at = t.find("[ARGS]");
    if (args_at == npos_sv) return out.push_back(failed(body));
    std::string_view head = t.substr(0, args_at);
    std::string id;
    size_t id_at = head.find("[CALL_ID]");
    if (id_at != npos_sv) {
        id = valid_utf8(trim(head.substr(id_at + 9)));
        head = head.substr(0, id_at);
    }
    auto args = arguments_from_text(t.substr(args_at + 6));
    if (!args) return out.push_back(failed(body));
    out.push_back(make_call(std::string(head), std::move(*args), std::move(id)));
}

void python_tag(std::string_view body, const BodyContext& ctx, std::vector<ParsedCall>& out) {
    std::string_view t = trim(body);
    if (!t.empty() && t.front() == '{') return json_calls(t, out);
    size_t pos = 0;
    std::string name;
    json args;
    if (parse_python_call(t, pos, name, args) && trim(t.substr(pos)).empty() && name.size() > 5 &&
        name.compare(name.size() - 5, 5, ".call") == 0) {
        name.resize(name.size() - 5);  // brave_search.call(query="…"): Llama's builtin tools
        return out.push_back(make_call(std::move(name), std::move(args)));
    }
    out.push_back(make_call(ctx.name.empty() ? "python" : ctx.name, json{{"code", valid_utf8(t)}}));
}

void pythonic(std::string_view body, std::vector<ParsedCall>& out) {
    std::string_view t = trim(body);
    bool bracketed = !t.empty() && t.front() == '[';
    size_t pos = bracketed ? 1 : 0;
    std::vector<ParsedCall> calls;
    for (;;) {
        while (pos < t.size() && (is_space(t[pos]) || t[pos] == ',')) ++pos;
        if (pos >= t.size()) break;
        if (bracketed && t[pos] == ']') {
            if (!trim(t.substr(pos + 1)).empty()) return out.push_back(failed(body));
            break;
        }
        std::string name;
        json args;
        if (!parse_python_call(t, pos, name, args)) return out.push_back(failed(body));
        calls.push_back(make_call(std::move(name), std::move(args)));
    }
    if (calls.empty()) return out.push_back(failed(body));
    for (ParsedCall& c : calls) out.push_back(std::move(c));
}

void gemma4(std::string_view body, std::vector<ParsedCall>& out) {
    std::string_view t = trim(body);
    size_t pos = 0;
    bool any = false;
    while (pos < t.size()) {
        while (pos < t.size() && is_space(t[pos])) ++pos;
        if (pos >= t.size()) break;
        if (t.substr(pos, 5) != "call:") return out.push_back(failed(t.substr(pos)));
        size_t brace = t.find('{', pos);
        if (brace == npos_sv) return out.push_back(failed(t.substr(pos)));
        std::string name(t.substr(pos + 5, brace - pos - 5));
        size_t start = pos;
        pos = brace;
        json args;
        if (!parse_gemma4_value(t, pos, args) || !args.is_object()) return out.push_back(failed(t.substr(start)));
        out.push_back(make_call(std::move(name), std::move(args)));
        any = true;
    }
    if (!any) out.push_back(failed(body));
}

void qwen_xml(std::string_view body, const BodyContext& ctx, std::vector<ParsedCall>& out) {
    std::string_view t = trim(body);
    if (!t.empty() && t.front() == '{') return json_calls(t, out);  // some Qwen builds still write JSON
    size_t pos = 0;
    bool any = false;
    constexpr std::string_view fn_open = "<function=", fn_close = "</function>";
    constexpr std::string_view p_open = "<parameter=", p_close = "</parameter>";
    size_t f;
    while ((f = body.find(fn_open, pos)) != npos_sv) {
        any = true;
        size_t name_end = body.find('>', f + fn_open.size());
        size_t close = name_end == npos_sv ? npos_sv : body.find(fn_close, name_end);
        if (close == npos_sv) return out.push_back(failed(body.substr(f)));
        std::string name = valid_utf8(trim(body.substr(f + fn_open.size(), name_end - f - fn_open.size())));
        std::string_view content = body.substr(name_end + 1, close - name_end - 1);
        json args = json::object();
        size_t p = 0, q;
        bool ok = true;
        while ((q = content.find(p_open, p)) != npos_sv) {
            size_t key_end = content.find('>', q + p_open.size());
            if (key_end == npos_sv) {
                ok = false;
                break;
            }
            std::string key = valid_utf8(trim(content.substr(q + p_open.size(), key_end - q - p_open.size())));
            // A missing </parameter> ends the value at the next parameter.
            size_t v_end = content.find(p_close, key_end);
            size_t next = content.find(p_open, key_end);
            size_t stop = std::min(v_end, next == npos_sv ? content.size() : next);
            if (stop == npos_sv) stop = content.size();
            std::string_view raw = strip_one_newline(content.substr(key_end + 1, stop - key_end - 1));
            args[key] = typed_value(raw, ctx.tools ? parameter_schema(*ctx.tools, name, key) : nullptr);
            p = stop == v_end ? v_end + p_close.size() : stop;
        }
        if (!ok) return out.push_back(failed(body.substr(f, close + fn_close.size() - f)));
        out.push_back(make_call(std::move(name), std::move(args)));
        pos = close + fn_close.size();
    }
    if (!any) out.push_back(failed(body));
}

void glm_xml(std::string_view body, const BodyContext& ctx, std::vector<ParsedCall>& out) {
    std::string_view t = trim(body);
    if (!t.empty() && t.front() == '{') return json_calls(t, out);
    constexpr std::string_view k_open = "<arg_key>", k_close = "</arg_key>";
    constexpr std::string_view v_open = "<arg_value>", v_close = "</arg_value>";
    size_t first = t.find(k_open);
    std::string name = valid_utf8(trim(t.substr(0, first)));
    if (name.empty() || name.find('<') != std::string::npos) return out.push_back(failed(body));
    json args = json::object();
    size_t p = first;
    while (p != npos_sv && p < t.size()) {
        size_t k0 = t.find(k_open, p);
        if (k0 == npos_sv) {
            if (!trim(t.substr(p)).empty()) return out.push_back(failed(body));
            break;
        }
        if (!trim(t.substr(p, k0 - p)).empty()) return out.push_back(failed(body));
        size_t k1 = t.find(k_close, k0);
        size_t v0 = k1 == npos_sv ? npos_sv : t.find(v_open, k1);
        size_t v1 = v0 == npos_sv ? npos_sv : t.find(v_close, v0);
        if (v1 == npos_sv) return out.push_back(failed(body));
        std::string key = valid_utf8(trim(t.substr(k0 + k_open.size(), k1 - k0 - k_open.size())));
        std::string_view raw = t.substr(v0 + v_open.size(), v1 - v0 - v_open.size());
        args[key] = typed_value(raw, ctx.tools ? parameter_schema(*ctx.tools, name, key) : nullptr);
        p = v1 + v_close.size();
    }
    out.push_back(make_call(std::move(name), std::move(args)));
}

void invoke_xml(std::string_view body, const BodyContext& ctx, std::vector<ParsedCall>& out) {
    constexpr std::string_view k_invoke = "invoke name=\"";
    size_t pos = 0, i;
    bool any = false;
    while ((i = body.find(k_invoke, pos)) != npos_sv) {
        any = true;
        size_t lt = body.rfind('<', i);
        if (lt == npos_sv || lt < pos) return out.push_back(failed(body.substr(pos)));
        // The family's tag prefix ("", "atem:", "｜DSML｜") as written before "invoke".
        std::string prefix(body.substr(lt + 1, i - lt - 1));
        if (prefix.find_first_of("<>/") != std::string::npos) return out.push_back(failed(body.substr(lt)));
        size_t name_end = body.find('"', i + k_invoke.size());
        size_t gt = name_end == npos_sv ? npos_sv : body.find('>', name_end);
        std::string close_tag = "</" + prefix + "invoke>";
        size_t close = gt == npos_sv ? npos_sv : body.find(close_tag, gt);
        if (close == npos_sv) return out.push_back(failed(body.substr(lt)));
        std::string name = xml_unescape(body.substr(i + k_invoke.size(), name_end - i - k_invoke.size()));
        std::string_view content = body.substr(gt + 1, close - gt - 1);
        std::string p_open = "<" + prefix + "parameter ", p_close = "</" + prefix + "parameter>";
        json args = json::object();
        size_t p = 0, q;
        while ((q = content.find(p_open, p)) != npos_sv) {
            size_t tag_end = content.find('>', q);
            size_t v_end = tag_end == npos_sv ? npos_sv : content.find(p_close, tag_end);
            if (v_end == npos_sv) return out.push_back(failed(body.substr(lt, close + close_tag.size() - lt)));
            std::string_view attrs = content.substr(q + p_open.size(), tag_end - q - p_open.size());
            auto key = attribute(" " + std::string(attrs), "name");
            if (!key) return out.push_back(failed(body.substr(lt, close + close_tag.size() - lt)));
            std::string_view raw = content.substr(tag_end + 1, v_end - tag_end - 1);
            auto is_string = attribute(" " + std::string(attrs), "string");
            if (is_string && *is_string == "true") {
                args[*key] = valid_utf8(raw);
            } else if (is_string && *is_string == "false") {
                auto v = parse_json(trim(raw));
                args[*key] = v ? *v : json(valid_utf8(raw));
            } else {
                args[*key] = typed_value(raw, ctx.tools ? parameter_schema(*ctx.tools, name, *key) : nullptr);
            }
            p = v_end + p_close.size();
        }
        out.push_back(make_call(std::move(name), std::move(args)));
        pos = close + close_tag.size();
    }
    if (!any) out.push_back(failed(body));
}

void kimi_xtml(std::string_view body, const BodyContext& ctx, std::vector<ParsedCall>& out) {
    constexpr std::string_view sep = "<|sep|>";
    constexpr std::string_view call_open = "<|open|>call", call_close = "<|close|>call<|sep|>";
    constexpr std::string_view arg_open = "<|open|>argument", arg_close = "<|close|>argument<|sep|>";
    constexpr std::string_view json_open = "<|open|>json", json_close = "<|close|>json<|sep|>";
    size_t pos = 0, c;
    bool any = false;
    while ((c = body.find(call_open, pos)) != npos_sv) {
        any = true;
        size_t attrs_end = body.find(sep, c);
        size_t close = attrs_end == npos_sv ? npos_sv : body.find(call_close, attrs_end);
        if (close == npos_sv) return out.push_back(failed(body.substr(c)));
        std::string_view whole = body.substr(c, close + call_close.size() - c);
        auto name = attribute(body.substr(c + call_open.size(), attrs_end - c - call_open.size()), "tool");
        if (!name) return out.push_back(failed(whole));
        std::string_view content = body.substr(attrs_end + sep.size(), close - attrs_end - sep.size());
        json args = json::object();
        size_t j = content.find(json_open);
        if (j != npos_sv) {
            size_t s = content.find(sep, j);
            size_t e = s == npos_sv ? npos_sv : content.find(json_close, s);
            if (e == npos_sv) return out.push_back(failed(whole));
            auto parsed = arguments_from_text(content.substr(s + sep.size(), e - s - sep.size()));
            if (!parsed) return out.push_back(failed(whole));
            args = std::move(*parsed);
        } else {
            size_t p = 0, a;
            while ((a = content.find(arg_open, p)) != npos_sv) {
                size_t s = content.find(sep, a);
                size_t e = s == npos_sv ? npos_sv : content.find(arg_close, s);
                if (e == npos_sv) return out.push_back(failed(whole));
                std::string_view attrs = content.substr(a + arg_open.size(), s - a - arg_open.size());
                auto key = attribute(attrs, "key");
                if (!key) return out.push_back(failed(whole));
                std::string_view raw = content.substr(s + sep.size(), e - s - sep.size());
                auto type = attribute(attrs, "type");
                if (type && *type == "string") {
                    args[*key] = valid_utf8(raw);
                } else if (type) {
                    auto v = parse_json(trim(raw));
                    args[*key] = v ? *v : json(valid_utf8(raw));
                } else {
                    args[*key] = typed_value(raw, ctx.tools ? parameter_schema(*ctx.tools, *name, *key) : nullptr);
                }
                p = e + arg_close.size();
            }
        }
        out.push_back(make_call(*name, std::move(args)));
        pos = close + call_close.size();
    }
    if (!any) out.push_back(failed(body));
}

void kimi_sections(std::string_view body, std::vector<ParsedCall>& out) {
    constexpr std::string_view begin = "<|tool_call_begin|>", arg = "<|tool_call_argument_begin|>",
                               end = "<|tool_call_end|>";
    size_t pos = 0, b;
    bool any = false;
    while ((b = body.find(begin, pos)) != npos_sv) {
        any = true;
        size_t a = body.find(arg, b);
        size_t e = a == npos_sv ? npos_sv : body.find(end, a);
        if (e == npos_sv) return out.push_back(failed(body.substr(b)));
        std::string id = valid_utf8(trim(body.substr(b + begin.size(), a - b - begin.size())));
        // functions.NAME:INDEX is both the id the template writes back and the name.
        std::string name = id;
        if (name.rfind("functions.", 0) == 0) name.erase(0, 10);
        size_t colon = name.rfind(':');
        if (colon != std::string::npos && colon + 1 < name.size() &&
            name.find_first_not_of("0123456789", colon + 1) == std::string::npos)
            name.resize(colon);
        auto args = arguments_from_text(body.substr(a + arg.size(), e - a - arg.size()));
        if (!args) {
            out.push_back(failed(body.substr(b, e + end.size() - b)));
        } else {
            out.push_back(make_call(std::move(name), std::move(*args), std::move(id)));
        }
        pos = e + end.size();
    }
    if (!any) out.push_back(failed(body));
}

void deepseek(std::string_view body, std::vector<ParsedCall>& out) {
    constexpr std::string_view begin = "<｜tool▁call▁begin｜>", sep = "<｜tool▁sep｜>", end = "<｜tool▁call▁end｜>";
    size_t pos = 0, b;
    bool any = false;
    while ((b = body.find(begin, pos)) != npos_sv) {
        any = true;
        size_t s = body.find(sep, b);
        size_t e = s == npos_sv ? npos_sv : body.find(end, s);
        if (e == npos_sv) return out.push_back(failed(body.substr(b)));
        std::string_view whole = body.substr(b, e + end.size() - b);
        std::string_view head = trim(body.substr(b + begin.size(), s - b - begin.size()));
        std::string_view tail = body.substr(s + sep.size(), e - s - sep.size());
        std::string name;
        std::string_view args_text;
        if (head == "function" || head.empty()) {
            // R1: function<｜tool▁sep｜>NAME\n```json\n{…}\n```
            std::string_view t = trim(tail);
            size_t nl = t.find('\n');
            name = std::string(t.substr(0, nl));
            args_text = nl == npos_sv ? std::string_view() : t.substr(nl + 1);
        } else {
            // V3.1: NAME<｜tool▁sep｜>{…}
            name = std::string(head);
            args_text = tail;
        }
        auto args = arguments_from_text(args_text);
        if (!args)
            out.push_back(failed(whole));
        else
            out.push_back(make_call(std::move(name), std::move(*args)));
        pos = e + end.size();
    }
    if (!any) out.push_back(failed(body));
}

}  // namespace

std::vector<ParsedCall> parse_tool_body(BodyKind kind, std::string_view body, const BodyContext& ctx) {
    std::vector<ParsedCall> out;
    switch (kind) {
        case BodyKind::JsonCalls: json_calls(body, out); break;
        case BodyKind::MistralArgs: mistral_args(body, out); break;
        case BodyKind::PythonTag: python_tag(body, ctx, out); break;
        case BodyKind::FunctionTag: function_tag(body, out); break;
        case BodyKind::Pythonic: pythonic(body, out); break;
        case BodyKind::Gemma4: gemma4(body, out); break;
        case BodyKind::QwenXml: qwen_xml(body, ctx, out); break;
        case BodyKind::GlmXml: glm_xml(body, ctx, out); break;
        case BodyKind::InvokeXml: invoke_xml(body, ctx, out); break;
        case BodyKind::KimiXtml: kimi_xtml(body, ctx, out); break;
        case BodyKind::KimiSections: kimi_sections(body, out); break;
        case BodyKind::DeepSeek: deepseek(body, out); break;
        case BodyKind::JsonArgs: {
            auto args = arguments_from_text(body);
            if (!args)
                out.push_back(failed(body));
            else
                out.push_back(make_call(ctx.name, std::move(*args)));
            break;
        }
        case BodyKind::Code:
            out.push_back(make_call(ctx.name, json{{"code", valid_utf8(body)}}));
            break;
    }
    for (ParsedCall& c : out)
        if (!c.ok && c.error_text.empty()) c.error_text = std::string(body);
    return out;
}

bool is_bare_json_call(std::string_view text) {
    auto v = parse_json(text);
    if (!v || !v->is_object()) return false;
    bool has_args = v->contains("parameters") || v->contains("arguments");
    auto fn = v->find("function");
    if (fn != v->end() && fn->is_object()) return fn->contains("name");
    return has_args && v->contains("name") && (*v)["name"].is_string();
}

}  // namespace kiln::reply_detail
