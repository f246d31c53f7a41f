// Errors raised while parsing or rendering. Code deep in the interpreter throws
// without a position; the interpreter adds the line and column of the node it
// was evaluating before the error leaves Template::render.
#pragma once

#include <string>

#include "kiln/jinja.h"

namespace kiln::jinja {

[[noreturn]] void fail(const std::string& message);
// Python's TypeError / ValueError wording, so messages read like jinja2's.
[[noreturn]] void fail_type(const std::string& message);

}  // namespace kiln::jinja
