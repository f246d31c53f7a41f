// The built-in filters, following jinja2 3.1's filters.py in Hugging Face's
// environment (autoescape off, tojson replaced by json.dumps). Filters that
// jinja2 implements as generators (map, select, reject, unique, batch, ...)
// return lazy iterators here too, so truthiness, len() and single-pass
// iteration behave as in Python.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "chat/jinja/error.h"
#include "chat/jinja/interp.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/text.h"

namespace kiln::jinja {

namespace {

// soft_str: strings (Markup included) pass through, other values become str().
Value soft_str(const Value& v) {
    if (v.is_string()) return v;
    return Value::string(to_str(v));
}

Value ignore_case(const Value& v) {
    if (v.is_string()) return Value::string(text::lower(v.str()));
    return v;
}

// make_attrgetter: "a.b.0" -> getitem chain, digits as integers.
std::vector<Value> attr_parts(const Value& attribute) {
    std::vector<Value> parts;
    if (attribute.is_none() || attribute.is_undefined()) return parts;
    if (attribute.is_string()) {
        const std::string& s = attribute.str();
        size_t start = 0;
        while (true) {
            size_t dot = s.find('.', start);
            std::string part = s.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
            bool digits = !part.empty();
            for (char c : part)
                if (c < '0' || c > '9') digits = false;
            if (digits && part.size() < 18) parts.push_back(Value::integer(std::stoll(part)));
            else parts.push_back(Value::string(part));
            if (dot == std::string::npos) break;
            start = dot + 1;
        }
        return parts;
    }
    parts.push_back(attribute);
    return parts;
}

Value get_attr_path(Interp& in, Value item, const std::vector<Value>& parts, const Value* fallback) {
    for (const Value& p : parts) {
        item = in.getitem(item, p);
        if (fallback && item.is_undefined()) item = *fallback;
    }
    return item;
}

// Arguments captured for later (lazy) use: owns the keyword names.
struct OwnedArgs {
    std::vector<Value> pos;
    std::vector<std::string> names;
    std::vector<Value> values;

    OwnedArgs() = default;
    OwnedArgs(const Args& a, size_t skip_pos) {
        for (size_t k = skip_pos; k < a.n_pos; ++k) pos.push_back(a.pos[k]);
        for (size_t k = 0; k < a.n_kw; ++k) {
            names.emplace_back(a.kw[k].name);
            values.push_back(a.kw[k].value);
        }
    }
    Args view(std::vector<KwArg>& tmp) {
        tmp.clear();
        for (size_t k = 0; k < names.size(); ++k) tmp.push_back(KwArg{names[k], values[k], Value()});
        return Args{pos.data(), pos.size(), tmp.data(), tmp.size()};
    }
};

// --- string filters -------------------------------------------------------------------

Value f_upper(Interp&, const Value& v, Args& a) {
    Params p(a, "do_upper", {});
    Value s = soft_str(v);
    return Value::string(text::upper(s.str()), s.safe());
}

Value f_lower(Interp&, const Value& v, Args& a) {
    Params p(a, "do_lower", {});
    Value s = soft_str(v);
    return Value::string(text::lower(s.str()), s.safe());
}

Value f_capitalize(Interp&, const Value& v, Args& a) {
    Params p(a, "do_capitalize", {});
    Value s = soft_str(v);
    return Value::string(text::capitalize(s.str()), s.safe());
}

// jinja2's title: words start after whitespace, '-', '(', '{', '[' or '<'.
Value f_title(Interp&, const Value& v, Args& a) {
    Params p(a, "do_title", {});
    Value s = soft_str(v);
    const std::string& in = s.str();
    std::string out;
    auto is_sep = [](uint32_t c) { return text::is_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<'; };
    bool at_start = true;
    bool prev_sep = false;
    for (size_t i = 0; i < in.size();) {
        uint32_t c = text::decode(in, i);
        bool sep = is_sep(c);
        // an item begins at the start, and wherever a separator run ends or begins
        bool item_start = at_start || sep != prev_sep;
        if (item_start) {
            if (c == 0xDF) out += "SS";
            else text::encode(out, text::to_upper_cp(c));
        } else {
            text::encode(out, text::to_lower_cp(c));
        }
        at_start = false;
        prev_sep = sep;
    }
    return Value::string(std::move(out));
}

Value f_trim(Interp&, const Value& v, Args& a) {
    Params p(a, "do_trim", {"chars"});
    Value s = soft_str(v);
    const Value* chars = p.get(0);
    std::string set;
    const std::string* cs = nullptr;
    if (chars && !chars->is_none()) {
        if (!chars->is_string()) fail_type("strip arg must be None or str");
        set = chars->str();
        cs = &set;
    }
    std::string_view stripped = text::strip(s.str(), cs, true, true);
    if (stripped.size() == s.str().size()) return s;  // nothing stripped: the same string
    return Value::string(std::string(stripped), s.safe());
}

std::string py_replace(const std::string& s, const std::string& old, const std::string& repl, int64_t count,
                       Interp& in) {
    if (count < 0) count = INT64_MAX;
    std::string out;
    if (old.empty()) {
        // inserts the replacement before every code point and at the end
        int64_t done = 0;
        size_t i = 0;
        while (true) {
            if (done < count) {
                out += repl;
                ++done;
            }
            if (i >= s.size()) break;
            size_t start = i;
            text::decode(s, i);
            out.append(s, start, i - start);
            in.check_size(out.size());
        }
        return out;
    }
    size_t pos = 0;
    int64_t done = 0;
    while (done < count) {
        size_t hit = s.find(old, pos);
        if (hit == std::string::npos) break;
        out.append(s, pos, hit - pos);
        out += repl;
        pos = hit + old.size();
        ++done;
        in.check_size(out.size());
    }
    out.append(s, pos, std::string::npos);
    in.check_size(out.size());
    return out;
}

Value f_replace(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_replace", {"old", "new", "count"}, 2);
    int64_t count = -1;
    if (p.has(2) && !p.get(2)->is_none()) count = arg_int(*p.get(2), "count");
    const Value& old = *p.get(0);
    if (v.is_string() && !v.safe() && old.is_string() && !old.str().empty() && count != 0 &&
        v.str().find(old.str()) == std::string::npos)
        return v;  // nothing to replace: the same string
    return Value::string(py_replace(to_str(v), to_str(old), to_str(*p.get(1)), count, in));
}

Value f_center(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_center", {"width"});
    int64_t width = p.has(0) ? arg_int(*p.get(0), "width") : 80;
    std::string s = to_str(v);
    int64_t len = text::length(s);
    if (width <= len) return Value::string(std::move(s));
    in.check_size(static_cast<uint64_t>(width));
    int64_t marg = width - len;
    int64_t left = marg / 2 + (marg & width & 1);
    return Value::string(std::string(static_cast<size_t>(left), ' ') + s + std::string(static_cast<size_t>(marg - left), ' '));
}

// Python's str.splitlines() boundaries.
std::vector<std::string> split_lines(const std::string& s, bool keepends) {
    std::vector<std::string> out;
    size_t line_start = 0;
    for (size_t i = 0; i < s.size();) {
        size_t start = i;
        uint32_t c = text::decode(s, i);
        bool boundary = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                        c == 0x85 || c == 0x2028 || c == 0x2029;
        if (!boundary) continue;
        size_t end = i;
        if (c == '\r' && i < s.size() && s[i] == '\n') end = ++i;
        out.push_back(s.substr(line_start, (keepends ? end : start) - line_start));
        line_start = end;
    }
    if (line_start < s.size()) out.push_back(s.substr(line_start));
    return out;
}

Value f_indent(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_indent", {"width", "first", "blank"});
    std::string indention;
    const Value w = p.get_or(0, Value::integer(4));
    if (w.is_string()) indention = w.str();
    else {
        int64_t n = arg_int(w, "width");
        if (n > 0) {
            in.check_size(static_cast<uint64_t>(n));
            indention.assign(static_cast<size_t>(n), ' ');
        }
    }
    const bool first = p.has(1) && truthy(*p.get(1));
    const bool blank = p.has(2) && truthy(*p.get(2));
    if (v.is_undefined()) fail_undefined(v);
    if (!v.is_string()) fail_type("unsupported operand type(s) for +=: '" + std::string(type_name(v)) + "' and 'str'");
    std::vector<std::string> lines = split_lines(v.str() + "\n", false);
    std::string rv;
    if (blank) {
        for (size_t k = 0; k < lines.size(); ++k) {
            if (k) rv += "\n" + indention;
            rv += lines[k];
        }
    } else {
        rv = lines.empty() ? std::string() : lines[0];
        if (lines.size() > 1) {
            rv += "\n";
            for (size_t k = 1; k < lines.size(); ++k) {
                if (k > 1) rv += "\n";
                if (!lines[k].empty()) rv += indention;
                rv += lines[k];
                in.check_size(rv.size());
            }
        }
    }
    if (first) rv = indention + rv;
    in.check_size(rv.size());
    return Value::string(std::move(rv), v.safe());
}

Value f_truncate(Interp&, const Value& v, Args& a) {
    Params p(a, "do_truncate", {"length", "killwords", "end", "leeway"});
    int64_t length = p.has(0) ? arg_int(*p.get(0), "length") : 255;
    bool killwords = p.has(1) && truthy(*p.get(1));
    std::string end = p.has(2) ? to_str(*p.get(2)) : "...";
    int64_t leeway = (p.has(3) && !p.get(3)->is_none()) ? arg_int(*p.get(3), "leeway") : 5;
    const int64_t end_len = text::length(end);
    if (length < end_len) fail("expected length >= " + std::to_string(end_len) + ", got " + std::to_string(length));
    if (leeway < 0) fail("expected leeway >= 0, got " + std::to_string(leeway));
    if (!v.is_string()) {
        // len() of a list, dict or undefined; short enough: returned as is, else jinja2's
        // slicing and rsplit fail on it
        int64_t n = -1;
        if (v.is_undefined()) n = 0;
        else if (v.is_list()) n = static_cast<int64_t>(v.list().items.size());
        else if (v.is_dict()) n = static_cast<int64_t>(v.dict().size());
        if (n < 0) fail_type("object of type '" + std::string(type_name(v)) + "' has no len()");
        if (n <= length + leeway) return v;
        fail_type("object of type '" + std::string(type_name(v)) + "' cannot be truncated");
    }
    const std::string& s = v.str();
    std::vector<size_t> b = text::boundaries(s);
    const int64_t n = static_cast<int64_t>(b.size()) - 1;
    if (n <= length + leeway) return v;
    std::string head = s.substr(0, b[static_cast<size_t>(std::min(n, length - end_len))]);
    if (killwords) return Value::string(head + end);
    size_t sp = head.rfind(' ');
    if (sp != std::string::npos) head = head.substr(0, sp);
    return Value::string(head + end);
}

Value f_wordcount(Interp&, const Value& v, Args& a) {
    Params p(a, "do_wordcount", {});
    std::string s = to_str(v);
    int64_t count = 0;
    bool in_word = false;
    for (size_t i = 0; i < s.size();) {
        uint32_t c = text::decode(s, i);
        bool w = c == '_' || text::is_alpha(c) || text::is_numeric(c);
        if (w && !in_word) ++count;
        in_word = w;
    }
    return Value::integer(count);
}

Value f_format(Interp& in, const Value& v, Args& a) {
    if (a.n_pos && a.n_kw) fail("can't handle positional and keyword arguments at the same time");
    Value s = soft_str(v);
    Value args;
    if (a.n_kw) {
        args = Value::new_dict();
        for (size_t k = 0; k < a.n_kw; ++k) args.dict().set_str(a.kw[k].name, a.kw[k].value);
    } else {
        args = Value::new_tuple();
        for (size_t k = 0; k < a.n_pos; ++k) args.list().items.push_back(a.pos[k]);
    }
    return Value::string(percent_format(in, s.str(), args, s.safe()), s.safe());
}

Value f_striptags(Interp&, const Value& v, Args& a) {
    Params p(a, "do_striptags", {});
    std::string s = to_str(v);
    // remove comments, then tags
    std::string no_comments;
    for (size_t i = 0; i < s.size();) {
        if (s.compare(i, 4, "<!--") == 0) {
            size_t e = s.find("-->", i + 4);
            if (e == std::string::npos) {
                no_comments.append(s, i, std::string::npos);
                break;
            }
            i = e + 3;
            continue;
        }
        no_comments.push_back(s[i++]);
    }
    std::string no_tags;
    for (size_t i = 0; i < no_comments.size();) {
        if (no_comments[i] == '<') {
            size_t e = no_comments.find('>', i + 1);
            if (e != std::string::npos) {
                i = e + 1;
                continue;
            }
        }
        no_tags.push_back(no_comments[i++]);
    }
    // unescape the common entities, then collapse whitespace
    std::string un;
    static const std::pair<const char*, const char*> entities[] = {
        {"&amp;", "&"}, {"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#34;", "\""}, {"&#39;", "'"}, {"&apos;", "'"}, {"&nbsp;", "\xC2\xA0"},
    };
    for (size_t i = 0; i < no_tags.size();) {
        bool done = false;
        if (no_tags[i] == '&') {
            for (const auto& [from, to] : entities) {
                size_t len = std::strlen(from);
                if (no_tags.compare(i, len, from) == 0) {
                    un += to;
                    i += len;
                    done = true;
                    break;
                }
            }
        }
        if (!done) un.push_back(no_tags[i++]);
    }
    std::string out;
    bool pending_space = false;
    for (size_t i = 0; i < un.size();) {
        size_t start = i;
        uint32_t c = text::decode(un, i);
        if (text::is_space(c)) {
            pending_space = !out.empty();
            continue;
        }
        if (pending_space) out.push_back(' ');
        pending_space = false;
        out.append(un, start, i - start);
    }
    return Value::string(std::move(out));
}

std::string url_quote(const std::string& s, bool for_qs) {
    std::string out;
    static const char* hex = "0123456789ABCDEF";
    for (unsigned char c : s) {
        bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
                    c == '-' || c == '~' || (!for_qs && c == '/');
        if (safe) out.push_back(static_cast<char>(c));
        else if (for_qs && c == ' ') out.push_back('+');
        else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 15]);
        }
    }
    return out;
}

Value f_urlencode(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_urlencode", {});
    if (v.is_string() || !(v.is_list() || v.is_dict() || v.is_object())) return Value::string(url_quote(to_str(v), false));
    std::vector<Value> pairs;
    if (v.is_dict()) {
        for (const auto& [k, x] : v.dict().entries) {
            Value t = Value::new_tuple();
            t.list().items = {k, x};
            pairs.push_back(t);
        }
    } else {
        pairs = in.to_list(v);
    }
    std::string out;
    for (size_t n = 0; n < pairs.size(); ++n) {
        std::vector<Value> kv = in.to_list(pairs[n]);
        if (kv.size() != 2) fail("too many values to unpack (expected 2)");
        if (n) out += "&";
        out += url_quote(to_str(kv[0]), true) + "=" + url_quote(to_str(kv[1]), true);
    }
    return Value::string(std::move(out));
}

Value f_xmlattr(Interp&, const Value& v, Args& a) {
    Params p(a, "do_xmlattr", {"autospace"});
    if (!v.is_dict()) fail_type("'" + std::string(type_name(v)) + "' object has no attribute 'items'");
    std::string rv;
    for (const auto& [k, x] : v.dict().entries) {
        if (x.is_none() || x.is_undefined()) continue;
        std::string key = to_str(k);
        for (char c : key)
            if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '/' || c == '>' || c == '=')
                fail("Invalid character in attribute name: " + to_repr(k));
        if (!rv.empty()) rv += " ";
        rv += markup_escape(k).str() + "=\"" + markup_escape(x).str() + "\"";
    }
    bool autospace = !p.has(0) || truthy(*p.get(0));
    if (autospace && !rv.empty()) rv = " " + rv;
    return Value::string(std::move(rv));
}

Value f_filesizeformat(Interp&, const Value& v, Args& a) {
    Params p(a, "do_filesizeformat", {"binary"});
    bool binary = p.has(0) && truthy(*p.get(0));
    double bytes;
    if (v.is_number()) bytes = v.as_float();
    else if (v.is_string()) bytes = std::strtod(v.str().c_str(), nullptr);
    else fail_type("float() argument must be a string or a real number");
    const double base = binary ? 1024 : 1000;
    static const char* dec[] = {"kB", "MB", "GB", "TB", "PB", "EB", "ZB", "YB"};
    static const char* bin[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB"};
    if (bytes == 1) return Value::string("1 Byte");
    if (bytes < base) return Value::string(std::to_string(static_cast<int64_t>(bytes)) + " Bytes");
    double unit = base;
    const char* prefix = binary ? bin[0] : dec[0];
    for (int i = 0; i < 8; ++i) {
        unit = std::pow(base, i + 2);
        prefix = binary ? bin[i] : dec[i];
        if (bytes < unit) break;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f %s", base * bytes / unit, prefix);
    return Value::string(buf);
}

// --- markup --------------------------------------------------------------------------------

Value f_safe(Interp&, const Value& v, Args& a) {
    Params p(a, "do_mark_safe", {});
    if (v.is_string()) {
        Value r = v;
        r.set_safe(true);
        return r;
    }
    return Value::string(to_str(v), true);
}

Value f_escape(Interp&, const Value& v, Args& a) {
    Params p(a, "escape", {});
    return markup_escape(v);
}

Value f_forceescape(Interp&, const Value& v, Args& a) {
    Params p(a, "do_forceescape", {});
    return Value::string(text::html_escape(to_str(v)), true);
}

Value f_string(Interp&, const Value& v, Args& a) {
    Params p(a, "soft_str", {});
    return soft_str(v);
}

// --- numbers ---------------------------------------------------------------------------------

// Python's float(str): optional whitespace, sign, digits with single underscores,
// inf / nan / infinity in any case.
bool parse_py_float(std::string_view s, double& out) {
    std::string_view t = text::strip(s, nullptr, true, true);
    if (t.empty()) return false;
    std::string clean;
    size_t i = 0;
    if (t[0] == '+' || t[0] == '-') clean.push_back(t[i++]);
    std::string rest(t.substr(i));
    std::string low = text::lower(rest);
    if (low == "inf" || low == "infinity") {
        out = clean == "-" ? -INFINITY : INFINITY;
        return true;
    }
    if (low == "nan") {
        out = std::nan("");
        return true;
    }
    bool digit_before = false, seen_digit = false, seen_dot = false, seen_e = false;
    for (size_t k = 0; k < rest.size(); ++k) {
        char c = rest[k];
        if (c >= '0' && c <= '9') {
            clean.push_back(c);
            digit_before = seen_digit = true;
        } else if (c == '_') {
            if (!digit_before || k + 1 >= rest.size() || !(rest[k + 1] >= '0' && rest[k + 1] <= '9')) return false;
        } else if (c == '.' && !seen_dot && !seen_e) {
            clean.push_back(c);
            seen_dot = true;
            digit_before = false;
        } else if ((c == 'e' || c == 'E') && seen_digit && !seen_e) {
            clean.push_back('e');
            seen_e = true;
            digit_before = false;
            if (k + 1 < rest.size() && (rest[k + 1] == '+' || rest[k + 1] == '-')) clean.push_back(rest[++k]);
            if (k + 1 >= rest.size()) return false;
        } else {
            return false;
        }
    }
    if (!seen_digit) return false;
    char* end = nullptr;
    out = std::strtod(clean.c_str(), &end);
    return end && *end == '\0';
}

// Python's int(str, base).
bool parse_py_int(std::string_view s, int64_t base, int64_t& out) {
    std::string_view t = text::strip(s, nullptr, true, true);
    if (t.empty()) return false;
    bool neg = false;
    size_t i = 0;
    if (t[0] == '+' || t[0] == '-') neg = t[i++] == '-';
    auto lower = [](char c) { return static_cast<char>(c | 0x20); };
    if (i + 1 < t.size() && t[i] == '0') {
        char p = lower(t[i + 1]);
        int64_t pb = p == 'x' ? 16 : (p == 'o' ? 8 : (p == 'b' ? 2 : 0));
        if (pb && (base == 0 || base == pb)) {
            base = pb;
            i += 2;
            if (i < t.size() && t[i] == '_') ++i;
        }
    }
    if (base == 0) base = 10;
    if (base < 2 || base > 36) return false;
    uint64_t v = 0;
    bool any = false, prev_digit = false;
    for (; i < t.size(); ++i) {
        char c = t[i];
        if (c == '_') {
            if (!prev_digit || i + 1 >= t.size()) return false;
            prev_digit = false;
            continue;
        }
        int d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (lower(c) >= 'a' && lower(c) <= 'z') d = lower(c) - 'a' + 10;
        else return false;
        if (d >= base) return false;
        if (v > (UINT64_MAX - static_cast<uint64_t>(d)) / static_cast<uint64_t>(base)) fail("integer overflow (kiln integers are 64-bit)");
        v = v * static_cast<uint64_t>(base) + static_cast<uint64_t>(d);
        any = prev_digit = true;
    }
    if (!any) return false;
    if (v > static_cast<uint64_t>(INT64_MAX) + (neg ? 1 : 0)) fail("integer overflow (kiln integers are 64-bit)");
    out = neg ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
    return true;
}

bool float_to_int(double f, int64_t& out) {
    if (!std::isfinite(f) || std::fabs(f) >= 9.2233720368547758e18) return false;
    out = static_cast<int64_t>(f);
    return true;
}

Value f_int(Interp&, const Value& v, Args& a) {
    Params p(a, "do_int", {"default", "base"});
    const Value fallback = p.get_or(0, Value::integer(0));
    int64_t base = p.has(1) ? arg_int(*p.get(1), "base") : 10;
    if (v.is_undefined()) fail_undefined(v);
    int64_t out;
    if (v.is_string()) {
        if (parse_py_int(v.str(), base, out)) return Value::integer(out);
        double f;
        if (parse_py_float(v.str(), f) && float_to_int(f, out)) return Value::integer(out);
        return fallback;
    }
    if (v.is_integral()) return Value::integer(v.as_int());
    if (v.is_float()) {
        if (float_to_int(v.as_float(), out)) return Value::integer(out);
        return fallback;
    }
    return fallback;
}

Value f_float(Interp&, const Value& v, Args& a) {
    Params p(a, "do_float", {"default"});
    const Value fallback = p.get_or(0, Value::floating(0.0));
    if (v.is_undefined()) fail_undefined(v);
    if (v.is_number()) return Value::floating(v.as_float());
    if (v.is_string()) {
        double f;
        if (parse_py_float(v.str(), f)) return Value::floating(f);
    }
    return fallback;
}

Value f_abs(Interp&, const Value& v, Args& a) {
    Params p(a, "abs", {});
    if (v.is_integral()) {
        if (v.as_int() == INT64_MIN) fail("integer overflow (kiln integers are 64-bit)");
        return Value::integer(std::llabs(v.as_int()));
    }
    if (v.is_float()) return Value::floating(std::fabs(v.as_float()));
    if (v.is_undefined()) fail_undefined(v);
    fail_type("bad operand type for abs(): '" + std::string(type_name(v)) + "'");
}

// Python's round(x, ndigits): correctly rounded through the decimal expansion.
double py_round(double x, int64_t nd) {
    if (!std::isfinite(x) || x == 0.0) return x;
    if (nd > 300) return x;
    if (nd >= 0) {
        char buf[512];
        std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(nd), x);
        return std::copysign(std::strtod(buf, nullptr), x);
    }
    if (nd < -308) return std::copysign(0.0, x);
    double p = std::pow(10.0, static_cast<double>(-nd));
    double y = x / p;
    double r = std::nearbyint(y);  // half to even
    return std::copysign(r * p, x);
}

Value f_round(Interp&, const Value& v, Args& a) {
    Params p(a, "do_round", {"precision", "method"});
    int64_t precision = p.has(0) ? arg_int(*p.get(0), "precision") : 0;
    std::string method = p.has(1) ? to_str(*p.get(1)) : "common";
    if (method != "common" && method != "ceil" && method != "floor") fail("method must be common, ceil or floor");
    if (v.is_undefined()) fail_undefined(v);
    if (!v.is_number()) fail_type("type " + std::string(type_name(v)) + " doesn't define __round__ method");
    if (method == "common") {
        if (v.is_integral()) {
            if (precision >= 0) return Value::integer(v.as_int());
            // round an integer to tens, hundreds, ... half to even
            int64_t m = 1;
            for (int64_t k = 0; k < -precision; ++k) {
                if (m > INT64_MAX / 10) return Value::integer(0);
                m *= 10;
            }
            int64_t x = v.as_int();
            int64_t q = x / m, r = x % m;
            if (r < 0) r += m, --q;
            if (2 * r > m || (2 * r == m && (q & 1))) ++q;
            return Value::integer(q * m);
        }
        return Value::floating(py_round(v.as_float(), precision));
    }
    double scale = std::pow(10.0, static_cast<double>(precision));
    double x = v.as_float() * scale;
    double r = method == "ceil" ? std::ceil(x) : std::floor(x);
    return Value::floating(r / scale);
}

// --- sequences ---------------------------------------------------------------------------------

Value f_length(Interp&, const Value& v, Args& a) {
    Params p(a, "len", {});
    switch (v.kind()) {
        case Kind::Undefined: return Value::integer(0);
        case Kind::String: return Value::integer(v.str_obj()->length());
        case Kind::List: return Value::integer(static_cast<int64_t>(v.list().items.size()));
        case Kind::Dict: return Value::integer(static_cast<int64_t>(v.dict().size()));
        case Kind::Object:
            if (v.object().otype == ObjType::Namespace) break;
            break;
        default: break;
    }
    fail_type("object of type '" + std::string(type_name(v)) + "' has no len()");
}

Value f_list(Interp& in, const Value& v, Args& a) {
    Params p(a, "list", {});
    Value out = Value::new_list();
    out.list().items = in.to_list(v);
    return out;
}

Value f_first(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_first", {});
    if (v.is_object() && v.object().otype == ObjType::Iterator) {
        auto& it = static_cast<IteratorObj&>(v.object());
        Value x;
        if (it.next && it.next(in, x)) return x;
        it.next = nullptr;
        return Value::undefined("No first item, sequence was empty.");
    }
    if (v.is_list()) {
        if (v.list().items.empty()) return Value::undefined("No first item, sequence was empty.");
        return v.list().items[0];
    }
    if (v.is_dict()) {
        if (v.dict().size() == 0) return Value::undefined("No first item, sequence was empty.");
        return v.dict().entries[0].first;
    }
    std::vector<Value> items = in.to_list(v);
    if (items.empty()) return Value::undefined("No first item, sequence was empty.");
    return items[0];
}

Value f_last(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_last", {});
    if (v.is_object()) fail_type("'" + std::string(type_name(v)) + "' object is not reversible");
    std::vector<Value> items = in.to_list(v);
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
}

Value f_join(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_join", {"d", "attribute"});
    std::string sep = p.has(0) ? to_str(*p.get(0)) : "";
    std::vector<Value> items = in.to_list(v);
    std::vector<Value> parts;
    if (p.has(1) && !p.get(1)->is_none()) {
        std::vector<Value> path = attr_parts(*p.get(1));
        for (Value& x : items) x = get_attr_path(in, x, path, nullptr);
    }
    std::string out;
    for (size_t n = 0; n < items.size(); ++n) {
        if (n) out += sep;
        append_str(out, items[n]);
        in.check_size(out.size());
    }
    return Value::string(std::move(out));
}

Value f_default(Interp&, const Value& v, Args& a) {
    Params p(a, "do_default", {"default_value", "boolean"});
    const bool boolean = p.has(1) && truthy(*p.get(1));
    if (v.is_undefined() || (boolean && !truthy(v))) return p.has(0) ? *p.get(0) : Value::string(std::string());
    return v;
}

Value f_items(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_items", {});
    if (v.is_undefined()) return in.make_iterator("generator", [](Interp&, Value&) { return false; });
    if (!v.is_dict()) fail_type("Can only get item pairs from a mapping.");
    auto pos = std::make_shared<size_t>(0);
    Value src = v;
    return in.make_iterator("generator", [src, pos](Interp&, Value& out) {
        const auto& e = src.dict().entries;
        if (*pos >= e.size()) return false;
        Value t = Value::new_tuple();
        t.list().items = {e[*pos].first, e[*pos].second};
        ++*pos;
        out = t;
        return true;
    });
}

Value f_dictsort(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_dictsort", {"case_sensitive", "by", "reverse"});
    const bool case_sensitive = p.has(0) && truthy(*p.get(0));
    std::string by = p.has(1) ? to_str(*p.get(1)) : "key";
    const bool reverse = p.has(2) && truthy(*p.get(2));
    size_t pos;
    if (by == "key") pos = 0;
    else if (by == "value") pos = 1;
    else fail("You can only sort by either \"key\" or \"value\"");
    if (!v.is_dict()) fail_type("'" + std::string(type_name(v)) + "' object has no attribute 'items'");
    struct Item {
        Value pair, key;
    };
    std::vector<Item> items;
    for (const auto& [k, x] : v.dict().entries) {
        Value t = Value::new_tuple();
        t.list().items = {k, x};
        Value key = pos == 0 ? k : x;
        items.push_back({t, case_sensitive ? key : ignore_case(key)});
    }
    std::stable_sort(items.begin(), items.end(), [&](const Item& x, const Item& y) {
        return reverse ? less(y.key, x.key) : less(x.key, y.key);
    });
    Value out = Value::new_list();
    for (Item& it : items) out.list().items.push_back(std::move(it.pair));
    (void)in;
    return out;
}

// The key function of sort / min / max / unique: attribute path(s), ignore_case.
struct KeyFunc {
    std::vector<std::vector<Value>> paths;  // empty: the item itself
    bool multi = false;
    bool case_sensitive = false;

    KeyFunc(const Value* attribute, bool cs, bool allow_multi) : case_sensitive(cs) {
        if (attribute && !attribute->is_none()) {
            if (allow_multi && attribute->is_string() && attribute->str().find(',') != std::string::npos) {
                multi = true;
                const std::string& s = attribute->str();
                size_t start = 0;
                while (true) {
                    size_t c = s.find(',', start);
                    paths.push_back(attr_parts(Value::string(s.substr(start, c == std::string::npos ? std::string::npos : c - start))));
                    if (c == std::string::npos) break;
                    start = c + 1;
                }
            } else {
                paths.push_back(attr_parts(*attribute));
                multi = allow_multi;  // make_multi_attrgetter always yields a list
            }
        }
    }

    Value operator()(Interp& in, const Value& item) const {
        if (paths.empty()) {
            Value k = case_sensitive ? item : ignore_case(item);
            if (!multi) return k;
            Value l = Value::new_list();
            l.list().items.push_back(k);
            return l;
        }
        if (!multi) {
            Value k = get_attr_path(in, item, paths[0], nullptr);
            return case_sensitive ? k : ignore_case(k);
        }
        Value l = Value::new_list();
        for (const auto& path : paths) {
            Value k = get_attr_path(in, item, path, nullptr);
            l.list().items.push_back(case_sensitive ? k : ignore_case(k));
        }
        return l;
    }
};

Value f_sort(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_sort", {"reverse", "case_sensitive", "attribute"});
    const bool reverse = p.has(0) && truthy(*p.get(0));
    const bool cs = p.has(1) && truthy(*p.get(1));
    KeyFunc key(p.get(2), cs, true);
    std::vector<Value> items = in.to_list(v);
    std::vector<std::pair<Value, Value>> keyed;
    keyed.reserve(items.size());
    for (Value& x : items) keyed.emplace_back(key(in, x), std::move(x));
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& x, const auto& y) {
        return reverse ? less(y.first, x.first) : less(x.first, y.first);
    });
    Value out = Value::new_list();
    for (auto& kv : keyed) out.list().items.push_back(std::move(kv.second));
    return out;
}

Value min_max(Interp& in, const Value& v, Args& a, bool is_max) {
    Params p(a, is_max ? "do_max" : "do_min", {"case_sensitive", "attribute"});
    const bool cs = p.has(0) && truthy(*p.get(0));
    KeyFunc key(p.get(1), cs, false);
    std::vector<Value> items = in.to_list(v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    Value best_key = key(in, items[0]);
    for (size_t n = 1; n < items.size(); ++n) {
        Value k = key(in, items[n]);
        if (is_max ? less(best_key, k) : less(k, best_key)) {
            best = n;
            best_key = k;
        }
    }
    return items[best];
}

Value f_min(Interp& in, const Value& v, Args& a) { return min_max(in, v, a, false); }
Value f_max(Interp& in, const Value& v, Args& a) { return min_max(in, v, a, true); }

Value f_sum(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_sum", {"attribute", "start"});
    Value total = p.get_or(1, Value::integer(0));
    if (total.is_string()) fail_type("sum() can't sum strings [use ''.join(seq) instead]");
    std::vector<Value> items = in.to_list(v);
    std::vector<Value> path;
    if (p.has(0) && !p.get(0)->is_none()) path = attr_parts(*p.get(0));
    for (Value& x : items) total = binary_op(in, BinOp::Add, total, path.empty() ? x : get_attr_path(in, x, path, nullptr));
    return total;
}

Value f_unique(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_unique", {"case_sensitive", "attribute"});
    const bool cs = p.has(0) && truthy(*p.get(0));
    auto key = std::make_shared<KeyFunc>(p.get(1), cs, false);
    struct State {
        Value src;
        std::vector<Value> items;
        size_t i = 0;
        bool started = false;
        Value seen = Value::new_dict();
    };
    auto st = std::make_shared<State>();
    st->src = v;
    return in.make_iterator("generator", [st, key](Interp& in2, Value& out) {
        if (!st->started) {
            st->started = true;
            st->items = in2.to_list(st->src);
        }
        while (st->i < st->items.size()) {
            Value item = st->items[st->i++];
            Value k = (*key)(in2, item);
            if (st->seen.dict().find(k)) continue;
            hash_value(k);
            st->seen.dict().set(k, Value::none());
            out = item;
            return true;
        }
        return false;
    });
}

Value f_reverse(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_reverse", {});
    if (v.is_string()) return slice_value(in, v, Value::none(), Value::none(), Value::integer(-1));
    if (v.is_list() || v.is_dict() || v.is_undefined()) {
        std::vector<Value> items = in.to_list(v);
        std::reverse(items.begin(), items.end());
        auto st = std::make_shared<std::pair<std::vector<Value>, size_t>>(std::move(items), 0);
        return in.make_iterator(v.is_dict() ? "dict_reversekeyiterator" : "list_reverseiterator", [st](Interp&, Value& out) {
            if (st->second >= st->first.size()) return false;
            out = st->first[st->second++];
            return true;
        });
    }
    if (v.is_object() && v.object().otype == ObjType::Iterator) {
        Value out = Value::new_list();
        out.list().items = in.to_list(v);
        std::reverse(out.list().items.begin(), out.list().items.end());
        return out;
    }
    fail("argument must be iterable");
}

// map / select / reject / selectattr / rejectattr: lazy, as jinja2's generators.
Value f_map(Interp& in, const Value& v, Args& a) {
    auto args = std::make_shared<OwnedArgs>(a, 0);
    struct State {
        Value src;
        std::vector<Value> items;
        size_t i = 0;
        bool started = false, empty = false;
        std::vector<Value> path;
        Value fallback;
        bool has_fallback = false;
        std::string filter;
    };
    auto st = std::make_shared<State>();
    st->src = v;
    return in.make_iterator("generator", [st, args](Interp& in2, Value& out) {
        if (!st->started) {
            st->started = true;
            if (!truthy(st->src)) {
                st->empty = true;
                return false;
            }
            OwnedArgs& o = *args;
            if (o.pos.empty() && std::find(o.names.begin(), o.names.end(), "attribute") != o.names.end()) {
                for (size_t k = 0; k < o.names.size(); ++k) {
                    if (o.names[k] == "attribute") st->path = attr_parts(o.values[k]);
                    else if (o.names[k] == "default") {
                        st->fallback = o.values[k];
                        st->has_fallback = !o.values[k].is_none();
                    } else {
                        fail("Unexpected keyword argument '" + o.names[k] + "'");
                    }
                }
            } else {
                if (o.pos.empty()) fail("map requires a filter argument");
                st->filter = to_str(o.pos[0]);
                o.pos.erase(o.pos.begin());
            }
            st->items = in2.to_list(st->src);
        }
        if (st->empty || st->i >= st->items.size()) return false;
        Value item = st->items[st->i++];
        if (!st->filter.empty()) {
            std::vector<KwArg> tmp;
            Args fa = args->view(tmp);
            out = in2.filter_by_name(st->filter, item, fa);
        } else {
            out = get_attr_path(in2, item, st->path, st->has_fallback ? &st->fallback : nullptr);
        }
        return true;
    });
}

Value select_reject(Interp& in, const Value& v, Args& a, bool select, bool lookup_attr) {
    auto args = std::make_shared<OwnedArgs>(a, 0);
    struct State {
        Value src;
        std::vector<Value> items;
        size_t i = 0;
        bool started = false, empty = false;
        std::vector<Value> path;
        std::string test;  // empty: truthiness
        bool has_test = false;
        OwnedArgs test_args;
    };
    auto st = std::make_shared<State>();
    st->src = v;
    return in.make_iterator("generator", [st, args, select, lookup_attr](Interp& in2, Value& out) {
        if (!st->started) {
            st->started = true;
            if (!truthy(st->src)) {
                st->empty = true;
                return false;
            }
            OwnedArgs& o = *args;
            size_t off = 0;
            if (lookup_attr) {
                if (o.pos.empty()) fail("Missing parameter for attribute name");
                st->path = attr_parts(o.pos[0]);
                off = 1;
            }
            if (o.pos.size() > off) {
                st->test = to_str(o.pos[off]);
                st->has_test = true;
                st->test_args.pos.assign(o.pos.begin() + static_cast<ptrdiff_t>(off + 1), o.pos.end());
                st->test_args.names = o.names;
                st->test_args.values = o.values;
            }
            st->items = in2.to_list(st->src);
        }
        while (!st->empty && st->i < st->items.size()) {
            Value item = st->items[st->i++];
            Value x = lookup_attr ? get_attr_path(in2, item, st->path, nullptr) : item;
            bool r;
            if (st->has_test) {
                std::vector<KwArg> tmp;
                Args ta = st->test_args.view(tmp);
                r = in2.test_by_name(st->test, x, ta);
            } else {
                r = truthy(x);
            }
            if (r == select) {
                out = item;
                return true;
            }
        }
        return false;
    });
}

Value f_select(Interp& in, const Value& v, Args& a) { return select_reject(in, v, a, true, false); }
Value f_reject(Interp& in, const Value& v, Args& a) { return select_reject(in, v, a, false, false); }
Value f_selectattr(Interp& in, const Value& v, Args& a) { return select_reject(in, v, a, true, true); }
Value f_rejectattr(Interp& in, const Value& v, Args& a) { return select_reject(in, v, a, false, true); }

Value f_batch(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_batch", {"linecount", "fill_with"}, 1);
    int64_t count = arg_int(*p.get(0), "linecount");
    Value fill = p.get_or(1, Value::none());
    auto st = std::make_shared<std::tuple<Value, std::vector<Value>, size_t, bool>>(v, std::vector<Value>{}, 0, false);
    return in.make_iterator("generator", [st, count, fill](Interp& in2, Value& out) {
        auto& [src, items, i, started] = *st;
        if (!started) {
            started = true;
            items = in2.to_list(src);
        }
        if (i >= items.size()) return false;
        if (count <= 0) {
            // jinja2 yields an empty batch before every item when linecount <= 0
            fail("batch size must be positive");
        }
        Value l = Value::new_list();
        while (i < items.size() && static_cast<int64_t>(l.list().items.size()) < count) l.list().items.push_back(items[i++]);
        if (!fill.is_none())
            while (static_cast<int64_t>(l.list().items.size()) < count) l.list().items.push_back(fill);
        out = l;
        return true;
    });
}

Value f_slice(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_slice", {"slices", "fill_with"}, 1);
    int64_t slices = arg_int(*p.get(0), "slices");
    Value fill = p.get_or(1, Value::none());
    std::vector<Value> seq = in.to_list(v);
    const auto length = static_cast<int64_t>(seq.size());
    if (slices <= 0) fail("integer division or modulo by zero");
    int64_t per = length / slices, extra = length % slices, offset = 0;
    auto out = std::make_shared<std::vector<Value>>();
    for (int64_t s = 0; s < slices; ++s) {
        int64_t start = offset + s * per;
        if (s < extra) ++offset;
        int64_t end = offset + (s + 1) * per;
        Value l = Value::new_list();
        for (int64_t k = start; k < end && k < length; ++k) l.list().items.push_back(seq[static_cast<size_t>(k)]);
        if (!fill.is_none() && s >= extra) l.list().items.push_back(fill);
        out->push_back(l);
        in.tick();
    }
    auto idx = std::make_shared<size_t>(0);
    return in.make_iterator("generator", [out, idx](Interp&, Value& o) {
        if (*idx >= out->size()) return false;
        o = (*out)[(*idx)++];
        return true;
    });
}

Value f_groupby(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_groupby", {"attribute", "default", "case_sensitive"}, 1);
    std::vector<Value> path = attr_parts(*p.get(0));
    const Value* fallback = (p.has(1) && !p.get(1)->is_none()) ? p.get(1) : nullptr;
    const bool cs = p.has(2) && truthy(*p.get(2));
    std::vector<Value> items = in.to_list(v);
    std::vector<std::pair<Value, Value>> keyed;
    for (Value& x : items) {
        Value k = get_attr_path(in, x, path, fallback);
        keyed.emplace_back(cs ? k : ignore_case(k), std::move(x));
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& x, const auto& y) { return less(x.first, y.first); });
    Value out = Value::new_list();
    for (size_t n = 0; n < keyed.size();) {
        size_t m = n;
        Value members = Value::new_list();
        while (m < keyed.size() && equal(keyed[m].first, keyed[n].first)) members.list().items.push_back(keyed[m++].second);
        Value grouper = cs ? keyed[n].first : get_attr_path(in, members.list().items[0], path, fallback);
        auto* g = new ListObj();
        g->seq = SeqKind::Group;
        g->items = {grouper, members};
        out.list().items.push_back(Value::from_obj(g));
        n = m;
    }
    return out;
}

Value f_attr(Interp& in, const Value& v, Args& a) {
    Params p(a, "do_attr", {"name"}, 1);
    std::string name = to_str(*p.get(0));
    if (v.is_dict()) {
        if (find_method(MethodOwner::Dict, name) >= 0) return in.getattr(v, name);
        return Value::undefined("'dict object' has no attribute '" + name + "'");
    }
    return in.getattr(v, name);
}

Value f_pprint(Interp&, const Value& v, Args& a) {
    Params p(a, "do_pprint", {});
    return Value::string(to_repr(v));
}

Value f_tojson(Interp&, const Value& v, Args& a) {
    // Hugging Face's tojson: json.dumps(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False)
    Params p(a, "tojson", {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonOptions o;
    o.ensure_ascii = p.has(0) && truthy(*p.get(0));
    if (p.has(1) && !p.get(1)->is_none()) {
        const Value& ind = *p.get(1);
        o.indent_set = true;
        if (ind.is_string()) o.indent = ind.str();
        else {
            int64_t n = arg_int(ind, "indent");
            if (n > 1024) fail("tojson indent too large");
            if (n > 0) o.indent.assign(static_cast<size_t>(n), ' ');
        }
        o.item_sep = ",";
    }
    if (p.has(2) && !p.get(2)->is_none()) {
        const Value& sep = *p.get(2);
        if (!sep.is_list() || sep.list().items.size() != 2) fail("separators must be a (item_separator, key_separator) pair");
        o.item_sep = arg_str(sep.list().items[0], "separators");
        o.key_sep = arg_str(sep.list().items[1], "separators");
    }
    o.sort_keys = p.has(3) && truthy(*p.get(3));
    std::string out;
    out.reserve(v.is_string() ? v.str().size() + 8 : 128);
    json_dump(out, v, o);
    return Value::string(std::move(out));
}

// llama.cpp's extension: parses a JSON string (DeepSeek V3.2 / V4 templates use it).
Value f_from_json(Interp&, const Value& v, Args& a) {
    Params p(a, "from_json", {});
    if (!v.is_string()) fail_type("from_json expects a string, got " + std::string(type_name(v)));
    return json_parse(v.str());
}

Value f_unsupported(Interp&, const Value&, Args&) {
    fail("this filter is not supported (non-deterministic or HTML-specific): see docs/jinja.md");
}

struct FilterEntry {
    std::string_view name;
    FilterFn fn;
};

const FilterEntry k_filters[] = {
    {"abs", f_abs},
    {"attr", f_attr},
    {"batch", f_batch},
    {"capitalize", f_capitalize},
    {"center", f_center},
    {"count", f_length},
    {"d", f_default},
    {"default", f_default},
    {"dictsort", f_dictsort},
    {"e", f_escape},
    {"escape", f_escape},
    {"filesizeformat", f_filesizeformat},
    {"first", f_first},
    {"float", f_float},
    {"forceescape", f_forceescape},
    {"format", f_format},
    {"from_json", f_from_json},
    {"groupby", f_groupby},
    {"indent", f_indent},
    {"int", f_int},
    {"items", f_items},
    {"join", f_join},
    {"last", f_last},
    {"length", f_length},
    {"list", f_list},
    {"lower", f_lower},
    {"map", f_map},
    {"max", f_max},
    {"min", f_min},
    {"pprint", f_pprint},
    {"random", f_unsupported},
    {"reject", f_reject},
    {"rejectattr", f_rejectattr},
    {"replace", f_replace},
    {"reverse", f_reverse},
    {"round", f_round},
    {"safe", f_safe},
    {"select", f_select},
    {"selectattr", f_selectattr},
    {"slice", f_slice},
    {"sort", f_sort},
    {"string", f_string},
    {"striptags", f_striptags},
    {"sum", f_sum},
    {"title", f_title},
    {"tojson", f_tojson},
    {"trim", f_trim},
    {"truncate", f_truncate},
    {"unique", f_unique},
    {"upper", f_upper},
    {"urlencode", f_urlencode},
    {"urlize", f_unsupported},
    {"wordcount", f_wordcount},
    {"wordwrap", f_unsupported},
    {"xmlattr", f_xmlattr},
};

}  // namespace

FilterFn find_filter(std::string_view name) {
    for (const auto& f : k_filters)
        if (f.name == name) return f.fn;
    return nullptr;
}

}  // namespace kiln::jinja
