#include "chat/jinja/lexer.h"

#include <cmath>
#include <cstdlib>

#include "chat/jinja/error.h"
#include "chat/jinja/text.h"

namespace kiln::jinja {

std::string normalize_source(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (size_t i = 0; i < source.size(); ++i) {
        char c = source[i];
        if (c == '\r') {
            out.push_back('\n');
            if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
        } else {
            out.push_back(c);
        }
    }
    if (!out.empty() && out.back() == '\n') out.pop_back();
    return out;
}

void offset_to_line_col(const std::string& source, uint32_t offset, uint32_t& line, uint32_t& col) {
    line = 1;
    size_t line_start = 0;
    const size_t end = std::min<size_t>(offset, source.size());
    for (size_t i = 0; i < end; ++i) {
        if (source[i] == '\n') {
            ++line;
            line_start = i + 1;
        }
    }
    col = static_cast<uint32_t>(text::length(std::string_view(source).substr(line_start, end - line_start))) + 1;
}

std::string_view token_name(Tok t) {
    switch (t) {
        case Tok::Data: return "template data";
        case Tok::VarBegin: return "begin of print statement";
        case Tok::VarEnd: return "end of print statement";
        case Tok::BlockBegin: return "begin of statement block";
        case Tok::BlockEnd: return "end of statement block";
        case Tok::Name: return "name";
        case Tok::String: return "string";
        case Tok::Int: return "integer";
        case Tok::Float: return "float";
        case Tok::Add: return "'+'";
        case Tok::Sub: return "'-'";
        case Tok::Mul: return "'*'";
        case Tok::Div: return "'/'";
        case Tok::FloorDiv: return "'//'";
        case Tok::Mod: return "'%'";
        case Tok::Pow: return "'**'";
        case Tok::Tilde: return "'~'";
        case Tok::LBracket: return "'['";
        case Tok::RBracket: return "']'";
        case Tok::LParen: return "'('";
        case Tok::RParen: return "')'";
        case Tok::LBrace: return "'{'";
        case Tok::RBrace: return "'}'";
        case Tok::Eq: return "'=='";
        case Tok::Ne: return "'!='";
        case Tok::Gt: return "'>'";
        case Tok::Ge: return "'>='";
        case Tok::Lt: return "'<'";
        case Tok::Le: return "'<='";
        case Tok::Assign: return "'='";
        case Tok::Dot: return "'.'";
        case Tok::Colon: return "':'";
        case Tok::Pipe: return "'|'";
        case Tok::Comma: return "','";
        case Tok::Semicolon: return "';'";
        case Tok::Eof: return "end of template";
    }
    return "token";
}

namespace {

class Lexer {
public:
    explicit Lexer(const std::string& src) : s_(src) {}

    std::vector<Token> run() {
        while (pos_ < s_.size()) lex_root();
        Token eof;
        eof.type = Tok::Eof;
        eof.offset = static_cast<uint32_t>(s_.size());
        out_.push_back(std::move(eof));
        return std::move(out_);
    }

private:
    const std::string& s_;
    size_t pos_ = 0;
    bool line_starting_ = true;
    bool raw_line_starting_ = false;
    std::vector<Token> out_;

    [[noreturn]] void error(size_t at, const std::string& msg) {
        uint32_t line, col;
        offset_to_line_col(s_, static_cast<uint32_t>(at), line, col);
        throw TemplateError(msg, line, col);
    }

    bool at(size_t i, std::string_view lit) const { return s_.compare(i, lit.size(), lit) == 0; }

    // Python's \s, as the re module applies it to str (Unicode whitespace).
    bool space_at(size_t i, size_t& len) const {
        size_t j = i;
        uint32_t c = text::decode(s_, j);
        len = j - i;
        return text::is_space(c);
    }
    size_t skip_space(size_t i) const {
        size_t len;
        while (i < s_.size() && space_at(i, len)) i += len;
        return i;
    }

    void emit(Tok t, size_t offset) {
        Token tok;
        tok.type = t;
        tok.offset = static_cast<uint32_t>(offset);
        out_.push_back(std::move(tok));
    }

    void emit_data(std::string_view data, size_t offset, bool raw = false) {
        if (data.empty()) return;
        Token tok;
        tok.type = Tok::Data;
        tok.offset = static_cast<uint32_t>(offset);
        tok.text = std::string(data);
        tok.raw = raw;
        out_.push_back(std::move(tok));
    }

    // Whitespace control on the data before a tag: '-' strips all trailing
    // whitespace; otherwise lstrip_blocks strips the spaces between the last
    // newline and a block or comment tag.
    std::string_view control_before(std::string_view text, char sign, bool lstrip_applies) {
        if (sign == '-') return text::strip(text, nullptr, false, true);
        if (sign != '+' && lstrip_applies) {
            size_t nl = text.rfind('\n');
            size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
            if (l_pos > 0 || line_starting_) {
                std::string_view tail = text.substr(l_pos);
                if (!tail.empty()) {
                    bool all_space = true;
                    for (size_t i = 0; i < tail.size();) {
                        if (!text::is_space(text::decode(tail, i))) {
                            all_space = false;
                            break;
                        }
                    }
                    if (all_space) return text.substr(0, l_pos);
                }
            }
        }
        return text;
    }

    // "{% raw %}" at i (with optional -/+ and spaces); returns the end of the opening tag.
    bool match_raw_open(size_t i, char& sign, size_t& body_start) {
        if (!at(i, "{%")) return false;
        size_t j = i + 2;
        sign = 0;
        if (j < s_.size() && (s_[j] == '-' || s_[j] == '+')) sign = s_[j++];
        j = skip_space(j);
        if (!at(j, "raw")) return false;
        j += 3;
        size_t k = skip_space(j);
        if (at(k, "-%}")) {
            body_start = skip_space(k + 3);
            raw_line_starting_ = body_start > k + 3 && s_[body_start - 1] == '\n';
            return true;
        }
        if (at(k, "%}")) {
            body_start = k + 2;  // no trim_blocks newline for the raw opener (as jinja2)
            raw_line_starting_ = false;
            return true;
        }
        return false;
    }

    void lex_root() {
        // Find the first tag opener.
        size_t i = pos_;
        while (true) {
            i = s_.find('{', i);
            if (i == std::string::npos || i + 1 >= s_.size()) {
                emit_data(std::string_view(s_).substr(pos_), pos_);
                pos_ = s_.size();
                return;
            }
            char c = s_[i + 1];
            if (c == '{' || c == '%' || c == '#') break;
            ++i;
        }
        std::string_view before = std::string_view(s_).substr(pos_, i - pos_);
        const size_t data_offset = pos_;
        const char kind = s_[i + 1];
        char sign = 0;
        if (i + 2 < s_.size() && (s_[i + 2] == '-' || s_[i + 2] == '+')) sign = s_[i + 2];

        size_t raw_body = 0;
        char raw_sign = 0;
        if (kind == '%' && match_raw_open(i, raw_sign, raw_body)) {
            emit_data(control_before(before, raw_sign, true), data_offset);
            line_starting_ = raw_line_starting_;
            lex_raw(i, raw_body);
            return;
        }
        emit_data(control_before(before, sign, kind != '{'), data_offset);
        size_t after = i + 2 + (sign ? 1 : 0);
        line_starting_ = false;
        if (kind == '#') {
            lex_comment(i, after);
        } else {
            lex_tag(kind == '{' ? Tok::VarBegin : Tok::BlockBegin, i, after);
        }
    }

    void lex_raw(size_t open, size_t body) {
        // Find "{%(-|+)? endraw (-|+)?%}".
        size_t i = body;
        while (true) {
            i = s_.find("{%", i);
            if (i == std::string::npos) error(open, "Missing end of raw directive");
            size_t j = i + 2;
            char sign = 0;
            if (j < s_.size() && (s_[j] == '-' || s_[j] == '+')) sign = s_[j++];
            j = skip_space(j);
            if (!at(j, "endraw")) {
                i += 2;
                continue;
            }
            size_t k = skip_space(j + 6);
            size_t end;
            bool starts_line = false;
            if (at(k, "+%}")) {
                end = k + 3;
            } else if (at(k, "-%}")) {
                end = skip_space(k + 3);
                starts_line = end > k + 3 && s_[end - 1] == '\n';
            } else if (at(k, "%}")) {
                end = k + 2;
                if (end < s_.size() && s_[end] == '\n') {
                    ++end;
                    starts_line = true;
                }
            } else {
                i += 2;
                continue;
            }
            std::string_view data = std::string_view(s_).substr(body, i - body);
            emit_data(control_before(data, sign, true), body, true);
            pos_ = end;
            line_starting_ = starts_line;
            return;
        }
    }

    void lex_comment(size_t open, size_t i) {
        while (true) {
            size_t e = s_.find("#}", i);
            if (e == std::string::npos) error(open, "Missing end of comment tag");
            size_t end;
            if (e > i && s_[e - 1] == '-') {
                end = skip_space(e + 2);
                line_starting_ = end > e + 2 && s_[end - 1] == '\n';
            } else if (e > i && s_[e - 1] == '+') {
                end = e + 2;
                line_starting_ = false;
            } else {
                end = e + 2;
                line_starting_ = false;
                if (end < s_.size() && s_[end] == '\n') {
                    ++end;
                    line_starting_ = true;
                }
            }
            pos_ = end;
            return;
        }
    }

    void lex_tag(Tok begin, size_t open, size_t i) {
        emit(begin, open);
        const bool block = begin == Tok::BlockBegin;
        std::vector<char> balance;
        while (true) {
            if (i >= s_.size()) {
                pos_ = s_.size();  // the parser reports the missing end tag
                return;
            }
            if (balance.empty()) {
                if (block) {
                    if (at(i, "+%}")) {
                        emit(Tok::BlockEnd, i);
                        pos_ = i + 3;
                        line_starting_ = false;
                        return;
                    }
                    if (at(i, "-%}")) {
                        emit(Tok::BlockEnd, i);
                        size_t e = skip_space(i + 3);
                        line_starting_ = e > i + 3 && s_[e - 1] == '\n';
                        pos_ = e;
                        return;
                    }
                    if (at(i, "%}")) {
                        emit(Tok::BlockEnd, i);
                        size_t e = i + 2;
                        line_starting_ = false;
                        if (e < s_.size() && s_[e] == '\n') {
                            ++e;
                            line_starting_ = true;
                        }
                        pos_ = e;
                        return;
                    }
                } else {
                    if (at(i, "-}}")) {
                        emit(Tok::VarEnd, i);
                        size_t e = skip_space(i + 3);
                        line_starting_ = e > i + 3 && s_[e - 1] == '\n';
                        pos_ = e;
                        return;
                    }
                    if (at(i, "}}")) {
                        emit(Tok::VarEnd, i);
                        pos_ = i + 2;
                        line_starting_ = false;
                        return;
                    }
                }
            }
            size_t len;
            if (space_at(i, len)) {
                i += len;
                continue;
            }
            i = lex_token(i, balance);
        }
    }

    static bool is_digit(char c) { return c >= '0' && c <= '9'; }

    // Digits with single '_' separators: (\d+_)*\d+ ; returns the end or start on no match.
    size_t digits(size_t i) const {
        size_t j = i;
        if (j >= s_.size() || !is_digit(s_[j])) return i;
        while (true) {
            while (j < s_.size() && is_digit(s_[j])) ++j;
            if (j + 1 < s_.size() && s_[j] == '_' && is_digit(s_[j + 1])) {
                ++j;
                continue;
            }
            return j;
        }
    }

    static std::string without_underscores(std::string_view v) {
        std::string out;
        for (char c : v)
            if (c != '_') out.push_back(c);
        return out;
    }

    bool lex_float(size_t i, size_t& end) {
        if (i > 0 && s_[i - 1] == '.') return false;
        size_t j = digits(i);
        if (j == i) return false;
        // fraction
        size_t frac_end = j;
        if (j < s_.size() && s_[j] == '.') {
            size_t k = digits(j + 1);
            if (k > j + 1) frac_end = k;
        }
        // exponent
        size_t e = frac_end;
        if (e < s_.size() && (s_[e] == 'e' || s_[e] == 'E')) {
            size_t k = e + 1;
            if (k < s_.size() && (s_[k] == '+' || s_[k] == '-')) ++k;
            size_t m = digits(k);
            if (m > k) {
                end = m;
                return true;
            }
        }
        if (frac_end > j) {
            end = frac_end;
            return true;
        }
        return false;
    }

    size_t lex_token(size_t i, std::vector<char>& balance) {
        const char c = s_[i];
        Token tok;
        tok.offset = static_cast<uint32_t>(i);
        // numbers
        size_t fend;
        if (is_digit(c) && lex_float(i, fend)) {
            tok.type = Tok::Float;
            std::string v = without_underscores(std::string_view(s_).substr(i, fend - i));
            tok.fval = std::strtod(v.c_str(), nullptr);
            out_.push_back(std::move(tok));
            return fend;
        }
        if (is_digit(c)) return lex_int(i, std::move(tok));
        // names
        {
            size_t j = i;
            uint32_t cp = text::decode(s_, j);
            if (text::is_identifier_start(cp)) {
                size_t k = j;
                while (k < s_.size()) {
                    size_t m = k;
                    uint32_t d = text::decode(s_, m);
                    if (!text::is_identifier_char(d)) break;
                    k = m;
                }
                tok.type = Tok::Name;
                tok.text = s_.substr(i, k - i);
                out_.push_back(std::move(tok));
                return k;
            }
        }
        if (c == '\'' || c == '"') return lex_string(i, std::move(tok));
        // operators, longest first
        struct Op {
            const char* text;
            Tok type;
        };
        static const Op ops[] = {
            {"//", Tok::FloorDiv}, {"**", Tok::Pow}, {"==", Tok::Eq},     {"!=", Tok::Ne},
            {">=", Tok::Ge},       {"<=", Tok::Le},  {"+", Tok::Add},     {"-", Tok::Sub},
            {"/", Tok::Div},       {"*", Tok::Mul},  {"%", Tok::Mod},     {"~", Tok::Tilde},
            {"[", Tok::LBracket},  {"]", Tok::RBracket}, {"(", Tok::LParen}, {")", Tok::RParen},
            {"{", Tok::LBrace},    {"}", Tok::RBrace},   {">", Tok::Gt},     {"<", Tok::Lt},
            {"=", Tok::Assign},    {".", Tok::Dot},      {":", Tok::Colon},  {"|", Tok::Pipe},
            {",", Tok::Comma},     {";", Tok::Semicolon},
        };
        for (const Op& op : ops) {
            std::string_view t(op.text);
            if (!at(i, t)) continue;
            tok.type = op.type;
            if (op.type == Tok::LBrace) balance.push_back('}');
            else if (op.type == Tok::LParen) balance.push_back(')');
            else if (op.type == Tok::LBracket) balance.push_back(']');
            else if (op.type == Tok::RBrace || op.type == Tok::RParen || op.type == Tok::RBracket) {
                if (balance.empty()) error(i, std::string("unexpected '") + t[0] + "'");
                char expected = balance.back();
                balance.pop_back();
                if (expected != t[0])
                    error(i, std::string("unexpected '") + t[0] + "', expected '" + expected + "'");
            }
            out_.push_back(std::move(tok));
            return i + t.size();
        }
        size_t j = i;
        uint32_t cp = text::decode(s_, j);
        std::string shown;
        text::encode(shown, cp);
        error(i, "unexpected char '" + shown + "'");
    }

    size_t lex_int(size_t i, Token tok) {
        tok.type = Tok::Int;
        auto lower = [&](size_t k) { return k < s_.size() ? static_cast<char>(s_[k] | 0x20) : '\0'; };
        int base = 10;
        size_t j = i;
        if (s_[i] == '0' && (lower(i + 1) == 'b' || lower(i + 1) == 'o' || lower(i + 1) == 'x')) {
            base = lower(i + 1) == 'b' ? 2 : (lower(i + 1) == 'o' ? 8 : 16);
            auto ok = [&](char ch) {
                ch = static_cast<char>(ch | 0x20);
                if (base == 2) return ch == '0' || ch == '1';
                if (base == 8) return ch >= '0' && ch <= '7';
                return is_digit(ch) || (ch >= 'a' && ch <= 'f');
            };
            size_t k = i + 2;
            size_t last_good = 0;
            while (k < s_.size()) {
                if (s_[k] == '_' && k + 1 < s_.size() && ok(s_[k + 1])) {
                    k += 2;
                    last_good = k;
                } else if (ok(s_[k])) {
                    ++k;
                    last_good = k;
                } else {
                    break;
                }
            }
            if (last_good) {
                j = last_good;
                std::string v = without_underscores(std::string_view(s_).substr(i + 2, j - i - 2));
                parse_int(i, v, base, tok);
                out_.push_back(std::move(tok));
                return j;
            }
            // "0b" with no digits: just the zero
        }
        if (s_[i] == '0') {
            // 0(_?0)*
            j = i + 1;
            while (j < s_.size()) {
                if (s_[j] == '0') ++j;
                else if (s_[j] == '_' && j + 1 < s_.size() && s_[j + 1] == '0') j += 2;
                else break;
            }
            tok.ival = 0;
            out_.push_back(std::move(tok));
            return j;
        }
        j = digits(i);
        std::string v = without_underscores(std::string_view(s_).substr(i, j - i));
        parse_int(i, v, 10, tok);
        out_.push_back(std::move(tok));
        return j;
    }

    void parse_int(size_t at_offset, const std::string& digits_text, int base, Token& tok) {
        errno = 0;
        char* end = nullptr;
        unsigned long long v = std::strtoull(digits_text.c_str(), &end, base);
        if (errno == ERANGE || v > 9223372036854775807ull)
            error(at_offset, "integer literal too large (kiln supports 64-bit integers)");
        tok.ival = static_cast<int64_t>(v);
    }

    size_t lex_string(size_t i, Token tok) {
        const char q = s_[i];
        size_t j = i + 1;
        while (true) {
            if (j >= s_.size()) error(i, "unexpected char '" + std::string(1, q) + "'");
            if (s_[j] == '\\') {
                j += 2;
                continue;
            }
            if (s_[j] == q) break;
            ++j;
        }
        tok.type = Tok::String;
        tok.text = unescape(std::string_view(s_).substr(i + 1, j - i - 1), i);
        out_.push_back(std::move(tok));
        return j + 1;
    }

    static int hex_value(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        c = static_cast<char>(c | 0x20);
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        return -1;
    }

    // Python's "unicode-escape" decoding, as jinja2 applies it to string literals.
    std::string unescape(std::string_view v, size_t at_offset) {
        std::string out;
        out.reserve(v.size());
        for (size_t i = 0; i < v.size();) {
            char c = v[i];
            if (c != '\\' || i + 1 >= v.size()) {
                out.push_back(c);
                ++i;
                continue;
            }
            char e = v[i + 1];
            i += 2;
            switch (e) {
                case '\n': break;  // line continuation
                case '\\': out.push_back('\\'); break;
                case '\'': out.push_back('\''); break;
                case '"': out.push_back('"'); break;
                case 'a': out.push_back('\a'); break;
                case 'b': out.push_back('\b'); break;
                case 'f': out.push_back('\f'); break;
                case 'n': out.push_back('\n'); break;
                case 'r': out.push_back('\r'); break;
                case 't': out.push_back('\t'); break;
                case 'v': out.push_back('\v'); break;
                case 'x':
                case 'u':
                case 'U': {
                    size_t n = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
                    uint32_t cp = 0;
                    for (size_t k = 0; k < n; ++k) {
                        int h = i + k < v.size() ? hex_value(v[i + k]) : -1;
                        if (h < 0) {
                            error(at_offset, std::string("(unicode error) 'unicodeescape' codec can't decode bytes: truncated \\") +
                                                 e + (e == 'x' ? "XX" : (e == 'u' ? "XXXX" : "XXXXXXXX")) + " escape");
                        }
                        cp = cp * 16 + static_cast<uint32_t>(h);
                    }
                    if (cp > 0x10FFFF) error(at_offset, "(unicode error) 'unicodeescape' codec can't decode bytes: illegal Unicode character");
                    i += n;
                    text::encode(out, cp);
                    break;
                }
                case 'N': error(at_offset, "\\N{...} escapes are not supported");
                default:
                    if (e >= '0' && e <= '7') {
                        uint32_t cp = static_cast<uint32_t>(e - '0');
                        for (int k = 0; k < 2 && i < v.size() && v[i] >= '0' && v[i] <= '7'; ++k, ++i)
                            cp = cp * 8 + static_cast<uint32_t>(v[i] - '0');
                        text::encode(out, cp);
                    } else if (static_cast<unsigned char>(e) >= 0x80) {
                        // jinja2 backslash-escapes non-ASCII text before decoding, so "\é"
                        // becomes a backslash followed by the escape's letters.
                        size_t k = i - 1;
                        uint32_t cp = text::decode(v, k);
                        char buf[16];
                        if (cp <= 0xFF) std::snprintf(buf, sizeof buf, "\\x%02x", cp);
                        else if (cp <= 0xFFFF) std::snprintf(buf, sizeof buf, "\\u%04x", cp);
                        else std::snprintf(buf, sizeof buf, "\\U%08x", cp);
                        out += buf;
                        i = k;
                    } else {
                        out.push_back('\\');  // unknown escapes are kept
                        out.push_back(e);
                    }
            }
        }
        return out;
    }
};

}  // namespace

std::vector<Token> tokenize(const std::string& source) { return Lexer(source).run(); }

}  // namespace kiln::jinja
