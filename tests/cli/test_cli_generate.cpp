// kiln run / kiln chat / kiln bench as a user runs them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "support/test_support.h"

using kiln::test::run_kiln;

namespace {

std::string quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

}  // namespace

// Greedy completion equals llama.cpp's greedy continuation (the fixture's 16
// first tokens of the gemma_turn prompt, where the two agree for 128 tokens).
TEST(CliRun, GreedyCompletionEqualsLlamaCpp) {
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    auto fx = nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("model/gemma3.json")));
    nlohmann::json prompt;
    for (const auto& p : fx["prompts"])
        if (p["name"] == "gemma_turn") prompt = p;
    ASSERT_FALSE(prompt.is_null());
    std::string ids;
    for (size_t i = 0; i < 16; ++i) ids += " " + std::to_string(prompt["greedy"][i].get<int>());
    auto expected = run_kiln("detokenize -m " + kiln::test::gemma3_path() + ids);
    ASSERT_EQ(expected.status, 0) << expected.err;
    const std::string text = "<start_of_turn>user\nWrite a haiku about autumn leaves.<end_of_turn>\n<start_of_turn>model\n";
    auto r = run_kiln("run -m " + kiln::test::gemma3_path() + " -p " + quote(text) + " --temp 0 -n 16");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, expected.out);  // both end with one newline
    EXPECT_TRUE(r.err.empty()) << r.err;
}

TEST(CliRun, SameSeedSameText) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto a = run_kiln("run -p 'Once upon a time' -n 12 --seed 42 --temp 0.9");
    auto b = run_kiln("run -p 'Once upon a time' -n 12 --seed 42 --temp 0.9");
    ASSERT_EQ(a.status, 0) << a.err;
    EXPECT_EQ(a.out, b.out);
    EXPECT_FALSE(a.out.empty());
}

TEST(CliRun, VerboseFiguresGoToStderr) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto r = run_kiln("run -p 'Hello' -n 4 --temp 0 -v");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("KV cache f16"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("per position"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("t/s"), std::string::npos) << r.err;
}

TEST(CliRun, ContextAboveTheModelsMaximumIsRefused) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto r = run_kiln("run -p 'Hello' -c 100000");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("100000"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("8192"), std::string::npos) << r.err;
}

TEST(CliRun, MissingPromptAndBadModel) {
    EXPECT_EQ(run_kiln("run").status, 1);
    auto r = run_kiln("run -m /no/such.gguf -p hi");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("/no/such.gguf"), std::string::npos);
}

TEST(CliChat, ConversationWithCommands) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto r = run_kiln("chat --temp 0 -n 12 -v", "/system You are terse.\nHello!\nWhat is 2+2?\n/reset\nHi\n/exit\nnever read\n");
    ASSERT_EQ(r.status, 0) << r.err;
    // Three replies, each ending with a newline, and usage lines on stderr.
    size_t replies = 0;
    for (size_t at = 0; (at = r.err.find("prompt ", at)) != std::string::npos; ++at) ++replies;
    EXPECT_EQ(replies, 3u) << r.err;
    // The second turn reuses the first turn's cached prefix.
    EXPECT_NE(r.err.find("reused"), std::string::npos);
    EXPECT_EQ(r.err.find("(0 reused), 12 generated"), r.err.rfind("(0 reused), 12 generated")) << r.err;
}

TEST(CliBench, JsonHasTheFigures) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto r = run_kiln("bench -p 16 -n 4 -r 1 --no-probe --json");
    ASSERT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_GT(j["pp_tokens_per_s"].get<double>(), 0);
    EXPECT_GT(j["tg_tokens_per_s"].get<double>(), 0);
    EXPECT_GT(j["peak_rss_bytes"].get<double>(), 0);
}

TEST(CliBench, DepthAndCacheType) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto r = run_kiln("bench -p 8 -n 4 -d 40 --kv-type q8_0 -r 1 --no-probe --json");
    ASSERT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["depth"], 40);
    EXPECT_EQ(j["kv_type"], "q8_0");
    EXPECT_GT(j["pp_tokens_per_s"].get<double>(), 0);
    EXPECT_GT(j["tg_tokens_per_s"].get<double>(), 0);
    r = run_kiln("bench -p 8 -n 4 -d 40 -r 1 --no-probe");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("tg4 @ d40"), std::string::npos) << r.out;
    r = run_kiln("bench -p 8 -n 4 -d 9000 -r 1 --no-probe");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("above the model's context of 8192"), std::string::npos) << r.err;
}

// --flash-attn on: streaming attention through run and bench (the bench JSON says
// which); greedy text on SmolLM2 equal to the default order's on a short prompt;
// a value other than on / off refused.
TEST(CliRun, FlashAttention) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto off = run_kiln("run -p \"The capital of France is\" -n 8 --temp 0");
    auto on = run_kiln("run -p \"The capital of France is\" -n 8 --temp 0 --flash-attn on");
    ASSERT_EQ(off.status, 0) << off.err;
    ASSERT_EQ(on.status, 0) << on.err;
    EXPECT_EQ(on.out, off.out);
    auto b = run_kiln("bench -p 8 -n 4 -d 40 -r 1 --no-probe --flash-attn on --json");
    ASSERT_EQ(b.status, 0) << b.err;
    EXPECT_EQ(nlohmann::json::parse(b.out)["flash_attn"], true);
    auto bad = run_kiln("run -p hi -n 1 --flash-attn auto");
    EXPECT_NE(bad.status, 0);
    EXPECT_NE(bad.err.find("flash-attn"), std::string::npos) << bad.err;
}

TEST(CliTemplate, CapabilitiesReport) {
    auto r = run_kiln("template " + kiln::test::data_path("shared/templates/Qwen3.5-4B.jinja") + " --capabilities");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("<think>"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("qwen-xml"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("reasoning=yes can_disable_thinking=yes tools=yes"), std::string::npos) << r.out;
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    r = run_kiln("template " + kiln::test::smollm2_path() + " --capabilities");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("reasoning=no can_disable_thinking=no tools=no"), std::string::npos) << r.out;
}

TEST(CliBench, ParallelReportsTheAggregate) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto r = run_kiln("bench -p 8 -n 4 -r 1 --no-probe --json --parallel 3 -c 64");
    ASSERT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["parallel"], 3);
    EXPECT_EQ(j["n_ctx"], 64);
    EXPECT_GT(j["aggregate_tg_tokens_per_s"].get<double>(), 0);
    EXPECT_NEAR(j["aggregate_tg_tokens_per_s"].get<double>(), 3 * j["tg_tokens_per_s"].get<double>(), 1e-6);
    EXPECT_GT(j["pp_tokens_per_s"].get<double>(), 0);
    r = run_kiln("bench -p 8 -n 4 -r 1 --no-probe --json");
    ASSERT_EQ(r.status, 0) << r.err;
    j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["parallel"], 1);
    EXPECT_EQ(j["aggregate_tg_tokens_per_s"], j["tg_tokens_per_s"]);
    r = run_kiln("bench -p 8 -n 4 -r 1 --no-probe --parallel 2 -c 10");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("-c 10 is less than"), std::string::npos) << r.err;
}

// Each file of a parallel run is exactly what the single run with its seed prints.
TEST(CliRun, ParallelFilesEqualSingleRuns) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string prefix = kiln::test::temp_dir() + "/par";
    auto r = run_kiln("run -p 'Once upon a time' -n 16 --seed 40 --temp 0.9 --parallel 3 --output-prefix " + prefix);
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
    for (int i = 0; i < 3; ++i) {
        auto one = run_kiln("run -p 'Once upon a time' -n 16 --temp 0.9 --seed " + std::to_string(40 + i));
        ASSERT_EQ(one.status, 0) << one.err;
        EXPECT_EQ(kiln::test::read_file(prefix + "." + std::to_string(i) + ".txt"), one.out) << i;
    }
    auto greedy = run_kiln("run -p 'Hello' -n 8 --temp 0");
    r = run_kiln("run -p 'Hello' -n 8 --temp 0 --parallel 2 --output-prefix " + prefix + "g");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(kiln::test::read_file(prefix + "g.0.txt"), greedy.out);
    EXPECT_EQ(kiln::test::read_file(prefix + "g.1.txt"), greedy.out);
    r = run_kiln("run -p 'Hello' -n 8 --parallel 2");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("--output-prefix"), std::string::npos) << r.err;
}

// A constrained completion is what the constraint allows, whatever the sampler
// draws; a construct kiln cannot enforce is refused before anything is generated.
TEST(CliRun, JsonSchemaAndRegexConstrainTheOutput) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string schema = kiln::test::temp_dir() + "/person.json";
    kiln::test::write_file(schema, R"({"type": "object", "properties": {"age": {"type": "integer", "minimum": 0, "maximum": 120},
      "city": {"enum": ["Paris", "Rome", "Oslo"]}}, "required": ["age", "city"], "additionalProperties": false})");
    for (int seed = 1; seed <= 3; ++seed) {
        auto r = run_kiln("run -p 'A person as JSON:' --json-schema " + schema + " -n 60 --temp 1 --seed " + std::to_string(seed));
        ASSERT_EQ(r.status, 0) << r.err;
        auto j = nlohmann::json::parse(r.out, nullptr, false);
        ASSERT_FALSE(j.is_discarded()) << r.out;
        EXPECT_TRUE(j["age"].is_number_integer()) << r.out;
        EXPECT_GE(j["age"].get<int>(), 0);
        EXPECT_LE(j["age"].get<int>(), 120);
        EXPECT_TRUE(j["city"] == "Paris" || j["city"] == "Rome" || j["city"] == "Oslo") << r.out;
        EXPECT_EQ(j.size(), 2u) << r.out;
    }
    auto r = run_kiln("run -p 'Code:' --regex '[0-9]{3}-[A-Z]{2}' -n 20 --temp 1 --seed 9");
    ASSERT_EQ(r.status, 0) << r.err;
    ASSERT_EQ(r.out.size(), 7u) << r.out;  // the match and the newline
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(r.out[static_cast<size_t>(i)]))) << r.out;
    kiln::test::write_file(schema, R"({"type": "object", "patternProperties": {"^x": {"type": "string"}}})");
    r = run_kiln("run -p 'x' --json-schema " + schema + " -n 4");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("patternProperties"), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
}
