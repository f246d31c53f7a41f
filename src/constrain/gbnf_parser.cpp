// GBNF, llama.cpp's grammar syntax, parsed into the grammar IR. The syntax and
// its escapes follow llama.cpp's grammar-parser (rules end at a newline unless
// inside parentheses or after `|`), so its grammars work unchanged; token
// references (<[id]>, <|name|>) are refused since a byte grammar cannot see
// token ids.
#include <string>

#include "constrain/grammar_ir.h"
#include "constrain/converters.h"
#include "constrain/program.h"
#include "kiln/constraint.h"
#include "kiln/error.h"

namespace kiln::constrain {


namespace {

bool is_word_char(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class GbnfParser {
public:
    explicit GbnfParser(std::string_view src, GrammarIR predefined = {}) : src_(src), ir_(std::move(predefined)) {
        first_use_.resize(ir_.rules.size(), 0);
    }

    GrammarIR parse(std::string_view root_name) {
        skip_space(true);
        while (pos_ < src_.size()) {
            parse_rule();
            skip_space(true);
        }
        for (uint32_t i = 0; i < ir_.rules.size(); ++i)
            if (!ir_.rules[i].defined) fail_at(first_use_[i], "undefined rule '" + ir_.rules[i].name + "'");
        const uint32_t root = ir_.find(root_name);
        if (root == UINT32_MAX) throw Error("GBNF: the grammar has no rule '" + std::string(root_name) + "'");
        ir_.root = root;
        return std::move(ir_);
    }

private:
    [[noreturn]] void fail_at(size_t at, const std::string& what) const {
        size_t line = 1, col = 1;
        for (size_t i = 0; i < at && i < src_.size(); ++i) {
            if (src_[i] == '\n') {
                ++line;
                col = 1;
            } else {
                ++col;
            }
        }
        throw Error("GBNF line " + std::to_string(line) + " column " + std::to_string(col) + ": " + what);
    }
    [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

    bool at_end() const { return pos_ >= src_.size(); }
    char peek(size_t ahead = 0) const { return pos_ + ahead < src_.size() ? src_[pos_ + ahead] : '\0'; }

    // Spaces, tabs and comments; newlines too when `newlines`.
    void skip_space(bool newlines) {
        while (!at_end()) {
            const char c = src_[pos_];
            if (c == ' ' || c == '\t') {
                ++pos_;
            } else if (c == '#') {
                while (!at_end() && src_[pos_] != '\n' && src_[pos_] != '\r') ++pos_;
            } else if (newlines && (c == '\n' || c == '\r')) {
                ++pos_;
            } else {
                break;
            }
        }
    }

    std::string parse_name() {
        const size_t start = pos_;
        while (!at_end() && is_word_char(src_[pos_])) ++pos_;
        if (pos_ == start) fail("expected a rule name");
        return std::string(src_.substr(start, pos_ - start));
    }

    uint32_t rule_id(const std::string& name, size_t at) {
        uint32_t id = ir_.find(name);
        if (id == UINT32_MAX) {
            id = ir_.add_rule(name);
            first_use_.resize(ir_.rules.size(), 0);
            first_use_[id] = at;
        }
        return id;
    }

    void parse_rule() {
        const size_t start = pos_;
        const std::string name = parse_name();
        skip_space(false);
        if (src_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '" + name + "'");
        pos_ += 3;
        skip_space(true);
        const uint32_t id = rule_id(name, start);
        if (ir_.rules[id].defined) fail_at(start, "rule '" + name + "' is defined twice");
        Expr body = parse_alternates(false);
        ir_.define(id, std::move(body));
        if (!at_end() && peek() != '\n' && peek() != '\r') fail("expected a newline or the end after rule '" + name + "'");
    }

    Expr parse_alternates(bool nested) {
        std::vector<Expr> alts;
        alts.push_back(parse_sequence(nested));
        while (peek() == '|') {
            ++pos_;
            skip_space(true);
            alts.push_back(parse_sequence(nested));
        }
        if (alts.size() == 1) return std::move(alts[0]);
        Expr e;
        e.kind = Expr::Kind::Alt;
        e.items = std::move(alts);  // kept unflattened: each is one alternative
        return e;
    }

    // A codepoint of the grammar text: an escape or one UTF-8 character.
    uint32_t parse_char() {
        if (at_end()) fail("unexpected end of the grammar");
        const auto c = static_cast<unsigned char>(src_[pos_]);
        if (c == '\\') {
            const size_t at = pos_;
            ++pos_;
            const char e = peek();
            ++pos_;
            switch (e) {
                case 'x': return parse_hex(2, at);
                case 'u': return parse_hex(4, at);
                case 'U': return parse_hex(8, at);
                case 't': return '\t';
                case 'r': return '\r';
                case 'n': return '\n';
                case '\\': return '\\';
                case '"': return '"';
                case '[': return '[';
                case ']': return ']';
                case '-': return '-';
                case '^': return '^';
                default: fail_at(at, std::string("unknown escape '\\") + (e ? std::string(1, e) : std::string()) + "'");
            }
        }
        if (c < 0x80) {
            ++pos_;
            return c;
        }
        if (tok::utf8_sequence_status(src_, pos_) <= 0) fail("invalid UTF-8 in the grammar");
        return tok::decode_utf8(src_, pos_);
    }

    uint32_t parse_hex(int digits, size_t at) {
        uint32_t v = 0;
        for (int i = 0; i < digits; ++i) {
            const char h = peek();
            int d = -1;
            if (h >= '0' && h <= '9') d = h - '0';
            else if (h >= 'a' && h <= 'f') d = h - 'a' + 10;
            else if (h >= 'A' && h <= 'F') d = h - 'A' + 10;
            if (d < 0) fail_at(at, "expected " + std::to_string(digits) + " hex digits in escape");
            v = v * 16 + static_cast<uint32_t>(d);
            ++pos_;
        }
        if (v > k_max_codepoint) fail_at(at, "escape beyond U+10FFFF");
        return v;
    }

    uint32_t parse_int() {
        const size_t start = pos_;
        uint64_t v = 0;
        while (peek() >= '0' && peek() <= '9') {
            v = v * 10 + static_cast<uint64_t>(peek() - '0');
            if (v > 100000) fail_at(start, "repetition count too large (at most 100000)");
            ++pos_;
        }
        if (pos_ == start) fail("expected a number");
        return static_cast<uint32_t>(v);
    }

    Expr parse_sequence(bool nested) {
        std::vector<Expr> items;
        while (!at_end()) {
            const char c = peek();
            const size_t at = pos_;
            if (c == '"') {
                ++pos_;
                std::string bytes;
                while (!at_end() && peek() != '"') append_utf8(bytes, parse_char());
                if (at_end()) fail_at(at, "unterminated literal");
                ++pos_;
                items.push_back(e_lit(bytes));
            } else if (c == '[') {
                ++pos_;
                const bool negated = peek() == '^';
                if (negated) ++pos_;
                std::vector<CpRange> ranges;
                while (!at_end() && peek() != ']') {
                    const uint32_t lo = parse_char();
                    uint32_t hi = lo;
                    if (peek() == '-' && peek(1) != ']' && pos_ + 1 < src_.size()) {
                        ++pos_;
                        hi = parse_char();
                        if (hi < lo) fail_at(at, "character range out of order");
                    }
                    ranges.push_back({lo, hi});
                }
                if (at_end()) fail_at(at, "unterminated character class");
                ++pos_;
                items.push_back(e_class(negated ? negate_ranges(ranges) : ranges));
            } else if (c == '.') {
                ++pos_;
                items.push_back(e_class({{0, k_max_codepoint}}));
            } else if (is_word_char(c)) {
                const std::string name = parse_name();
                items.push_back(e_ref(rule_id(name, at)));
            } else if (c == '(') {
                ++pos_;
                skip_space(true);
                // Untrusted text: nesting is bounded so the recursion cannot exhaust the stack.
                if (++depth_ > k_max_nesting) fail_at(at, "groups nested deeper than " + std::to_string(k_max_nesting));
                Expr inner = parse_alternates(true);
                --depth_;
                if (peek() != ')') fail_at(at, "expected ')' to close the group");
                ++pos_;
                // A group is one item, even when it is a sequence.
                Expr group;
                group.kind = Expr::Kind::Alt;
                group.items.push_back(std::move(inner));
                items.push_back(std::move(group));
            } else if (c == '*' || c == '+' || c == '?' || c == '{') {
                if (items.empty()) fail(std::string("'") + c + "' with nothing before it to repeat");
                ++pos_;
                uint32_t min = 0, max = k_unbounded;
                if (c == '+') min = 1;
                else if (c == '?') max = 1;
                else if (c == '{') {
                    skip_space(nested);
                    min = parse_int();
                    skip_space(nested);
                    max = min;
                    if (peek() == ',') {
                        ++pos_;
                        skip_space(nested);
                        max = peek() == '}' ? k_unbounded : parse_int();
                        skip_space(nested);
                    }
                    if (peek() != '}') fail_at(at, "expected '}' to close the repetition");
                    ++pos_;
                    if (max < min) fail_at(at, "repetition with maximum below minimum");
                }
                Expr last = std::move(items.back());
                items.pop_back();
                items.push_back(e_repeat(std::move(last), min, max));
            } else if (c == '<' || (c == '!' && peek(1) == '<')) {
                fail("token references (<...>) are not supported: the grammar is matched on bytes");
            } else {
                break;
            }
            skip_space(nested);
        }
        // A group left as a one-item Alt prints and lowers like its content.
        for (Expr& it : items)
            if (it.kind == Expr::Kind::Alt && it.items.size() == 1) {
                Expr inner = std::move(it.items[0]);
                it = std::move(inner);
            }
        return e_seq(std::move(items));
    }

    static constexpr int k_max_nesting = 256;
    std::string_view src_;
    size_t pos_ = 0;
    int depth_ = 0;
    GrammarIR ir_;
    std::vector<size_t> first_use_;
};

}  // namespace

GrammarIR parse_gbnf(std::string_view text, std::string_view root) { return GbnfParser(text).parse(root); }

GrammarIR parse_gbnf(std::string_view text, std::string_view root, GrammarIR predefined) {
    return GbnfParser(text, std::move(predefined)).parse(root);
}

}  // namespace kiln::constrain
