// The memoising allowed-token walk: see mask_walker.h.
#include "constrain/mask_walker.h"

#include <algorithm>
#include <cstring>

namespace kiln::constrain {

namespace {

// Budgets of the automaton and the mask cache; past them both are dropped (the
// next walk rebuilds what it needs).
constexpr size_t k_max_states = 16384;
constexpr size_t k_max_arena = 1u << 21;
constexpr size_t k_max_masks = 64;

void allow_node(const VocabTrie& t, uint32_t i, TokenMask& mask) {
    for (uint32_t j = t.token_begin[i]; j < t.token_begin[i + 1]; ++j) mask.allow(t.node_tokens[j]);
}

void allow_subtree(const VocabTrie& t, uint32_t i, TokenMask& mask) {
    const TokenId* ids = t.node_tokens.data();
    for (uint32_t j = t.token_begin[i], end = t.token_begin[t.subtree_end[i]]; j < end; ++j) mask.allow(ids[j]);
}

}  // namespace

void MaskWalker::reset() {
    rec_.clear();
    states_.clear();
    tops_.clear();
    next_.clear();
    classes_.clear();
    text_alive_.clear();
    text_dies_.clear();
    text_gave_up_.clear();
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

void MaskWalker::make_row(int32_t s) {
    const auto off = static_cast<uint32_t>(next_.size());
    states_[s].next = off;
    next_.resize(off + 256, k_unknown);
    classes_.resize(off + 256, 0);
    // The partition of the bytes, refined by each distinct byte set among the tops.
    uint8_t* cls = classes_.data() + off;
    scratch_.clear();
    const CompiledGrammar& g = *g_;
    for (uint32_t i = states_[s].tops_begin; i < states_[s].tops_end; ++i)
        scratch_.push_back(elem_index(g.elems[rec_.node(tops_[i]).pos]));
    std::sort(scratch_.begin(), scratch_.end());
    scratch_.erase(std::unique(scratch_.begin(), scratch_.end()), scratch_.end());
    unsigned n_classes = 1;
    for (uint32_t set : scratch_) {
        if (n_classes == 256) break;  // every byte is its own class
        const ByteSet& bs = g.sets[set];
        int16_t remap[512];
        std::fill(std::begin(remap), std::end(remap), int16_t{-1});
        unsigned n = 0;
        for (unsigned b = 0; b < 256; ++b) {
            const unsigned k = cls[b] * 2u + (bs.test(static_cast<uint8_t>(b)) ? 1u : 0u);
            if (remap[k] < 0) remap[k] = static_cast<int16_t>(n++);
            cls[b] = static_cast<uint8_t>(remap[k]);
        }
        n_classes = n;
    }
}

int32_t MaskWalker::transition(int32_t s, uint8_t b) {
    if (states_[s].next == UINT32_MAX) make_row(s);
    int32_t& slot_ref = next_[states_[s].next + b];
    if (slot_ref != k_unknown) return slot_ref;
    const DState ds = states_[s];
    const State from = rec_.load(tops_.data() + ds.tops_begin, ds.tops_end - ds.tops_begin, ds.complete);
    const State to = rec_.step(from, b);
    int32_t result = k_dead;
    if (states_.size() >= hard_max_states_) {
        overflow_ = true;
        return k_dead;  // the walk is abandoned and redone directly
    }
    if (!to.dead()) {
        scratch_.clear();
        for (uint32_t i = to.tops_begin; i < to.tops_end; ++i) scratch_.push_back(rec_.top(i));
        result = intern(scratch_, to.complete);
    }
    // next_ may have moved: index again. Every byte of b's class steps alike.
    const uint32_t off = states_[s].next;
    const uint8_t c = classes_[off + b];
    for (unsigned x = 0; x < 256; ++x)
        if (classes_[off + x] == c) next_[off + x] = result;
    return result;
}

bool MaskWalker::loops_on_text(int32_t s) {
    if (states_[s].text_loop < 0) {
        // Explore (DFA state, automaton state) pairs from (0, s): every byte the DFA
        // takes must be alive, and lead back to s when the DFA is between characters.
        // A grammar that reads a codepoint class the usual way meets few pairs (its
        // lowering groups lead bytes by continuation); past k_max_pairs it is not
        // treated as text (the walk then goes node by node, still exact).
        constexpr size_t k_max_pairs = 64;
        text_pairs_.assign(1, {uint8_t{0}, s});
        bool loops = true;
        for (size_t k = 0; k < text_pairs_.size() && loops; ++k) {
            const auto [q, a] = text_pairs_[k];
            for (unsigned b = 0; b < 256 && loops; ++b) {
                const uint8_t q2 = text_step(q, static_cast<uint8_t>(b));
                if (q2 == k_text_reject) continue;
                const int32_t a2 = transition(a, static_cast<uint8_t>(b));
                if (overflow_) return false;
                if (q2 == 0) {
                    loops = a2 == s;
                } else if (a2 == k_dead || states_[a2].tops_begin == states_[a2].tops_end) {
                    loops = false;
                } else if (std::find(text_pairs_.begin(), text_pairs_.end(), std::pair{q2, a2}) == text_pairs_.end()) {
                    if (text_pairs_.size() == k_max_pairs) loops = false;
                    else text_pairs_.push_back({q2, a2});
                }
            }
        }
        states_[s].text_loop = loops ? 1 : 0;
    }
    return states_[s].text_loop == 1;
}

void MaskWalker::grow_text_memo() {
    if (text_gave_up_.size() >= states_.size()) return;
    text_alive_.resize(states_.size() * k_text_states, 0);
    text_dies_.resize(states_.size() * k_text_states, UINT32_MAX);
    text_gave_up_.resize(states_.size(), UINT32_MAX);
}

bool MaskWalker::alive_on_text(uint8_t q, int32_t s, uint32_t h) {
    if (h == 0) return true;
    grow_text_memo();
    const size_t k = static_cast<size_t>(s) * k_text_states + q;
    if (text_alive_[k] >= h) return true;
    if (text_dies_[k] <= h) return false;
    if (q == 0 && loops_on_text(s)) {  // alive on every text, however long
        grow_text_memo();
        text_alive_[k] = UINT32_MAX;
        return true;
    }
    if (overflow_ || text_budget_ == 0) return false;
    --text_budget_;
    bool alive = true;
    int32_t plain_next = k_unknown;
    for (unsigned b = 0; b < 256 && alive; ++b) {
        const uint8_t q2 = text_step(q, static_cast<uint8_t>(b));
        if (q2 == k_text_reject) continue;
        const int32_t s2 = transition(s, static_cast<uint8_t>(b));
        if (overflow_) return false;
        if (s2 == k_dead || states_[s2].tops_begin == states_[s2].tops_end) {
            alive = false;
        } else if (q == 0 && q2 == 0 && plain_next != k_unknown && s2 != plain_next) {
            // Characters lead to different states (a key trie, not a count): the
            // paths branch; leave this to the node-by-node walk.
            text_budget_ = 0;
            return false;
        } else if ((q != 0 || q2 != 0 || plain_next == k_unknown) && !alive_on_text(q2, s2, h - 1)) {
            if (overflow_ || text_budget_ == 0) return false;  // not proven either way
            alive = false;
        }
        if (q == 0 && q2 == 0 && plain_next == k_unknown) plain_next = s2;
    }
    grow_text_memo();
    if (alive) text_alive_[k] = std::max(text_alive_[k], h);
    else text_dies_[k] = std::min(text_dies_[k], h);
    return alive;
}

bool MaskWalker::text_ok(int32_t s, uint32_t h) {
    if (loops_on_text(s)) return true;
    if (overflow_) return false;
    grow_text_memo();
    // A search that ran out of budget at depth g is retried only below g / 2, so a
    // state costs a few searches whatever heights the walk asks about.
    if (text_gave_up_[s] != UINT32_MAX && h * 2 >= text_gave_up_[s]) return false;
    // Enough (state, DFA state) pairs for a bounded string as deep as the longest
    // tokens; text paths that branch into more states are walked node by node.
    constexpr size_t k_text_budget = 2048;
    text_budget_ = k_text_budget;
    const bool alive = alive_on_text(0, s, h);
    if (!alive && text_budget_ == 0 && !overflow_) {
        grow_text_memo();
        text_gave_up_[s] = std::min(text_gave_up_[s], h);
    }
    return alive;
}

bool MaskWalker::walk(int32_t s0, const VocabTrie& t, TokenMask& mask) {
    overflow_ = false;
    // Inside a string (a state that reads text and comes back to itself), every
    // text token is allowed: start from that mask and skip every text subtree on a
    // text path (its tokens are in the mask: the path before it ends between
    // characters, since a text subtree starts with no continuation byte); other
    // text subtrees reached in a state that loops on text are allowed node by node.
    const bool root_text = text_ok(s0, t.height[0]);
    if (overflow_) return false;
    if (root_text) {
        TokenMask eog = mask;  // the end-of-generation bits fill() set
        mask = t.text_mask;
        for (TokenId id : t.eog)
            if (eog.allowed(id)) mask.allow(id);
    }
    levels_.clear();
    levels_.push_back(s0);
    const uint32_t n = static_cast<uint32_t>(t.size());
    const uint8_t* bytes = t.byte.data();
    const uint32_t* depth = t.depth.data();
    const uint32_t* subtree_end = t.subtree_end.data();
    const TokenId* token = t.token.data();
    uint32_t i = 1;
    const char* text = t.text_subtree.data();
    const char* text_path = t.text_path.data();
    const uint32_t* height = t.height.data();
    while (i < n) {
        levels_.resize(depth[i]);
        const int32_t s = levels_.back();
        if (text[i]) {
            if (root_text && text_path[i]) {  // text tokens only: in the mask already
                i = subtree_end[i];
                continue;
            }
            if ((s == s0 && root_text) || text_ok(s, height[i])) {
                allow_subtree(t, i, mask);
                i = subtree_end[i];
                continue;
            }
            if (overflow_) return false;
        }
        const uint32_t off = states_[s].next;
        int32_t nx = off == UINT32_MAX ? k_unknown : next_[off + bytes[i]];
        if (nx == k_unknown) {
            nx = transition(s, bytes[i]);
            if (overflow_) return false;
        }
        if (nx == k_dead) {
            i = subtree_end[i];
            continue;
        }
        if (token[i] != k_no_token) allow_node(t, i, mask);
        if (states_[nx].tops_begin == states_[nx].tops_end) {  // the grammar ends here
            i = subtree_end[i];
            continue;
        }
        levels_.push_back(nx);
        ++i;
    }
    return true;
}

void MaskWalker::walk_direct(const State& start, const VocabTrie& t, TokenMask& mask) {
    direct_levels_.clear();
    direct_levels_.push_back(start);
    const uint32_t n = static_cast<uint32_t>(t.size());
    uint32_t i = 1;
    while (i < n) {
        const uint32_t d = t.depth[i];
        if (direct_levels_.size() > d) {
            direct_levels_.resize(d);
            rec_.truncate_after(direct_levels_.back());
        }
        const State s = rec_.step(direct_levels_.back(), t.byte[i]);
        if (s.dead()) {
            rec_.truncate_after(direct_levels_.back());
            i = t.subtree_end[i];
            continue;
        }
        if (t.token[i] != k_no_token) allow_node(t, i, mask);
        if (!s.has_tops()) {
            rec_.truncate_after(direct_levels_.back());
            i = t.subtree_end[i];
            continue;
        }
        direct_levels_.push_back(s);
        ++i;
    }
}

int32_t MaskWalker::import(const Recognizer& from, const State& state) {
    // Each chain rebuilt bottom-up as canonical nodes.
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
    return intern(scratch_, state.complete);
}

void MaskWalker::fill(const Recognizer& from, const State& state, const VocabTrie& trie, TokenMask& mask) {
    if (states_.size() > k_max_states || rec_.arena_size() > k_max_arena) reset();
    if (masks_.size() > k_max_masks) masks_.clear();
    const int32_t s0 = import(from, state);

    auto cached = masks_.find(s0);
    if (cached != masks_.end() && cached->second.n_vocab() == trie.pieces.size()) {
        mask = cached->second;
        return;
    }
    mask.resize(trie.pieces.size());
    if (state.complete)
        for (TokenId id : trie.eog) mask.allow(id);
    if (!state.has_tops()) return;
    if (walk(s0, trie, mask)) {
        masks_[s0] = mask;
        return;
    }
    // States that do not repeat: drop the automaton and step the stacks directly.
    reset();
    const int32_t d0 = import(from, state);
    const DState ds = states_[d0];
    const State start = rec_.load(tops_.data() + ds.tops_begin, ds.tops_end - ds.tops_begin, ds.complete);
    walk_direct(start, trie, mask);
    reset();
}

std::unique_ptr<MaskWalker> WalkerPool::take(const std::shared_ptr<const VocabTrie>& trie, const CompiledGrammar* grammar) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        // Walkers of vocabularies that no longer exist are dropped on the way.
        std::erase_if(idle_, [](const auto& e) { return e.first.expired(); });
        for (size_t i = idle_.size(); i-- > 0;) {
            if (idle_[i].first.lock() == trie) {
                std::unique_ptr<MaskWalker> w = std::move(idle_[i].second);
                idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
                return w;
            }
        }
    }
    return std::make_unique<MaskWalker>(grammar);
}

size_t MaskWalker::bytes() const {
    size_t masks = 0;
    for (const auto& [id, m] : masks_) masks += m.words().size() * sizeof(uint64_t);
    return states_.capacity() * sizeof(DState) + tops_.capacity() * sizeof(uint32_t) + next_.capacity() * sizeof(int32_t) +
           classes_.capacity() + masks + rec_.arena_size() * sizeof(StackNode) + by_key_.size() * 64;
}

void WalkerPool::give(const std::shared_ptr<const VocabTrie>& trie, std::unique_ptr<MaskWalker> walker) {
    if (walker->bytes() > k_max_idle_bytes) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (idle_.size() >= k_max_idle) idle_.erase(idle_.begin());  // the oldest
    idle_.emplace_back(trie, std::move(walker));
}

}  // namespace kiln::constrain
