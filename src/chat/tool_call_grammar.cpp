// Tool calls as a grammar: the call text each syntax writes, in GBNF, with each
// tool's arguments imported as the grammar of its `parameters` schema. The text
// is the shape the reply parser reads (src/chat/reply_parser.cpp and
// reply_tool_bodies.cpp); tests/reply/test_tool_grammar.cpp feeds sample calls
// through both.
#include "kiln/tool_grammar.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "kiln/error.h"
#include "tokenizer/unicode.h"

namespace kiln {

namespace {

using nlohmann::json;

// A GBNF string literal holding exactly `bytes` (UTF-8 passes through).
std::string lit(std::string_view bytes) {
    std::string out = "\"";
    for (unsigned char c : bytes) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02X", c);
            out += buf;
        } else {
            out += static_cast<char>(c);
        }
    }
    return out + "\"";
}

std::string cp_escape(uint32_t cp) {
    char buf[16];
    if (cp < 0x100) std::snprintf(buf, sizeof buf, "\\x%02X", cp);
    else if (cp < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04X", cp);
    else std::snprintf(buf, sizeof buf, "\\U%08X", cp);
    return buf;
}

std::vector<uint32_t> codepoints(std::string_view s) {
    if (!tok::is_valid_utf8(s)) throw Error("tool grammar: a marker is not valid UTF-8", ErrorKind::Internal);
    std::vector<uint32_t> cps;
    tok::decode_utf8(s, cps);
    return cps;
}

// Rules `<prefix>0 ...` matching any text up to and including the first
// occurrence of `marker`: a Knuth-Morris-Pratt automaton over its codepoints,
// one rule per matched-prefix length (each a tail call, so the stack stays flat).
std::string until_rules(const std::string& prefix, std::string_view marker) {
    const std::vector<uint32_t> m = codepoints(marker);
    std::vector<uint32_t> distinct = m;
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    // next(k, c): the longest prefix of m that ends the text m[0..k) + c.
    auto next = [&](size_t k, uint32_t c) {
        std::vector<uint32_t> t(m.begin(), m.begin() + static_cast<long>(k));
        t.push_back(c);
        for (size_t len = std::min(t.size(), m.size()); len > 0; --len)
            if (std::equal(m.begin(), m.begin() + static_cast<long>(len), t.end() - static_cast<long>(len))) return len;
        return size_t{0};
    };
    std::string out;
    std::string others = "[^";
    for (uint32_t c : distinct) others += cp_escape(c);
    others += "]";
    for (size_t k = 0; k < m.size(); ++k) {
        out += prefix + std::to_string(k) + " ::= \"" + cp_escape(m[k]) + "\"";
        if (k + 1 < m.size()) out += " " + prefix + std::to_string(k + 1);
        for (uint32_t c : distinct) {
            if (c == m[k]) continue;
            out += " | \"" + cp_escape(c) + "\" " + prefix + std::to_string(next(k, c));
        }
        out += " | " + others + " " + prefix + "0\n";
    }
    return out;
}

struct Tool {
    std::string name;
    std::string args_rule;  // the imported grammar of its parameters
};

// The call text of one syntax. `call(i, k)` is tool i's call as the k-th of
// the reply; `max_calls` 1 or many.
struct SyntaxShape {
    std::string open, close;  // around all the calls (once)
    std::string separator;    // between two calls
    std::string trigger;      // lazy: the text that opens a call
};

std::string json_call(const Tool& t, const char* name_key, const char* args_key) {
    return lit(std::string("{\"") + name_key + "\": " + json(t.name).dump() + ", \"" + args_key + "\": ") + " " +
           t.args_rule + " " + lit("}");
}

}  // namespace

bool tool_syntax_can_constrain(ToolSyntax syntax) {
    switch (syntax) {
        case ToolSyntax::Hermes:
        case ToolSyntax::TaggedJson:
        case ToolSyntax::Granite:
        case ToolSyntax::MistralJson:
        case ToolSyntax::MistralArgs:
        case ToolSyntax::Firefunction:
        case ToolSyntax::GigaChat:
        case ToolSyntax::CommandR:
        case ToolSyntax::Llama3:
        case ToolSyntax::FunctionaryV31:
        case ToolSyntax::Kimi:
        case ToolSyntax::DeepSeek: return true;
        default: return false;
    }
}

ToolCallConstraint tool_call_constraint(const ChatFormat& format, const json& tools,
                                        const ToolCallConstraintOptions& options) {
    const ToolFormat& tf = format.tools;
    if (tf.syntax == ToolSyntax::None)
        throw Error("the chat template has no tool-call syntax, so a tool call cannot be forced", ErrorKind::Unsupported);
    if (!tool_syntax_can_constrain(tf.syntax))
        throw Error("constraining tool calls in the '" + std::string(tool_syntax_name(tf.syntax)) +
                        "' tool syntax is not supported (JSON-argument syntaxes only)",
                    ErrorKind::Unsupported);
    if (!tools.is_array() || tools.empty()) throw Error("no tools are offered", ErrorKind::InvalidInput);

    // Each tool's arguments grammar, imported under its own rule name.
    std::vector<GrammarImport> imports;
    std::vector<Tool> offered;
    for (size_t i = 0; i < tools.size(); ++i) {
        const json& t = tools[i];
        const json* fn = t.is_object() && t.contains("function") ? &t["function"] : &t;
        if (!fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string())
            throw Error("tools[" + std::to_string(i) + "]: no function name", ErrorKind::InvalidInput);
        const std::string name = (*fn)["name"].get<std::string>();
        if (options.choice == ToolChoice::Named && name != options.name) continue;
        json schema = fn->contains("parameters") && !(*fn)["parameters"].is_null() ? (*fn)["parameters"]
                                                                                  : json{{"type", "object"}};
        if (schema.is_object() && !schema.contains("type") && !schema.contains("$ref") && !schema.contains("anyOf") &&
            !schema.contains("oneOf") && !schema.contains("allOf"))
            schema["type"] = "object";  // arguments are an object, whatever else the schema says
        if (!schema.is_object() || schema.value("type", json("object")) != json("object"))
            throw Error("tool '" + name + "': 'parameters' must describe an object", ErrorKind::InvalidInput);
        const std::string rule = "args" + std::to_string(offered.size());
        try {
            imports.push_back({rule, Grammar::from_json_schema(schema.dump(), options.json)});
        } catch (const Error& e) {
            throw Error("tool '" + name + "' parameters: " + e.what(), e.kind());
        }
        offered.push_back({name, rule});
    }
    if (offered.empty())
        throw Error("tool_choice names the function '" + options.name + "', which is not among the tools",
                    ErrorKind::InvalidInput);

    // One call of tool t, as the k-th call of the reply, and what surrounds them.
    std::function<std::string(const Tool&, size_t)> call;
    SyntaxShape s;
    bool multi = true;
    switch (tf.syntax) {
        case ToolSyntax::Hermes:
            call = [&](const Tool& t, size_t) { return lit(tf.open + "\n") + " " + json_call(t, "name", "arguments") + " " + lit("\n" + tf.close); };
            s.separator = "\n";
            s.trigger = tf.open;
            break;
        case ToolSyntax::TaggedJson:
        case ToolSyntax::Granite:
        case ToolSyntax::MistralJson:
        case ToolSyntax::Firefunction:
            call = [&](const Tool& t, size_t) { return json_call(t, "name", "arguments"); };
            s.open = tf.open + "[";
            s.close = "]" + tf.close;
            s.separator = ", ";
            s.trigger = tf.open;
            break;
        case ToolSyntax::CommandR:
            call = [&](const Tool& t, size_t) { return json_call(t, "tool_name", "parameters"); };
            s.open = tf.open + "\n```json\n[";
            s.close = "]\n```";
            s.separator = ", ";
            s.trigger = tf.open;
            break;
        case ToolSyntax::GigaChat:
            call = [&](const Tool& t, size_t) { return json_call(t, "name", "arguments"); };
            s.open = tf.open + "\n";
            s.trigger = tf.open;
            multi = false;
            break;
        case ToolSyntax::Llama3:
            // A bare JSON call, which the parser reads only at the start of a reply:
            // no lazy form (auto stays free text).
            call = [&](const Tool& t, size_t) { return json_call(t, "name", "parameters"); };
            multi = false;
            break;
        case ToolSyntax::MistralArgs:
            call = [&](const Tool& t, size_t) { return lit(tf.open + t.name + "[ARGS]") + " " + t.args_rule; };
            s.trigger = tf.open;
            break;
        case ToolSyntax::FunctionaryV31:
            call = [&](const Tool& t, size_t) { return lit("<function=" + t.name + ">") + " " + t.args_rule + " " + lit("</function>"); };
            s.trigger = "<function=";
            break;
        case ToolSyntax::Kimi:
            call = [&](const Tool& t, size_t k) {
                return lit("<|tool_call_begin|>functions." + t.name + ":" + std::to_string(k) + "<|tool_call_argument_begin|>") +
                       " " + t.args_rule + " " + lit("<|tool_call_end|>");
            };
            s.open = tf.open;
            s.close = tf.close;
            s.trigger = tf.open;
            break;
        case ToolSyntax::DeepSeek:
            call = [&](const Tool& t, size_t) {
                return lit("<｜tool▁call▁begin｜>" + t.name + "<｜tool▁sep｜>") + " " + t.args_rule + " " + lit("<｜tool▁call▁end｜>");
            };
            s.open = tf.open;
            s.close = tf.close;
            s.trigger = tf.open;
            break;
        default: break;
    }
    if (options.choice == ToolChoice::Auto && s.trigger.empty())
        throw Error("the '" + std::string(tool_syntax_name(tf.syntax)) + "' tool syntax has no marker that opens a call",
                    ErrorKind::Unsupported);
    // Auto: one call per trigger (the lazy stage frees the text after it, and
    // the next opening marker starts the next call).
    if (options.choice != ToolChoice::Required || !options.parallel) multi = false;

    // calls ::= call-0 (sep call-1 (sep call-2 ...)?)?  — unrolled, since some
    // syntaxes number the calls; past k_max_numbered calls they repeat the last.
    constexpr size_t k_max_numbered = 8;
    std::string g;
    auto any_call = [&](size_t k) {
        std::string alts;
        for (const Tool& t : offered) alts += (alts.empty() ? "" : " | ") + call(t, k);
        return alts;
    };
    const size_t n_rules = multi ? k_max_numbered : 1;
    for (size_t k = 0; k < n_rules; ++k) {
        g += "call" + std::to_string(k) + " ::= (" + any_call(k) + ")";
        if (multi) {
            const std::string next = k + 1 < n_rules ? "call" + std::to_string(k + 1) : "call" + std::to_string(k);
            g += " (" + (s.separator.empty() ? std::string() : lit(s.separator) + " ") + next + ")?";
        }
        g += "\n";
    }
    std::string body = (s.open.empty() ? "" : lit(s.open) + " ") + "call0" + (s.close.empty() ? "" : " " + lit(s.close));

    ToolCallConstraint out{Grammar::any_json_object(), {}};
    std::string root = body;
    const ReasoningFormat& r = format.reasoning;
    if (options.choice != ToolChoice::Auto && r.syntax == ReasoningSyntax::Tags && !r.close.empty()) {
        // A reasoning block may come first (the prompt may have opened it).
        g += until_rules("think", r.close);
        g += "ws ::= [ \\t\\n]{0,4}\n";
        if (options.starts_in_thinking) root = "think0 ws " + body;
        else if (!r.open.empty()) root = "(" + lit(r.open) + " think0 ws)? " + body;
    }
    if (options.choice == ToolChoice::Auto) out.triggers = {s.trigger};
    g = "root ::= " + root + "\n" + g;
    out.grammar = Grammar::from_gbnf(g, imports);
    return out;
}

}  // namespace kiln
