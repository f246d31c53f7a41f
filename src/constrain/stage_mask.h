// How a constraint stage applies its mask to the candidates (grammar_stage.cpp,
// lazy_grammar_stage.cpp).
#pragma once

#include <algorithm>
#include <bit>
#include <limits>

#include "kiln/constraint.h"
#include "kiln/sampling.h"

namespace kiln::constrain {

// While the candidates are still the whole vocabulary in id order (unsorted,
// nothing removed: the constraint is the chain's first stage), the allowed ones
// are moved to the front, still in id order, and the rest dropped: one pass over
// the mask's words and one copy per allowed token, where banning writes every
// entry, and the later stages (greedy's scan, a draw's sort) see only what may be
// chosen. Otherwise every token the mask does not allow gets a logit of -inf.
inline void keep_allowed(const TokenMask& mask, Candidates& c) {
    const size_t n = mask.n_vocab();
    // Unsorted entries keep ascending ids (stages only remove or sort), so a list
    // as long as its largest id + 1 is every id at its own index.
    const bool whole = !c.sorted && !c.items.empty() && static_cast<size_t>(c.items.back().token) + 1 == c.items.size();
    if (whole) {
        const size_t limit = std::min(n, c.items.size());
        const auto words = mask.words();
        size_t out = 0;
        for (size_t w = 0; w < words.size() && w * 64 < limit; ++w) {
            for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
                const size_t id = w * 64 + static_cast<size_t>(std::countr_zero(bits));
                if (id >= limit) break;
                c.items[out++] = c.items[id];
            }
        }
        c.items.resize(out);
        return;
    }
    constexpr float banned = -std::numeric_limits<float>::infinity();
    for (TokenCandidate& t : c.items)
        if (t.token < 0 || static_cast<size_t>(t.token) >= n || !mask.allowed(t.token)) t.logit = banned;
}

}  // namespace kiln::constrain
