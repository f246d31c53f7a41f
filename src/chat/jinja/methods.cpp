// Methods of Python's str, list and dict that templates call. Lists may be
// modified (append, pop, extend, insert) as llama.cpp allows and real templates
// need; Hugging Face's ImmutableSandboxedEnvironment refuses those (docs/jinja.md).
// Dicts stay immutable, as in that sandbox. Indices are in code points.
#include <algorithm>

#include "chat/jinja/error.h"
#include "chat/jinja/interp.h"
#include "chat/jinja/ops.h"
#include "chat/jinja/text.h"

namespace kiln::jinja {

namespace {

enum StrM {
    S_capitalize, S_casefold, S_center, S_count, S_endswith, S_expandtabs, S_find, S_format, S_format_map, S_index,
    S_isalnum, S_isalpha, S_isascii, S_isdecimal, S_isdigit, S_isidentifier, S_islower, S_isnumeric, S_isprintable,
    S_isspace, S_istitle, S_isupper, S_join, S_ljust, S_lower, S_lstrip, S_partition, S_removeprefix, S_removesuffix,
    S_replace, S_rfind, S_rindex, S_rjust, S_rpartition, S_rsplit, S_rstrip, S_split, S_splitlines, S_startswith,
    S_strip, S_swapcase, S_title, S_upper, S_zfill, S_count_
};
const std::string_view k_str_names[] = {
    "capitalize", "casefold", "center", "count", "endswith", "expandtabs", "find", "format", "format_map", "index",
    "isalnum", "isalpha", "isascii", "isdecimal", "isdigit", "isidentifier", "islower", "isnumeric", "isprintable",
    "isspace", "istitle", "isupper", "join", "ljust", "lower", "lstrip", "partition", "removeprefix", "removesuffix",
    "replace", "rfind", "rindex", "rjust", "rpartition", "rsplit", "rstrip", "split", "splitlines", "startswith",
    "strip", "swapcase", "title", "upper", "zfill",
};
static_assert(std::size(k_str_names) == S_count_);

enum ListM { L_append, L_pop, L_extend, L_insert, L_index, L_count, L_copy, L_count_ };
const std::string_view k_list_names[] = {"append", "pop", "extend", "insert", "index", "count", "copy"};
static_assert(std::size(k_list_names) == L_count_);

enum DictM { D_items, D_keys, D_values, D_get, D_copy, D_count_ };
const std::string_view k_dict_names[] = {"items", "keys", "values", "get", "copy"};
static_assert(std::size(k_dict_names) == D_count_);

Value str_result(std::string s, bool safe) { return Value::string(std::move(s), safe); }

// Python's handling of start/end arguments of find, count, startswith, ...: code
// point positions clamped as slice indices. Returns byte offsets.
void bounds(const std::string& s, const Params& p, size_t i_start, size_t& b, size_t& e, std::vector<size_t>& cps) {
    const Value* st_v = p.get(i_start);
    const Value* en_v = p.get(i_start + 1);
    if ((!st_v || st_v->is_none()) && (!en_v || en_v->is_none())) {
        b = 0;  // the whole string: no code point table needed
        e = s.size();
        return;
    }
    cps = text::boundaries(s);
    const auto n = static_cast<int64_t>(cps.size() - 1);
    auto clamp = [&](const Value* v, int64_t def) {
        if (!v || v->is_none()) return def;
        int64_t x = arg_int(*v, "slice index");
        if (x < 0) x = std::max<int64_t>(0, x + n);
        return std::min(x, n);
    };
    int64_t st = clamp(p.get(i_start), 0);
    int64_t en = clamp(p.get(i_start + 1), n);
    b = cps[static_cast<size_t>(st)];
    e = en < st ? b : cps[static_cast<size_t>(en)];
}

// The code point index of a byte offset (cps empty: count from the start).
int64_t cp_index(const std::string& s, const std::vector<size_t>& cps, size_t byte) {
    if (cps.empty()) return text::length(std::string_view(s).substr(0, byte));
    return static_cast<int64_t>(std::lower_bound(cps.begin(), cps.end(), byte) - cps.begin());
}

std::vector<std::string> prefixes(const Value& v, std::string_view method) {
    std::vector<std::string> out;
    if (v.is_string()) {
        out.push_back(v.str());
    } else if (v.is_list() && (v.list().seq == SeqKind::Tuple || v.list().seq == SeqKind::Group)) {
        for (const Value& x : v.list().items) {
            if (!x.is_string())
                fail_type("tuple for " + std::string(method) + " must only contain str, not " + std::string(type_name(x)));
            out.push_back(x.str());
        }
    } else {
        fail_type(std::string(method) + " first arg must be str or a tuple of str, not " + std::string(type_name(v)));
    }
    return out;
}

std::vector<std::string> split_ws(const std::string& s, int64_t maxsplit, bool from_right) {
    std::vector<uint32_t> cps = text::code_points(s);
    std::vector<std::string> out;
    if (!from_right) {
        size_t i = 0;
        while (i < cps.size()) {
            while (i < cps.size() && text::is_space(cps[i])) ++i;
            if (i >= cps.size()) break;
            if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
                // the rest, with trailing whitespace kept... as Python: rest after leading space
                std::string rest;
                for (size_t k = i; k < cps.size(); ++k) text::encode(rest, cps[k]);
                // Python strips trailing whitespace of the remainder only when it splits it; keep as is
                out.push_back(rest);
                return out;
            }
            std::string w;
            while (i < cps.size() && !text::is_space(cps[i])) text::encode(w, cps[i++]);
            out.push_back(w);
        }
        return out;
    }
    int64_t i = static_cast<int64_t>(cps.size()) - 1;
    while (i >= 0) {
        while (i >= 0 && text::is_space(cps[static_cast<size_t>(i)])) --i;
        if (i < 0) break;
        if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
            std::string rest;
            for (int64_t k = 0; k <= i; ++k) text::encode(rest, cps[static_cast<size_t>(k)]);
            out.push_back(rest);
            break;
        }
        int64_t end = i;
        while (i >= 0 && !text::is_space(cps[static_cast<size_t>(i)])) --i;
        std::string w;
        for (int64_t k = i + 1; k <= end; ++k) text::encode(w, cps[static_cast<size_t>(k)]);
        out.push_back(w);
    }
    std::reverse(out.begin(), out.end());
    return out;
}

std::vector<std::string> split_sep(const std::string& s, const std::string& sep, int64_t maxsplit, bool from_right) {
    if (sep.empty()) fail("empty separator");
    std::vector<std::string> out;
    if (!from_right) {
        size_t pos = 0;
        while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
            size_t hit = s.find(sep, pos);
            if (hit == std::string::npos) break;
            out.push_back(s.substr(pos, hit - pos));
            pos = hit + sep.size();
        }
        out.push_back(s.substr(pos));
        return out;
    }
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
        if (end < sep.size()) break;
        size_t hit = s.rfind(sep, end - sep.size());
        if (hit == std::string::npos) break;
        out.push_back(s.substr(hit + sep.size(), end - hit - sep.size()));
        end = hit;
    }
    out.push_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
}

Value string_list(const std::vector<std::string>& parts, bool safe) {
    Value l = Value::new_list();
    l.list().items.reserve(parts.size());
    for (const auto& p : parts) l.list().items.push_back(Value::string(p, safe));
    return l;
}

std::string justify(Interp& in, const std::string& s, int64_t width, const std::string& fill, char how) {
    const int64_t len = text::length(s);
    if (width <= len) return s;
    in.check_size(static_cast<uint64_t>(width) * fill.size());
    const int64_t marg = width - len;
    int64_t left = 0;
    if (how == 'r') left = marg;
    else if (how == 'c') left = marg / 2 + (marg & width & 1);
    std::string out;
    for (int64_t k = 0; k < left; ++k) out += fill;
    out += s;
    for (int64_t k = 0; k < marg - left; ++k) out += fill;
    return out;
}

std::string fill_char(const Params& p, size_t i, bool safe) {
    if (!p.has(i)) return " ";
    const Value& f = *p.get(i);
    if (!f.is_string() || text::length(f.str()) != 1)
        fail_type("The fill character must be exactly one character long");
    return safe ? markup_escape(f).str() : f.str();
}

bool all_cps(const std::string& s, bool (*pred)(uint32_t)) {
    if (s.empty()) return false;
    for (size_t i = 0; i < s.size();)
        if (!pred(text::decode(s, i))) return false;
    return true;
}

Value call_str(Interp& in, const Value& self, int id, Args& a) {
    const std::string& s = self.str();
    const bool safe = self.safe();
    const std::string_view name = k_str_names[id];
    switch (static_cast<StrM>(id)) {
        case S_capitalize: { Params p(a, name, {}); return str_result(text::capitalize(s), safe); }
        case S_casefold: {
            Params p(a, name, {});
            std::string l = text::lower(s);
            std::string out;
            for (size_t i = 0; i < l.size();) {
                size_t st = i;
                uint32_t c = text::decode(l, i);
                if (c == 0xDF) out += "ss";
                else out.append(l, st, i - st);
            }
            return str_result(out, safe);
        }
        case S_lower: { Params p(a, name, {}); return str_result(text::lower(s), safe); }
        case S_upper: { Params p(a, name, {}); return str_result(text::upper(s), safe); }
        case S_title: { Params p(a, name, {}); return str_result(text::title(s), safe); }
        case S_swapcase: { Params p(a, name, {}); return str_result(text::swapcase(s), safe); }
        case S_strip:
        case S_lstrip:
        case S_rstrip: {
            Params p(a, name, {"chars"});
            const Value* c = p.get(0);
            std::string set;
            const std::string* cs = nullptr;
            if (c && !c->is_none()) {
                if (!c->is_string()) fail_type(std::string(name) + " arg must be None or str");
                set = c->str();
                cs = &set;
            }
            std::string_view stripped = text::strip(s, cs, id != S_rstrip, id != S_lstrip);
            if (stripped.size() == s.size()) return self;  // unchanged: the same string
            return str_result(std::string(stripped), safe);
        }
        case S_split:
        case S_rsplit: {
            Params p(a, name, {"sep", "maxsplit"});
            int64_t maxsplit = p.has(1) ? arg_int(*p.get(1), "maxsplit") : -1;
            const Value* sep = p.get(0);
            if (!sep || sep->is_none()) return string_list(split_ws(s, maxsplit, id == S_rsplit), safe);
            return string_list(split_sep(s, arg_str(*sep, "sep"), maxsplit, id == S_rsplit), safe);
        }
        case S_splitlines: {
            Params p(a, name, {"keepends"});
            bool keep = p.has(0) && truthy(*p.get(0));
            std::vector<std::string> out;
            size_t line_start = 0;
            for (size_t i = 0; i < s.size();) {
                size_t start = i;
                uint32_t c = text::decode(s, i);
                bool nl = c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
                          c == 0x85 || c == 0x2028 || c == 0x2029;
                if (!nl) continue;
                size_t end = i;
                if (c == '\r' && i < s.size() && s[i] == '\n') end = ++i;
                out.push_back(s.substr(line_start, (keep ? end : start) - line_start));
                line_start = end;
            }
            if (line_start < s.size()) out.push_back(s.substr(line_start));
            return string_list(out, safe);
        }
        case S_startswith:
        case S_endswith: {
            Params p(a, name, {"prefix", "start", "end"}, 1);
            std::vector<std::string> pre = prefixes(*p.get(0), name);
            size_t b, e;
            std::vector<size_t> cps;
            bounds(s, p, 1, b, e, cps);
            std::string_view sub = std::string_view(s).substr(b, e - b);
            for (const auto& x : pre) {
                if (id == S_startswith ? sub.substr(0, x.size()) == x
                                       : (sub.size() >= x.size() && sub.substr(sub.size() - x.size()) == x))
                    return Value::boolean(true);
            }
            return Value::boolean(false);
        }
        case S_find:
        case S_rfind:
        case S_index:
        case S_rindex:
        case S_count: {
            Params p(a, name, {"sub", "start", "end"}, 1);
            const std::string& sub = arg_str(*p.get(0), "sub");
            size_t b, e;
            std::vector<size_t> cps;
            bounds(s, p, 1, b, e, cps);
            std::string_view hay = std::string_view(s).substr(b, e - b);
            if (id == S_count) {
                if (sub.empty()) return Value::integer(text::length(hay) + 1);
                int64_t n = 0;
                for (size_t pos = hay.find(sub); pos != std::string_view::npos; pos = hay.find(sub, pos + sub.size())) ++n;
                return Value::integer(n);
            }
            size_t hit = (id == S_find || id == S_index) ? hay.find(sub) : hay.rfind(sub);
            if (hit == std::string_view::npos) {
                if (id == S_index || id == S_rindex) fail("substring not found");
                return Value::integer(-1);
            }
            return Value::integer(cp_index(s, cps, b + hit));
        }
        case S_replace: {
            Params p(a, name, {"old", "new", "count"}, 2);
            const std::string& old = arg_str(*p.get(0), "old");
            Value repl = *p.get(1);
            if (!repl.is_string()) fail_type("replace() argument 2 must be str, not " + std::string(type_name(repl)));
            std::string nw = safe ? markup_escape(repl).str() : repl.str();
            int64_t count = p.has(2) ? arg_int(*p.get(2), "count") : -1;
            if (count < 0) count = INT64_MAX;
            std::string out;
            if (old.empty()) {
                int64_t done = 0;
                size_t i = 0;
                while (true) {
                    if (done < count) out += nw, ++done;
                    if (i >= s.size()) break;
                    size_t st = i;
                    text::decode(s, i);
                    out.append(s, st, i - st);
                    in.check_size(out.size());
                }
                return str_result(out, safe);
            }
            size_t pos = 0;
            for (int64_t done = 0; done < count; ++done) {
                size_t hit = s.find(old, pos);
                if (hit == std::string::npos) break;
                out.append(s, pos, hit - pos);
                out += nw;
                pos = hit + old.size();
                in.check_size(out.size());
            }
            out.append(s, pos, std::string::npos);
            return str_result(out, safe);
        }
        case S_join: {
            Params p(a, name, {"iterable"}, 1);
            std::vector<Value> items = in.to_list(*p.get(0));
            std::string out;
            for (size_t n = 0; n < items.size(); ++n) {
                const Value& x = items[n];
                if (!x.is_string())
                    fail_type("sequence item " + std::to_string(n) + ": expected str instance, " + std::string(type_name(x)) + " found");
                if (n) out += s;
                out += safe ? markup_escape(x).str() : x.str();
                in.check_size(out.size());
            }
            return str_result(out, safe);
        }
        case S_center:
        case S_ljust:
        case S_rjust: {
            Params p(a, name, {"width", "fillchar"}, 1);
            int64_t width = arg_int(*p.get(0), "width");
            std::string f = fill_char(p, 1, safe);
            return str_result(justify(in, s, width, f, id == S_center ? 'c' : (id == S_ljust ? 'l' : 'r')), safe);
        }
        case S_zfill: {
            Params p(a, name, {"width"}, 1);
            int64_t width = arg_int(*p.get(0), "width");
            const int64_t len = text::length(s);
            if (width <= len) return str_result(s, safe);
            in.check_size(static_cast<uint64_t>(width));
            std::string zeros(static_cast<size_t>(width - len), '0');
            if (!s.empty() && (s[0] == '+' || s[0] == '-')) return str_result(s.substr(0, 1) + zeros + s.substr(1), safe);
            return str_result(zeros + s, safe);
        }
        case S_expandtabs: {
            Params p(a, name, {"tabsize"});
            int64_t tab = p.has(0) ? arg_int(*p.get(0), "tabsize") : 8;
            std::string out;
            int64_t col = 0;
            for (size_t i = 0; i < s.size();) {
                size_t st = i;
                uint32_t c = text::decode(s, i);
                if (c == '\t') {
                    if (tab > 0) {
                        int64_t nsp = tab - (col % tab);
                        in.check_size(out.size() + static_cast<uint64_t>(nsp));
                        out.append(static_cast<size_t>(nsp), ' ');
                        col += nsp;
                    }
                } else if (c == '\n' || c == '\r') {
                    out.append(s, st, i - st);
                    col = 0;
                } else {
                    out.append(s, st, i - st);
                    ++col;
                }
            }
            return str_result(out, safe);
        }
        case S_partition:
        case S_rpartition: {
            Params p(a, name, {"sep"}, 1);
            const std::string& sep = arg_str(*p.get(0), "sep");
            if (sep.empty()) fail("empty separator");
            size_t hit = id == S_partition ? s.find(sep) : s.rfind(sep);
            Value t = Value::new_tuple();
            auto& items = t.list().items;
            if (hit == std::string::npos) {
                if (id == S_partition) items = {Value::string(s, safe), Value::string(std::string(), safe), Value::string(std::string(), safe)};
                else items = {Value::string(std::string(), safe), Value::string(std::string(), safe), Value::string(s, safe)};
            } else {
                items = {Value::string(s.substr(0, hit), safe), Value::string(sep, safe),
                         Value::string(s.substr(hit + sep.size()), safe)};
            }
            return t;
        }
        case S_removeprefix:
        case S_removesuffix: {
            Params p(a, name, {"affix"}, 1);
            const std::string& x = arg_str(*p.get(0), "affix");
            if (id == S_removeprefix && s.compare(0, x.size(), x) == 0) return str_result(s.substr(x.size()), safe);
            if (id == S_removesuffix && !x.empty() && s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0)
                return str_result(s.substr(0, s.size() - x.size()), safe);
            return str_result(s, safe);
        }
        case S_format: return str_result(str_format(in, s, a, safe), safe);
        case S_format_map: {
            Params p(a, name, {"mapping"}, 1);
            const Value& m = *p.get(0);
            if (!m.is_dict()) fail_type("format_map() argument must be a mapping");
            std::vector<KwArg> kws;
            for (const auto& [k, v] : m.dict().entries)
                if (k.is_string()) kws.push_back(KwArg{k.str(), v, k});
            Args fa{nullptr, 0, kws.data(), kws.size()};
            return str_result(str_format(in, s, fa, safe), safe);
        }
        case S_isalnum: { Params p(a, name, {}); return Value::boolean(all_cps(s, [](uint32_t c) { return text::is_alpha(c) || text::is_numeric(c); })); }
        case S_isalpha: { Params p(a, name, {}); return Value::boolean(all_cps(s, text::is_alpha)); }
        case S_isascii: { Params p(a, name, {}); return Value::boolean(text::is_ascii(s)); }
        case S_isdecimal: { Params p(a, name, {}); return Value::boolean(all_cps(s, text::is_decimal)); }
        case S_isdigit: { Params p(a, name, {}); return Value::boolean(all_cps(s, text::is_digit)); }
        case S_isnumeric: { Params p(a, name, {}); return Value::boolean(all_cps(s, text::is_numeric)); }
        case S_isspace: { Params p(a, name, {}); return Value::boolean(all_cps(s, text::is_space)); }
        case S_isprintable: {
            Params p(a, name, {});
            for (size_t i = 0; i < s.size();)
                if (!text::is_printable(text::decode(s, i))) return Value::boolean(false);
            return Value::boolean(true);
        }
        case S_isidentifier: {
            Params p(a, name, {});
            if (s.empty()) return Value::boolean(false);
            size_t i = 0;
            if (!text::is_identifier_start(text::decode(s, i))) return Value::boolean(false);
            while (i < s.size())
                if (!text::is_identifier_char(text::decode(s, i))) return Value::boolean(false);
            return Value::boolean(true);
        }
        case S_islower:
        case S_isupper: {
            Params p(a, name, {});
            bool any = false;
            for (size_t i = 0; i < s.size();) {
                uint32_t c = text::decode(s, i);
                if (id == S_islower ? text::is_upper_cp(c) : text::is_lower_cp(c)) return Value::boolean(false);
                if (text::is_cased(c)) any = true;
            }
            return Value::boolean(any);
        }
        case S_istitle: {
            Params p(a, name, {});
            bool cased = false, prev_cased = false;
            for (size_t i = 0; i < s.size();) {
                uint32_t c = text::decode(s, i);
                if (text::is_upper_cp(c)) {
                    if (prev_cased) return Value::boolean(false);
                    prev_cased = cased = true;
                } else if (text::is_lower_cp(c)) {
                    if (!prev_cased) return Value::boolean(false);
                    prev_cased = cased = true;
                } else {
                    prev_cased = false;
                }
            }
            return Value::boolean(cased);
        }
        case S_count_: break;
    }
    fail("unknown str method");
}

Value call_list(Interp& in, const Value& self, int id, Args& a) {
    ListObj& l = self.list();
    const std::string_view name = k_list_names[id];
    const bool mutable_list = l.seq == SeqKind::List;
    const bool sequence = mutable_list || l.seq == SeqKind::Tuple || l.seq == SeqKind::Group || l.seq == SeqKind::Range;
    const bool allowed = (id == L_index || id == L_count) ? sequence : mutable_list;
    if (!allowed) fail("'" + std::string(type_name(self)) + "' object has no attribute '" + std::string(name) + "'");
    if (id == L_append || id == L_extend || id == L_insert || id == L_pop) in.will_modify(l);
    auto& items = l.items;
    switch (static_cast<ListM>(id)) {
        case L_append: {
            Params p(a, name, {"object"}, 1);
            in.check_size((items.size() + 1) * sizeof(Value));
            items.push_back(*p.get(0));
            return Value::none();
        }
        case L_extend: {
            Params p(a, name, {"iterable"}, 1);
            std::vector<Value> more = in.to_list(*p.get(0));
            in.check_size((items.size() + more.size()) * sizeof(Value));
            items.insert(items.end(), more.begin(), more.end());
            return Value::none();
        }
        case L_insert: {
            Params p(a, name, {"index", "object"}, 2);
            int64_t i = arg_int(*p.get(0), "index");
            const auto n = static_cast<int64_t>(items.size());
            if (i < 0) i = std::max<int64_t>(0, i + n);
            i = std::min(i, n);
            in.check_size((items.size() + 1) * sizeof(Value));
            items.insert(items.begin() + i, *p.get(1));
            return Value::none();
        }
        case L_pop: {
            Params p(a, name, {"index"});
            if (items.empty()) fail("pop from empty list");
            const auto n = static_cast<int64_t>(items.size());
            int64_t i = p.has(0) ? arg_int(*p.get(0), "index") : n - 1;
            if (i < 0) i += n;
            if (i < 0 || i >= n) fail("pop index out of range");
            Value v = items[static_cast<size_t>(i)];
            items.erase(items.begin() + i);
            return v;
        }
        case L_index: {
            Params p(a, name, {"value", "start", "stop"}, 1);
            const auto n = static_cast<int64_t>(items.size());
            auto clamp = [&](const Value* v, int64_t def) {
                if (!v) return def;
                int64_t x = arg_int(*v, "index");
                if (x < 0) x = std::max<int64_t>(0, x + n);
                return std::min(x, n);
            };
            int64_t st = clamp(p.get(1), 0), en = clamp(p.get(2), n);
            for (int64_t i = st; i < en; ++i)
                if (equal(items[static_cast<size_t>(i)], *p.get(0))) return Value::integer(i);
            fail(to_repr(*p.get(0)) + " is not in list");
        }
        case L_count: {
            Params p(a, name, {"value"}, 1);
            int64_t c = 0;
            for (const Value& x : items)
                if (equal(x, *p.get(0))) ++c;
            return Value::integer(c);
        }
        case L_copy: {
            Params p(a, name, {});
            Value out = Value::new_list();
            out.list().items = items;
            return out;
        }
        case L_count_: break;
    }
    fail("unknown list method");
}

Value call_dict(Interp&, const Value& self, int id, Args& a) {
    const DictObj& d = self.dict();
    const std::string_view name = k_dict_names[id];
    switch (static_cast<DictM>(id)) {
        case D_items:
        case D_keys:
        case D_values: {
            Params p(a, name, {});
            Value out = Value::new_list();
            ListObj& l = out.list();
            l.seq = id == D_items ? SeqKind::DictItems : (id == D_keys ? SeqKind::DictKeys : SeqKind::DictValues);
            l.items.reserve(d.size());
            for (const auto& [k, v] : d.entries) {
                if (id == D_keys) l.items.push_back(k);
                else if (id == D_values) l.items.push_back(v);
                else {
                    Value t = Value::new_tuple();
                    t.list().items = {k, v};
                    l.items.push_back(std::move(t));
                }
            }
            return out;
        }
        case D_get: {
            Params p(a, name, {"key", "default"}, 1);
            const Value& key = *p.get(0);
            hash_value(key);
            if (const Value* v = d.find(key)) return *v;
            return p.has(1) ? *p.get(1) : Value::none();
        }
        case D_copy: {
            Params p(a, name, {});
            Value out = Value::new_dict();
            for (const auto& [k, v] : d.entries) out.dict().set(k, v);
            return out;
        }
        case D_count_: break;
    }
    fail("unknown dict method");
}

template <size_t N>
int lookup(const std::string_view (&names)[N], std::string_view name) {
    for (size_t i = 0; i < N; ++i)
        if (names[i] == name) return static_cast<int>(i);
    return -1;
}

}  // namespace

int find_method(MethodOwner owner, std::string_view name) {
    switch (owner) {
        case MethodOwner::Str: return lookup(k_str_names, name);
        case MethodOwner::List: return lookup(k_list_names, name);
        case MethodOwner::Dict: return lookup(k_dict_names, name);
    }
    return -1;
}

std::string_view method_name(MethodOwner owner, int id) {
    switch (owner) {
        case MethodOwner::Str: return k_str_names[id];
        case MethodOwner::List: return k_list_names[id];
        case MethodOwner::Dict: return k_dict_names[id];
    }
    return "?";
}

Value call_method(Interp& in, const Value& self, MethodOwner owner, int id, Args& args) {
    switch (owner) {
        case MethodOwner::Str: return call_str(in, self, id, args);
        case MethodOwner::List: return call_list(in, self, id, args);
        case MethodOwner::Dict: return call_dict(in, self, id, args);
    }
    fail("unknown method");
}

}  // namespace kiln::jinja
