#include "chat/reply_values.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <vector>

#include "chat/reply_text.h"

namespace kiln::reply_detail {

using nlohmann::json;

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view trim(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// ---- JSON ------------------------------------------------------------------

void JsonValueScanner::reset(size_t start) {
    *this = JsonValueScanner();
    pos_ = start;
}

JsonValueScanner::State JsonValueScanner::advance(std::string_view text) {
    while (state_ == State::Scanning && pos_ < text.size()) {
        char c = text[pos_];
        if (depth_ == 0) {
            if (is_space(c)) {
                ++pos_;
                continue;
            }
            if (c != '{' && c != '[') {
                state_ = State::Failed;
                break;
            }
            depth_ = 1;
            ++pos_;
            continue;
        }
        ++pos_;
        if (in_string_) {
            if (escape_)
                escape_ = false;
            else if (c == '\\')
                escape_ = true;
            else if (c == '"')
                in_string_ = false;
            continue;
        }
        if (c == '"') {
            in_string_ = true;
        } else if (c == '{' || c == '[') {
            if (++depth_ > k_max_depth) state_ = State::Failed;
        } else if (c == '}' || c == ']') {
            if (--depth_ == 0) {
                end_ = pos_;
                state_ = State::Complete;
            }
        }
    }
    return state_;
}

size_t json_value_end(std::string_view text, size_t start) {
    if (start >= text.size()) return std::string_view::npos;
    char c = text[start];
    if (c == '{' || c == '[') {
        JsonValueScanner scanner;
        scanner.reset(start);
        return scanner.advance(text) == JsonValueScanner::State::Complete ? scanner.end() : std::string_view::npos;
    }
    if (c == '"') {
        for (size_t i = start + 1; i < text.size(); ++i) {
            if (text[i] == '\\')
                ++i;
            else if (text[i] == '"')
                return i + 1;
        }
        return std::string_view::npos;
    }
    size_t i = start;
    while (i < text.size() && !is_space(text[i]) && text[i] != ',' && text[i] != ']' && text[i] != '}' &&
           text[i] != ';')
        ++i;
    return i == start ? std::string_view::npos : i;
}

std::optional<json> parse_json(std::string_view text) {
    // Depth first: the DOM parser and the destructor recurse per level.
    int depth = 0;
    bool in_string = false, escape = false;
    for (char c : text) {
        if (in_string) {
            if (escape)
                escape = false;
            else if (c == '\\')
                escape = true;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '{' || c == '[') {
            if (++depth > k_max_depth) return std::nullopt;
        } else if (c == '}' || c == ']') {
            --depth;
        }
    }
    // An object that names a key twice is ambiguous (parsers keep the first or the
    // last): it is not taken as JSON, so a call made of it is malformed whether the
    // reply arrived whole or streamed (a preview would have streamed the first).
    std::vector<std::set<std::string>> keys;
    bool duplicate = false;
    auto check_keys = [&](int, json::parse_event_t event, json& parsed) {
        if (event == json::parse_event_t::object_start)
            keys.emplace_back();
        else if (event == json::parse_event_t::object_end && !keys.empty())
            keys.pop_back();
        else if (event == json::parse_event_t::key && !keys.empty() && !keys.back().insert(parsed.get<std::string>()).second)
            duplicate = true;
        return true;
    };
    json value = json::parse(text.begin(), text.end(), check_keys, false);
    if (value.is_discarded() || duplicate) return std::nullopt;
    return value;
}

std::string_view strip_code_fence(std::string_view text) {
    std::string_view t = trim(text);
    if (t.substr(0, 3) != "```") return t;
    size_t nl = t.find('\n');
    if (nl == std::string_view::npos) return t;
    t.remove_prefix(nl + 1);
    t = trim(t);
    if (t.size() >= 3 && t.substr(t.size() - 3) == "```") t.remove_suffix(3);
    return trim(t);
}

// ---- call shapes -----------------------------------------------------------

std::optional<json> normalize_arguments(const json& value) {
    if (value.is_object()) return value;
    if (value.is_null()) return json::object();
    if (value.is_string()) {
        std::string_view s = trim(value.get_ref<const std::string&>());
        if (s.empty()) return json::object();
        auto parsed = parse_json(s);
        if (parsed && parsed->is_object()) return parsed;
    }
    return std::nullopt;
}

ParsedCall read_call_object(const json& value, std::string_view text) {
    ParsedCall call;
    call.error_text = std::string(text);
    if (!value.is_object()) return call;
    const json* fn = &value;
    auto it = value.find("function");
    if (it != value.end() && it->is_object()) fn = &*it;
    auto string_field = [](const json& obj, const char* key) -> std::string {
        auto f = obj.find(key);
        return f != obj.end() && f->is_string() ? f->get<std::string>() : std::string();
    };
    call.name = string_field(*fn, "name");
    if (call.name.empty() && it != value.end() && it->is_string()) call.name = it->get<std::string>();
    if (call.name.empty()) call.name = string_field(value, "tool_name");
    call.name = std::string(trim(call.name));
    if (call.name.empty()) return call;
    call.id = string_field(value, "id");
    if (call.id.empty() && fn != &value) call.id = string_field(*fn, "id");
    const json* args = nullptr;
    for (const json* obj : {fn, &value}) {
        for (const char* key : {"arguments", "parameters"}) {
            auto a = obj->find(key);
            if (a != obj->end()) {
                args = &*a;
                break;
            }
        }
        if (args) break;
    }
    auto normalized = normalize_arguments(args ? *args : json());
    if (!normalized) return call;
    call.arguments = std::move(*normalized);
    call.ok = true;
    call.error_text.clear();
    return call;
}

// ---- Python literals -------------------------------------------------------

namespace {

void skip_space(std::string_view s, size_t& pos) {
    while (pos < s.size() && is_space(s[pos])) ++pos;
}

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }

// A number token as JSON: integers stay integers.
bool number_value(std::string_view tok, json& out) {
    if (tok.empty() || tok.size() > 64) return false;
    std::string t(tok);
    t.erase(std::remove(t.begin(), t.end(), '_'), t.end());
    char* end = nullptr;
    errno = 0;
    long long i = std::strtoll(t.c_str(), &end, 10);
    if (end && *end == '\0' && errno == 0) {
        out = i;
        return true;
    }
    errno = 0;
    double d = std::strtod(t.c_str(), &end);
    if (end && *end == '\0' && errno == 0 && t.find_first_of("0123456789") != std::string::npos) {
        out = d;
        return true;
    }
    return false;
}

bool python_string(std::string_view s, size_t& pos, std::string& out) {
    char quote = s[pos++];
    std::string raw;
    while (pos < s.size() && s[pos] != quote) {
        char c = s[pos++];
        if (c != '\\' || pos >= s.size()) {
            raw += c;
            continue;
        }
        char e = s[pos++];
        switch (e) {
            case 'n': raw += '\n'; break;
            case 't': raw += '\t'; break;
            case 'r': raw += '\r'; break;
            case '\\': raw += '\\'; break;
            case '\'': raw += '\''; break;
            case '"': raw += '"'; break;
            case 'u':
            case 'x': {
                size_t n = e == 'u' ? 4 : 2;
                if (pos + n > s.size()) return false;
                unsigned cp = 0;
                for (size_t k = 0; k < n; ++k) {
                    char h = s[pos + k];
                    int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
                    if (v < 0) return false;
                    cp = cp * 16 + static_cast<unsigned>(v);
                }
                pos += n;
                append_utf8(raw, cp);
                break;
            }
            default:
                raw += '\\';
                raw += e;
        }
    }
    if (pos >= s.size()) return false;
    ++pos;
    out = valid_utf8(raw);
    return true;
}

}  // namespace

bool parse_python_value(std::string_view s, size_t& pos, json& out, int depth) {
    if (depth > k_max_depth) return false;
    skip_space(s, pos);
    if (pos >= s.size()) return false;
    char c = s[pos];
    if (c == '\'' || c == '"') {
        std::string str;
        if (!python_string(s, pos, str)) return false;
        out = std::move(str);
        return true;
    }
    if (c == '[' || c == '(') {
        char close = c == '[' ? ']' : ')';
        ++pos;
        out = json::array();
        for (;;) {
            skip_space(s, pos);
            if (pos < s.size() && s[pos] == close) {
                ++pos;
                return true;
            }
            json item;
            if (!parse_python_value(s, pos, item, depth + 1)) return false;
            out.push_back(std::move(item));
            skip_space(s, pos);
            if (pos < s.size() && s[pos] == ',') ++pos;
            else if (pos >= s.size() || s[pos] != close) return false;
        }
    }
    if (c == '{') {
        ++pos;
        out = json::object();
        for (;;) {
            skip_space(s, pos);
            if (pos < s.size() && s[pos] == '}') {
                ++pos;
                return true;
            }
            json key, value;
            if (!parse_python_value(s, pos, key, depth + 1)) return false;
            skip_space(s, pos);
            if (pos >= s.size() || s[pos] != ':') return false;
            ++pos;
            if (!parse_python_value(s, pos, value, depth + 1)) return false;
            out[key.is_string() ? key.get<std::string>() : key.dump()] = std::move(value);
            skip_space(s, pos);
            if (pos < s.size() && s[pos] == ',') ++pos;
            else if (pos >= s.size() || s[pos] != '}') return false;
        }
    }
    size_t start = pos;
    while (pos < s.size() && (is_ident_char(s[pos]) || s[pos] == '.' || s[pos] == '-' || s[pos] == '+')) ++pos;
    std::string_view tok = s.substr(start, pos - start);
    if (tok == "True" || tok == "true") out = true;
    else if (tok == "False" || tok == "false") out = false;
    else if (tok == "None" || tok == "null") out = nullptr;
    else return number_value(tok, out);
    return true;
}

bool parse_python_call(std::string_view s, size_t& pos, std::string& name, json& args) {
    skip_space(s, pos);
    size_t start = pos;
    if (pos >= s.size() || !is_ident_start(s[pos])) return false;
    while (pos < s.size() && (is_ident_char(s[pos]) || s[pos] == '.')) ++pos;
    name = std::string(s.substr(start, pos - start));
    skip_space(s, pos);
    if (pos >= s.size() || s[pos] != '(') return false;
    ++pos;
    args = json::object();
    for (;;) {
        skip_space(s, pos);
        if (pos < s.size() && s[pos] == ')') {
            ++pos;
            return true;
        }
        size_t key_start = pos;
        while (pos < s.size() && is_ident_char(s[pos])) ++pos;
        if (pos == key_start) return false;  // positional arguments have no name to map to
        std::string key(s.substr(key_start, pos - key_start));
        skip_space(s, pos);
        if (pos >= s.size() || s[pos] != '=') return false;
        ++pos;
        json value;
        if (!parse_python_value(s, pos, value, 1)) return false;
        args[key] = std::move(value);
        skip_space(s, pos);
        if (pos < s.size() && s[pos] == ',') ++pos;
        else if (pos >= s.size() || s[pos] != ')') return false;
    }
}

// ---- Gemma 4 ---------------------------------------------------------------

namespace {
constexpr std::string_view k_gemma_quote = "<|\"|>";
}

bool parse_gemma4_value(std::string_view s, size_t& pos, json& out, int depth) {
    if (depth > k_max_depth) return false;
    skip_space(s, pos);
    if (pos >= s.size()) return false;
    if (s.substr(pos, k_gemma_quote.size()) == k_gemma_quote) {
        size_t start = pos + k_gemma_quote.size();
        size_t end = s.find(k_gemma_quote, start);
        if (end == std::string_view::npos) return false;
        out = valid_utf8(s.substr(start, end - start));
        pos = end + k_gemma_quote.size();
        return true;
    }
    char c = s[pos];
    if (c == '"') {
        size_t end = json_value_end(s, pos);
        if (end == std::string_view::npos) return false;
        auto v = parse_json(s.substr(pos, end - pos));
        if (!v) return false;
        out = std::move(*v);
        pos = end;
        return true;
    }
    if (c == '{') {
        ++pos;
        out = json::object();
        for (;;) {
            skip_space(s, pos);
            if (pos < s.size() && s[pos] == '}') {
                ++pos;
                return true;
            }
            std::string key;
            if (s.substr(pos, k_gemma_quote.size()) == k_gemma_quote || (pos < s.size() && s[pos] == '"')) {
                json k;
                if (!parse_gemma4_value(s, pos, k, depth + 1) || !k.is_string()) return false;
                key = k.get<std::string>();
            } else {
                size_t colon = s.find(':', pos);
                if (colon == std::string_view::npos) return false;
                key = std::string(trim(s.substr(pos, colon - pos)));
                if (key.empty() || key.find_first_of("{}[],") != std::string::npos) return false;
                pos = colon;
            }
            skip_space(s, pos);
            if (pos >= s.size() || s[pos] != ':') return false;
            ++pos;
            json value;
            if (!parse_gemma4_value(s, pos, value, depth + 1)) return false;
            out[valid_utf8(key)] = std::move(value);
            skip_space(s, pos);
            if (pos < s.size() && s[pos] == ',') ++pos;
            else if (pos >= s.size() || s[pos] != '}') return false;
        }
    }
    if (c == '[') {
        ++pos;
        out = json::array();
        for (;;) {
            skip_space(s, pos);
            if (pos < s.size() && s[pos] == ']') {
                ++pos;
                return true;
            }
            json item;
            if (!parse_gemma4_value(s, pos, item, depth + 1)) return false;
            out.push_back(std::move(item));
            skip_space(s, pos);
            if (pos < s.size() && s[pos] == ',') ++pos;
            else if (pos >= s.size() || s[pos] != ']') return false;
        }
    }
    size_t start = pos;
    while (pos < s.size() && s[pos] != ',' && s[pos] != '}' && s[pos] != ']') ++pos;
    std::string_view tok = trim(s.substr(start, pos - start));
    if (tok.empty()) return false;
    if (tok == "true") out = true;
    else if (tok == "false") out = false;
    else if (tok == "null") out = nullptr;
    else if (!number_value(tok, out)) out = valid_utf8(tok);  // a bare word: keep it as text
    return true;
}

// ---- XML parameter values --------------------------------------------------

const json* parameter_schema(const json& tools, std::string_view function, std::string_view parameter) {
    if (!tools.is_array()) return nullptr;
    for (const json& t : tools) {
        if (!t.is_object()) continue;
        const json* fn = &t;
        auto f = t.find("function");
        if (f != t.end() && f->is_object()) fn = &*f;
        auto n = fn->find("name");
        if (n == fn->end() || !n->is_string() || n->get_ref<const std::string&>() != function) continue;
        auto params = fn->find("parameters");
        if (params == fn->end() || !params->is_object()) return nullptr;
        auto props = params->find("properties");
        if (props == params->end() || !props->is_object()) return nullptr;
        auto p = props->find(std::string(parameter));
        return p != props->end() && p->is_object() ? &*p : nullptr;
    }
    return nullptr;
}

json typed_value(std::string_view raw, const json* schema) {
    std::string text = valid_utf8(raw);
    std::string_view t = trim(text);
    auto as_json = [&]() -> std::optional<json> {
        if (t == "True") return json(true);
        if (t == "False") return json(false);
        if (t == "None") return json(nullptr);
        return parse_json(t);
    };
    if (schema) {
        std::vector<std::string> types;
        auto ty = schema->find("type");
        if (ty != schema->end() && ty->is_string()) types.push_back(ty->get<std::string>());
        if (ty != schema->end() && ty->is_array())
            for (const json& x : *ty)
                if (x.is_string()) types.push_back(x.get<std::string>());
        if (!types.empty()) {
            bool has_string = false;
            for (const std::string& x : types) has_string = has_string || x == "string";
            if (has_string && types.size() == 1) return text;
            auto v = as_json();
            if (v && !v->is_string()) return *v;
            return text;
        }
    }
    if (t.empty()) return text;
    char c = t.front();
    bool looks = c == '{' || c == '[' || c == '-' || (c >= '0' && c <= '9') || t == "true" || t == "false" ||
                 t == "null";
    if (looks) {
        auto v = parse_json(t);
        if (v && !v->is_string()) return *v;
    }
    return text;
}

std::string xml_unescape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    static const std::pair<std::string_view, char> entities[] = {
        {"&amp;", '&'}, {"&quot;", '"'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&apos;", '\''}};
    for (size_t i = 0; i < s.size();) {
        bool replaced = false;
        if (s[i] == '&')
            for (const auto& [entity, c] : entities)
                if (s.substr(i, entity.size()) == entity) {
                    out += c;
                    i += entity.size();
                    replaced = true;
                    break;
                }
        if (!replaced) out += s[i++];
    }
    return valid_utf8(out);
}

}  // namespace kiln::reply_detail
