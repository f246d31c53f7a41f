// kiln inspect / tensors / metadata / analyze / dequant as a user runs them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "support/test_support.h"

using kiln::test::run_kiln;

TEST(CliGguf, TensorsJsonMatchesGgufPackage) {
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    auto r = run_kiln("tensors --json " + kiln::test::gemma3_path());
    ASSERT_EQ(r.status, 0) << r.err;
    auto got = nlohmann::json::parse(r.out);
    auto fx = nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("gguf/gemma-3-270m-q4_k_m.gguf.json")));
    ASSERT_EQ(got.size(), fx["tensors"].size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], fx["tensors"][i]) << i;
}

TEST(CliGguf, TensorsFilter) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto r = run_kiln("tensors --json --filter 'blk.0.*' " + kiln::test::smollm2_path());
    ASSERT_EQ(r.status, 0) << r.err;
    auto got = nlohmann::json::parse(r.out);
    EXPECT_EQ(got.size(), 9u);
    for (const auto& t : got) EXPECT_EQ(t["name"].get<std::string>().rfind("blk.0.", 0), 0u);
}

TEST(CliGguf, MetadataJsonHasEveryKeyInOrder) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto r = run_kiln("metadata --json " + kiln::test::smollm2_path());
    ASSERT_EQ(r.status, 0) << r.err;
    auto got = nlohmann::ordered_json::parse(r.out);
    auto fx = nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("gguf/SmolLM2-135M-Instruct.Q4_1.gguf.json")));
    ASSERT_EQ(got.size(), fx["metadata"].size());
    size_t i = 0;
    for (const auto& [key, value] : got.items()) {
        const auto& e = fx["metadata"][i++];
        EXPECT_EQ(key, e["key"].get<std::string>());
        if (e.contains("count")) {
            EXPECT_EQ(value.size(), e["count"].get<size_t>()) << key;
        } else if (e["type"] == "f32") {
            EXPECT_EQ(value.get<float>(), e["value"].get<float>()) << key;
        } else {
            EXPECT_EQ(value, e["value"]) << key;
        }
    }
    EXPECT_EQ(got["tokenizer.ggml.tokens"][2], "<|im_end|>");
    EXPECT_EQ(got["llama.rope.freq_base"], 100000.0);
}

TEST(CliGguf, MetadataSingleKey) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto r = run_kiln("metadata " + kiln::test::smollm2_path() + " llama.block_count");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "30\n");
    r = run_kiln("metadata " + kiln::test::smollm2_path() + " no.such.key");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("'no.such.key' not found"), std::string::npos) << r.err;
}

TEST(CliGguf, InspectCard) {
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    auto r = run_kiln("inspect --json -v " + kiln::test::gemma3_path());
    ASSERT_EQ(r.status, 0) << r.err;
    auto c = nlohmann::json::parse(r.out);
    EXPECT_EQ(c["architecture"], "gemma3");
    EXPECT_EQ(c["n_layer"], 18);
    EXPECT_EQ(c["n_embd"], 640);
    EXPECT_EQ(c["n_head"][0], 4);
    EXPECT_EQ(c["n_head_kv"][0], 1);
    EXPECT_EQ(c["head_dim_k"], 256);
    EXPECT_EQ(c["sliding_window"], 512);
    EXPECT_EQ(c["rope"]["kind"], "neox");
    EXPECT_EQ(c["tokenizer"]["n_vocab"], 262144);
    EXPECT_EQ(c["tokenizer"]["bos"]["text"], "<bos>");
    EXPECT_EQ(c["file_type"], "Q4_K_M");
    // Front-only: bytes read are a small fraction of the file (figures printed with -v).
    unsigned long long read = 0, total = 0;
    ASSERT_EQ(std::sscanf(r.err.c_str(), "read %llu bytes of %llu", &read, &total), 2) << r.err;
    EXPECT_LT(read, 64ull << 20);
    EXPECT_LT(read * 10, total);
}

TEST(CliGguf, AnalyzeReportsKvCache) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto r = run_kiln("analyze --json " + kiln::test::smollm2_path());
    ASSERT_EQ(r.status, 0) << r.err;
    auto a = nlohmann::json::parse(r.out);
    EXPECT_EQ(a["n_params"], 134515008);
    // 30 layers x 3 kv heads x (64 + 64) x 2 bytes
    EXPECT_EQ(a["kv_cache"]["bytes_per_position_f16"], 30 * 3 * 128 * 2);
    EXPECT_EQ(a["largest_tensors"][0]["name"], "token_embd.weight");
    EXPECT_GT(a["front_bytes"].get<uint64_t>(), 0u);
}

TEST(CliGguf, BadFilesGiveOneLineAndStatusOne) {
    for (const char* name : {"wrong_magic.gguf", "version_99.gguf", "data_past_eof.gguf", "huge_kv_count.gguf"}) {
        for (const char* cmd : {"inspect", "tensors", "metadata", "analyze"}) {
            auto r = run_kiln(std::string(cmd) + " " + kiln::test::data_path("broken/") + name);
            EXPECT_EQ(r.status, 1) << cmd << " " << name;
            EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
            EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
            EXPECT_TRUE(r.out.empty()) << r.out;
        }
    }
    auto r = run_kiln("inspect /no/such/file.gguf");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.err.find("/no/such/file.gguf: cannot open"), std::string::npos) << r.err;
    r = run_kiln("frobnicate");
    EXPECT_EQ(r.status, 1);
}
