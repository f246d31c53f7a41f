// Regular expressions (matched against the whole text) and their refusals.
#include <gtest/gtest.h>

#include "constrain/constrain_test_util.h"
#include "kiln/constraint.h"

namespace {

using kiln::Grammar;
using kiln::MatchStatus;
using kiln::test::error_of;
using kiln::test::match_status;

TEST(Regex, Basics) {
    Grammar g = Grammar::from_regex(R"(\d{3}-[A-Z]{2,}(x|yz)?)");
    EXPECT_EQ(match_status(g, "123-AB"), MatchStatus::Complete);
    EXPECT_EQ(match_status(g, "123-ABCDyz"), MatchStatus::Complete);
    EXPECT_EQ(match_status(g, "123-A"), MatchStatus::Incomplete);
    EXPECT_EQ(match_status(g, "12a"), MatchStatus::Rejected);
    Grammar anchored = Grammar::from_regex("^(cat|dog)s?$");
    EXPECT_EQ(match_status(anchored, "dogs"), MatchStatus::Complete);
    EXPECT_EQ(match_status(anchored, "cow"), MatchStatus::Rejected);
    Grammar dot = Grammar::from_regex("a.c");
    EXPECT_EQ(match_status(dot, "a\xC3\xA9" "c"), MatchStatus::Complete);
    EXPECT_EQ(match_status(dot, "a\nc"), MatchStatus::Rejected);
    Grammar cls = Grammar::from_regex(R"([^a-c\]]+\.[\w-]+\s?)");
    EXPECT_EQ(match_status(cls, "xyz.ab-9 "), MatchStatus::Complete);
    EXPECT_EQ(match_status(cls, "xbz.ab"), MatchStatus::Rejected);
    Grammar braces = Grammar::from_regex("a{,2}b{2}c{1,}{");  // Python: a trailing { is a literal
    EXPECT_EQ(match_status(braces, "abbc{"), MatchStatus::Complete);
    EXPECT_EQ(match_status(braces, "aaabbc{"), MatchStatus::Rejected);
    Grammar lazy = Grammar::from_regex("a+?b");
    EXPECT_EQ(match_status(lazy, "aaab"), MatchStatus::Complete);
    Grammar escapes = Grammar::from_regex(R"(\x41\u00e9\t)");
    EXPECT_EQ(match_status(escapes, "A\xC3\xA9\t"), MatchStatus::Complete);
}

TEST(Regex, Refusals) {
    EXPECT_NE(error_of([] { Grammar::from_regex("(?=a)b"); }).find("lookaround"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_regex("(?<!a)b"); }).find("lookaround"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_regex("(a)\\1"); }).find("escape '\\1'"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_regex("\\bword"); }).find("word boundaries"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_regex("(?i)abc"); }).find("group flags"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_regex("a++"); }).find("possessive"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_regex("a(^b)"); }).find("start anchor"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_regex("a$b"); }).find("end anchor"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_regex("[^\\w]"); }).find("negated class"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_regex("(ab"); }).find("offset 0: unclosed group"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_regex("ab)"); }).find("unbalanced ')'"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_regex("*a"); }).find("nothing to repeat"), std::string::npos);
    EXPECT_NE(error_of([] { Grammar::from_regex("[[:alpha:]]"); }).find("POSIX"), std::string::npos);
}

}  // namespace
