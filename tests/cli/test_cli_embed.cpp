// kiln embed as a user runs it, on the real embedding model (all-MiniLM-L6-v2):
// --json in the OpenAI shape with the reference's vectors, the three input forms
// giving the same vectors, normalization and dimensions, and the errors.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/cli_runner.h"
#include "support/test_support.h"

using kiln::test::run_kiln;

namespace {

std::string quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

double dot(const std::vector<float>& a, const std::vector<float>& b) {
    double s = 0;
    for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
    return s;
}

std::vector<std::vector<float>> vectors(const nlohmann::json& doc) {
    std::vector<std::vector<float>> out;
    for (const auto& d : doc["data"]) out.push_back(d["embedding"].get<std::vector<float>>());
    return out;
}

}  // namespace

TEST(CliEmbed, JsonMatchesTheReferenceAndInputFormsAgree) {
    const std::string m = kiln::test::minilm_path();
    KILN_REQUIRE_MODEL(m);
    const auto fx = nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("embedding/minilm.json")));
    const std::vector<std::string> texts = {fx["texts"][0].get<std::string>(), fx["texts"][1].get<std::string>(),
                                            fx["texts"][3].get<std::string>()};
    const std::vector<int> index = {0, 1, 3};
    std::string args = "embed -m " + m + " --json";
    for (const auto& t : texts) args += " --text " + quote(t);
    auto r = run_kiln(args);
    ASSERT_EQ(r.status, 0) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    EXPECT_EQ(doc["object"], "list");
    ASSERT_EQ(doc["data"].size(), texts.size());
    int tokens = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        EXPECT_EQ(doc["data"][i]["index"], i);
        EXPECT_EQ(doc["data"][i]["object"], "embedding");
        const auto v = doc["data"][i]["embedding"].get<std::vector<float>>();
        EXPECT_GE(dot(v, fx["reference"][index[i]].get<std::vector<float>>()), 0.9999) << texts[i];
        tokens += static_cast<int>(fx["llama_tokens"][index[i]].size());
    }
    EXPECT_EQ(doc["usage"]["prompt_tokens"], tokens);
    EXPECT_EQ(doc["usage"]["total_tokens"], tokens);

    const std::string dir = kiln::test::temp_dir();
    std::string lines, jsonl;
    for (const auto& t : texts) {
        lines += t + "\n";
        jsonl += nlohmann::json({{"text", t}}).dump() + "\n";
    }
    kiln::test::write_file(dir + "/embed.txt", lines);
    kiln::test::write_file(dir + "/embed.jsonl", jsonl);
    for (const std::string& form : {"--file " + dir + "/embed.txt", "--jsonl " + dir + "/embed.jsonl"}) {
        auto rf = run_kiln("embed -m " + m + " --json " + form);
        ASSERT_EQ(rf.status, 0) << rf.err;
        EXPECT_EQ(vectors(nlohmann::json::parse(rf.out)), vectors(doc)) << form;
    }

    // Plain output: one line per input, the same values.
    auto plain = run_kiln("embed -m " + m + " --text " + quote(texts[0]));
    ASSERT_EQ(plain.status, 0) << plain.err;
    std::vector<float> first;
    std::istringstream in(plain.out);
    for (float x; in >> x;) first.push_back(x);
    EXPECT_EQ(first, vectors(doc)[0]);
}

TEST(CliEmbed, NormalizationDimensionsAndErrors) {
    const std::string m = kiln::test::minilm_path();
    KILN_REQUIRE_MODEL(m);
    auto l1 = run_kiln("embed -m " + m + " --json --normalize l1 --dimensions 8 --text 'Hello world'");
    ASSERT_EQ(l1.status, 0) << l1.err;
    const auto v = vectors(nlohmann::json::parse(l1.out)).at(0);
    ASSERT_EQ(v.size(), 8u);
    double s = 0;
    for (float x : v) s += std::fabs(x);
    EXPECT_NEAR(s, 1.0, 1e-5);

    auto tokens = run_kiln("embed -m " + m + " --json --pooling none --text 'a b'");
    ASSERT_EQ(tokens.status, 0) << tokens.err;
    const auto per_token = nlohmann::json::parse(tokens.out)["data"][0]["embedding"];
    EXPECT_EQ(per_token.size(), 4u);  // [CLS] a b [SEP]
    EXPECT_EQ(per_token[0].size(), 384u);

    auto bad = run_kiln("embed -m " + m + " --normalize l7 --text x");
    EXPECT_EQ(bad.status, 1);
    EXPECT_NE(bad.err.find("normalization 'l7'"), std::string::npos) << bad.err;
    auto longer = run_kiln("embed -m " + m + " -c 8 --text 'one two three four five six seven eight nine'");
    EXPECT_EQ(longer.status, 1);
    EXPECT_NE(longer.err.find("11 tokens, more than the context of 8"), std::string::npos) << longer.err;
    EXPECT_EQ(run_kiln("embed -m " + m + " -c 8 --truncate --text 'one two three four five six seven eight nine'").status, 0);
    EXPECT_EQ(run_kiln("embed -m " + m).status, 1);  // no input

    // A chat model without a pooling type is refused with the reason; an embedding model cannot generate.
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto chat = run_kiln("embed -m " + kiln::test::smollm2_path() + " --text hi");
    EXPECT_EQ(chat.status, 1);
    EXPECT_NE(chat.err.find("sets no pooling type"), std::string::npos) << chat.err;
    auto gen = run_kiln("run -m " + m + " -p hi -n 2");
    EXPECT_EQ(gen.status, 1);
    EXPECT_NE(gen.err.find("embedding model"), std::string::npos) << gen.err;
}
