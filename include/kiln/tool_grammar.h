// Forced and lazy tool calls: a grammar that makes the reply a call, in the
// model's own tool syntax (ChatFormat::tools, found from its chat template),
// whose arguments are valid for the tool's `parameters` JSON Schema.
//
//   kiln::ToolCallConstraint c = kiln::tool_call_constraint(format, tools_json,
//       {.choice = kiln::ToolChoice::Required, .starts_in_thinking = prompt_opens_thinking(format, prompt)});
//   auto stage = c.triggers.empty() ? kiln::grammar_stage(c.grammar, vocab)
//                                   : kiln::lazy_grammar_stage(c.grammar, vocab, c.triggers);
//
// The text the grammar allows is text the ReplyParser reads back as the same
// calls (tests/reply/test_tool_grammar.cpp checks it for every syntax).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/constraint.h"
#include "kiln/reply_format.h"

namespace kiln {

enum class ToolChoice {
    Auto,      // free text, or a call: the grammar starts when the model opens one (its trigger text)
    Required,  // one call (several when parallel) of any offered tool
    Named,     // exactly one call of the tool `name`
};

struct ToolCallConstraintOptions {
    ToolChoice choice = ToolChoice::Required;
    std::string name;                 // Named: the function's name
    bool parallel = true;             // Required: several calls in one reply where the syntax has them
    bool starts_in_thinking = false;  // the prompt opened a reasoning block (prompt_opens_thinking)
    JsonSchemaOptions json;           // whitespace inside the arguments
};

struct ToolCallConstraint {
    Grammar grammar;
    // Empty: the grammar holds from the first token (grammar_stage). Otherwise it
    // starts at the first of these in the reply (lazy_grammar_stage).
    std::vector<std::string> triggers;
};

// The syntaxes tool_call_constraint supports (JSON arguments in every family
// that writes them; the XML and Python-style argument syntaxes and the
// message-framed families are refused).
bool tool_syntax_can_constrain(ToolSyntax syntax);

// `tools`: OpenAI tool definitions ([{"type": "function", "function": {"name",
// "parameters"}}]). Throws kiln::Error (Unsupported) naming the tool syntax, or
// the tool and the schema construct that cannot be enforced; (InvalidInput) for
// a named tool that is not offered, or no tools.
ToolCallConstraint tool_call_constraint(const ChatFormat& format, const nlohmann::json& tools,
                                        const ToolCallConstraintOptions& options);

}  // namespace kiln
