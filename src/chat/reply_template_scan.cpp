#include "chat/reply_template_scan.h"

#include <map>

#include "chat/reply_text.h"

namespace kiln::reply_detail {

namespace {

bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || (c >= '0' && c <= '9'); }
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Position of the tag closer ("%}" or "}}") from `i`, skipping string literals;
// npos when the tag never closes.
size_t find_closer(std::string_view s, size_t i, char closer) {
    char quote = 0;
    for (; i < s.size(); ++i) {
        char c = s[i];
        if (quote) {
            if (c == '\\') {
                ++i;
            } else if (c == quote) {
                quote = 0;
            }
            continue;
        }
        if (c == '\'' || c == '"') {
            quote = c;
        } else if (c == closer && i + 1 < s.size() && s[i + 1] == '}') {
            return i;
        }
    }
    return std::string_view::npos;
}

// Tokenizes the inside of a tag. Jinja string escapes follow Python's.
std::vector<TemplateToken> tokenize(std::string_view s) {
    std::vector<TemplateToken> out;
    size_t i = 0;
    while (i < s.size()) {
        char c = s[i];
        if (is_space(c)) {
            ++i;
            continue;
        }
        TemplateToken tok;
        if (is_ident_start(c)) {
            size_t j = i;
            while (j < s.size() && is_ident_char(s[j])) ++j;
            tok.kind = TemplateToken::Kind::Ident;
            tok.text = std::string(s.substr(i, j - i));
            tok.attribute = !out.empty() && out.back().kind == TemplateToken::Kind::Op && out.back().text == ".";
            i = j;
        } else if (c >= '0' && c <= '9') {
            size_t j = i;
            while (j < s.size() && (is_ident_char(s[j]) || s[j] == '.')) ++j;
            tok.kind = TemplateToken::Kind::Number;
            tok.text = std::string(s.substr(i, j - i));
            i = j;
        } else if (c == '\'' || c == '"') {
            tok.kind = TemplateToken::Kind::String;
            size_t j = i + 1;
            while (j < s.size() && s[j] != c) {
                if (s[j] == '\\' && j + 1 < s.size()) {
                    char e = s[j + 1];
                    j += 2;
                    switch (e) {
                        case 'n': tok.text += '\n'; break;
                        case 't': tok.text += '\t'; break;
                        case 'r': tok.text += '\r'; break;
                        case '\\': tok.text += '\\'; break;
                        case '\'': tok.text += '\''; break;
                        case '"': tok.text += '"'; break;
                        case 'u':
                        case 'x': {
                            size_t n = e == 'u' ? 4 : 2;
                            unsigned cp = 0;
                            bool ok = j + n <= s.size();
                            for (size_t k = 0; ok && k < n; ++k) {
                                int h = hex_value(s[j + k]);
                                ok = h >= 0;
                                cp = cp * 16 + static_cast<unsigned>(h < 0 ? 0 : h);
                            }
                            if (ok) {
                                append_utf8(tok.text, cp);
                                j += n;
                            } else {
                                tok.text += '\\';
                                tok.text += e;
                            }
                            break;
                        }
                        default:
                            tok.text += '\\';
                            tok.text += e;
                    }
                } else {
                    tok.text += s[j++];
                }
            }
            i = j < s.size() ? j + 1 : j;
        } else {
            tok.kind = TemplateToken::Kind::Op;
            static const char* const two_char[] = {"==", "!=", "<=", ">=", "//", "**"};
            tok.text = std::string(1, c);
            for (const char* op : two_char)
                if (i + 1 < s.size() && s[i] == op[0] && s[i + 1] == op[1]) tok.text = op;
            i += tok.text.size();
        }
        out.push_back(std::move(tok));
    }
    return out;
}

bool is_block_opener(const std::string& kw, const std::vector<TemplateToken>& tokens) {
    if (kw == "set") {
        // {% set x %}…{% endset %} opens a block; {% set x = … %} does not.
        for (const TemplateToken& t : tokens)
            if (t.kind == TemplateToken::Kind::Op && t.text == "=") return false;
        return true;
    }
    return kw == "if" || kw == "for" || kw == "macro" || kw == "call" || kw == "filter" || kw == "with" ||
           kw == "generation" || kw == "block";
}

bool is_block_closer(const std::string& kw) {
    return kw == "endif" || kw == "endfor" || kw == "endmacro" || kw == "endcall" || kw == "endfilter" ||
           kw == "endwith" || kw == "endgeneration" || kw == "endblock" || kw == "endset";
}

// A non-attribute identifier that is read, not assigned as a keyword argument.
bool reads_ident(const std::vector<TemplateToken>& tokens, size_t i, std::string_view name) {
    const TemplateToken& t = tokens[i];
    if (t.kind != TemplateToken::Kind::Ident || t.attribute || t.text != name) return false;
    bool kwarg = i + 1 < tokens.size() && tokens[i + 1].kind == TemplateToken::Kind::Op && tokens[i + 1].text == "=";
    return !kwarg;
}

}  // namespace

std::string TemplatePiece::keyword() const {
    if (kind != Kind::Statement || tokens.empty() || tokens[0].kind != TemplateToken::Kind::Ident) return "";
    return tokens[0].text;
}

TemplateScan::TemplateScan(std::string_view source) : source_(source) {
    auto add_text = [&](std::string_view raw) {
        if (raw.empty()) return;
        TemplatePiece p;
        p.kind = TemplatePiece::Kind::Text;
        p.text = std::string(raw);
        text_ += p.text;
        text_ += '\x01';
        pieces_.push_back(std::move(p));
    };
    size_t i = 0;
    while (i < source.size()) {
        size_t open = source.find('{', i);
        while (open != std::string_view::npos && open + 1 < source.size() && source[open + 1] != '{' &&
               source[open + 1] != '%' && source[open + 1] != '#')
            open = source.find('{', open + 1);
        if (open == std::string_view::npos || open + 1 >= source.size()) {
            add_text(source.substr(i));
            break;
        }
        add_text(source.substr(i, open - i));
        char kind = source[open + 1];
        if (kind == '#') {
            size_t end = source.find("#}", open + 2);
            if (end == std::string_view::npos) break;  // an unclosed comment swallows the rest
            i = end + 2;
            continue;
        }
        char closer = kind == '%' ? '%' : '}';
        size_t end = find_closer(source, open + 2, closer);
        if (end == std::string_view::npos) {
            add_text(source.substr(open));
            break;
        }
        std::string_view inner = source.substr(open + 2, end - open - 2);
        if (!inner.empty() && (inner.front() == '-' || inner.front() == '+')) inner.remove_prefix(1);
        if (!inner.empty() && (inner.back() == '-' || inner.back() == '+')) inner.remove_suffix(1);
        TemplatePiece p;
        p.kind = kind == '%' ? TemplatePiece::Kind::Statement : TemplatePiece::Kind::Expression;
        p.tokens = tokenize(inner);
        for (const TemplateToken& t : p.tokens)
            if (t.kind == TemplateToken::Kind::String) {
                text_ += t.text;
                text_ += '\x01';
            }
        i = end + 2;
        if (p.keyword() == "raw") {
            // {% raw %}…{% endraw %}: the body is literal text.
            size_t stop = source.find("endraw", i);
            size_t body_end = stop == std::string_view::npos ? source.size() : source.rfind('{', stop);
            if (body_end == std::string_view::npos || body_end < i) body_end = stop;
            add_text(source.substr(i, body_end - i));
            size_t after = stop == std::string_view::npos ? std::string_view::npos : source.find("}", stop);
            i = after == std::string_view::npos ? source.size() : after + 1;
            continue;
        }
        pieces_.push_back(std::move(p));
    }
}

bool TemplateScan::reads_variable(std::string_view name) const {
    int depth = 0;
    for (const TemplatePiece& p : pieces_) {
        if (p.kind == TemplatePiece::Kind::Text) continue;
        const auto& tk = p.tokens;
        size_t from = 0;
        std::string kw = p.keyword();
        if (kw == "set" && tk.size() >= 3 && tk[1].kind == TemplateToken::Kind::Ident && !tk[1].attribute &&
            tk[1].text == name && tk[2].kind == TemplateToken::Kind::Op && tk[2].text == "=") {
            bool rhs_reads = false;
            for (size_t i = 3; i < tk.size(); ++i) rhs_reads = rhs_reads || reads_ident(tk, i, name);
            // Overwritten at top level before anything read it: what the caller
            // passes never reaches the template.
            if (!rhs_reads && depth == 0) return false;
            if (rhs_reads) return true;
            from = 3;
        }
        for (size_t i = from; i < tk.size(); ++i)
            if (reads_ident(tk, i, name)) return true;
        if (is_block_opener(kw, tk)) ++depth;
        if (is_block_closer(kw) && depth > 0) --depth;
    }
    return false;
}

std::vector<std::string> TemplateScan::generation_prompt_endings() const {
    // Aliases: {% set name = 'literal' %}.
    std::map<std::string, std::string, std::less<>> aliases;
    for (const TemplatePiece& p : pieces_) {
        const auto& tk = p.tokens;
        if (p.keyword() == "set" && tk.size() == 4 && tk[1].kind == TemplateToken::Kind::Ident &&
            tk[2].text == "=" && tk[3].kind == TemplateToken::Kind::String)
            aliases.emplace(tk[1].text, tk[3].text);
    }
    size_t start = pieces_.size();
    for (size_t i = pieces_.size(); i-- > 0;) {
        const TemplatePiece& p = pieces_[i];
        std::string kw = p.keyword();
        if (kw != "if" && kw != "elif") continue;
        bool mentions = false;
        for (size_t k = 0; k < p.tokens.size(); ++k) mentions = mentions || reads_ident(p.tokens, k, "add_generation_prompt");
        if (mentions) {
            start = i;
            break;
        }
    }
    if (start == pieces_.size()) {
        start = 0;
        for (size_t i = pieces_.size(); i-- > 0;)
            if (pieces_[i].keyword() == "endfor") {
                start = i + 1;
                break;
            }
    }
    std::vector<std::string> out;
    for (size_t i = start; i < pieces_.size(); ++i) {
        const TemplatePiece& p = pieces_[i];
        if (p.kind == TemplatePiece::Kind::Text) {
            out.push_back(p.text);
            continue;
        }
        if (p.kind != TemplatePiece::Kind::Expression) continue;
        // Operands of a top-level concatenation, from the last one back, while
        // each is a literal or a known alias.
        std::vector<std::vector<const TemplateToken*>> operands(1);
        int paren = 0;
        for (const TemplateToken& t : p.tokens) {
            if (t.kind == TemplateToken::Kind::Op && (t.text == "(" || t.text == "[" || t.text == "{")) ++paren;
            if (t.kind == TemplateToken::Kind::Op && (t.text == ")" || t.text == "]" || t.text == "}")) --paren;
            if (paren == 0 && t.kind == TemplateToken::Kind::Op && (t.text == "+" || t.text == "~")) {
                operands.emplace_back();
                continue;
            }
            operands.back().push_back(&t);
        }
        std::string ending;
        for (size_t k = operands.size(); k-- > 0;) {
            const auto& op = operands[k];
            if (op.size() != 1) break;
            if (op[0]->kind == TemplateToken::Kind::String) {
                ending = op[0]->text + ending;
            } else if (op[0]->kind == TemplateToken::Kind::Ident && !op[0]->attribute) {
                auto it = aliases.find(op[0]->text);
                if (it == aliases.end()) break;
                ending = it->second + ending;
            } else {
                break;
            }
        }
        if (!ending.empty()) out.push_back(std::move(ending));
    }
    return out;
}

}  // namespace kiln::reply_detail
