#include "engine/ngram_draft.h"

#include <algorithm>

namespace kiln {

void ngram_draft(std::span<const TokenId> tokens, const NgramDraftParams& params, std::vector<TokenId>& draft) {
    draft.clear();
    const size_t len = tokens.size();
    if (params.draft_max <= 0 || params.n_min <= 0) return;
    for (int n = std::max(params.n_max, params.n_min); n >= params.n_min; --n) {
        const size_t un = static_cast<size_t>(n);
        if (len < un + 1) continue;
        const std::span<const TokenId> key = tokens.subspan(len - un);
        // Most recent occurrence first: [start, start + n) ends before the suffix
        // itself starts ending, so at least one token follows it.
        for (size_t start = len - un; start-- > 0;) {
            if (!std::equal(key.begin(), key.end(), tokens.begin() + static_cast<std::ptrdiff_t>(start))) continue;
            const size_t from = start + un;
            const size_t take = std::min(static_cast<size_t>(params.draft_max), len - from);
            draft.assign(tokens.begin() + static_cast<std::ptrdiff_t>(from),
                         tokens.begin() + static_cast<std::ptrdiff_t>(from + take));
            return;
        }
    }
}

}  // namespace kiln
