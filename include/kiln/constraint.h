// kiln — structured output: grammars over bytes, and a matcher that says which
// tokens of a vocabulary may come next.
//
// A Grammar is compiled from GBNF (llama.cpp's grammar syntax), a JSON Schema, a
// regular expression or "any JSON object". Everything is lowered to rules over
// bytes (codepoint classes become UTF-8 byte sequences), recognised by a pushdown
// matcher whose state is a set of stacks. A construct that cannot be enforced
// exactly is refused with kiln::Error naming it: a compiled grammar never accepts
// text its source rejects (docs/structured_output.md lists what is refused).
//
// GrammarMatcher follows one generation: accept_token / accept_bytes advance it,
// rollback undoes steps (speculative decoding), fill_allowed writes the set of
// tokens that may come next by walking a trie of the vocabulary's byte pieces
// with the matcher state, pruning a whole subtree when a prefix fails.
//
// Grammar and TokenVocabulary are immutable and cheap to copy (shared state), safe
// to share between threads; a GrammarMatcher belongs to one sequence.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/sampling.h"
#include "kiln/tokenizer.h"

namespace kiln {

namespace constrain {
struct CompiledGrammar;
struct VocabTrie;
struct GrammarFactory;
struct Internals;  // src/constrain/internals.h: the compiled forms, for the matcher
}  // namespace constrain

// Whitespace the JSON grammars allow between two JSON tokens.
struct JsonSchemaOptions {
    // Any JSON whitespace ([ \t\n\r]*), unbounded: for checking existing documents.
    bool any_whitespace = false;
    // Otherwise at most this many bytes of [ \t\n] between two tokens, so that a
    // small model cannot loop in whitespace while generating.
    uint32_t max_whitespace = 16;
    // The same schema text with the same options gives the Grammar compiled last
    // time, from a small cache of recent ones, whose matchers start with a warm
    // allowed-token automaton; false compiles afresh (benchmarks of cold starts).
    bool reuse_compiled = true;
};

struct GrammarImport;

class Grammar {
public:
    // llama.cpp's GBNF: `name ::= ...` rules, "literals", [classes] with ranges and
    // ^negation, `.`, groups, | alternatives, * + ? {m} {m,} {m,n}, # comments.
    // Errors name the line and column. Left recursion is refused (the matcher is a
    // pushdown recogniser, as llama.cpp's).
    static Grammar from_gbnf(std::string_view text, std::string_view root_rule = "root");
    // GBNF that may reference other grammars by name: each import's root becomes a
    // rule of that name (its other rules are renamed `name-<rule>`), so
    // `root ::= "<call>" args "</call>"` wraps a JSON Schema grammar `args`.
    // Redefining an import's name is an error, as is any name that is not
    // letters, digits, '-' and '_'.
    static Grammar from_gbnf(std::string_view text, std::span<const GrammarImport> imports,
                             std::string_view root_rule = "root");
    // A JSON Schema document (drafts 4 to 2020-12). Throws kiln::Error naming the
    // keyword (and its JSON pointer) that cannot be enforced exactly.
    static Grammar from_json_schema(std::string_view schema_json, const JsonSchemaOptions& options = {});
    // A regular expression matched against the whole text (anchors implicit):
    // literals, classes, ., \d \w \s (ASCII), groups, |, * + ? {m,n}. Lookaround,
    // backreferences and flags are refused.
    static Grammar from_regex(std::string_view pattern);
    // Any JSON object (response_format json_object).
    static Grammar any_json_object(const JsonSchemaOptions& options = {});

    // The grammar as GBNF (codepoint classes printed as classes; equivalent to the
    // compiled form). Names of generated rules are made up.
    std::string to_gbnf() const;
    size_t n_rules() const;

private:
    friend struct constrain::GrammarFactory;
    friend struct constrain::Internals;
    explicit Grammar(std::shared_ptr<const constrain::CompiledGrammar> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const constrain::CompiledGrammar> impl_;
};

struct GrammarImport {
    std::string name;
    Grammar grammar;
};

enum class MatchStatus {
    Complete,    // the whole text matches
    Incomplete,  // every byte was accepted, but the grammar needs more
    Rejected,    // the byte at `offset` cannot follow the ones before it
};

struct MatchResult {
    MatchStatus status = MatchStatus::Rejected;
    size_t offset = 0;  // Rejected: index of the first byte not accepted; otherwise the text size
};

// Runs `text` through the grammar at byte level.
MatchResult validate(const Grammar& grammar, std::string_view text);

// The byte pieces of a vocabulary in a trie, built once and shared by every
// matcher on that vocabulary.
class TokenVocabulary {
public:
    // Pieces from the tokenizer (SentencePiece ▁ as a space, byte-fallback <0xNN>
    // as its byte, byte-level BPE through the GPT-2 byte table). Control, unknown
    // and unused tokens are never allowed; the end-of-generation ids (default: the
    // tokenizer's) are allowed exactly when the grammar is complete. WordPiece
    // vocabularies are refused (their pieces are not the generated bytes).
    static TokenVocabulary from_tokenizer(const Tokenizer& tokenizer);
    static TokenVocabulary from_tokenizer(const Tokenizer& tokenizer, std::span<const TokenId> end_of_generation);
    // A vocabulary given as the bytes of each token id; empty pieces are never
    // allowed; `end_of_generation` as above.
    static TokenVocabulary from_pieces(std::vector<std::string> pieces, std::span<const TokenId> end_of_generation);

    size_t n_vocab() const;
    std::string_view piece(TokenId id) const;  // empty for tokens that are never allowed
    std::span<const TokenId> end_of_generation_ids() const;
    bool is_end_of_generation(TokenId id) const;
    size_t n_trie_nodes() const;

private:
    friend struct constrain::Internals;
    explicit TokenVocabulary(std::shared_ptr<const constrain::VocabTrie> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const constrain::VocabTrie> impl_;
};

// One bit per token id: the tokens allowed next.
class TokenMask {
public:
    TokenMask() = default;
    explicit TokenMask(size_t n_vocab) { resize(n_vocab); }
    void resize(size_t n_vocab);
    void clear();  // no token allowed
    void allow(TokenId id) { words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
    bool allowed(TokenId id) const { return (words_[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }
    size_t count() const;
    size_t n_vocab() const { return n_vocab_; }
    std::span<const uint64_t> words() const { return words_; }  // bit (id & 63) of word id / 64

private:
    std::vector<uint64_t> words_;
    size_t n_vocab_ = 0;
};

class GrammarMatcher {
public:
    // Byte level only (accept_bytes, can_accept, validate-style use).
    explicit GrammarMatcher(const Grammar& grammar);
    // With a vocabulary: accept_token and fill_allowed.
    GrammarMatcher(const Grammar& grammar, const TokenVocabulary& vocab);
    GrammarMatcher(const GrammarMatcher& other);
    GrammarMatcher& operator=(const GrammarMatcher& other);
    GrammarMatcher(GrammarMatcher&&) noexcept;
    GrammarMatcher& operator=(GrammarMatcher&&) noexcept;
    ~GrammarMatcher();

    // Advances by all of `bytes` and returns true, or returns false and leaves the
    // state unchanged if some byte is not accepted. One step for rollback.
    bool accept_bytes(std::string_view bytes);
    // Whether accept_bytes would succeed; the state is unchanged.
    bool can_accept(std::string_view bytes) const;
    // Advances by the token's piece (one step for rollback) and returns true, or
    // returns false and leaves the state unchanged if the token is not allowed.
    // An end-of-generation token is accepted only when the grammar is complete and
    // ends the match (is_terminated). Throws kiln::Error without a vocabulary or
    // for an id outside it.
    bool accept_token(TokenId id);
    // Undoes the last n steps (accept_token / accept_bytes calls that returned
    // true). Throws kiln::Error if fewer were taken since the last reset.
    void rollback(size_t n_steps);
    void reset();

    // The text so far is a complete match (generation may stop here).
    bool is_complete() const;
    // An end-of-generation token was accepted: nothing more is allowed.
    bool is_terminated() const;
    size_t n_steps() const;  // steps that rollback can undo

    // The tokens allowed next (mask is resized to the vocabulary): tokens whose
    // whole piece can be accepted, plus the end-of-generation tokens when the
    // grammar is complete. Throws kiln::Error without a vocabulary.
    void fill_allowed(TokenMask& mask) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// The grammar as a sampler stage for one sequence (Sampler::add_constraint,
// Engine::submit): tokens it does not allow get a logit of -inf before any other
// stage runs, and the token chosen advances its matcher. The vocabulary must be
// the model's (TokenVocabulary::from_tokenizer).
std::unique_ptr<SamplerStage> grammar_stage(const Grammar& grammar, const TokenVocabulary& vocab);

// A grammar that starts when the generated text contains one of `triggers` (a
// tool call's opening marker, for tool_choice auto): free text before, then the
// grammar, whose text must begin with the trigger (kiln::Error otherwise), until
// it is complete; then free text again until the next trigger (so the grammar
// should end where it is complete, as a call does with its closing marker). A token that completes a trigger is allowed only if the grammar
// also accepts the bytes it carries past the trigger. `written` is reply text
// that precedes generation (an assistant prefill), read as if generated; if it
// opens a call the grammar rejects, kiln::Error (InvalidInput).
std::unique_ptr<SamplerStage> lazy_grammar_stage(const Grammar& grammar, const TokenVocabulary& vocab,
                                                 std::vector<std::string> triggers, std::string_view written = {});

}  // namespace kiln
