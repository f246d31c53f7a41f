// The memoising allowed-token walk: see mask_walker.h.
#include "constrain/mask_walker.h"

#include <algorithm>
#include <cstring>

namespace kiln::constrain {

namespace {

// Budgets of the automaton and the mask cache; past them both are dropped (the
// next walk rebuilds what it needs).
constexpr size_t k_max_states = 4096;
constexpr size_t k_max_arena = 1u << 21;
constexpr size_t k_max_masks = 64;

}  // namespace

void MaskWalker::reset() {
    rec_.clear();
    states_.clear();
    tops_.clear();
    next_.clear();
    by_key_.clear();
    masks_.clear();
}

int32_t MaskWalker::intern(std::vector<uint32_t>& tops, bool complete) {
    std::sort(tops.begin(), tops.end());
    tops.erase(std::unique(tops.begin(), tops.end()), tops.end());
    std::string key(tops.size() * sizeof(uint32_t) + 1, '\0');
    if (!tops.empty()) std::memcpy(key.data(), tops.data(), tops.size() * sizeof(uint32_t));
    key.back() = complete ? 1 : 0;
    auto [it, fresh] = by_key_.try_emplace(std::move(key), static_cast<int32_t>(states_.size()));
    if (!fresh) return it->second;
    const auto begin = static_cast<uint32_t>(tops_.size());
    tops_.insert(tops_.end(), tops.begin(), tops.end());
    states_.push_back({begin, static_cast<uint32_t>(tops_.size()), complete, UINT32_MAX});
    return it->second;
}

int32_t MaskWalker::transition(int32_t s, uint8_t b) {
    if (states_[s].next == UINT32_MAX) {
        states_[s].next = static_cast<uint32_t>(next_.size());
        next_.resize(next_.size() + 256, k_unknown);
    }
    int32_t& slot_ref = next_[states_[s].next + b];
    if (slot_ref != k_unknown) return slot_ref;
    const DState ds = states_[s];
    const State from = rec_.load(tops_.data() + ds.tops_begin, ds.tops_end - ds.tops_begin, ds.complete);
    const State to = rec_.step(from, b);
    int32_t result = k_dead;
    if (!to.dead()) {
        scratch_.clear();
        for (uint32_t i = to.tops_begin; i < to.tops_end; ++i) scratch_.push_back(rec_.top(i));
        result = intern(scratch_, to.complete);
    }
    next_[states_[s].next + b] = result;  // next_ may have moved: index again
    return result;
}

void MaskWalker::walk(int32_t s0, const VocabTrie& t, TokenMask& mask) {
    levels_.clear();
    levels_.push_back(s0);
    const uint32_t n = static_cast<uint32_t>(t.size());
    const uint8_t* bytes = t.byte.data();
    const uint32_t* depth = t.depth.data();
    const uint32_t* subtree_end = t.subtree_end.data();
    const TokenId* token = t.token.data();
    uint32_t i = 1;
    while (i < n) {
        levels_.resize(depth[i]);
        const int32_t s = levels_.back();
        const uint32_t off = states_[s].next;
        int32_t nx = off == UINT32_MAX ? k_unknown : next_[off + bytes[i]];
        if (nx == k_unknown) nx = transition(s, bytes[i]);
        if (nx == k_dead) {
            i = subtree_end[i];
            continue;
        }
        if (token[i] != k_no_token) {
            mask.allow(token[i]);
            if (t.has_more[i]) {
                auto it = std::lower_bound(t.more.begin(), t.more.end(), std::pair<uint32_t, TokenId>{i, INT32_MIN});
                for (; it != t.more.end() && it->first == i; ++it) mask.allow(it->second);
            }
        }
        if (states_[nx].tops_begin == states_[nx].tops_end) {  // the grammar ends here
            i = subtree_end[i];
            continue;
        }
        levels_.push_back(nx);
        ++i;
    }
}

void MaskWalker::fill(const Recognizer& from, const State& state, const VocabTrie& trie, TokenMask& mask) {
    if (states_.size() > k_max_states || rec_.arena_size() > k_max_arena) reset();
    if (masks_.size() > k_max_masks) masks_.clear();

    // Import the committed stacks: each chain rebuilt bottom-up as canonical nodes.
    imported_.clear();
    scratch_.clear();
    std::vector<uint32_t> chain;
    for (uint32_t i = state.tops_begin; i < state.tops_end; ++i) {
        chain.clear();
        uint32_t n = from.top(i);
        while (n != k_no_parent && !imported_.count(n)) {
            chain.push_back(n);
            n = from.node(n).parent;
        }
        uint32_t parent = n == k_no_parent ? k_no_parent : imported_[n];
        for (size_t k = chain.size(); k-- > 0;) {
            parent = rec_.frame(from.node(chain[k]).pos, parent);
            imported_[chain[k]] = parent;
        }
        scratch_.push_back(imported_[from.top(i)]);
    }
    const int32_t s0 = intern(scratch_, state.complete);

    auto cached = masks_.find(s0);
    if (cached != masks_.end() && cached->second.n_vocab() == trie.pieces.size()) {
        mask = cached->second;
        return;
    }
    mask.resize(trie.pieces.size());
    if (state.complete)
        for (TokenId id : trie.eog) mask.allow(id);
    if (state.has_tops()) walk(s0, trie, mask);
    masks_[s0] = mask;
}

}  // namespace kiln::constrain
