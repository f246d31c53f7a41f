// Tokenizer with jinja2's rules for the environment Hugging Face uses:
// trim_blocks (drop the first newline after a block or comment tag),
// lstrip_blocks (drop the spaces before a block or comment tag that starts a
// line), '-' and '+' whitespace control, raw blocks, and brace balancing (so
// '}}' inside a dict literal does not end an expression).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::jinja {

enum class Tok : uint8_t {
    Data,
    VarBegin,
    VarEnd,
    BlockBegin,
    BlockEnd,
    Name,
    String,
    Int,
    Float,
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    Tilde,
    LBracket,
    RBracket,
    LParen,
    RParen,
    LBrace,
    RBrace,
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    Assign,
    Dot,
    Colon,
    Pipe,
    Comma,
    Semicolon,
    Eof,
};

struct Token {
    Tok type = Tok::Eof;
    uint32_t offset = 0;  // byte offset in the normalized source
    std::string text;     // Data, Name, String (decoded)
    int64_t ival = 0;
    double fval = 0;
    bool raw = false;     // Data from a {% raw %} block
};

// jinja2 normalizes the source before lexing: "\r\n" and "\r" become "\n", and
// one trailing newline is dropped (keep_trailing_newline is off).
std::string normalize_source(std::string_view source);

// Tokenizes a normalized source; throws TemplateError with the position of the
// first lexical error.
std::vector<Token> tokenize(const std::string& source);

// 1-based line and column (in code points) of a byte offset.
void offset_to_line_col(const std::string& source, uint32_t offset, uint32_t& line, uint32_t& col);

std::string_view token_name(Tok t);

}  // namespace kiln::jinja
