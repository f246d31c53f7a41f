// kiln archs as a user runs it: every registry row, the runnable ones checked
// (a tiny-model fixture exists for each), spellings listed.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "support/test_support.h"

using kiln::test::run_kiln;

TEST(CliArchs, JsonListsEveryArchitectureWithItsKinds) {
    auto r = run_kiln("archs --json");
    ASSERT_EQ(r.status, 0) << r.err;
    auto got = nlohmann::json::parse(r.out);
    ASSERT_GT(got.size(), 50u);
    int runnable = 0;
    for (const auto& a : got) {
        const std::string name = a["name"];
        for (const char* k : {"mixer", "ffn", "memory", "rope"}) EXPECT_FALSE(a[k].get<std::string>().empty()) << name << " " << k;
        // "checked" is derived from the fixtures present: it agrees with the files.
        bool fixture = false, by_reference = false;
        for (const auto& f : std::filesystem::directory_iterator(kiln::test::golden_path("tiny"))) {
            const std::string stem = f.path().stem().string();
            if (stem != name && stem.rfind(name + "@", 0) != 0) continue;
            fixture = true;
            // A fixture made by another oracle than llama.cpp says so (gptj: tools/gptj_reference.py).
            by_reference |= nlohmann::json::parse(kiln::test::read_file(f.path().string())).value("oracle", "llama.cpp") != "llama.cpp";
        }
        for (const auto& f : std::filesystem::directory_iterator(kiln::test::golden_path("embedding/tiny"))) {
            const std::string stem = f.path().stem().string();  // encoders: <arch>[_variant]
            fixture |= stem == name || stem.rfind(name + "_", 0) == 0;
        }
        // A Gemma 4 assistant's: its draft logits beside each tiny target (tests/golden/assistant).
        if (name == "gemma4-assistant")
            fixture |= std::filesystem::directory_iterator(kiln::test::golden_path("assistant")) != std::filesystem::directory_iterator();
        EXPECT_EQ(a["checked"].get<bool>(), fixture) << name;
        EXPECT_EQ(a["checked_against"].get<std::string>(), !fixture ? "" : by_reference ? "reference" : "llama.cpp") << name;
        if (a["runnable"].get<bool>()) {
            ++runnable;
            EXPECT_TRUE(a["checked"].get<bool>()) << name << " runs but is not checked against llama.cpp";
        }
        if (name == "llama") EXPECT_NE(std::find(a["aliases"].begin(), a["aliases"].end(), "mistral"), a["aliases"].end());
    }
    EXPECT_GE(runnable, 11);  // llama, smollm3, granite, qwen2, qwen3, phi3, gemma, gemma2, gemma3, starcoder2, olmo2
}

TEST(CliArchs, TableNamesTheCounts) {
    auto r = run_kiln("archs");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("checked against llama.cpp"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("phi3"), std::string::npos);
}
