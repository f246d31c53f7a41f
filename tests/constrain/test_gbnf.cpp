// GBNF parsing, accept / reject of strings, refusals, rollback.
#include <gtest/gtest.h>

#include <functional>

#include "constrain/constrain_test_util.h"
#include "kiln/constraint.h"
#include "kiln/error.h"

namespace {

using kiln::Grammar;
using kiln::MatchStatus;

MatchStatus status(const Grammar& g, std::string_view text) { return kiln::validate(g, text).status; }

using kiln::test::error_of;

TEST(Gbnf, LiteralsAndAlternatives) {
    Grammar g = Grammar::from_gbnf(R"(root ::= "yes" | "no" | "maybe")");
    EXPECT_EQ(status(g, "yes"), MatchStatus::Complete);
    EXPECT_EQ(status(g, "no"), MatchStatus::Complete);
    EXPECT_EQ(status(g, "may"), MatchStatus::Incomplete);
    EXPECT_EQ(status(g, "yess"), MatchStatus::Rejected);
    EXPECT_EQ(kiln::validate(g, "yep").offset, 2u);
    EXPECT_EQ(status(g, ""), MatchStatus::Incomplete);
}

TEST(Gbnf, ClassesRangesNegationAndUtf8) {
    Grammar g = Grammar::from_gbnf("root ::= [a-c0-9]+ [^x-z\\n] \"é\"");
    EXPECT_EQ(status(g, "ab09qé"), MatchStatus::Complete);
    EXPECT_EQ(status(g, "a€é"), MatchStatus::Complete);  // 3-byte codepoint in the negated class
    EXPECT_EQ(status(g, "a😀é"), MatchStatus::Complete);
    EXPECT_EQ(status(g, "ayé"), MatchStatus::Rejected);
    EXPECT_EQ(status(g, "a\né"), MatchStatus::Rejected);
    EXPECT_EQ(status(g, "dé"), MatchStatus::Rejected);
    // Invalid UTF-8 never matches a codepoint class.
    EXPECT_EQ(status(g, "a\xC3\x28"), MatchStatus::Rejected);
    EXPECT_EQ(status(g, "a\xED\xA0\x80"), MatchStatus::Rejected);  // a surrogate
    Grammar any = Grammar::from_gbnf("root ::= .*");
    EXPECT_EQ(status(any, "héllo 😀"), MatchStatus::Complete);
    EXPECT_EQ(status(any, "\xFF"), MatchStatus::Rejected);
    EXPECT_EQ(status(any, "\xC3"), MatchStatus::Incomplete);
}

TEST(Gbnf, Repetition) {
    Grammar g = Grammar::from_gbnf(R"(root ::= "a"{2,4} "b"{3} "c"{1,} "d"?)");
    EXPECT_EQ(status(g, "aabbbc"), MatchStatus::Complete);
    EXPECT_EQ(status(g, "aaaabbbcccd"), MatchStatus::Complete);
    EXPECT_EQ(status(g, "abbbc"), MatchStatus::Rejected);
    EXPECT_EQ(status(g, "aaaaabbbc"), MatchStatus::Rejected);
    EXPECT_EQ(status(g, "aabbc"), MatchStatus::Rejected);
    EXPECT_EQ(status(g, "aabbb"), MatchStatus::Incomplete);
    Grammar nested = Grammar::from_gbnf(R"(root ::= ("ab" | "c"?)* "!")");  // nullable inside a star
    EXPECT_EQ(status(nested, "abcab!"), MatchStatus::Complete);
    EXPECT_EQ(status(nested, "!"), MatchStatus::Complete);
    EXPECT_EQ(status(nested, "a!"), MatchStatus::Rejected);
}

TEST(Gbnf, RulesCommentsAndMultiline) {
    const char* text = R"GBNF(
# a comment
root   ::= object   # trailing comment
value  ::= object | array | string | number | ("true" | "false" | "null") ws

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws

string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws

number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= | " " | "\n" [ \t]{0,20}
)GBNF";
    Grammar g = Grammar::from_gbnf(text);
    EXPECT_EQ(status(g, R"({"a": [1, 2.5, "x\n", true, null], "b": {}})"), MatchStatus::Complete);
    EXPECT_EQ(status(g, R"({"a": [1, 2.5, "x\n", true, nul], "b": {}})"), MatchStatus::Rejected);
    EXPECT_EQ(status(g, R"({"a": )"), MatchStatus::Incomplete);
    // Printing and parsing again gives the same language.
    Grammar again = Grammar::from_gbnf(g.to_gbnf());
    EXPECT_EQ(status(again, R"({"a": [1, 2.5, "x\n", true, null], "b": {}})"), MatchStatus::Complete);
    EXPECT_EQ(status(again, R"({"a": [1, 2.5, "x\n", true, nul], "b": {}})"), MatchStatus::Rejected);
}

TEST(Gbnf, RightRecursionAndNesting) {
    Grammar g = Grammar::from_gbnf(R"G(
root ::= expr
expr ::= term ("+" term)*
term ::= [0-9]+ | "(" expr ")"
)G");
    EXPECT_EQ(status(g, "1+(2+(3+4))+5"), MatchStatus::Complete);
    EXPECT_EQ(status(g, "((((((((((1))))))))))"), MatchStatus::Complete);
    EXPECT_EQ(status(g, "(1+2"), MatchStatus::Incomplete);
    EXPECT_EQ(status(g, "1+)"), MatchStatus::Rejected);
}

TEST(Gbnf, AmbiguityIsFine) {
    Grammar g = Grammar::from_gbnf(R"(root ::= ([a-z]* | [a-m]*) [a-z]* "x")");
    EXPECT_EQ(status(g, "abcdefghijklmnopqrstuvwx"), MatchStatus::Complete);
    std::string long_text(5000, 'a');
    EXPECT_EQ(status(g, long_text + "x"), MatchStatus::Complete);
}

TEST(Gbnf, Errors) {
    EXPECT_NE(error_of([] { Grammar::from_gbnf("root ::= foo"); }).find("line 1 column 10: undefined rule 'foo'"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_gbnf("root ::= \"abc"); }).find("unterminated literal"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_gbnf("root ::= [abc"); }).find("unterminated character class"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_gbnf("root ::= (\"a\""); }).find("expected ')'"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_gbnf("root ::= \"a\"\nroot ::= \"b\""); }).find("line 2 column 1: rule 'root' is defined twice"),
              std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_gbnf("root = \"a\""); }).find("expected '::='"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_gbnf("other ::= \"a\""); }).find("no rule 'root'"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_gbnf("root ::= \"\\q\""); }).find("unknown escape"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_gbnf("root ::= <[1234]>"); }).find("token references"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_gbnf("root ::= root \"a\" | \"b\""); }).find("left-recursive"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_gbnf("root ::= x? root \"a\" | \"b\"\nx ::= \"x\""); }).find("left-recursive"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_gbnf("root ::= \"a\"{3,2}"); }).find("maximum below minimum"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_gbnf("root ::= * \"a\""); }).find("nothing before it"), std::string::npos);
}

TEST(Matcher, AcceptRollbackComplete) {
    Grammar g = Grammar::from_gbnf(R"(root ::= "ab" [0-9]* "!")");
    kiln::GrammarMatcher m(g);
    EXPECT_FALSE(m.is_complete());
    EXPECT_TRUE(m.accept_bytes("a"));
    EXPECT_FALSE(m.accept_bytes("bx"));  // all or nothing
    EXPECT_TRUE(m.can_accept("b12!"));
    EXPECT_TRUE(m.accept_bytes("b1"));
    EXPECT_TRUE(m.accept_bytes("2"));
    EXPECT_TRUE(m.accept_bytes("!"));
    EXPECT_TRUE(m.is_complete());
    EXPECT_FALSE(m.can_accept("3"));
    m.rollback(2);  // back to after "ab1"
    EXPECT_FALSE(m.is_complete());
    EXPECT_TRUE(m.accept_bytes("77!"));
    EXPECT_TRUE(m.is_complete());
    EXPECT_EQ(m.n_steps(), 3u);
    EXPECT_THROW(m.rollback(4), kiln::Error);
    m.rollback(3);
    EXPECT_EQ(m.n_steps(), 0u);
    EXPECT_TRUE(m.accept_bytes("ab!"));
    kiln::GrammarMatcher copy = m;
    EXPECT_TRUE(copy.is_complete());
    m.reset();
    EXPECT_FALSE(m.is_complete());
    EXPECT_TRUE(copy.is_complete());
}

}  // namespace
