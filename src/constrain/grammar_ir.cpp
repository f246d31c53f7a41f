// The grammar IR: expression constructors, codepoint range sets, GBNF printing.
#include "constrain/grammar_ir.h"

#include <algorithm>
#include <cstdio>

#include "kiln/error.h"

namespace kiln::constrain {

std::vector<CpRange> normalize_ranges(std::vector<CpRange> ranges) {
    std::vector<CpRange> cut;
    // Surrogates are not characters of UTF-8 text: cut them out of every range.
    for (CpRange r : ranges) {
        if (r.lo > r.hi) continue;
        r.hi = std::min(r.hi, k_max_codepoint);
        if (r.lo > r.hi) continue;
        if (r.hi < 0xD800 || r.lo > 0xDFFF) {
            cut.push_back(r);
            continue;
        }
        if (r.lo < 0xD800) cut.push_back({r.lo, 0xD7FF});
        if (r.hi > 0xDFFF) cut.push_back({0xE000, r.hi});
    }
    std::sort(cut.begin(), cut.end(), [](const CpRange& a, const CpRange& b) { return a.lo < b.lo; });
    std::vector<CpRange> out;
    for (const CpRange& r : cut) {
        if (!out.empty() && r.lo <= out.back().hi + 1)
            out.back().hi = std::max(out.back().hi, r.hi);
        else
            out.push_back(r);
    }
    return out;
}

std::vector<CpRange> negate_ranges(const std::vector<CpRange>& ranges) {
    std::vector<CpRange> in = normalize_ranges(ranges);
    std::vector<CpRange> out;
    uint32_t next = 0;
    for (const CpRange& r : in) {
        if (r.lo > next) out.push_back({next, r.lo - 1});
        next = r.hi + 1;
    }
    if (next <= k_max_codepoint) out.push_back({next, k_max_codepoint});
    return normalize_ranges(std::move(out));
}

Expr e_empty() { return Expr{}; }

Expr e_nothing() {
    Expr e;
    e.kind = Expr::Kind::Alt;
    return e;
}

Expr e_lit(std::string_view bytes) {
    if (bytes.empty()) return e_empty();
    Expr e;
    e.kind = Expr::Kind::Literal;
    e.text = bytes;
    return e;
}

Expr e_class(std::vector<CpRange> ranges) {
    Expr e;
    e.kind = Expr::Kind::Class;
    e.ranges = normalize_ranges(std::move(ranges));
    if (e.ranges.empty()) return e_nothing();
    return e;
}

Expr e_char(uint32_t cp) { return e_class({{cp, cp}}); }

Expr e_bytes(const ByteSet& set) {
    if (set.empty()) return e_nothing();
    Expr e;
    e.kind = Expr::Kind::Bytes;
    e.bytes = set;
    return e;
}

Expr e_ref(uint32_t rule) {
    Expr e;
    e.kind = Expr::Kind::Ref;
    e.rule = rule;
    return e;
}

Expr e_seq(std::vector<Expr> items) {
    Expr e;
    e.kind = Expr::Kind::Seq;
    for (Expr& it : items) {
        if (it.kind == Expr::Kind::Seq) {
            for (Expr& sub : it.items) e.items.push_back(std::move(sub));
        } else if (it.kind == Expr::Kind::Literal && !e.items.empty() && e.items.back().kind == Expr::Kind::Literal) {
            e.items.back().text += it.text;
        } else {
            e.items.push_back(std::move(it));
        }
    }
    for (const Expr& it : e.items)
        if (it.kind == Expr::Kind::Alt && it.items.empty()) return e_nothing();
    if (e.items.size() == 1) return std::move(e.items[0]);
    return e;
}

Expr e_alt(std::vector<Expr> items) {
    Expr e;
    e.kind = Expr::Kind::Alt;
    for (Expr& it : items) {
        if (it.kind == Expr::Kind::Alt) {
            for (Expr& sub : it.items) e.items.push_back(std::move(sub));
        } else {
            e.items.push_back(std::move(it));
        }
    }
    if (e.items.size() == 1) return std::move(e.items[0]);
    return e;
}

Expr e_repeat(Expr item, uint32_t min, uint32_t max) {
    if (max != k_unbounded && min > max) return e_nothing();
    if (max == 0) return e_empty();
    if (min == 1 && max == 1) return item;
    Expr e;
    e.kind = Expr::Kind::Repeat;
    e.min = min;
    e.max = max;
    e.items.push_back(std::move(item));
    return e;
}

uint32_t GrammarIR::add_rule(std::string_view name) {
    std::string base(name.empty() ? "r" : name);
    std::string unique = base;
    if (by_name.count(unique)) {
        uint32_t& n = next_suffix[base];
        do unique = base + "-" + std::to_string(++n);
        while (by_name.count(unique));
    }
    const auto id = static_cast<uint32_t>(rules.size());
    rules.push_back(Rule{unique, e_nothing(), false});
    by_name.emplace(unique, id);
    return id;
}

void GrammarIR::define(uint32_t rule, Expr body) {
    rules.at(rule).body = std::move(body);
    rules[rule].defined = true;
}

uint32_t GrammarIR::find(std::string_view name) const {
    auto it = by_name.find(std::string(name));
    return it == by_name.end() ? UINT32_MAX : it->second;
}

namespace {

Expr remap_refs(const Expr& e, const std::vector<uint32_t>& ids) {
    Expr out = e;
    if (out.kind == Expr::Kind::Ref) out.rule = ids.at(out.rule);
    for (size_t i = 0; i < out.items.size(); ++i) out.items[i] = remap_refs(e.items[i], ids);
    return out;
}

}  // namespace

uint32_t import_rules(GrammarIR& into, const GrammarIR& from, std::string_view name) {
    if (into.find(name) != UINT32_MAX) throw Error("grammar import '" + std::string(name) + "': the name is taken");
    std::vector<uint32_t> ids(from.rules.size());
    ids.at(from.root) = into.add_rule(name);
    for (uint32_t i = 0; i < from.rules.size(); ++i)
        if (i != from.root) ids[i] = into.add_rule(std::string(name) + "-" + from.rules[i].name);
    for (uint32_t i = 0; i < from.rules.size(); ++i) into.define(ids[i], remap_refs(from.rules[i].body, ids));
    return ids[from.root];
}

namespace {

// A codepoint inside "..." or [...] in GBNF: printable ASCII as itself, the rest
// escaped so the output is plain ASCII.
void print_cp(std::string& out, uint32_t cp, bool in_class) {
    char buf[16];
    if (cp == '\n') out += "\\n";
    else if (cp == '\r') out += "\\r";
    else if (cp == '\t') out += "\\t";
    else if (cp == '\\') out += "\\\\";
    else if (cp == '"' && !in_class) out += "\\\"";
    else if (in_class && (cp == ']' || cp == '[')) {
        out += '\\';
        out += static_cast<char>(cp);
    } else if (in_class && (cp == '-' || cp == '^')) {
        std::snprintf(buf, sizeof buf, "\\x%02X", cp);  // llama.cpp has no \- or \^
        out += buf;
    } else if (cp >= 0x20 && cp < 0x7F) out += static_cast<char>(cp);
    else if (cp <= 0xFF) { std::snprintf(buf, sizeof buf, "\\x%02X", cp); out += buf; }
    else if (cp <= 0xFFFF) { std::snprintf(buf, sizeof buf, "\\u%04X", cp); out += buf; }
    else { std::snprintf(buf, sizeof buf, "\\U%08X", cp); out += buf; }
}

void print_expr(std::string& out, const GrammarIR& g, const Expr& e, bool nested) {
    switch (e.kind) {
        case Expr::Kind::Seq:
            if (e.items.empty()) {
                out += "\"\"";
                return;
            }
            if (nested) out += "(";
            for (size_t i = 0; i < e.items.size(); ++i) {
                if (i) out += " ";
                print_expr(out, g, e.items[i], true);
            }
            if (nested) out += ")";
            return;
        case Expr::Kind::Alt:
            if (e.items.empty()) {
                out += "[^\\x00-\\U0010FFFF]";  // matches nothing
                return;
            }
            if (nested) out += "(";
            for (size_t i = 0; i < e.items.size(); ++i) {
                if (i) out += " | ";
                print_expr(out, g, e.items[i], false);
            }
            if (nested) out += ")";
            return;
        case Expr::Kind::Literal: {
            // GBNF literals are codepoints: decode the UTF-8 (the converters only
            // build literals from valid UTF-8).
            out += "\"";
            const std::string& t = e.text;
            for (size_t i = 0; i < t.size();) {
                const auto c = static_cast<unsigned char>(t[i]);
                const size_t n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
                uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
                for (size_t k = 1; k < n && i + k < t.size(); ++k)
                    cp = (cp << 6) | (static_cast<unsigned char>(t[i + k]) & 0x3F);
                print_cp(out, cp, false);
                i += n;
            }
            out += "\"";
            return;
        }
        case Expr::Kind::Class:
            out += "[";
            for (const CpRange& r : e.ranges) {
                print_cp(out, r.lo, true);
                if (r.hi != r.lo) {
                    out += "-";
                    print_cp(out, r.hi, true);
                }
            }
            out += "]";
            return;
        case Expr::Kind::Bytes: {
            // GBNF has no byte classes; \xHH inside a class is the codepoint U+00HH
            // in llama.cpp, so this prints only as an approximation for bytes >= 0x80.
            out += "[";
            for (unsigned b = 0; b < 256; ++b) {
                if (!e.bytes.test(static_cast<uint8_t>(b))) continue;
                unsigned hi = b;
                while (hi + 1 < 256 && e.bytes.test(static_cast<uint8_t>(hi + 1))) ++hi;
                print_cp(out, b, true);
                if (hi != b) {
                    out += "-";
                    print_cp(out, hi, true);
                }
                b = hi;
            }
            out += "]";
            return;
        }
        case Expr::Kind::Ref:
            out += g.rules[e.rule].name;
            return;
        case Expr::Kind::Repeat: {
            print_expr(out, g, e.items[0], true);
            if (e.min == 0 && e.max == k_unbounded) out += "*";
            else if (e.min == 1 && e.max == k_unbounded) out += "+";
            else if (e.min == 0 && e.max == 1) out += "?";
            else if (e.max == k_unbounded) out += "{" + std::to_string(e.min) + ",}";
            else if (e.min == e.max) out += "{" + std::to_string(e.min) + "}";
            else out += "{" + std::to_string(e.min) + "," + std::to_string(e.max) + "}";
            return;
        }
    }
}

}  // namespace

std::string print_gbnf(const GrammarIR& g) {
    std::string out;
    auto print_rule = [&](uint32_t id) {
        out += g.rules[id].name;
        out += " ::= ";
        print_expr(out, g, g.rules[id].body, false);
        out += "\n";
    };
    print_rule(g.root);
    for (uint32_t i = 0; i < g.rules.size(); ++i)
        if (i != g.root) print_rule(i);
    return out;
}

}  // namespace kiln::constrain
