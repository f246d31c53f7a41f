// The front ends: each turns its input into the grammar IR (compiled by
// grammar.cpp). Each throws kiln::Error naming the construct it refuses.
#pragma once

#include <string_view>

#include "constrain/grammar_ir.h"
#include "kiln/constraint.h"

namespace kiln::constrain {

GrammarIR parse_gbnf(std::string_view text, std::string_view root);
// The same, with rules already defined (imported grammars) that the text may
// reference by name but not redefine.
GrammarIR parse_gbnf(std::string_view text, std::string_view root, GrammarIR predefined);
GrammarIR regex_grammar(std::string_view pattern);

// How a regular expression is used.
enum class RegexMode {
    Whole,       // matched against the whole text (kiln grammar --regex)
    JsonString,  // JSON Schema `pattern`: searched in a JSON string's decoded value,
                 // matched here on its content between the quotes (escapes included)
};
// The expression for `pattern` (rules it needs are added to `ir`).
Expr regex_expr(std::string_view pattern, RegexMode mode, GrammarIR& ir);
// One JSON string character (raw, or escaped where JSON requires it) whose value
// lies in `ranges`: the escapes that nlohmann::json and most writers produce.
Expr json_string_char(const std::vector<CpRange>& ranges);
// Its two parts: the codepoints written raw, and the escape alternatives.
std::vector<CpRange> json_string_raw(const std::vector<CpRange>& ranges);
std::vector<Expr> json_string_escapes(const std::vector<CpRange>& ranges);
GrammarIR json_schema_grammar(std::string_view schema_json, const JsonSchemaOptions& options);
GrammarIR any_json_object_grammar(const JsonSchemaOptions& options);

}  // namespace kiln::constrain
