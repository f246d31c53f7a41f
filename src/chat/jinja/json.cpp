// JSON as Python's json module writes and reads it: json.dumps layout (", " and
// ": " separators, indent, sort_keys, ensure_ascii, float repr, NaN/Infinity)
// and a strict parser that keeps object key order.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/jinja/error.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/text.h"

namespace kiln::jinja {

namespace {

// Bytes JSON writes as they are (ensure_ascii off): printable ASCII but '"' and
// '\\', and every byte of a multi-byte UTF-8 sequence.
bool plain_json_byte(unsigned char c) { return c >= 0x20 && c != '"' && c != '\\'; }

void dump_string(std::string& out, std::string_view s, bool ensure_ascii) {
    out.reserve(out.size() + s.size() + 2);
    out.push_back('"');
    if (!ensure_ascii) {
        // Copy runs of plain bytes at once; escapes are rare.
        size_t i = 0;
        while (i < s.size()) {
            size_t j = i;
            while (j < s.size() && plain_json_byte(static_cast<unsigned char>(s[j]))) ++j;
            out.append(s.data() + i, j - i);
            if (j >= s.size()) break;
            const auto c = static_cast<unsigned char>(s[j]);
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                default: {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                }
            }
            i = j + 1;
        }
        out.push_back('"');
        return;
    }
    for (size_t i = 0; i < s.size();) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (c < 0x80) {
            ++i;
            switch (c) {
                case '"': out += "\\\""; break;
                case '\\': out += "\\\\"; break;
                case '\n': out += "\\n"; break;
                case '\r': out += "\\r"; break;
                case '\t': out += "\\t"; break;
                case '\b': out += "\\b"; break;
                case '\f': out += "\\f"; break;
                default:
                    if (c < 0x20 || (ensure_ascii && c == 0x7F)) {
                        char buf[8];
                        std::snprintf(buf, sizeof buf, "\\u%04x", c);
                        out += buf;
                    } else {
                        out.push_back(static_cast<char>(c));
                    }
            }
            continue;
        }
        const size_t start = i;
        uint32_t cp = text::decode(s, i);
        if (!ensure_ascii) {
            out.append(s.substr(start, i - start));
            continue;
        }
        char buf[16];
        if (cp >= 0x10000) {
            cp -= 0x10000;
            std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
        } else {
            std::snprintf(buf, sizeof buf, "\\u%04x", cp);
        }
        out += buf;
    }
    out.push_back('"');
}

void dump_float(std::string& out, double f) {
    if (std::isnan(f)) out += "NaN";
    else if (std::isinf(f)) out += f < 0 ? "-Infinity" : "Infinity";
    else append_float_repr(out, f);
}

void newline_indent(std::string& out, const JsonOptions& o, int level) {
    out.push_back('\n');
    for (int k = 0; k < level; ++k) out += o.indent;
}

std::string key_text(const Value& k) {
    switch (k.kind()) {
        case Kind::String: return k.str();
        case Kind::Bool: return k.as_bool() ? "true" : "false";
        case Kind::None: return "null";
        case Kind::Int: return std::to_string(k.as_int());
        case Kind::Float: {
            std::string s;
            dump_float(s, k.as_float());
            return s;
        }
        default:
            fail_type("keys must be str, int, float, bool or None, not " + std::string(type_name(k)));
    }
}

}  // namespace

void json_dump(std::string& out, const Value& v, const JsonOptions& o, int depth) {
    if (depth > k_max_nesting) fail("Circular reference detected (or JSON nested more than " + std::to_string(k_max_nesting) + " levels)");
    switch (v.kind()) {
        case Kind::None: out += "null"; return;
        case Kind::Bool: out += v.as_bool() ? "true" : "false"; return;
        case Kind::Int: out += std::to_string(v.as_int()); return;
        case Kind::Float: dump_float(out, v.as_float()); return;
        case Kind::String: dump_string(out, v.str(), o.ensure_ascii); return;
        case Kind::List: {
            const ListObj& l = v.list();
            if (l.seq != SeqKind::List && l.seq != SeqKind::Tuple && l.seq != SeqKind::Group) break;
            if (l.items.empty()) {
                out += "[]";
                return;
            }
            out.push_back('[');
            for (size_t n = 0; n < l.items.size(); ++n) {
                if (n) out += o.item_sep;
                if (o.indent_set) newline_indent(out, o, depth + 1);
                json_dump(out, l.items[n], o, depth + 1);
            }
            if (o.indent_set) newline_indent(out, o, depth);
            out.push_back(']');
            return;
        }
        case Kind::Dict: {
            const DictObj& d = v.dict();
            if (d.size() == 0) {
                out += "{}";
                return;
            }
            auto entry = [&](const std::pair<Value, Value>& e, bool first) {
                if (!first) out += o.item_sep;
                if (o.indent_set) newline_indent(out, o, depth + 1);
                if (e.first.is_string()) dump_string(out, e.first.str(), o.ensure_ascii);
                else dump_string(out, key_text(e.first), o.ensure_ascii);
                out += o.key_sep;
                json_dump(out, e.second, o, depth + 1);
            };
            out.push_back('{');
            if (o.sort_keys) {
                std::vector<const std::pair<Value, Value>*> entries;
                entries.reserve(d.size());
                for (const auto& e : d.entries) entries.push_back(&e);
                std::stable_sort(entries.begin(), entries.end(),
                                 [](const auto* a, const auto* b) { return less(a->first, b->first); });
                for (size_t n = 0; n < entries.size(); ++n) entry(*entries[n], n == 0);
            } else {
                for (size_t n = 0; n < d.entries.size(); ++n) entry(d.entries[n], n == 0);
            }
            if (o.indent_set) newline_indent(out, o, depth);
            out.push_back('}');
            return;
        }
        default: break;
    }
    fail_type("Object of type " + std::string(type_name(v)) + " is not JSON serializable");
}

namespace {

class JsonParser {
public:
    explicit JsonParser(std::string_view s) : s_(s) {}

    Value parse() {
        skip_ws();
        Value v = value(0);
        skip_ws();
        if (i_ != s_.size()) error("Extra data");
        return v;
    }

private:
    std::string_view s_;
    size_t i_ = 0;

    [[noreturn]] void error(const std::string& what) {
        // Python's json.JSONDecodeError wording: "<what>: line L column C (char N)"
        size_t line = 1, col = 1;
        for (size_t k = 0; k < i_ && k < s_.size(); ++k) {
            if (s_[k] == '\n') ++line, col = 1;
            else ++col;
        }
        fail(what + ": line " + std::to_string(line) + " column " + std::to_string(col) + " (char " + std::to_string(i_) + ")");
    }

    void skip_ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
    }

    bool literal(std::string_view w) {
        if (s_.compare(i_, w.size(), w) == 0) {
            i_ += w.size();
            return true;
        }
        return false;
    }

    Value value(int depth) {
        if (depth > k_max_nesting) error("JSON nested too deeply");
        if (i_ >= s_.size()) error("Expecting value");
        char c = s_[i_];
        if (c == '{') return object(depth);
        if (c == '[') return array(depth);
        if (c == '"') return Value::string(string());
        if (literal("null")) return Value::none();
        if (literal("true")) return Value::boolean(true);
        if (literal("false")) return Value::boolean(false);
        if (literal("NaN")) return Value::floating(std::nan(""));
        if (literal("Infinity")) return Value::floating(INFINITY);
        if (literal("-Infinity")) return Value::floating(-INFINITY);
        if (c == '-' || (c >= '0' && c <= '9')) return number();
        error("Expecting value");
    }

    Value number() {
        const size_t start = i_;
        if (s_[i_] == '-') ++i_;
        if (i_ >= s_.size() || !(s_[i_] >= '0' && s_[i_] <= '9')) {
            i_ = start;
            error("Expecting value");
        }
        if (s_[i_] == '0') ++i_;
        else
            while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
        bool is_float = false;
        if (i_ + 1 < s_.size() && s_[i_] == '.' && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9') {
            is_float = true;
            ++i_;
            while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
        }
        if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
            size_t k = i_ + 1;
            if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
            if (k < s_.size() && s_[k] >= '0' && s_[k] <= '9') {
                is_float = true;
                i_ = k;
                while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
            }
        }
        std::string num(s_.substr(start, i_ - start));
        if (!is_float) {
            errno = 0;
            long long v = std::strtoll(num.c_str(), nullptr, 10);
            if (errno != ERANGE) return Value::integer(v);
            // beyond 64 bits: Python keeps an exact int; the nearest float is the best we have
        }
        return Value::floating(std::strtod(num.c_str(), nullptr));
    }

    uint32_t hex4() {
        if (i_ + 4 > s_.size()) error("Invalid \\uXXXX escape");
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
            char c = s_[i_++];
            v <<= 4;
            if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
            else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
            else error("Invalid \\uXXXX escape");
        }
        return v;
    }

    std::string string() {
        const size_t open = i_;
        ++i_;
        std::string out;
        while (true) {
            if (i_ >= s_.size()) {
                i_ = open;
                error("Unterminated string starting at");
            }
            const auto c = static_cast<unsigned char>(s_[i_]);
            if (c == '"') {
                ++i_;
                return out;
            }
            if (c < 0x20) error("Invalid control character at");
            if (c != '\\') {
                out.push_back(static_cast<char>(c));
                ++i_;
                continue;
            }
            ++i_;
            if (i_ >= s_.size()) error("Unterminated string starting at");
            char e = s_[i_++];
            switch (e) {
                case '"': out.push_back('"'); break;
                case '\\': out.push_back('\\'); break;
                case '/': out.push_back('/'); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'n': out.push_back('\n'); break;
                case 'r': out.push_back('\r'); break;
                case 't': out.push_back('\t'); break;
                case 'u': {
                    uint32_t cp = hex4();
                    if (cp >= 0xD800 && cp <= 0xDBFF && i_ + 6 <= s_.size() && s_[i_] == '\\' && s_[i_ + 1] == 'u') {
                        size_t save = i_;
                        i_ += 2;
                        uint32_t lo = hex4();
                        if (lo >= 0xDC00 && lo <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                        else i_ = save;
                    }
                    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;  // a lone surrogate cannot be UTF-8
                    text::encode(out, cp);
                    break;
                }
                default: --i_; error("Invalid \\escape");
            }
        }
    }

    // Consumes c if it is the next character.
    bool eat(char c) {
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }

    Value array(int depth) {
        ++i_;
        Value out = Value::new_list();
        skip_ws();
        if (eat(']')) return out;
        while (true) {
            skip_ws();
            out.list().items.push_back(value(depth + 1));
            skip_ws();
            if (eat(',')) continue;
            if (eat(']')) return out;
            error("Expecting ',' delimiter");
        }
    }

    Value object(int depth) {
        ++i_;
        Value out = Value::new_dict();
        skip_ws();
        if (eat('}')) return out;
        while (true) {
            skip_ws();
            if (i_ >= s_.size() || s_[i_] != '"') error("Expecting property name enclosed in double quotes");
            std::string key = string();
            skip_ws();
            if (!eat(':')) error("Expecting ':' delimiter");
            skip_ws();
            Value v = value(depth + 1);
            out.dict().set(Value::string(std::move(key)), std::move(v));
            skip_ws();
            if (eat(',')) continue;
            if (eat('}')) return out;
            error("Expecting ',' delimiter");
        }
    }
};

}  // namespace

Value json_parse(std::string_view text) { return JsonParser(text).parse(); }

}  // namespace kiln::jinja
