// Helpers of the constraint tests: vocabularies, status checks, error text.
#pragma once

#include <functional>
#include <string>

#include "kiln/constraint.h"
#include "kiln/tokenizer.h"

namespace kiln::test {

// ggml-vocab-NAME.gguf from tests/data/shared/tokenizer, else from $KILN_VOCABS
// (default ~/.cache/kiln/vocabs, filled by tools/fetch_llamacpp_vocabs.sh); "" if absent.
std::string constrain_vocab_path(const std::string& name);

inline MatchStatus match_status(const Grammar& g, std::string_view text) { return validate(g, text).status; }

// The message of the kiln::Error that f throws, or "(no error)".
std::string error_of(const std::function<void()>& f);

}  // namespace kiln::test
