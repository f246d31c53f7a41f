// Grammars composed from GBNF with imported grammars (a JSON Schema inside a
// call's markers), and the lazy stage that starts a grammar at a trigger text:
// free text before it, the grammar after it, and a token that carries bytes past
// the trigger allowed only when the grammar accepts them.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "constrain/constrain_test_util.h"
#include "kiln/constraint.h"
#include "kiln/error.h"

namespace {

using kiln::Grammar;
using kiln::GrammarImport;
using kiln::MatchStatus;
using kiln::TokenId;
using kiln::TokenVocabulary;
using kiln::test::error_of;
using kiln::test::match_status;

const char* const k_args = R"({"type":"object","properties":{"city":{"type":"string","maxLength":8}},"required":["city"],"additionalProperties":false})";

Grammar call_grammar() {
    std::vector<GrammarImport> imports;
    imports.push_back({"args", Grammar::from_json_schema(k_args)});
    return Grammar::from_gbnf(R"(root ::= "<call>" args "</call>")", imports);
}

TEST(ConstrainCompose, ImportedGrammarIsARule) {
    const Grammar g = call_grammar();
    EXPECT_EQ(match_status(g, R"(<call>{"city": "Paris"}</call>)"), MatchStatus::Complete);
    EXPECT_EQ(match_status(g, R"(<call>{"city": "Paris"})"), MatchStatus::Incomplete);
    EXPECT_EQ(match_status(g, R"(<call>{"city": 3}</call>)"), MatchStatus::Rejected);
    EXPECT_EQ(match_status(g, R"(<call>{"city": "Amsterdam"}</call>)"), MatchStatus::Rejected);  // maxLength 8
    EXPECT_EQ(match_status(g, R"(<call>{}</call>)"), MatchStatus::Rejected);                     // required
    // The printed grammar parses again and means the same.
    const Grammar again = Grammar::from_gbnf(g.to_gbnf());
    EXPECT_EQ(match_status(again, R"(<call>{"city": "Oslo"}</call>)"), MatchStatus::Complete);
    EXPECT_EQ(match_status(again, R"(<call>{"city": "Amsterdam"}</call>)"), MatchStatus::Rejected);
}

TEST(ConstrainCompose, TwoImportsKeepTheirRulesApart) {
    std::vector<GrammarImport> imports;
    imports.push_back({"a", Grammar::from_json_schema(R"({"type":"integer","minimum":0,"maximum":9})")});
    imports.push_back({"b", Grammar::from_json_schema(R"({"type":"string","enum":["x","y"]})")});
    const Grammar g = Grammar::from_gbnf(R"(root ::= a "," b | b)", imports);
    EXPECT_EQ(match_status(g, R"(7,"x")"), MatchStatus::Complete);
    EXPECT_EQ(match_status(g, R"("y")"), MatchStatus::Complete);
    EXPECT_EQ(match_status(g, R"(10,"x")"), MatchStatus::Rejected);
    EXPECT_EQ(match_status(g, R"(7,"z")"), MatchStatus::Rejected);
}

TEST(ConstrainCompose, ErrorsNameTheImport) {
    std::vector<GrammarImport> imports;
    imports.push_back({"args", Grammar::from_json_schema(k_args)});
    EXPECT_NE(error_of([&] { Grammar::from_gbnf("root ::= args\nargs ::= \"x\"", imports); }).find("'args' is defined twice"),
              std::string::npos);
    std::vector<GrammarImport> bad;
    bad.push_back({"no spaces", Grammar::from_regex("a")});
    EXPECT_NE(error_of([&] { Grammar::from_gbnf("root ::= \"x\"", bad); }).find("grammar import 'no spaces'"),
              std::string::npos);
    std::vector<GrammarImport> twice;
    twice.push_back({"x", Grammar::from_regex("a")});
    twice.push_back({"x", Grammar::from_regex("b")});
    EXPECT_NE(error_of([&] { Grammar::from_gbnf("root ::= x", twice); }).find("'x': the name is taken"),
              std::string::npos);
    // An undefined rule is still an error with its position.
    EXPECT_NE(error_of([&] { Grammar::from_gbnf("root ::= args nope", imports); }).find("undefined rule 'nope'"),
              std::string::npos);
}

TEST(ConstrainCompose, AcceptingNoBytesIsAStepThatChangesNothing) {
    // An empty accept (a token that ends exactly at a trigger) keeps the state.
    kiln::GrammarMatcher m(call_grammar());
    ASSERT_TRUE(m.accept_bytes("<call>"));
    ASSERT_TRUE(m.accept_bytes(""));
    EXPECT_FALSE(m.can_accept("<"));
    EXPECT_TRUE(m.can_accept("{"));
    EXPECT_EQ(m.n_steps(), 2u);
    m.rollback(1);
    EXPECT_TRUE(m.can_accept("{\"city\": \"x\"}</call>"));
    EXPECT_FALSE(m.can_accept("<"));
}

// A vocabulary of every single byte plus a few multi-byte pieces that split or
// straddle the trigger "<call>".
TokenVocabulary lazy_vocab() {
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
    pieces.push_back("<ca");               // 256
    pieces.push_back("ll>");               // 257
    pieces.push_back("<call>{");           // 258: the trigger and a good next byte
    pieces.push_back("<call>x");           // 259: the trigger and a byte the grammar rejects
    pieces.push_back("ll>{\"");            // 260: completes "<ca" and goes on validly
    pieces.push_back("ll>]");              // 261: completes "<ca", then a rejected byte
    pieces.push_back("Hello <call>{\"ci");  // 262: text, the trigger and a valid start
    pieces.push_back("");                  // 263: end of generation
    const TokenId eog[] = {263};
    return TokenVocabulary::from_pieces(std::move(pieces), eog);
}

kiln::Candidates all_candidates(size_t n) {
    kiln::Candidates c;
    for (size_t i = 0; i < n; ++i) c.items.push_back({static_cast<int32_t>(i), 0.0f});
    return c;
}

// A stage bans a token by dropping it from the candidates or by a logit of -inf.
bool allowed(const kiln::Candidates& c, TokenId id) {
    for (const kiln::TokenCandidate& t : c.items)
        if (t.token == id) return !std::isinf(t.logit);
    return false;
}

TEST(ConstrainLazy, FreeUntilTheTriggerThenConstrained) {
    const TokenVocabulary v = lazy_vocab();
    auto stage = kiln::lazy_grammar_stage(call_grammar(), v, {"<call>"});
    // Free text: everything allowed except the straddling tokens the grammar rejects.
    auto c = all_candidates(v.n_vocab());
    stage->apply(c);
    EXPECT_TRUE(allowed(c, 'Q'));
    EXPECT_TRUE(allowed(c, 263));  // end of generation: the reply may end without a call
    EXPECT_TRUE(allowed(c, 258));
    EXPECT_FALSE(allowed(c, 259));
    EXPECT_TRUE(allowed(c, 262));
    EXPECT_TRUE(allowed(c, 256));
    stage->accept('O');
    stage->accept('k');
    stage->accept(256);  // "<ca": the trigger is pending
    c = all_candidates(v.n_vocab());
    stage->apply(c);
    EXPECT_TRUE(allowed(c, 257));   // "ll>" completes the trigger, nothing after it
    EXPECT_TRUE(allowed(c, 260));   // completes it and goes on validly
    EXPECT_FALSE(allowed(c, 261));  // completes it, then ']'
    EXPECT_TRUE(allowed(c, 'z'));   // not a call after all: still free
    stage->accept(260);             // now inside the grammar, after `{"`
    c = all_candidates(v.n_vocab());
    stage->apply(c);
    EXPECT_TRUE(allowed(c, 'c'));
    EXPECT_FALSE(allowed(c, 'x'));
    EXPECT_FALSE(allowed(c, 263));
    for (char ch : std::string("city\": \"Rome\"}</call>")) {
        c = all_candidates(v.n_vocab());
        stage->apply(c);
        ASSERT_TRUE(allowed(c, static_cast<unsigned char>(ch))) << "byte '" << ch << "'";
        stage->accept(static_cast<unsigned char>(ch));
    }
    // The call is complete: free text again, and the next trigger starts a new call.
    c = all_candidates(v.n_vocab());
    stage->apply(c);
    EXPECT_TRUE(allowed(c, 263));
    EXPECT_TRUE(allowed(c, ' '));
    EXPECT_FALSE(allowed(c, 259));
    stage->accept(' ');
    stage->accept(258);  // "<call>{"
    c = all_candidates(v.n_vocab());
    stage->apply(c);
    EXPECT_FALSE(allowed(c, ' ' + 1));  // '!' cannot follow "{"
    EXPECT_TRUE(allowed(c, '"'));
    // reset: free again.
    stage->reset();
    c = all_candidates(v.n_vocab());
    stage->apply(c);
    EXPECT_TRUE(allowed(c, 'Q'));
}

TEST(ConstrainLazy, TriggerInsideOneTokenWithText) {
    const TokenVocabulary v = lazy_vocab();
    auto stage = kiln::lazy_grammar_stage(call_grammar(), v, {"<call>"});
    stage->accept(262);  // "Hello <call>{\"ci"
    auto c = all_candidates(v.n_vocab());
    stage->apply(c);
    EXPECT_TRUE(allowed(c, 't'));
    EXPECT_FALSE(allowed(c, 'x'));
}

TEST(ConstrainLazy, RandomFreeTextNeverStartsABrokenCall) {
    // Random tokens among the allowed ones, many times: whenever the grammar
    // starts, the text from the trigger on is a prefix the grammar accepts.
    const TokenVocabulary v = lazy_vocab();
    const Grammar g = call_grammar();
    std::mt19937 rng(7);
    const std::vector<TokenId> pool = {'<', 'c', 'a', 'l', '>', '{', '"', 'x', ']', 256, 257, 258, 259, 260, 261, 262};
    for (int round = 0; round < 300; ++round) {
        auto stage = kiln::lazy_grammar_stage(g, v, {"<call>"});
        std::string text;
        for (int step = 0; step < 12; ++step) {
            auto c = all_candidates(v.n_vocab());
            stage->apply(c);
            std::vector<TokenId> ok;
            for (TokenId id : pool)
                if (allowed(c, id)) ok.push_back(id);
            if (ok.empty()) break;
            const TokenId t = ok[rng() % ok.size()];
            stage->accept(t);
            text += v.piece(t);
        }
        // Every call (from a trigger to the end of its match) is a prefix the grammar accepts.
        size_t at = text.find("<call>");
        while (at != std::string::npos) {
            kiln::GrammarMatcher m(g);
            size_t i = at;
            while (i < text.size() && !m.is_complete()) {
                ASSERT_TRUE(m.accept_bytes(std::string_view(text).substr(i, 1))) << text << " at " << i;
                ++i;
            }
            at = text.find("<call>", i);
        }
    }
}

TEST(ConstrainLazy, PrefillIsReadAsGenerated) {
    const TokenVocabulary v = lazy_vocab();
    // A prefill that opens a call: the grammar holds from its end on.
    auto open = kiln::lazy_grammar_stage(call_grammar(), v, {"<call>"}, "Sure. <call>{\"city\": \"Ro");
    auto c = all_candidates(v.n_vocab());
    open->apply(c);
    EXPECT_TRUE(allowed(c, 'm'));
    EXPECT_FALSE(allowed(c, 263));
    EXPECT_FALSE(allowed(c, '\n'));  // inside the string: no raw newline
    // A pending partial trigger at its end.
    auto partial = kiln::lazy_grammar_stage(call_grammar(), v, {"<call>"}, "Sure. <ca");
    c = all_candidates(v.n_vocab());
    partial->apply(c);
    EXPECT_FALSE(allowed(c, 261));  // "ll>]"
    EXPECT_TRUE(allowed(c, 260));   // "ll>{\""
    // A whole call and text after it: free.
    auto whole = kiln::lazy_grammar_stage(call_grammar(), v, {"<call>"}, "<call>{\"city\": \"Rome\"}</call> ok");
    c = all_candidates(v.n_vocab());
    whole->apply(c);
    EXPECT_TRUE(allowed(c, 'Q'));
    // A prefill that breaks the grammar is refused.
    EXPECT_NE(error_of([&] { kiln::lazy_grammar_stage(call_grammar(), v, {"<call>"}, "<call>{\"town\""); })
                  .find("prefill opens a tool call the constraint rejects"),
              std::string::npos);
}

TEST(ConstrainLazy, RefusesATriggerTheGrammarDoesNotStartWith) {
    const TokenVocabulary v = lazy_vocab();
    EXPECT_NE(error_of([&] { kiln::lazy_grammar_stage(call_grammar(), v, {"<tool>"}); }).find("does not start with its trigger"),
              std::string::npos);
    EXPECT_NE(error_of([&] { kiln::lazy_grammar_stage(call_grammar(), v, {}); }).find("at least one trigger"),
              std::string::npos);
}

}  // namespace
