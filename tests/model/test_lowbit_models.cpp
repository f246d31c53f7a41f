// SmolLM2-135M requantized to each low-bit type with kernels against llama.cpp's
// greedy continuations of the same file (tests/golden/lowbit,
// tools/lowbit_fixtures.py), step by step on llama.cpp's tokens: kiln's choice
// equals llama.cpp's at every step where llama.cpp's own margin is 1 or more (a
// smaller one is a near-tie, as in test_real_models.cpp).
// - LowBitModels: requantized by kiln (tests/support/requantize.h); the file is
//   rebuilt here byte for byte (its sha256 is in the fixture; the tiny-model
//   writer's determinism is tested in test_tiny_models).
// - LowBitIQuantModels: the i-quants, which kiln cannot quantize, written by
//   llama.cpp's llama-quantize --pure with an imatrix. CI has no llama-quantize, so
//   the files are made by the fixture script into $KILN_MODELS/lowbit and this
//   check skips without them (a long check, README); with them, the file's sha256
//   must be the fixture's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "kiln/catalog.h"
#include "kiln/context.h"
#include "support/requantize.h"
#include "support/test_support.h"

namespace {

constexpr float k_decisive_margin = 1.0f;

class LowBitModels : public ::testing::TestWithParam<std::string> {};

// kiln's greedy tokens on `path` against the fixture's, up to llama.cpp's near-ties.
void expect_greedy_matches(const std::string& path, const std::string& type, const nlohmann::json& fx) {
    auto model = kiln::Model::load(path);
    bool resident = false;  // the type's matrices named in the load report, in their own type
    for (const auto& n : model->load_notes()) {
        EXPECT_EQ(n.find("converted"), std::string::npos) << n;
        if (n.starts_with("matrices in memory:") && n.find(" " + type + " ") != std::string::npos) resident = true;
    }
    EXPECT_TRUE(resident) << path << ": no " << type << " matrices in the load report";
    for (const auto& p : fx["prompts"]) {
        const std::string name = p["name"];
        const auto tokens = p["tokens"].get<std::vector<int32_t>>();
        const auto greedy = p["greedy"].get<std::vector<int32_t>>();
        const auto margins = p["greedy_margins"].get<std::vector<float>>();
        kiln::Context ctx(model, {.n_ctx = 512, .n_batch = 256});
        ctx.decode(tokens);
        // Teacher-forced: every step is fed llama.cpp's token, so a step where kiln
        // picks another one (allowed at a near-tie only) does not end the check.
        size_t same = 0;
        std::string departures;
        for (size_t i = 0; i < greedy.size(); ++i) {
            auto l = ctx.last_logits();
            const int32_t tok = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
            if (tok == greedy[i]) {
                ++same;
            } else {
                EXPECT_LT(margins[i], k_decisive_margin) << type << "/" << name << " step " << i << ": kiln " << tok << ", llama.cpp "
                                                         << greedy[i];
                char buf[64];
                std::snprintf(buf, sizeof buf, " %zu (%.4f)", i, margins[i]);
                departures += buf;
            }
            ctx.decode(std::span<const int32_t>(&greedy[i], 1));
        }
        std::printf("[ figures  ] smollm2 %s/%s: %zu of %zu greedy tokens equal%s%s\n", type.c_str(), name.c_str(), same,
                    greedy.size(), departures.empty() ? "" : "; other at steps (llama.cpp's margin):", departures.c_str());
    }
}

nlohmann::json read_fixture(const std::string& type) {
    return nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("lowbit/smollm2_" + type + ".json")));
}

TEST_P(LowBitModels, SmolLM2GreedyMatchesLlamaCpp) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string type = GetParam();
    auto fx = read_fixture(type);
    const kiln::GgmlTypeInfo* info = kiln::find_ggml_type(type);
    ASSERT_NE(info, nullptr);
    const std::string path = kiln::test::temp_dir() + "/smollm2-" + type + ".gguf";
    ASSERT_GT(kiln::test::requantize_layers(kiln::test::smollm2_path(), path, info->type), 0);
    expect_greedy_matches(path, type, fx);
}

class LowBitIQuantModels : public ::testing::TestWithParam<std::string> {};

TEST_P(LowBitIQuantModels, SmolLM2GreedyMatchesLlamaCpp) {
    const std::string type = GetParam();
    auto fx = read_fixture(type);
    const std::string path = kiln::test::models_dir() + "/lowbit/SmolLM2-135M-Instruct." + type + ".gguf";
    // Not KILN_REQUIRE_MODEL: CI, which requires its data, cannot make this file.
    if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not made (long check: tools/lowbit_fixtures.py, README)";
    ASSERT_EQ(kiln::sha256_file(path), fx["sha256"].get<std::string>())
        << path << " is not the fixture's file: rerun tools/lowbit_fixtures.py --types " << type;
    expect_greedy_matches(path, type, fx);
}

// Not TQ1_0 / TQ2_0: SmolLM2 with a ternary ffn_down is noise whose logits move more under
// llama.cpp's own change of attention order (flash attention on) than kiln's differ from
// llama.cpp's, while both engines' ternary products are exact to a few roundings
// (tools/lowbit_sensitivity.py, docs/quant.md): its greedy tokens are no check.
INSTANTIATE_TEST_SUITE_P(Types, LowBitModels, ::testing::Values("Q2_K", "Q3_K", "MXFP4"),
                         [](const auto& info) { return info.param; });

INSTANTIATE_TEST_SUITE_P(Types, LowBitIQuantModels,
                         ::testing::Values("IQ4_XS", "IQ3_XXS", "IQ3_S", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ1_S", "IQ1_M"),
                         [](const auto& info) { return info.param; });

}  // namespace
