// Regular expressions (the subset that denotes a regular language) to grammar
// IR. The syntax is Python's `re` (what JSON Schema validators run `pattern`
// with). Classes that Python reads as Unicode (\d \w \s) are narrowed to ASCII:
// the grammar then accepts a subset of what Python does, never more, and their
// negations and negated classes containing them are refused, because narrowing
// a negation would accept too much.
#include <string>

#include "constrain/converters.h"
#include "tokenizer/unicode.h"
#include "kiln/error.h"

namespace kiln::constrain {

namespace {

constexpr uint32_t k_max_repeat = 10000;

const std::vector<CpRange> k_digit = {{'0', '9'}};
const std::vector<CpRange> k_word = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const std::vector<CpRange> k_space = {{'\t', '\r'}, {' ', ' '}};
const std::vector<CpRange> k_not_digit_ascii = {{0, '0' - 1}, {'9' + 1, 0x7F}};
const std::vector<CpRange> k_not_word_ascii = {{0, '0' - 1}, {'9' + 1, 'A' - 1}, {'Z' + 1, '_' - 1}, {'`', '`'}, {'z' + 1, 0x7F}};
const std::vector<CpRange> k_not_space_ascii = {{0x21, 0x7E}};

struct Class {
    std::vector<CpRange> ranges;
    bool approximated = false;  // contains an ASCII-narrowed \d \w \s
};

class RegexParser {
public:
    RegexParser(std::string_view src, RegexMode mode, GrammarIR& ir) : src_(src), mode_(mode), ir_(ir) {}

    Expr parse() {
        std::vector<Expr> branches;
        for (;;) {
            bool anchored_start = false, anchored_end = false;
            if (peek() == '^' || src_.substr(pos_, 2) == "\\A") {
                pos_ += peek() == '^' ? 1 : 2;
                anchored_start = true;
            }
            std::vector<Expr> items = parse_concat(&anchored_end);
            Expr body = e_seq(std::move(items));
            if (mode_ == RegexMode::JsonString) {
                // `pattern` is a search: anything may come before and after.
                std::vector<Expr> parts;
                if (!anchored_start) parts.push_back(e_star(any_char()));
                parts.push_back(std::move(body));
                if (!anchored_end) parts.push_back(e_star(any_char()));
                body = e_seq(std::move(parts));
            }
            branches.push_back(std::move(body));
            if (peek() == '|') {
                ++pos_;
                continue;
            }
            break;
        }
        if (pos_ < src_.size()) fail(peek() == ')' ? "unbalanced ')'" : "unexpected character");
        return e_alt(std::move(branches));
    }

private:
    [[noreturn]] void fail(const std::string& what) const {
        throw Error("regex /" + std::string(src_) + "/ at offset " + std::to_string(pos_) + ": " + what);
    }
    char peek(size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }
    bool at_end() const { return pos_ >= src_.size(); }

    Expr chars(const std::vector<CpRange>& ranges) {
        if (mode_ == RegexMode::JsonString) return json_string_char(ranges);
        return e_class(ranges);
    }
    Expr any_char() { return chars({{0, k_max_codepoint}}); }

    // A sequence up to | or ) or the end. `anchored_end` (top level only) is set by
    // a trailing $; anywhere else an anchor is refused.
    std::vector<Expr> parse_concat(bool* anchored_end) {
        std::vector<Expr> items;
        while (!at_end() && peek() != '|' && peek() != ')') {
            if (peek() == '$' || src_.substr(pos_, 2) == "\\Z" || src_.substr(pos_, 2) == "\\z") {
                const size_t len = peek() == '$' ? 1 : 2;
                if (anchored_end && (pos_ + len == src_.size() || src_[pos_ + len] == '|')) {
                    pos_ += len;
                    *anchored_end = true;
                    break;
                }
                fail("an end anchor is supported only at the end of a top-level alternative");
            }
            if (peek() == '^') fail("a start anchor is supported only at the start of a top-level alternative");
            Expr atom = parse_atom();
            items.push_back(parse_quantifiers(std::move(atom)));
        }
        return items;
    }

    bool parse_count(uint32_t& out) {
        if (!(peek() >= '0' && peek() <= '9')) return false;
        uint64_t v = 0;
        while (peek() >= '0' && peek() <= '9') {
            v = v * 10 + static_cast<uint64_t>(peek() - '0');
            if (v > k_max_repeat) fail("repetition count above " + std::to_string(k_max_repeat));
            ++pos_;
        }
        out = static_cast<uint32_t>(v);
        return true;
    }

    // Python reads `{` that does not start a valid {m}, {m,}, {,n}, {m,n} as a literal.
    bool try_braces(uint32_t& min, uint32_t& max) {
        const size_t save = pos_;
        ++pos_;
        uint32_t lo = 0, hi = 0;
        const bool has_lo = parse_count(lo);
        if (peek() == '}' && has_lo) {
            ++pos_;
            min = max = lo;
            return true;
        }
        if (peek() == ',') {
            ++pos_;
            const bool has_hi = parse_count(hi);
            if (peek() == '}') {
                ++pos_;
                min = has_lo ? lo : 0;
                max = has_hi ? hi : k_unbounded;
                if (max < min) fail("repetition with maximum below minimum");
                return true;
            }
        }
        pos_ = save;
        return false;
    }

    Expr parse_quantifiers(Expr atom) {
        for (;;) {
            uint32_t min = 0, max = 0;
            const char c = peek();
            if (c == '*') {
                ++pos_;
                max = k_unbounded;
            } else if (c == '+') {
                ++pos_;
                min = 1;
                max = k_unbounded;
            } else if (c == '?') {
                ++pos_;
                max = 1;
            } else if (c == '{' && try_braces(min, max)) {
            } else {
                return atom;
            }
            // Lazy quantifiers denote the same language; possessive ones do not.
            if (peek() == '?') ++pos_;
            else if (peek() == '+') fail("possessive quantifiers are not supported");
            atom = e_repeat(std::move(atom), min, max);
        }
    }

    Expr parse_group() {
        const size_t start = pos_;
        // Untrusted text: nesting is bounded so the recursion cannot exhaust the stack.
        if (++depth_ > k_max_nesting) fail("groups nested deeper than " + std::to_string(k_max_nesting));
        ++pos_;  // (
        if (peek() == '?') {
            const char k = peek(1);
            if (k == ':') {
                pos_ += 2;
            } else if (k == 'P' && peek(2) == '<') {
                pos_ += 3;
                while (!at_end() && peek() != '>') ++pos_;
                ++pos_;
            } else if (k == '<' && peek(2) != '=' && peek(2) != '!') {
                pos_ += 2;
                while (!at_end() && peek() != '>') ++pos_;
                ++pos_;
            } else if (k == '=' || k == '!' || k == '<') {
                pos_ = start;
                fail("lookaround assertions are not supported (not a regular language here)");
            } else {
                pos_ = start;
                fail("group flags and extensions '(?" + std::string(1, k) + "' are not supported");
            }
        }
        std::vector<Expr> branches;
        for (;;) {
            branches.push_back(e_seq(parse_concat(nullptr)));
            if (peek() == '|') {
                ++pos_;
                continue;
            }
            break;
        }
        if (peek() != ')') {
            pos_ = start;
            fail("unclosed group");
        }
        ++pos_;
        --depth_;
        Expr group;
        group.kind = Expr::Kind::Alt;
        group.items = std::move(branches);
        if (group.items.size() == 1) return std::move(group.items[0]);
        return group;
    }

    uint32_t parse_hex(int digits) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
            const char h = peek();
            int d = -1;
            if (h >= '0' && h <= '9') d = h - '0';
            else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
            if (d < 0) fail("expected hex digits");
            v = v * 16 + static_cast<uint32_t>(d);
            ++pos_;
        }
        if (v > k_max_codepoint) fail("escape beyond U+10FFFF");
        return v;
    }

    // A codepoint of the pattern text (UTF-8).
    uint32_t next_cp() {
        const auto c = static_cast<unsigned char>(src_[pos_]);
        if (c < 0x80) {
            ++pos_;
            return c;
        }
        // Well-formed only: a continuation byte missing is an error, not a guess.
        if (tok::utf8_sequence_status(src_, pos_) <= 0) fail("invalid UTF-8");
        return tok::decode_utf8(src_, pos_);
    }

    // After a backslash: a class escape (into `cls`, returns true) or one codepoint.
    bool parse_escape(Class& cls, uint32_t& cp, bool in_class) {
        if (at_end()) fail("trailing backslash");
        const char e = peek();
        ++pos_;
        switch (e) {
            case 'd': cls.ranges = k_digit; cls.approximated = true; return true;
            case 'w': cls.ranges = k_word; cls.approximated = true; return true;
            case 's': cls.ranges = k_space; cls.approximated = true; return true;
            case 'D': cls.ranges = k_not_digit_ascii; cls.approximated = true; return true;
            case 'W': cls.ranges = k_not_word_ascii; cls.approximated = true; return true;
            case 'S': cls.ranges = k_not_space_ascii; cls.approximated = true; return true;
            case 't': cp = '\t'; return false;
            case 'n': cp = '\n'; return false;
            case 'r': cp = '\r'; return false;
            case 'f': cp = '\f'; return false;
            case 'v': cp = '\v'; return false;
            case 'a': cp = '\a'; return false;
            case '0': cp = 0; return false;
            case 'x': cp = parse_hex(2); return false;
            case 'u': cp = parse_hex(4); return false;
            case 'U': cp = parse_hex(8); return false;
            case 'b':
                if (in_class) {
                    cp = '\b';
                    return false;
                }
                --pos_;
                fail("word boundaries (\\b) are not supported");
            default:
                if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '1' && e <= '9')) {
                    pos_ -= 2;
                    fail(std::string("escape '\\") + e + "' is not supported");
                }
                --pos_;
                cp = next_cp();  // an escaped punctuation character stands for itself
                return false;
        }
    }

    Expr parse_class() {
        const size_t start = pos_;
        ++pos_;  // [
        const bool negated = peek() == '^';
        if (negated) ++pos_;
        std::vector<CpRange> ranges;
        bool approximated = false;
        bool first = true;
        for (;;) {
            if (at_end()) {
                pos_ = start;
                fail("unterminated character class");
            }
            if (peek() == ']' && !first) break;
            if (peek() == '[' && peek(1) == ':') fail("POSIX classes are not supported");
            first = false;
            uint32_t lo = 0;
            Class cls;
            if (peek() == '\\') {
                ++pos_;
                if (parse_escape(cls, lo, true)) {
                    ranges.insert(ranges.end(), cls.ranges.begin(), cls.ranges.end());
                    approximated = approximated || cls.approximated;
                    continue;
                }
            } else {
                lo = next_cp();
            }
            uint32_t hi = lo;
            if (peek() == '-' && peek(1) != ']' && pos_ + 1 < src_.size()) {
                ++pos_;
                if (peek() == '\\') {
                    ++pos_;
                    if (parse_escape(cls, hi, true)) fail("a class escape cannot end a range");
                } else {
                    hi = next_cp();
                }
                if (hi < lo) fail("character range out of order");
            }
            ranges.push_back({lo, hi});
        }
        ++pos_;  // ]
        if (negated) {
            if (approximated) {
                pos_ = start;
                fail("\\d, \\w or \\s inside a negated class is not supported (Python reads them as Unicode)");
            }
            return chars(negate_ranges(ranges));
        }
        return chars(ranges);
    }

    Expr parse_atom() {
        const char c = peek();
        switch (c) {
            case '(': return parse_group();
            case '[': return parse_class();
            case '.':
                ++pos_;
                return chars({{0, '\n' - 1}, {'\n' + 1, k_max_codepoint}});
            case '*':
            case '+':
            case '?':
                fail(std::string("'") + c + "' with nothing to repeat");
            case '\\': {
                ++pos_;
                Class cls;
                uint32_t cp = 0;
                if (parse_escape(cls, cp, false)) return chars(cls.ranges);
                return chars({{cp, cp}});
            }
            default: {
                const uint32_t cp = next_cp();
                return chars({{cp, cp}});
            }
        }
    }

    static constexpr int k_max_nesting = 256;
    std::string_view src_;
    size_t pos_ = 0;
    int depth_ = 0;
    RegexMode mode_;
    GrammarIR& ir_;
};

// Appends \u00XX (any case of hex digits) for a control character.
Expr unicode_escape(uint32_t cp) {
    auto hex = [](uint32_t d) -> Expr {
        if (d < 10) return e_char('0' + d);
        return e_class({{'a' + d - 10, 'a' + d - 10}, {'A' + d - 10, 'A' + d - 10}});
    };
    return e_seq({e_lit("\\u"), hex((cp >> 12) & 15), hex((cp >> 8) & 15), hex((cp >> 4) & 15), hex(cp & 15)});
}

}  // namespace

std::vector<CpRange> json_string_raw(const std::vector<CpRange>& ranges_in) {
    // Raw: everything but the quote, the backslash and control characters.
    std::vector<CpRange> raw;
    for (const CpRange& r : normalize_ranges(ranges_in)) {
        for (CpRange part : negate_ranges({{0, 0x1F}, {'"', '"'}, {'\\', '\\'}})) {
            const uint32_t lo = std::max(r.lo, part.lo), hi = std::min(r.hi, part.hi);
            if (lo <= hi) raw.push_back({lo, hi});
        }
    }
    return raw;
}

std::vector<Expr> json_string_escapes(const std::vector<CpRange>& ranges_in) {
    const std::vector<CpRange> ranges = normalize_ranges(ranges_in);
    auto contains = [&](uint32_t cp) {
        for (const CpRange& r : ranges)
            if (cp >= r.lo && cp <= r.hi) return true;
        return false;
    };
    std::vector<Expr> alts;
    if (contains('"')) alts.push_back(e_lit("\\\""));
    if (contains('\\')) alts.push_back(e_lit("\\\\"));
    if (contains('/')) alts.push_back(e_lit("\\/"));
    static const std::pair<uint32_t, const char*> k_short[] = {
        {'\b', "\\b"}, {'\f', "\\f"}, {'\n', "\\n"}, {'\r', "\\r"}, {'\t', "\\t"}};
    for (uint32_t cp = 0; cp < 0x20; ++cp) {
        if (!contains(cp)) continue;
        for (auto [c, s] : k_short)
            if (c == cp) alts.push_back(e_lit(s));
        alts.push_back(unicode_escape(cp));
    }
    return alts;
}

Expr json_string_char(const std::vector<CpRange>& ranges) {
    std::vector<Expr> alts;
    const std::vector<CpRange> raw = json_string_raw(ranges);
    if (!raw.empty()) alts.push_back(e_class(raw));
    for (Expr& e : json_string_escapes(ranges)) alts.push_back(std::move(e));
    return e_alt(std::move(alts));
}

Expr regex_expr(std::string_view pattern, RegexMode mode, GrammarIR& ir) { return RegexParser(pattern, mode, ir).parse(); }

GrammarIR regex_grammar(std::string_view pattern) {
    GrammarIR ir;
    const uint32_t root = ir.add_rule("root");
    ir.root = root;
    ir.define(root, regex_expr(pattern, RegexMode::Whole, ir));
    return ir;
}

}  // namespace kiln::constrain
