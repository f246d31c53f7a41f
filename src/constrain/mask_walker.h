// The allowed-token walk of GrammarMatcher::fill_allowed.
//
// The walk visits the vocabulary trie depth first; at each node it needs the
// matcher state after one more byte. Those states are memoised as a lazily
// built automaton: a state is a set of canonical stacks (hash-consed nodes in the
// walker's own arena, so equal sets are equal sorted id lists), its transitions
// are filled on first use. Inside a JSON string or any other loop the walk keeps
// meeting the same few states, so most trie nodes cost one table load instead of
// a closure. The mask of each state is cached as well: a state that comes back
// (the next position in the same string) is answered by a copy.
//
// The matcher's committed stacks are imported (copied chain by chain into the
// walker's arena) at each call, so the walker never depends on the matcher's
// node ids and rollback needs nothing from it. When the automaton grows past its
// budget it is dropped and rebuilt; a walk that would grow it past a hard cap in
// one go (a grammar whose states do not repeat) is redone without memoisation.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "constrain/recognizer.h"
#include "constrain/vocab_trie.h"
#include "kiln/constraint.h"

namespace kiln::constrain {

class MaskWalker {
public:
    // hard_max_states: states one walk may add before it is redone directly
    // (each holds a 1 KiB transition row); tests lower it to reach that path.
    explicit MaskWalker(const CompiledGrammar* grammar, size_t hard_max_states = 65536)
        : g_(grammar), rec_(grammar), hard_max_states_(hard_max_states) {}

    // The allowed tokens after `state` of `from` (not terminated).
    void fill(const Recognizer& from, const State& state, const VocabTrie& trie, TokenMask& mask);

    size_t n_states() const { return states_.size(); }
    // About the memory it holds (automaton, masks, arena), for the pool's bound.
    size_t bytes() const;

private:
    static constexpr int32_t k_unknown = -1;
    static constexpr int32_t k_dead = -2;

    struct DState {
        uint32_t tops_begin, tops_end;  // in tops_
        bool complete;
        uint32_t next;  // offset of its 256 transitions in next_ and classes_, or UINT32_MAX before first use
        int8_t text_loop = -1;  // reads text as the DFA does, back to itself: 1 / 0, -1 not known yet
    };

    void reset();
    int32_t import(const Recognizer& from, const State& state);
    int32_t intern(std::vector<uint32_t>& tops, bool complete);
    int32_t transition(int32_t s, uint8_t b);
    void make_row(int32_t s);
    // Whether every path the text DFA (vocab_trie.h) takes is alive from s, and
    // each one that ends between characters leads back to s: a text subtree of the
    // trie is then allowed whole. May set overflow_.
    bool loops_on_text(int32_t s);
    // Whether every path of at most h bytes that the text DFA takes from q stays
    // alive (with stacks left) from s, so that a text subtree of height <= h is
    // allowed whole: for states that count (maxLength, bounded repetition) and so
    // never come back to themselves. Memoised per (state, DFA state); a search
    // past its budget answers false (not proven) and is retried only for smaller h.
    bool alive_on_text(uint8_t q, int32_t s, uint32_t h);
    bool text_ok(int32_t s, uint32_t h);
    void grow_text_memo();
    // false if the automaton hit its hard cap (the mask is then incomplete)
    bool walk(int32_t s0, const VocabTrie& trie, TokenMask& mask);
    // The same walk stepping the recogniser directly (no automaton).
    void walk_direct(const State& start, const VocabTrie& trie, TokenMask& mask);

    const CompiledGrammar* g_;
    Recognizer rec_;
    std::vector<DState> states_;
    std::vector<uint32_t> tops_;
    std::vector<int32_t> next_;
    // Per state with a row: each byte's class. A step depends only on which tops'
    // byte sets hold the byte, so one closure fills the transitions of every byte
    // of its class (a string's content is one class, not 200 bytes).
    std::vector<uint8_t> classes_;
    std::unordered_map<std::string, int32_t> by_key_;  // sorted top ids + complete flag, as bytes
    std::unordered_map<int32_t, TokenMask> masks_;
    std::unordered_map<uint32_t, uint32_t> imported_;  // scratch: committed node -> walker node
    std::vector<uint32_t> scratch_;
    std::vector<int32_t> levels_;
    std::vector<std::pair<uint8_t, int32_t>> text_pairs_;  // scratch of loops_on_text
    std::vector<State> direct_levels_;
    std::vector<uint32_t> text_alive_;    // per (state, DFA state): the longest h proven alive
    std::vector<uint32_t> text_dies_;     // per (state, DFA state): the shortest h proven to die
    std::vector<uint32_t> text_gave_up_;  // per state: the shortest h whose search ran out of budget
    size_t text_budget_ = 0;
    size_t hard_max_states_;
    bool overflow_ = false;
};

// The idle walkers of one grammar. A matcher takes one (for its vocabulary) at
// its first mask and gives it back when it is destroyed, so the next generation
// with the same Grammar starts with the automaton and the mask cache already
// built: a server that keeps a request's compiled schema, or a bench's rounds,
// pay the cold walk once. A walker serves one matcher at a time.
class WalkerPool {
public:
    std::unique_ptr<MaskWalker> take(const std::shared_ptr<const VocabTrie>& trie, const CompiledGrammar* grammar);
    void give(const std::shared_ptr<const VocabTrie>& trie, std::unique_ptr<MaskWalker> walker);

private:
    // At most this many idle walkers, of at most this size each (a walker past it
    // is dropped, not kept): a cached Grammar holds at most 32 MB of them (a six-item array of
    // bounded strings on SmolLM2: one walker of 7,872 states, 11.4 MB).
    static constexpr size_t k_max_idle = 2;
    static constexpr size_t k_max_idle_bytes = size_t{16} << 20;
    std::mutex mutex_;
    std::vector<std::pair<std::weak_ptr<const VocabTrie>, std::unique_ptr<MaskWalker>>> idle_;
};

}  // namespace kiln::constrain
