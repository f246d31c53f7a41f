// The compiled form of a grammar: every rule an array of alternatives, every
// alternative a run of elements ended by k_end, each element a byte set or a rule
// reference. This is what the recogniser (recognizer.h) walks.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "constrain/grammar_ir.h"

namespace kiln::constrain {

// Element encoding: the kind in the top two bits, an index below.
constexpr uint32_t k_elem_kind_shift = 30;
constexpr uint32_t k_elem_end = 0;
constexpr uint32_t k_kind_set = 1;
constexpr uint32_t k_kind_ref = 2;
inline uint32_t elem_kind(uint32_t e) { return e >> k_elem_kind_shift; }
inline uint32_t elem_index(uint32_t e) { return e & ((1u << k_elem_kind_shift) - 1); }
inline uint32_t make_elem(uint32_t kind, uint32_t index) { return (kind << k_elem_kind_shift) | index; }

class WalkerPool;

struct CompiledGrammar {
    GrammarIR ir;                        // the source form, for printing
    std::vector<uint32_t> elems;         // every alternative's elements, each run ended by k_elem_end
    std::vector<ByteSet> sets;           // byte sets referenced by k_kind_set elements
    std::vector<uint32_t> rule_alt_begin;
    std::vector<uint32_t> alt_starts;    // offset in elems of each alternative
    std::vector<std::string> rule_names; // IR rules first, then the helper rules lowering made
    uint32_t root = 0;
    // The allowed-token walkers its matchers are done with (mask_walker.h), so a
    // matcher made later starts warm; set by the Grammar that owns this.
    std::shared_ptr<WalkerPool> walkers;
};

// Lowers the IR to bytes. Throws kiln::Error on a rule that is referenced but not
// defined and on left recursion (a rule reachable from itself without consuming
// a byte, other than through a tail call), naming the rule, and on a root that
// derives no text at all.
CompiledGrammar compile_grammar(GrammarIR ir);

}  // namespace kiln::constrain
