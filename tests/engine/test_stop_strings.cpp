// Stop strings never leak into the output, whole or in part, however the text
// arrives.
#include <gtest/gtest.h>

#include "engine/stop_strings.h"

using kiln::StopStringFilter;

namespace {

// Feeds `text` split at every pair of cut points; returns the emitted text.
void check_all_splits(const std::vector<std::string>& stops, const std::string& text, const std::string& expected,
                      bool expect_stop) {
    for (size_t a = 0; a <= text.size(); ++a) {
        for (size_t b = a; b <= text.size(); ++b) {
            StopStringFilter f(stops);
            std::string out = f.push(text.substr(0, a));
            out += f.push(text.substr(a, b - a));
            out += f.push(text.substr(b));
            out += f.flush();
            ASSERT_EQ(out, expected) << "cuts " << a << ", " << b;
            ASSERT_EQ(f.stopped(), expect_stop);
        }
    }
}

}  // namespace

TEST(StopStrings, CutsBeforeTheStop) {
    check_all_splits({"</s>"}, "hello world</s> and more", "hello world", true);
    check_all_splits({"\n\nUser:", "###"}, "answer\n\nUser: next", "answer", true);
}

TEST(StopStrings, EarliestStopWins) {
    check_all_splits({"bb", "a"}, "xxbbxa", "xx", true);
}

TEST(StopStrings, PartialPrefixIsReleasedWhenItDoesNotComplete) {
    check_all_splits({"STOP"}, "a STO b ST", "a STO b ST", false);
}

TEST(StopStrings, HoldsBackOnlyWhatCouldStartAStop) {
    StopStringFilter f({"<end>"});
    EXPECT_EQ(f.push("abc<e"), "abc");
    EXPECT_EQ(f.push("x"), "<ex");
    EXPECT_EQ(f.push("<en"), "");
    EXPECT_EQ(f.push("d>tail"), "");
    EXPECT_TRUE(f.stopped());
    EXPECT_EQ(f.matched(), "<end>");
}

TEST(StopStrings, NoStopsPassesThrough) {
    StopStringFilter f({});
    EXPECT_EQ(f.push("abc"), "abc");
    EXPECT_EQ(f.flush(), "");
}
