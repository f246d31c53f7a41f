// A light, non-evaluating scan of a Jinja chat template for format detection:
// the template's literal text (raw text and decoded string literals), which
// variables it reads, and what its generation prompt writes. It tokenizes tags
// but never runs them, so it works on any input and cannot hang.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::reply_detail {

struct TemplateToken {
    enum class Kind { Ident, String, Number, Op };
    Kind kind = Kind::Op;
    std::string text;        // identifier, operator, number, or the decoded string
    bool attribute = false;  // an identifier right after '.' (ns.enable_thinking)
};

struct TemplatePiece {
    enum class Kind { Text, Statement, Expression };
    Kind kind = Kind::Text;
    std::string text;  // Text: the raw text
    std::vector<TemplateToken> tokens;  // Statement / Expression
    std::string keyword() const;        // Statement: its first identifier ("if", "set", ...)
};

class TemplateScan {
public:
    explicit TemplateScan(std::string_view source);

    // Raw text and decoded string literals, each piece separated by '\x01' so a
    // marker never spans two of them.
    const std::string& text() const { return text_; }
    bool has(std::string_view s) const { return text_.find(s) != std::string::npos; }
    // The raw source contains `s` (for markers built by concatenation).
    bool source_has(std::string_view s) const { return source_.find(s) != std::string::npos; }

    // The template reads variable `name` (not as an attribute, not as a keyword
    // argument) and does not overwrite it at top level before reading it.
    bool reads_variable(std::string_view name) const;

    // What the generation prompt can write: for each output of the part of the
    // template from the last `if … add_generation_prompt …` on (or after the last
    // loop when there is none), the text known to end it (raw text, string
    // literals and aliases set from a literal, concatenated). Unknown endings are left out.
    std::vector<std::string> generation_prompt_endings() const;

    const std::vector<TemplatePiece>& pieces() const { return pieces_; }

private:
    std::string source_;
    std::string text_;
    std::vector<TemplatePiece> pieces_;
};

}  // namespace kiln::reply_detail
