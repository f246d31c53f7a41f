// Python's operators on Values (+ - * / // % **, unary -, in, slicing), Markup
// escaping, and the string formatting templates reach: printf-style '%',
// str.format, strftime, and JSON (json.dumps as Hugging Face's tojson calls it,
// and parsing for from_json and JSON contexts).
#pragma once

#include <ctime>
#include <string>
#include <string_view>

#include "chat/jinja/ast.h"
#include "chat/jinja/builtins.h"
#include "chat/jinja/value.h"

namespace kiln::jinja {

class Interp;

Value binary_op(Interp& in, BinOp op, const Value& a, const Value& b);
Value unary_minus(const Value& v);
Value unary_plus(const Value& v);
bool contains(Interp& in, const Value& container, const Value& item);  // item in container
// Python slicing of str / list / tuple; missing bounds are undefined Values.
// folded: the object is a compile-time constant in jinja2 (see Expr::constant),
// where an unsliceable object gives undefined instead of a TypeError.
Value slice_value(Interp& in, const Value& obj, const Value& start, const Value& stop, const Value& step,
                  bool folded = false);
// The element at a Python index (negative from the end); undefined when out of range.
Value index_value(const Value& obj, int64_t index);

// Raises the UndefinedError an undefined value carries ("'x' is undefined").
[[noreturn]] void fail_undefined(const Value& u);

// markupsafe.escape: Markup values pass through, others are str()-ed and escaped.
Value markup_escape(const Value& v);
// Concatenation as Python's + does it for strings, with Markup's escaping rules.
Value string_add(Interp& in, const Value& a, const Value& b);

// "fmt % args" (args: a tuple, a mapping or one value); `safe` escapes the
// arguments as Markup.__mod__ does.
std::string percent_format(Interp& in, std::string_view fmt, const Value& args, bool safe);
// str.format(*args, **kwargs)
std::string str_format(Interp& in, std::string_view fmt, const Args& args, bool safe);
// datetime.strftime for a broken-down time.
std::string format_time(std::string_view fmt, const std::tm& t, long microseconds);
// Python's format(value, spec) for str / int / float.
std::string format_spec(const Value& v, std::string_view spec);

struct JsonOptions {
    bool ensure_ascii = false;
    bool indent_set = false;
    std::string indent;  // per level
    std::string item_sep = ", ";
    std::string key_sep = ": ";
    bool sort_keys = false;
};
void json_dump(std::string& out, const Value& v, const JsonOptions& options, int depth = 0);
// Parses JSON text (RFC 8259, plus Python's NaN / Infinity) keeping object key order.
Value json_parse(std::string_view text);

}  // namespace kiln::jinja
