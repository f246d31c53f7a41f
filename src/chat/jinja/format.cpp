// Python string formatting: "%" (printf-style), str.format with its format-spec
// mini-language, and datetime.strftime.
#include <cmath>
#include <cstdio>
#include <cstring>

#include "chat/jinja/error.h"
#include "chat/jinja/interp.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/text.h"

namespace kiln::jinja {

namespace {

std::string c_format(const char* spec, double v) {
    char buf[512];
    int n = std::snprintf(buf, sizeof buf, spec, v);
    if (n < 0) return std::string();
    if (static_cast<size_t>(n) < sizeof buf) return std::string(buf, static_cast<size_t>(n));
    std::string big(static_cast<size_t>(n) + 1, '\0');
    std::snprintf(big.data(), big.size(), spec, v);
    big.resize(static_cast<size_t>(n));
    return big;
}

std::string float_text(double v, char type, int precision, bool alt, bool plus, bool space) {
    if (std::isnan(v) || std::isinf(v)) {
        std::string s = std::isnan(v) ? "nan" : "inf";
        if (type >= 'A' && type <= 'Z') s = text::upper(s);
        if (std::signbit(v) && !std::isnan(v)) s = "-" + s;
        else if (plus) s = "+" + s;
        else if (space) s = " " + s;
        return s;
    }
    std::string spec = "%";
    if (plus) spec += '+';
    else if (space) spec += ' ';
    if (alt) spec += '#';
    spec += "." + std::to_string(precision);
    spec += type;
    return c_format(spec.c_str(), v);
}

std::string int_text(int64_t v, char type, bool alt) {
    std::string digits;
    uint64_t mag = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
    int base = 10;
    const char* prefix = "";
    if (type == 'x' || type == 'X') base = 16, prefix = type == 'x' ? "0x" : "0X";
    else if (type == 'o') base = 8, prefix = "0o";
    else if (type == 'b') base = 2, prefix = "0b";
    const char* alphabet = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
    do {
        digits.push_back(alphabet[mag % static_cast<uint64_t>(base)]);
        mag /= static_cast<uint64_t>(base);
    } while (mag);
    std::string out;
    if (alt && base != 10) out += prefix;
    out.append(digits.rbegin(), digits.rend());
    return out;
}

std::string pad(const std::string& s, int64_t width, char align, uint32_t fill) {
    const int64_t len = text::length(s);
    if (width <= len) return s;
    const int64_t total = width - len;
    std::string f;
    text::encode(f, fill);
    auto rep = [&](int64_t n) {
        std::string o;
        for (int64_t k = 0; k < n; ++k) o += f;
        return o;
    };
    if (align == '<') return s + rep(total);
    if (align == '>') return rep(total) + s;
    if (align == '^') return rep(total / 2) + s + rep(total - total / 2);
    // '=': padding after the sign
    size_t sign_len = (!s.empty() && (s[0] == '-' || s[0] == '+' || s[0] == ' ')) ? 1 : 0;
    if (s.size() > sign_len + 1 && s[sign_len] == '0' && (s[sign_len + 1] == 'x' || s[sign_len + 1] == 'X' ||
                                                          s[sign_len + 1] == 'o' || s[sign_len + 1] == 'b'))
        sign_len += 2;
    return s.substr(0, sign_len) + rep(total) + s.substr(sign_len);
}

std::string group_digits(const std::string& s, char sep) {
    // s: optional sign, digits, optional fraction/exponent
    size_t start = (!s.empty() && (s[0] == '-' || s[0] == '+' || s[0] == ' ')) ? 1 : 0;
    size_t end = start;
    while (end < s.size() && s[end] >= '0' && s[end] <= '9') ++end;
    std::string intpart = s.substr(start, end - start);
    std::string grouped;
    for (size_t i = 0; i < intpart.size(); ++i) {
        if (i && (intpart.size() - i) % 3 == 0) grouped.push_back(sep);
        grouped.push_back(intpart[i]);
    }
    return s.substr(0, start) + grouped + s.substr(end);
}

}  // namespace

// Python's format(value, spec).
std::string format_spec(const Value& v, std::string_view spec) {
    if (spec.empty()) return to_str(v);
    size_t i = 0;
    uint32_t fill = ' ';
    char align = 0;
    {
        size_t j = 0;
        uint32_t first = text::decode(spec, j);
        if (j < spec.size() && (spec[j] == '<' || spec[j] == '>' || spec[j] == '^' || spec[j] == '=')) {
            fill = first;
            align = spec[j];
            i = j + 1;
        } else if (spec[0] == '<' || spec[0] == '>' || spec[0] == '^' || spec[0] == '=') {
            align = spec[0];
            i = 1;
        }
    }
    char sign = 0;
    if (i < spec.size() && (spec[i] == '+' || spec[i] == '-' || spec[i] == ' ')) sign = spec[i++];
    if (i < spec.size() && spec[i] == 'z') ++i;
    bool alt = false;
    if (i < spec.size() && spec[i] == '#') alt = true, ++i;
    bool zero = false;
    if (i < spec.size() && spec[i] == '0') zero = true, ++i;
    int64_t width = 0;
    while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') {
        width = width * 10 + (spec[i++] - '0');
        if (width > 1'000'000) fail("format width too large");
    }
    char grouping = 0;
    if (i < spec.size() && (spec[i] == ',' || spec[i] == '_')) grouping = spec[i++];
    int precision = -1;
    if (i < spec.size() && spec[i] == '.') {
        ++i;
        precision = 0;
        while (i < spec.size() && spec[i] >= '0' && spec[i] <= '9') {
            precision = precision * 10 + (spec[i++] - '0');
            if (precision > 1000) fail("format precision too large");
        }
    }
    char type = 0;
    if (i < spec.size()) type = spec[i++];
    if (i != spec.size()) fail("Invalid format specifier '" + std::string(spec) + "'");
    if (zero && !align) {
        fill = '0';
        align = '=';
    }

    std::string body;
    if (v.is_string() || v.is_none() || v.is_undefined() || v.is_list() || v.is_dict() || v.is_object()) {
        if (!v.is_string() && !v.is_undefined()) fail_type("unsupported format string passed to " + std::string(type_name(v)) + ".__format__");
        if (type && type != 's') fail("Unknown format code '" + std::string(1, type) + "' for object of type 'str'");
        if (sign) fail("Sign not allowed in string format specifier");
        body = to_str(v);
        if (precision >= 0) {
            std::vector<size_t> b = text::boundaries(body);
            if (static_cast<size_t>(precision) < b.size() - 1) body = body.substr(0, b[static_cast<size_t>(precision)]);
        }
        return pad(body, width, align ? align : '<', fill);
    }
    const bool is_int = v.is_integral() && !(type && std::strchr("eEfFgG%n", type));
    if (is_int && !(v.is_bool() && !type && !width && !sign)) {
        if (type == 'c') {
            body.clear();
            text::encode(body, static_cast<uint32_t>(v.as_int()));
        } else {
            if (type && !std::strchr("bdoxXn", type)) fail("Unknown format code '" + std::string(1, type) + "' for object of type 'int'");
            body = int_text(v.as_int(), type ? type : 'd', alt);
            if (grouping) body = group_digits(body, grouping);
            if (v.as_int() < 0) body = "-" + body;
            else if (sign == '+') body = "+" + body;
            else if (sign == ' ') body = " " + body;
        }
        return pad(body, width, align ? align : '>', fill);
    }
    if (!v.is_number()) fail_type("unsupported format");
    double d = v.as_float();
    if (type == '%') {
        body = float_text(d * 100, 'f', precision < 0 ? 6 : precision, alt, sign == '+', sign == ' ') + "%";
    } else if (type && std::strchr("eEfFgG", type)) {
        body = float_text(d, type, precision < 0 ? 6 : precision, alt, sign == '+', sign == ' ');
    } else if (!type || type == 'n') {
        if (precision < 0) {
            std::string r;
            append_float_repr(r, d);
            body = r;
            if (!std::signbit(d) && sign == '+') body = "+" + body;
            else if (!std::signbit(d) && sign == ' ') body = " " + body;
        } else {
            body = float_text(d, 'g', precision == 0 ? 1 : precision, alt, sign == '+', sign == ' ');
        }
    } else {
        fail("Unknown format code '" + std::string(1, type) + "' for object of type 'float'");
    }
    if (grouping) body = group_digits(body, grouping);
    return pad(body, width, align ? align : '>', fill);
}

std::string percent_format(Interp& in, std::string_view fmt, const Value& args, bool safe) {
    std::vector<Value> positional;
    const Value* mapping = nullptr;
    // CPython: a tuple gives the arguments; any other object is the one argument, and
    // when it supports item access (a dict, a list) leftover arguments are no error.
    bool mapping_like = false;
    if (args.is_list() && (args.list().seq == SeqKind::Tuple || args.list().seq == SeqKind::Group)) {
        positional = args.list().items;
    } else {
        if (args.is_dict()) mapping = &args;
        mapping_like = args.is_dict() || args.is_list();
        positional.push_back(args);
    }
    size_t next_arg = 0;
    bool used_mapping = false;
    auto take = [&]() -> Value {
        if (next_arg >= positional.size()) fail_type("not enough arguments for format string");
        return positional[next_arg++];
    };
    auto esc = [&](const std::string& s) { return safe ? text::html_escape(s) : s; };
    std::string out;
    for (size_t i = 0; i < fmt.size();) {
        char c = fmt[i];
        if (c != '%') {
            out.push_back(c);
            ++i;
            continue;
        }
        ++i;
        if (i >= fmt.size()) fail("incomplete format");
        Value arg;
        bool have_arg = false;
        if (fmt[i] == '(') {
            size_t close = fmt.find(')', i);
            if (close == std::string_view::npos) fail("incomplete format key");
            if (!mapping) fail_type(args.is_list() ? "list indices must be integers or slices, not str" : "format requires a mapping");
            std::string key(fmt.substr(i + 1, close - i - 1));
            const Value* v = mapping->dict().find_str(key);
            if (!v) fail("KeyError: '" + key + "'");
            arg = *v;
            have_arg = true;
            used_mapping = true;
            i = close + 1;
        }
        bool left = false, plus = false, space = false, alt = false, zero = false;
        for (; i < fmt.size(); ++i) {
            char f = fmt[i];
            if (f == '-') left = true;
            else if (f == '+') plus = true;
            else if (f == ' ') space = true;
            else if (f == '#') alt = true;
            else if (f == '0') zero = true;
            else break;
        }
        int64_t width = 0;
        if (i < fmt.size() && fmt[i] == '*') {
            Value w = take();
            if (!w.is_integral()) fail_type("* wants int");
            width = w.as_int();
            if (width < 0) left = true, width = -width;
            ++i;
        } else {
            while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
                width = width * 10 + (fmt[i++] - '0');
                if (width > 1'000'000) fail("format width too large");
            }
        }
        int precision = -1;
        if (i < fmt.size() && fmt[i] == '.') {
            ++i;
            precision = 0;
            if (i < fmt.size() && fmt[i] == '*') {
                Value p = take();
                if (!p.is_integral()) fail_type("* wants int");
                precision = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(p.as_int(), 1000)));
                ++i;
            } else {
                while (i < fmt.size() && fmt[i] >= '0' && fmt[i] <= '9') {
                    precision = precision * 10 + (fmt[i++] - '0');
                    if (precision > 1000) fail("format precision too large");
                }
            }
        }
        while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
        if (i >= fmt.size()) fail("incomplete format");
        const char type = fmt[i++];
        if (type == '%') {
            out.push_back('%');
            continue;
        }
        if (!have_arg) arg = take();
        std::string body;
        switch (type) {
            case 's':
            case 'r':
            case 'a': {
                body = type == 's' ? to_str(arg) : to_repr(arg);
                if (precision >= 0) {
                    std::vector<size_t> b = text::boundaries(body);
                    if (static_cast<size_t>(precision) < b.size() - 1) body = body.substr(0, b[static_cast<size_t>(precision)]);
                }
                if (!(safe && arg.is_string() && arg.safe())) body = esc(body);
                break;
            }
            case 'd':
            case 'i':
            case 'u':
            case 'o':
            case 'x':
            case 'X': {
                int64_t iv;
                if (arg.is_integral()) iv = arg.as_int();
                else if (arg.is_float() && (type == 'd' || type == 'i' || type == 'u')) {
                    double f = arg.as_float();
                    if (!std::isfinite(f) || std::fabs(f) > 9.2e18) fail("cannot convert float to integer");
                    iv = static_cast<int64_t>(f);
                } else {
                    fail_type(std::string("%") + type + " format: " +
                              (type == 'd' || type == 'i' || type == 'u' ? "a real number" : "an integer") +
                              " is required, not " + std::string(type_name(arg)));
                }
                std::string digits = int_text(iv, type == 'i' || type == 'u' ? 'd' : type, alt);
                if (precision >= 0 && static_cast<int>(digits.size()) < precision)
                    digits = std::string(static_cast<size_t>(precision) - digits.size(), '0') + digits;
                std::string sign = iv < 0 ? "-" : (plus ? "+" : (space ? " " : ""));
                if (zero && !left && width > static_cast<int64_t>(sign.size() + digits.size()))
                    digits = std::string(static_cast<size_t>(width) - sign.size() - digits.size(), '0') + digits;
                body = sign + digits;
                break;
            }
            case 'e':
            case 'E':
            case 'f':
            case 'F':
            case 'g':
            case 'G': {
                if (!arg.is_number()) fail_type(std::string("must be real number, not ") + std::string(type_name(arg)));
                body = float_text(arg.as_float(), type, precision < 0 ? 6 : precision, alt, plus, space);
                if (zero && !left && width > static_cast<int64_t>(body.size()) && std::isfinite(arg.as_float())) {
                    size_t sign_len = (body[0] == '-' || body[0] == '+' || body[0] == ' ') ? 1 : 0;
                    body.insert(sign_len, static_cast<size_t>(width) - body.size(), '0');
                }
                break;
            }
            case 'c': {
                if (arg.is_integral()) text::encode(body, static_cast<uint32_t>(arg.as_int()));
                else if (arg.is_string() && text::length(arg.str()) == 1) body = arg.str();
                else fail_type("%c requires int or char");
                body = esc(body);
                break;
            }
            default:
                fail("unsupported format character '" + std::string(1, type) + "'");
        }
        const int64_t len = text::length(body);
        if (width > len) {
            std::string padding(static_cast<size_t>(width - len), ' ');
            body = left ? body + padding : padding + body;
        }
        out += body;
        in.check_size(out.size());
    }
    (void)used_mapping;
    if (!mapping_like && next_arg < positional.size()) fail_type("not all arguments converted during string formatting");
    return out;
}

std::string str_format(Interp& in, std::string_view fmt, const Args& args, bool safe) {
    std::string out;
    size_t auto_index = 0;
    bool used_auto = false, used_manual = false;
    auto lookup_field = [&](std::string_view field) -> Value {
        // arg_name ("." attribute | "[" key "]")*
        size_t end = 0;
        while (end < field.size() && field[end] != '.' && field[end] != '[') ++end;
        std::string_view name = field.substr(0, end);
        Value v;
        if (name.empty()) {
            if (used_manual) fail("cannot switch from manual field specification to automatic field numbering");
            used_auto = true;
            size_t k = auto_index++;
            if (k >= args.n_pos) fail("IndexError: Replacement index " + std::to_string(k) + " out of range for positional args tuple");
            v = args.pos[k];
        } else if (name[0] >= '0' && name[0] <= '9') {
            if (used_auto) fail("cannot switch from automatic field numbering to manual field specification");
            used_manual = true;
            size_t k = 0;
            for (char c : name) {
                if (c < '0' || c > '9') fail("invalid field name");
                k = k * 10 + static_cast<size_t>(c - '0');
                if (k > 1'000'000) fail("invalid field index");
            }
            if (k >= args.n_pos) fail("IndexError: Replacement index " + std::to_string(k) + " out of range for positional args tuple");
            v = args.pos[k];
        } else {
            bool found = false;
            for (size_t k = 0; k < args.n_kw; ++k) {
                if (args.kw[k].name == name) {
                    v = args.kw[k].value;
                    found = true;
                    break;
                }
            }
            if (!found) fail("KeyError: '" + std::string(name) + "'");
        }
        size_t i = end;
        while (i < field.size()) {
            if (field[i] == '.') {
                size_t j = i + 1;
                while (j < field.size() && field[j] != '.' && field[j] != '[') ++j;
                v = in.getattr(v, field.substr(i + 1, j - i - 1));
                i = j;
            } else {
                size_t close = field.find(']', i);
                if (close == std::string_view::npos) fail("Missing ']' in format string");
                std::string_view key = field.substr(i + 1, close - i - 1);
                bool numeric = !key.empty();
                for (char c : key)
                    if (c < '0' || c > '9') numeric = false;
                if (numeric) {
                    if (key.size() > 18) fail("Too many decimal digits in format string");
                    int64_t index = std::stoll(std::string(key));
                    v = in.getitem(v, Value::integer(index));
                } else {
                    v = in.getitem(v, Value::string(key));
                }
                i = close + 1;
            }
        }
        return v;
    };
    for (size_t i = 0; i < fmt.size();) {
        char c = fmt[i];
        if (c == '{') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
                out.push_back('{');
                i += 2;
                continue;
            }
            // find the matching '}' (one level of nesting in the spec)
            size_t j = i + 1;
            int depth = 1;
            while (j < fmt.size() && depth > 0) {
                if (fmt[j] == '{') ++depth;
                else if (fmt[j] == '}') --depth;
                if (depth > 0) ++j;
            }
            if (j >= fmt.size()) fail("Single '{' encountered in format string");
            std::string_view inner = fmt.substr(i + 1, j - i - 1);
            size_t colon = std::string_view::npos, bang = std::string_view::npos;
            int br = 0;
            for (size_t k = 0; k < inner.size(); ++k) {
                if (inner[k] == '[') ++br;
                else if (inner[k] == ']') --br;
                else if (br == 0 && inner[k] == '!' && bang == std::string_view::npos && colon == std::string_view::npos) bang = k;
                else if (br == 0 && inner[k] == ':' && colon == std::string_view::npos) {
                    colon = k;
                    break;
                }
            }
            std::string_view field = inner.substr(0, std::min(bang, colon));
            char conversion = 0;
            if (bang != std::string_view::npos) {
                size_t conv_end = colon == std::string_view::npos ? inner.size() : colon;
                if (conv_end != bang + 2) fail("expected ':' after conversion specifier");
                conversion = inner[bang + 1];
            }
            std::string spec = colon == std::string_view::npos ? std::string() : std::string(inner.substr(colon + 1));
            if (spec.find('{') != std::string::npos) {
                Args none{args.pos, args.n_pos, args.kw, args.n_kw};
                spec = str_format(in, spec, none, false);
            }
            Value v = lookup_field(field);
            if (conversion == 'r' || conversion == 'a') v = Value::string(to_repr(v));
            else if (conversion == 's') v = Value::string(to_str(v));
            else if (conversion) fail("Unknown conversion specifier " + std::string(1, conversion));
            std::string piece = format_spec(v, spec);
            if (safe && !(v.is_string() && v.safe())) piece = text::html_escape(piece);
            out += piece;
            in.check_size(out.size());
            i = j + 1;
            continue;
        }
        if (c == '}') {
            if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
                out.push_back('}');
                i += 2;
                continue;
            }
            fail("Single '}' encountered in format string");
        }
        out.push_back(c);
        ++i;
    }
    return out;
}

std::string format_time(std::string_view fmt, const std::tm& t, long microseconds) {
    // %f is Python's own directive; the rest is the C library's strftime, as CPython does.
    std::string f;
    for (size_t i = 0; i < fmt.size(); ++i) {
        if (fmt[i] == '%' && i + 1 < fmt.size()) {
            if (fmt[i + 1] == 'f') {
                char buf[16];
                std::snprintf(buf, sizeof buf, "%06ld", microseconds);
                f += buf;
                ++i;
                continue;
            }
            f.push_back('%');
            f.push_back(fmt[i + 1]);
            ++i;
            continue;
        }
        f.push_back(fmt[i]);
    }
    if (f.empty()) return f;
    for (size_t cap = 256; cap <= (1u << 20); cap *= 4) {
        std::string buf(cap, '\0');
        size_t n = std::strftime(buf.data(), buf.size(), f.c_str(), &t);
        if (n > 0) {
            buf.resize(n);
            return buf;
        }
    }
    return std::string();
}

}  // namespace kiln::jinja
