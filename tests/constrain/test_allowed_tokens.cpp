// fill_allowed against a brute-force reference on real vocabularies: at every
// step of a walk, the mask must equal the set of tokens whose whole piece the
// matcher accepts (checked with can_accept, and with a copy of the matcher fed
// the piece for a sample of tokens), plus the end-of-generation tokens exactly
// when the grammar is complete. Walks follow a tokenized valid document, then
// random allowed tokens; rollback must restore the earlier masks.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "constrain/constrain_test_util.h"
#include "kiln/constraint.h"
#include "kiln/error.h"
#include "kiln/sampling.h"
#include "support/test_support.h"

namespace {

using kiln::Grammar;
using kiln::GrammarMatcher;
using kiln::TokenId;
using kiln::TokenMask;
using kiln::TokenVocabulary;

void expect_mask_matches_reference(const GrammarMatcher& m, const TokenVocabulary& v, const TokenMask& mask, size_t step) {
    size_t mismatches = 0;
    for (size_t i = 0; i < v.n_vocab(); ++i) {
        const auto id = static_cast<TokenId>(i);
        bool expected;
        if (v.is_end_of_generation(id)) expected = m.is_complete() && !m.is_terminated();
        else if (v.piece(id).empty()) expected = false;
        else expected = m.can_accept(v.piece(id));
        if (expected != mask.allowed(id) && ++mismatches <= 5)
            ADD_FAILURE() << "step " << step << ": token " << id << " '" << v.piece(id) << "' expected "
                          << (expected ? "allowed" : "not allowed");
        // A copy fed the piece agrees with can_accept (a sample of tokens).
        if (i % 211 == 0 && !v.piece(id).empty()) {
            GrammarMatcher copy = m;
            EXPECT_EQ(copy.accept_bytes(v.piece(id)), m.can_accept(v.piece(id))) << "token " << id;
        }
    }
    EXPECT_EQ(mismatches, 0u) << "at step " << step;
}

struct WalkCase {
    const char* vocab;
    const char* kind;  // "gbnf" or "schema"
    const char* grammar;
    const char* document;
};

const WalkCase k_cases[] = {
    {"llama-spm", "schema",
     R"({"type":"object","properties":{"name":{"type":"string","maxLength":20},"age":{"type":"integer","minimum":0,"maximum":150},
        "tags":{"type":"array","items":{"enum":["red","green","blue"]},"maxItems":3},"ok":{"type":"boolean"}},
        "required":["name","age"],"additionalProperties":false})",
     R"({"name": "Ada Lovelace", "age": 36, "tags": ["red", "blue"], "ok": true})"},
    {"gpt-2", "schema",
     R"({"type":"object","properties":{"id":{"type":"string","format":"uuid"},"when":{"type":"string","format":"date"},
        "score":{"type":"number","minimum":-1,"maximum":1}},"required":["id","when","score"]})",
     R"({"id": "123e4567-e89b-12d3-a456-426614174000", "when": "2024-02-29", "score": 0.25})"},
    {"gpt-2", "gbnf", R"(root ::= "SELECT " cols " FROM " [a-z_]+ ";"
cols ::= [a-z_]+ (", " [a-z_]+)*)", "SELECT id, name FROM users;"},
    {"qwen2", "schema",
     R"({"type":"object","properties":{"city":{"type":"string"},"temperature_c":{"type":"number"},"conditions":{"enum":["sunny","cloudy","rain"]}},
        "required":["city","temperature_c","conditions"],"additionalProperties":false})",
     R"({"city": "Zürich", "temperature_c": 21.5, "conditions": "sunny"})"},
    // Strings of every UTF-8 length (the text-subtree skip of mask_walker.cpp),
    // escapes, and tokens that end inside a character.
    {"qwen2", "schema",
     R"({"type":"object","properties":{"note":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},"required":["note","tags"]})",
     R"({"note": "東京は晴れ 🌤️ café \"q\" \\ \u00e9", "tags": ["日本語", "Ελλά 🎉"]})"},
    {"llama-spm", "gbnf", R"(root ::= "\"" ( [^"\\\x00-\x1F] | "\\" ["\\/bfnrt] )* "\"")", R"("Grüße aus 北京 🐉 \n und mehr")"},
    // Optional properties and open additionalProperties (the key trie: additional
    // keys leaving it at different nodes, one sharing a name's prefix), and a
    // string bounded above the block threshold (byte classes of counting states).
    {"qwen2", "schema",
     R"({"type":"object","properties":{"id":{"type":"string"},"idle":{"type":"boolean"},"name":{"type":"string","maxLength":300}}})",
     R"({"id": "a1", "name": "Ada \"A\" Lovelace, née Byron", "idx": 3, "nick": ["é", null]})"},
};

TEST(AllowedTokens, MatchesBruteForceOnRealVocabularies) {
    for (const WalkCase& c : k_cases) {
        SCOPED_TRACE(std::string(c.vocab) + " / " + c.kind);
        const std::string path = kiln::test::constrain_vocab_path(c.vocab);
        if (path.empty()) {
            if (kiln::test::data_required()) ADD_FAILURE() << "vocabulary ggml-vocab-" << c.vocab << ".gguf not found";
            std::printf("skipping vocabulary %s: ggml-vocab-%s.gguf not found (tools/fetch_llamacpp_vocabs.sh)\n", c.vocab, c.vocab);
            continue;
        }
        const kiln::Tokenizer tok = kiln::Tokenizer::load(path);
        const TokenVocabulary vocab = TokenVocabulary::from_tokenizer(tok);
        kiln::JsonSchemaOptions options;
        options.max_whitespace = 2;
        const Grammar g = std::string(c.kind) == "gbnf" ? Grammar::from_gbnf(c.grammar) : Grammar::from_json_schema(c.grammar, options);
        ASSERT_EQ(kiln::validate(g, c.document).status, kiln::MatchStatus::Complete) << c.document;

        GrammarMatcher m(g, vocab);
        TokenMask mask;
        std::vector<TokenMask> history;
        kiln::EncodeOptions enc;
        enc.add_special = false;
        const std::vector<TokenId> ids = tok.encode(c.document, enc);
        size_t step = 0;
        // The document's own tokens (SentencePiece adds a leading space to the
        // first piece; the walk starts after a prompt, so use raw pieces and
        // skip a first token the grammar does not accept).
        for (TokenId id : ids) {
            m.fill_allowed(mask);
            expect_mask_matches_reference(m, vocab, mask, step);
            if (!mask.allowed(id)) {
                ASSERT_EQ(step, 0u) << "document token " << id << " '" << vocab.piece(id) << "' not allowed";
                std::string piece(vocab.piece(id));
                ASSERT_TRUE(m.accept_bytes(piece.substr(piece.find_first_not_of(' '))));
            } else {
                ASSERT_TRUE(m.accept_token(id));
            }
            history.push_back(mask);
            ++step;
        }
        ASSERT_TRUE(m.is_complete());
        m.fill_allowed(mask);
        expect_mask_matches_reference(m, vocab, mask, step);
        for (TokenId e : vocab.end_of_generation_ids()) EXPECT_TRUE(mask.allowed(e));

        // Rollback restores the masks seen before.
        const size_t back = std::min<size_t>(5, history.size() - 1);
        m.rollback(back);
        m.fill_allowed(mask);
        EXPECT_TRUE(std::equal(mask.words().begin(), mask.words().end(), history[history.size() - back].words().begin()));

        // A random walk through allowed tokens from the start.
        m.reset();
        std::mt19937 rng(1234);
        for (int s = 0; s < 40; ++s) {
            m.fill_allowed(mask);
            expect_mask_matches_reference(m, vocab, mask, 1000 + s);
            std::vector<TokenId> allowed;
            for (size_t i = 0; i < vocab.n_vocab(); ++i)
                if (mask.allowed(static_cast<TokenId>(i))) allowed.push_back(static_cast<TokenId>(i));
            ASSERT_FALSE(allowed.empty()) << "dead end at random step " << s;
            const TokenId pick = allowed[rng() % allowed.size()];
            ASSERT_TRUE(m.accept_token(pick));
            if (m.is_terminated()) break;
        }
    }
}

TEST(AllowedTokens, SpecialTokensAndEndOfGeneration) {
    // A made-up vocabulary: pieces, an EOG id, a control token with no piece.
    std::vector<std::string> pieces = {"a", "b", "ab", "", "</s>", "abc", "c", "ba"};
    const TokenId eog[] = {4};
    const TokenVocabulary v = TokenVocabulary::from_pieces(pieces, eog);
    const Grammar g = Grammar::from_gbnf(R"(root ::= "ab" "c"?)");
    GrammarMatcher m(g, v);
    TokenMask mask;
    m.fill_allowed(mask);
    EXPECT_TRUE(mask.allowed(0));   // a
    EXPECT_TRUE(mask.allowed(2));   // ab
    EXPECT_TRUE(mask.allowed(5));   // abc
    EXPECT_FALSE(mask.allowed(1));  // b
    EXPECT_FALSE(mask.allowed(3));  // no piece
    EXPECT_FALSE(mask.allowed(4));  // not complete yet
    EXPECT_EQ(mask.count(), 3u);
    EXPECT_FALSE(m.accept_token(4));
    EXPECT_TRUE(m.accept_token(2));
    m.fill_allowed(mask);
    EXPECT_TRUE(mask.allowed(4));
    EXPECT_TRUE(mask.allowed(6));
    EXPECT_EQ(mask.count(), 2u);
    EXPECT_TRUE(m.accept_token(4));
    EXPECT_TRUE(m.is_terminated());
    m.fill_allowed(mask);
    EXPECT_EQ(mask.count(), 0u);
    EXPECT_FALSE(m.accept_token(6));
    m.rollback(1);
    EXPECT_FALSE(m.is_terminated());
    EXPECT_TRUE(m.accept_token(6));
    EXPECT_THROW(m.accept_token(99), kiln::Error);
    GrammarMatcher bytes_only(g);
    EXPECT_THROW(bytes_only.fill_allowed(mask), kiln::Error);
}

}  // namespace

#include "constrain/internals.h"
#include "constrain/mask_walker.h"
#include "constrain/recognizer.h"

namespace {

// The walk without memoisation (taken when the automaton would grow past its
// cap) gives the same masks as the memoised one.
TEST(AllowedTokens, DirectWalkEqualsMemoisedWalk) {
    const std::string path = kiln::test::constrain_vocab_path("gpt-2");
    if (path.empty()) KILN_SKIP_MISSING("ggml-vocab-gpt-2.gguf not found");
    const kiln::Tokenizer tok = kiln::Tokenizer::load(path);
    const TokenVocabulary vocab = TokenVocabulary::from_tokenizer(tok);
    const Grammar g = Grammar::from_json_schema(
        R"({"type":"object","properties":{"a":{"type":"string"},"b":{"type":"array","items":{"type":"number"}}},"required":["a","b"]})");
    const char* doc = R"({"a": "some text \n here", "b": [1, -2.5e3, 7]})";
    kiln::constrain::Recognizer rec(&kiln::constrain::Internals::compiled(g));
    kiln::constrain::State s = rec.start();
    kiln::constrain::MaskWalker memo(&kiln::constrain::Internals::compiled(g)), direct(&kiln::constrain::Internals::compiled(g), 2);
    TokenMask a, b;
    for (const char* p = doc; *p; ++p) {
        memo.fill(rec, s, kiln::constrain::Internals::trie(vocab), a);
        direct.fill(rec, s, kiln::constrain::Internals::trie(vocab), b);
        ASSERT_TRUE(std::equal(a.words().begin(), a.words().end(), b.words().begin())) << "after " << (p - doc) << " bytes";
        EXPECT_GT(a.count(), 0u);
        s = rec.compact(rec.step(s, static_cast<uint8_t>(*p)), 0);
        ASSERT_FALSE(s.dead());
    }
}

}  // namespace

// The grammar stage on the chain's fresh candidates keeps only the allowed
// tokens, in id order; on candidates already sorted it bans by -inf instead. A
// logit bias after it still finds its token in the shortened list, and a second
// matcher of the same Grammar (warm walker from the pool) gives the same masks.
TEST(AllowedTokens, GrammarStageKeepsTheAllowedCandidates) {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
    pieces.push_back("ab");
    pieces.push_back("");  // end of generation
    const TokenId eog[] = {257};
    const TokenVocabulary v = TokenVocabulary::from_pieces(pieces, eog);
    const Grammar g = Grammar::from_gbnf(R"(root ::= "a" [bc] "d" | "x")");
    auto stage = kiln::grammar_stage(g, v);
    kiln::Candidates c;
    for (int i = 0; i < 258; ++i) c.items.push_back({i, 0.0f});
    stage->apply(c);
    ASSERT_EQ(c.items.size(), 3u);
    EXPECT_EQ(c.items[0].token, 'a');
    EXPECT_EQ(c.items[1].token, 'x');
    EXPECT_EQ(c.items[2].token, 256);
    kiln::Candidates sorted;
    for (int i = 257; i >= 0; --i) sorted.items.push_back({i, static_cast<float>(i)});
    sorted.sorted = true;
    stage->apply(sorted);
    ASSERT_EQ(sorted.items.size(), 258u);
    for (const kiln::TokenCandidate& t : sorted.items)
        EXPECT_EQ(std::isinf(t.logit), t.token != 'a' && t.token != 'x' && t.token != 256) << t.token;

    kiln::SamplingParams greedy = kiln::SamplingParams::greedy();
    greedy.logit_bias = {{'x', 5.0f}};
    kiln::Sampler s(greedy, 258);
    s.add_constraint(kiln::grammar_stage(g, v));
    std::vector<float> logits(258, 0.0f);
    logits['a'] = 1.0f;
    logits['q'] = 9.0f;  // the best logit, not allowed
    EXPECT_EQ(s.sample(logits), 'x');  // boosted past 'a'

    GrammarMatcher m1(g, v), m2(g, v);
    TokenMask a, b;
    m1.fill_allowed(a);
    ASSERT_TRUE(m1.accept_token('a'));
    m1.fill_allowed(a);
    { GrammarMatcher done = std::move(m1); }  // gives its walker back
    GrammarMatcher m3(g, v);
    ASSERT_TRUE(m3.accept_token('a'));
    m3.fill_allowed(b);
    EXPECT_TRUE(std::equal(a.words().begin(), a.words().end(), b.words().begin()));
    EXPECT_TRUE(b.allowed('b') && b.allowed('c') && !b.allowed(256) && !b.allowed('d'));
}
