// GrammarMatcher (one generation's state, rollback, the allowed-token walk),
// TokenMask and validate().
#include <algorithm>
#include <bit>
#include <optional>

#include "constrain/internals.h"
#include "constrain/mask_walker.h"
#include "constrain/recognizer.h"
#include "constrain/vocab_trie.h"
#include "kiln/constraint.h"
#include "kiln/error.h"

namespace kiln {

using constrain::Recognizer;
using constrain::State;

void TokenMask::resize(size_t n_vocab) {
    n_vocab_ = n_vocab;
    words_.assign((n_vocab + 63) / 64, 0);
}

void TokenMask::clear() { std::fill(words_.begin(), words_.end(), 0); }

size_t TokenMask::count() const {
    size_t n = 0;
    for (uint64_t w : words_) n += static_cast<size_t>(std::popcount(w));
    return n;
}

struct GrammarMatcher::Impl {
    struct Step {
        State state;
        bool terminated = false;
    };

    Grammar grammar;
    std::optional<TokenVocabulary> vocab;
    Recognizer rec;
    std::vector<Step> history;  // [0] the start; back() the current state
    // The allowed-token automaton and mask cache: taken from the grammar's pool
    // on first use (warm when an earlier matcher of this grammar gave its back)
    // and given back at the end; a copy of the matcher takes its own.
    std::unique_ptr<constrain::MaskWalker> walker;

    Impl(const Grammar& g, std::optional<TokenVocabulary> v)
        : grammar(g), vocab(std::move(v)), rec(&constrain::Internals::compiled(grammar)) {
        history.push_back({rec.start(), false});
    }
    Impl(const Impl& o) : grammar(o.grammar), vocab(o.vocab), rec(o.rec), history(o.history) {}
    ~Impl() {
        const constrain::CompiledGrammar& g = constrain::Internals::compiled(grammar);
        if (walker && g.walkers && vocab) g.walkers->give(constrain::Internals::trie_ptr(*vocab), std::move(walker));
    }

    const Step& current() const { return history.back(); }

    // Steps through `bytes` from the current state; on success the state is left
    // appended (compacted after the current one), else everything is undone.
    std::optional<State> advance(std::string_view bytes) {
        const State cur = current().state;
        State s = cur;
        for (char c : bytes) {
            s = rec.step(s, static_cast<uint8_t>(c));
            if (s.dead()) {
                rec.truncate_after(cur);
                return std::nullopt;
            }
        }
        return rec.compact(s, cur.tops_end);
    }

    const TokenVocabulary& need_vocab() const {
        if (!vocab) throw Error("grammar matcher: no vocabulary (constructed for bytes only)");
        return *vocab;
    }

    void fill_allowed(TokenMask& mask) {
        const constrain::VocabTrie& t = constrain::Internals::trie(need_vocab());
        const Step& cur = current();
        if (cur.terminated) {
            mask.resize(t.pieces.size());
            return;
        }
        if (!walker) {
            const constrain::CompiledGrammar& g = constrain::Internals::compiled(grammar);
            walker = g.walkers ? g.walkers->take(constrain::Internals::trie_ptr(*vocab), &g) : std::make_unique<constrain::MaskWalker>(&g);
        }
        walker->fill(rec, cur.state, t, mask);
    }
};

GrammarMatcher::GrammarMatcher(const Grammar& grammar) : impl_(std::make_unique<Impl>(grammar, std::nullopt)) {}

GrammarMatcher::GrammarMatcher(const Grammar& grammar, const TokenVocabulary& vocab)
    : impl_(std::make_unique<Impl>(grammar, vocab)) {}

GrammarMatcher::GrammarMatcher(const GrammarMatcher& other) : impl_(std::make_unique<Impl>(*other.impl_)) {}

GrammarMatcher& GrammarMatcher::operator=(const GrammarMatcher& other) {
    if (this != &other) impl_ = std::make_unique<Impl>(*other.impl_);
    return *this;
}

GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;
GrammarMatcher::~GrammarMatcher() = default;

bool GrammarMatcher::accept_bytes(std::string_view bytes) {
    if (impl_->current().terminated) return false;
    if (bytes.empty()) {
        // A step that reads nothing: the same state (its tops shared, as for an
        // end-of-generation step). Compacting the current state onto itself
        // would lose its tops.
        impl_->history.push_back({impl_->current().state, false});
        return true;
    }
    std::optional<State> s = impl_->advance(bytes);
    if (!s) return false;
    impl_->history.push_back({*s, false});
    return true;
}

bool GrammarMatcher::can_accept(std::string_view bytes) const {
    if (impl_->current().terminated) return false;
    std::optional<State> s = impl_->advance(bytes);
    impl_->rec.truncate_after(impl_->current().state);
    return s.has_value();
}

bool GrammarMatcher::accept_token(TokenId id) {
    const TokenVocabulary& v = impl_->need_vocab();
    if (id < 0 || static_cast<size_t>(id) >= v.n_vocab())
        throw Error("grammar matcher: token id " + std::to_string(id) + " is outside the vocabulary (" +
                    std::to_string(v.n_vocab()) + " tokens)");
    const Impl::Step& cur = impl_->current();
    if (cur.terminated) return false;
    if (v.is_end_of_generation(id)) {
        if (!cur.state.complete) return false;
        // The same state, marked terminated (its tops are shared, not copied).
        impl_->history.push_back({cur.state, true});
        return true;
    }
    const std::string_view piece = v.piece(id);
    if (piece.empty()) return false;
    return accept_bytes(piece);
}

void GrammarMatcher::rollback(size_t n_steps) {
    if (n_steps >= impl_->history.size())
        throw Error("grammar matcher: cannot roll back " + std::to_string(n_steps) + " steps, only " +
                    std::to_string(impl_->history.size() - 1) + " were taken");
    impl_->history.resize(impl_->history.size() - n_steps);
    impl_->rec.truncate_after(impl_->current().state);
}

void GrammarMatcher::reset() {
    impl_->history.clear();
    impl_->rec.clear();
    impl_->history.push_back({impl_->rec.start(), false});
}

bool GrammarMatcher::is_complete() const { return impl_->current().state.complete; }
bool GrammarMatcher::is_terminated() const { return impl_->current().terminated; }
size_t GrammarMatcher::n_steps() const { return impl_->history.size() - 1; }

void GrammarMatcher::fill_allowed(TokenMask& mask) const { impl_->fill_allowed(mask); }

MatchResult validate(const Grammar& grammar, std::string_view text) {
    Recognizer rec(&constrain::Internals::compiled(grammar));
    State s = rec.start();
    for (size_t i = 0; i < text.size(); ++i) {
        const State next = rec.step(s, static_cast<uint8_t>(text[i]));
        if (next.dead()) return {MatchStatus::Rejected, i};
        // Earlier states are not needed again: keep the pool small.
        s = rec.compact(next, 0);
    }
    return {s.complete ? MatchStatus::Complete : MatchStatus::Incomplete, text.size()};
}

}  // namespace kiln
