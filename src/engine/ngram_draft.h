// Prompt-lookup drafting: a sequence that quotes its own context (an edit of a
// given text, a summary, code, a RAG answer) is predicted by what followed the
// last time its most recent tokens occurred. No second model: the draft is a
// search over the sequence's tokens (prompt and generated).
#pragma once

#include <span>
#include <vector>

#include "kiln/tokenizer.h"

namespace kiln {

struct NgramDraftParams {
    int n_max = 3;      // longest n-gram looked up first
    int n_min = 1;      // shortest one tried
    int draft_max = 8;  // most tokens proposed
};

// Appends to `draft` (cleared first) the tokens that followed the most recent
// earlier occurrence of the longest suffix n-gram of `tokens` (n from n_max down
// to n_min), at most draft_max of them. Empty when no suffix of at least n_min
// tokens occurred before. Linear in tokens.size() per n.
void ngram_draft(std::span<const TokenId> tokens, const NgramDraftParams& params, std::vector<TokenId>& draft);

}  // namespace kiln
