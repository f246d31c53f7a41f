// Speculative decoding from the command line: kiln run --spec draft
// --draft-model (the same text as --spec off, its -v line), the refusals
// (no draft model, one with another vocabulary, a draft model with --spec off),
// and kiln bench --spec's figures.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "support/test_support.h"

using kiln::test::run_kiln;

namespace {

const char* k_prompt = "'Copy this list: apples, pears, plums, cherries, grapes, lemons, apples, pears, plums.'";

TEST(CliSpec, DraftModelGivesTheSameTextAsOff) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string m = " -m " + kiln::test::smollm2_path();
    auto off = run_kiln("run" + m + " -p " + k_prompt + " --temp 0 -n 24 --spec off");
    ASSERT_EQ(off.status, 0) << off.err;
    auto draft = run_kiln("run" + m + " -p " + k_prompt + " --temp 0 -n 24 -v --spec draft --draft-model " +
                          kiln::test::smollm2_path());
    ASSERT_EQ(draft.status, 0) << draft.err;
    EXPECT_EQ(draft.out, off.out);
    EXPECT_NE(draft.err.find("draft model "), std::string::npos) << draft.err;
    EXPECT_NE(draft.err.find("speculation draft: drafted "), std::string::npos) << draft.err;
    EXPECT_NE(draft.err.find("generated 24 tokens in"), std::string::npos) << draft.err;
}

TEST(CliSpec, BadDraftModelUseIsRefused) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string m = " -m " + kiln::test::smollm2_path() + " -p hi -n 2";
    auto none = run_kiln("run" + m + " --spec draft");
    EXPECT_EQ(none.status, 1);
    EXPECT_NE(none.err.find("--spec draft needs --draft-model"), std::string::npos) << none.err;
    auto off = run_kiln("run" + m + " --spec off --draft-model " + kiln::test::smollm2_path());
    EXPECT_EQ(off.status, 1);
    EXPECT_NE(off.err.find("--draft-model drafts only with --spec draft or auto"), std::string::npos) << off.err;
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    auto gemma = run_kiln("run" + m + " --draft-model " + kiln::test::gemma3_path());
    EXPECT_EQ(gemma.status, 1);
    EXPECT_NE(gemma.err.find("cannot draft for"), std::string::npos) << gemma.err;
    EXPECT_NE(gemma.err.find("262144 tokens, the target's 49152"), std::string::npos) << gemma.err;
}

TEST(CliSpec, BenchReportsDraftsAndTheRatio) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto r = run_kiln("bench -m " + kiln::test::smollm2_path() + " --spec ngram -n 16 --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j.at("spec"), "ngram");
    EXPECT_EQ(j.at("reps"), 5);
    EXPECT_GT(j.at("off_tokens_per_s").get<double>(), 0);
    EXPECT_GT(j.at("spec_tokens_per_s").get<double>(), 0);
    EXPECT_GT(j.at("drafted").get<int>(), 0) << "the editing task copies its input";
    EXPECT_LE(j.at("accepted").get<int>(), j.at("drafted").get<int>());
    EXPECT_GT(j.at("draft_steps").get<int>(), 0);
}

}  // namespace
