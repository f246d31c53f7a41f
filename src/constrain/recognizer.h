// The pushdown recogniser over a compiled grammar. A state is a set of stacks;
// each stack is a chain of nodes (grammar position, parent node) in an arena,
// its top always at a byte-set element. Advancing by a byte moves every top whose
// set holds the byte one element on, then closes over rule ends (pop to the
// parent) and rule references (push the alternatives), so tops are again byte
// sets. Identical stacks built in one step are merged (keyed by position and
// parent), which also ends the closure of nullable loops; return frames are
// hash-consed across steps, so that the same stack reached on different steps
// is one node and the set of stacks stays small.
//
// Nodes are only ever appended, and a state refers only to nodes older than
// itself, so going back to an earlier state is truncating the arena and the pool
// of tops: the token-trie walk and rollback are both stack disciplines.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "constrain/program.h"

namespace kiln::constrain {

constexpr uint32_t k_no_parent = UINT32_MAX;

struct StackNode {
    uint32_t pos;     // top: a byte-set element; frame: the element to continue at after the callee
    uint32_t parent;  // frame node, or k_no_parent at the bottom
};

// A state: its tops are pool[tops_begin, tops_end); it needs arena[0, arena_end).
struct State {
    uint32_t tops_begin = 0, tops_end = 0;
    uint32_t arena_end = 0;
    bool complete = false;  // some stack is empty: the text so far is a match
    bool dead() const { return tops_begin == tops_end && !complete; }
    bool has_tops() const { return tops_begin != tops_end; }
};

class Recognizer {
public:
    explicit Recognizer(const CompiledGrammar* grammar);

    // The start state, appended to the pool (call on an empty recogniser).
    State start();
    // The state after byte `b` from `from`, appended after everything in the pool
    // and arena. The result may be dead.
    State step(const State& from, uint8_t b);
    // Drops everything appended after `keep`.
    void truncate_after(const State& keep) {
        pool_.resize(keep.tops_end);
        arena_.resize(keep.arena_end);
    }
    void clear() {
        pool_.clear();
        arena_.clear();
        std::fill(frames_.begin(), frames_.end(), k_empty_slot);
        frames_used_ = 0;
    }
    // Moves the tops of `s` to start at `at` (the pool is cut after them), so a
    // state reached through intermediate steps can sit right after its predecessor.
    State compact(const State& s, uint32_t at);

    const CompiledGrammar& grammar() const { return *g_; }
    size_t arena_size() const { return arena_.size(); }
    const StackNode& node(uint32_t id) const { return arena_[id]; }
    uint32_t top(uint32_t pool_index) const { return pool_[pool_index]; }

    // The canonical node of (pos, parent): one node per distinct stack while the
    // arena is not truncated below it.
    uint32_t frame(uint32_t pos, uint32_t parent);
    // Makes the pool exactly `tops` (canonical node ids) and returns that state.
    State load(const uint32_t* tops, size_t n, bool complete);

private:
    void push(uint32_t pos, uint32_t parent);
    void close();
    bool visit(uint64_t key, uint32_t value, uint32_t& existing);
    void begin_step();

    const CompiledGrammar* g_;
    std::vector<StackNode> arena_;
    std::vector<uint32_t> pool_;  // top node ids of the states, in order
    struct Work {
        uint32_t pos, parent;
    };
    std::vector<Work> work_;
    bool complete_ = false;

    // Open-addressing table of the (position, parent) pairs seen in this step;
    // slots carry the step number so clearing is free.
    struct Slot {
        uint64_t key;
        uint32_t value;
        uint32_t stamp;
    };
    std::vector<Slot> table_;
    uint32_t stamp_ = 0;
    uint32_t used_ = 0;

    // Frames by (pos, parent), across steps: node ids. An entry whose node was
    // truncated away (or whose id now holds another node) is simply skipped.
    static constexpr uint32_t k_empty_slot = UINT32_MAX;
    std::vector<uint32_t> frames_;
    uint32_t frames_used_ = 0;
    void rehash_frames();
};

}  // namespace kiln::constrain
