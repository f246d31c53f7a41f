// kiln rerank on the tiny random cross-encoder (tests/support/tiny_encoders.h):
// documents ordered by score, --top-n, --json, and a model without the head refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "support/test_support.h"
#include "support/tiny_encoders.h"

using kiln::test::run_kiln;

TEST(CliRerank, OrdersDocumentsByScore) {
    const std::string vocab = std::string(KILN_SOURCE_DIR) + "/../shared/testdata/tokenizer/ggml-vocab-bert-bge.gguf";
    const std::string why = kiln::test::missing_reason(vocab);
    if (!why.empty()) KILN_SKIP_MISSING(why);
    const std::string dir = kiln::test::temp_dir();
    kiln::test::write_tiny_encoder("bert_rank", vocab, dir + "/rank.gguf");
    kiln::test::write_tiny_encoder("bert", vocab, dir + "/plain.gguf");
    kiln::test::write_file(dir + "/docs.txt", "first document\nthe second one\nthird\nand a fourth\n");
    auto r = run_kiln("rerank -m " + dir + "/rank.gguf --query 'what?' --documents " + dir + "/docs.txt --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    ASSERT_EQ(doc["results"].size(), 4u);
    for (size_t i = 1; i < 4; ++i)
        EXPECT_GE(doc["results"][i - 1]["relevance_score"].get<double>(), doc["results"][i]["relevance_score"].get<double>());
    EXPECT_GT(doc["usage"]["total_tokens"].get<int>(), 8);
    auto top = run_kiln("rerank -m " + dir + "/rank.gguf --query 'what?' --documents " + dir + "/docs.txt --top-n 2");
    ASSERT_EQ(top.status, 0) << top.err;
    EXPECT_EQ(std::count(top.out.begin(), top.out.end(), '\n'), 2);
    EXPECT_EQ(top.out.substr(top.out.find('\t') + 1, 1), std::to_string(doc["results"][0]["index"].get<int>()));
    auto plain = run_kiln("rerank -m " + dir + "/plain.gguf --query q --document d");
    EXPECT_EQ(plain.status, 1);
    EXPECT_NE(plain.err.find("not a reranker"), std::string::npos) << plain.err;
}

// `kiln rerank` against llama.cpp: the one-token-type cross-encoder, whose pairs
// kiln and llama.cpp both feed as type 0 (tools/tiny_embedding_fixtures.py
// scored kiln's pair layout with llama.cpp).
TEST(CliRerank, ScoresEqualLlamaCpp) {
    const std::string vocab = std::string(KILN_SOURCE_DIR) + "/../shared/testdata/tokenizer/ggml-vocab-bert-bge.gguf";
    const std::string why = kiln::test::missing_reason(vocab);
    if (!why.empty()) KILN_SKIP_MISSING(why);
    std::ifstream f(kiln::test::golden_path("embedding/tiny/bert_rank1.json"));
    const nlohmann::json px = nlohmann::json::parse(f)["pairs"];
    const std::string dir = kiln::test::temp_dir();
    kiln::test::write_tiny_encoder("bert_rank1", vocab, dir + "/rank1.gguf");
    std::string docs;
    for (const auto& d : px["documents"]) docs += d.get<std::string>() + "\n";
    kiln::test::write_file(dir + "/docs1.txt", docs);
    auto r = run_kiln("rerank -m " + dir + "/rank1.gguf --query '" + px["query"].get<std::string>() + "' --documents " + dir +
                      "/docs1.txt --json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto out = nlohmann::json::parse(r.out);
    ASSERT_EQ(out["results"].size(), px["documents"].size());
    for (const auto& res : out["results"]) {
        const size_t i = res["index"].get<size_t>();
        EXPECT_NEAR(res["relevance_score"].get<double>(), px["kiln_scores"][i].get<double>(), 1e-3) << i;
    }
}
