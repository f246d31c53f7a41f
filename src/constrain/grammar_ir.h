// The grammar IR every input is translated to: named rules whose bodies are
// expressions over literals, codepoint classes, byte classes, rule references
// and bounded or unbounded repetition. compile.cpp lowers it to the flat byte
// program the recogniser runs; print_gbnf writes it back as GBNF.
#pragma once

#include "tokenizer/unicode.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace kiln::constrain {

constexpr uint32_t k_unbounded = UINT32_MAX;
constexpr uint32_t k_max_codepoint = 0x10FFFF;

// Inclusive codepoint range.
struct CpRange {
    uint32_t lo = 0, hi = 0;
    bool operator==(const CpRange&) const = default;
};

// Sorts, merges and drops surrogates (not encodable as UTF-8).
std::vector<CpRange> normalize_ranges(std::vector<CpRange> ranges);
// Complement within the valid codepoints.
std::vector<CpRange> negate_ranges(const std::vector<CpRange>& ranges);

struct ByteSet {
    std::array<uint64_t, 4> bits{};
    void set(uint8_t b) { bits[b >> 6] |= uint64_t{1} << (b & 63); }
    void set_range(uint8_t lo, uint8_t hi) {
        for (unsigned b = lo; b <= hi; ++b) set(static_cast<uint8_t>(b));
    }
    bool test(uint8_t b) const { return (bits[b >> 6] >> (b & 63)) & 1; }
    bool empty() const { return !(bits[0] | bits[1] | bits[2] | bits[3]); }
    bool operator==(const ByteSet&) const = default;
};

struct Expr {
    enum class Kind : uint8_t {
        Seq,      // items in order (empty: the empty string)
        Alt,      // one of items (empty: matches nothing)
        Literal,  // the bytes of `text`
        Class,    // one codepoint in `ranges` (UTF-8 encoded)
        Bytes,    // one byte in `bytes` (for byte-level grammars: invalid UTF-8 allowed)
        Ref,      // rule `rule`
        Repeat,   // items[0] between min and max times (max may be k_unbounded)
    };
    Kind kind = Kind::Seq;
    std::vector<Expr> items;
    std::string text;
    std::vector<CpRange> ranges;
    ByteSet bytes;
    uint32_t rule = 0;
    uint32_t min = 0, max = 0;
};

// Constructors that keep the converters readable.
Expr e_empty();
Expr e_nothing();
Expr e_lit(std::string_view bytes);
Expr e_class(std::vector<CpRange> ranges);  // normalized here
Expr e_char(uint32_t cp);
Expr e_bytes(const ByteSet& set);
Expr e_ref(uint32_t rule);
Expr e_seq(std::vector<Expr> items);  // flattens nested sequences, drops empty ones
Expr e_alt(std::vector<Expr> items);  // flattens nested alternatives
Expr e_repeat(Expr item, uint32_t min, uint32_t max);
inline Expr e_opt(Expr item) { return e_repeat(std::move(item), 0, 1); }
inline Expr e_star(Expr item) { return e_repeat(std::move(item), 0, k_unbounded); }
inline Expr e_plus(Expr item) { return e_repeat(std::move(item), 1, k_unbounded); }

struct Rule {
    std::string name;
    Expr body;
    bool defined = false;
};

struct GrammarIR {
    std::vector<Rule> rules;
    uint32_t root = 0;
    std::unordered_map<std::string, uint32_t> by_name;
    std::unordered_map<std::string, uint32_t> next_suffix;  // per base name: where add_rule's search resumes

    // A new rule named `name` (made unique with a numeric suffix), not yet defined.
    uint32_t add_rule(std::string_view name);
    void define(uint32_t rule, Expr body);
    // Id of the rule named exactly `name`, or UINT32_MAX.
    uint32_t find(std::string_view name) const;
};

// Copies every rule of `from` into `into`: its root as a rule named exactly
// `name` (kiln::Error if `into` has that name already), the others as
// `name-<rule>`. Returns the new id of the root.
uint32_t import_rules(GrammarIR& into, const GrammarIR& from, std::string_view name);

// GBNF text of the grammar (root rule first).
std::string print_gbnf(const GrammarIR& grammar);

// Appends the UTF-8 encoding of cp.
using kiln::tok::append_utf8;  // tokenizer/unicode.h: one UTF-8 encoder for the whole engine

}  // namespace kiln::constrain
