// The JSON pieces every JSON grammar is built from: whitespace, strings, numbers
// (including exact integer ranges), the formats kiln enforces, any value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "constrain/grammar_ir.h"
#include "kiln/constraint.h"

namespace kiln::constrain {

// A bound on a number: the value, and whether it is exclusive.
struct NumberBound {
    int64_t value = 0;
    bool exclusive = false;
};

class JsonBasics {
public:
    JsonBasics(GrammarIR& ir, const JsonSchemaOptions& options);

    Expr ws();               // whitespace between two JSON tokens, per the policy
    Expr value();            // any JSON value
    Expr object();           // any JSON object
    Expr array();            // any JSON array
    Expr string();           // any JSON string (with quotes)
    Expr string_char();      // one character of a string's content (raw or escaped)
    Expr number();           // any JSON number
    Expr integer();          // an integer written without fraction or exponent
    Expr boolean();
    Expr null();

    // Integers in [lo, hi] (either side open when absent), decimal without
    // leading zeros; "-0" is not produced.
    Expr integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);
    // Numbers between integral bounds, written without an exponent.
    Expr number_range(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

    // String contents (without the quotes) of the supported formats, exactly
    // what Python's jsonschema format checker accepts or a subset of it; empty
    // optional for an unknown format.
    std::optional<Expr> format_content(const std::string& format);

private:
    uint32_t rule(const char* name, uint32_t& slot, Expr (JsonBasics::*body)());
    Expr ws_body();
    Expr value_body();
    Expr object_body();
    Expr array_body();
    Expr string_body();
    Expr char_body();
    Expr number_body();
    Expr date_body();

    GrammarIR& ir_;
    JsonSchemaOptions options_;
    uint32_t ws_ = UINT32_MAX, value_ = UINT32_MAX, object_ = UINT32_MAX, array_ = UINT32_MAX;
    uint32_t string_ = UINT32_MAX, char_ = UINT32_MAX, number_ = UINT32_MAX, date_ = UINT32_MAX;
};

}  // namespace kiln::constrain
