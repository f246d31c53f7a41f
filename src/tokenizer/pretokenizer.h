// Pre-tokenizers of byte-level BPE: the expressions that cut text into words
// before merging, one row per tokenizer.ggml.pre family (pretokenizer.cpp).
//
// A pre-tokenizer is a sequence of steps; each step cuts every piece left by the
// previous one into the step's matches and the gaps between them (llama.cpp's
// order and "isolated" behaviour). A step is either a hand-written splitter over
// codepoint category flags (the frequent expressions, and those a backtracking
// engine would run in quadratic time) or a PCRE2 expression compiled with JIT.
//
// PCRE2 expressions run the way llama.cpp runs its std::regex fallback, so the
// pieces are the same: an expression with \p{..} classes runs on a "collapsed"
// text where each non-ASCII codepoint is replaced by one code standing for its
// category (and the classes by those codes plus their ASCII members); one
// without runs on the codepoints themselves. Non-ASCII whitespace becomes \v in
// both, so \s sees it. docs/tokenizer.md has the measurements behind the choice.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::tok {

enum class StepKind : uint8_t {
    Gpt2,          // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
    Llama3,        // (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
    Qwen2,         // as Llama3 with \p{N} one digit at a time
    Qwen35,        // as Qwen2 with [\p{L}\p{M}] for letters
    KimiK2,        // Han runs, then a gpt-4o-like expression without Han in its letter classes
    DigitGroups,   // digit runs cut in threes from the right (afmoe, tiny_aya)
    Newlines,      // [^\n]+|[\n]+
    Numbers,       // \p{N}: each number alone
    NumberRuns,    // \p{N}+
    NumberTriples, // \p{N}{1,3}
    AsciiTriples,  // [0-9][0-9][0-9]
    PunctRuns,     // [\p{P}\$\+<=>\^~\|]+
    PunctTickRuns, // [\p{P}\$\+<=>\^~\|`]+
    LineBreaks,    // [\r\n]
    TrailingSpace, // \s+$
    DigitLookahead,// (?=(\d{3})+(?!\d)): a cut before every group of three digits counted from the right
    Regex,         // PCRE2
};

struct StepSpec {
    StepKind kind;
    const char* regex;     // the expression (for Regex steps the one compiled; for others the one they implement)
    bool unicode = false;  // Regex: run on the codepoints with real Unicode classes (UTF + UCP)
};

// One family of tokenizer.ggml.pre names and how the tokenizer behaves with it.
struct PreTokenizerSpec {
    const char* family;  // descriptive name for docs and errors
    std::vector<std::string_view> names;
    std::vector<StepSpec> steps;
    std::vector<StepSpec> hf_steps;  // the tokenizer.json expressions where llama.cpp's rewrite differs (empty: same)
    bool byte_encode = true;        // GPT-2 byte alphabet (false: raw UTF-8, <0xXX> byte tokens)
    bool escape_whitespace = false; // spaces become U+2581 before splitting
    bool ignore_merges = false;     // a word that is a whole token is emitted as is
    bool clean_spaces = true;       // detokenizer removes " ," " ." ... (clean_up_tokenization_spaces)
    bool add_bos = false;           // default before tokenizer.ggml.add_bos_token
    bool add_sep = false;
    bool no_bos = false;            // the family has no BOS unless the metadata names one
    bool lowercase = true;          // default of tokenizer.ggml.normalizer.lowercase
};

// The row for a tokenizer.ggml.pre name; nullptr when unknown.
const PreTokenizerSpec* find_pre_tokenizer(std::string_view name);
const std::vector<PreTokenizerSpec>& pre_tokenizer_table();

// A compiled pre-tokenizer. Splitting is const and thread-safe.
class PreTokenizer {
public:
    // force_regex: run every step that has an expression through PCRE2 instead of
    // its hand-written splitter (for the benchmark and the differential test).
    // hugging_face: use the spec's hf_steps when it has them.
    explicit PreTokenizer(const PreTokenizerSpec& spec, bool force_regex = false, bool hugging_face = false);
    ~PreTokenizer();
    PreTokenizer(const PreTokenizer&) = delete;
    PreTokenizer& operator=(const PreTokenizer&) = delete;

    // Cuts cps (with their category flags) into pieces; `bounds` receives the
    // end offset of each piece (pieces are contiguous and non-empty).
    void split(const std::vector<uint32_t>& cps, const std::vector<uint16_t>& flags,
               std::vector<uint32_t>& bounds) const;

    const PreTokenizerSpec& spec() const { return spec_; }

    struct CompiledRegex;

private:
    const PreTokenizerSpec& spec_;
    std::vector<StepKind> kinds_;
    std::vector<std::unique_ptr<CompiledRegex>> regexes_;  // one per step (null for hand-written ones)
};

}  // namespace kiln::tok
