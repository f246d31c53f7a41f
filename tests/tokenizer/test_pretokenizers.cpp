// Every row of the pre-tokenizer table against llama.cpp: the committed GPT-2
// vocabulary with tokenizer.ggml.pre set to the row's first name, on the corpus
// (tests/golden/tokenizer/pre/NAME.json). Plus the hand-written splitters that
// stand for a plain expression against that expression run by PCRE2.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "kiln/gguf/file.h"
#include "kiln/gguf/writer.h"
#include "support/test_support.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/tokenizer_test_util.h"
#include "tokenizer/unicode.h"

namespace kiln::test {
namespace {

std::vector<std::string> row_names() {
    std::vector<std::string> names;
    for (const auto& row : tok::pre_tokenizer_table()) names.emplace_back(row.names.front());
    return names;
}

// The GPT-2 vocabulary with another pre-tokenizer name, written once per name.
std::string gpt2_with_pre(const std::string& pre) {
    const std::string out = temp_dir() + "/gpt-2-" + pre + ".gguf";
    if (std::filesystem::exists(out)) return out;
    gguf::File src = gguf::File::open(data_path("shared/tokenizer/ggml-vocab-gpt-2.gguf"));
    gguf::Writer w;
    w.metadata() = gguf::materialize_metadata(src);
    w.metadata().add("tokenizer.ggml.pre", gguf::Value::string(pre));
    w.write(out);
    return out;
}

class PreTokenizers : public ::testing::TestWithParam<std::string> {};

TEST_P(PreTokenizers, EqualLlamaCpp) {
    const std::string name = GetParam();
    const std::string fixture = golden_path("tokenizer/pre/" + name + ".json");
    ASSERT_TRUE(std::filesystem::exists(fixture)) << "no fixture for pre-tokenizer row '" << name
                                                  << "': run tools/tokenizer_fixtures.py";
    const nlohmann::json fx = nlohmann::json::parse(read_file(fixture));
    const Tokenizer& tok = cached_tokenizer(gpt2_with_pre(name));
    ASSERT_EQ(tok.pre_name(), name);
    size_t n = 0, failures = 0;
    for (const auto& c : fx["cases"]) {
        if (c.contains("error")) continue;  // llama.cpp aborts there; kiln's answer is checked not to crash below
        const std::string id = c["id"].get<std::string>();
        const std::string& text = corpus_text(id);
        ++n;
        auto plain = tok.encode(text, EncodeOptions{.add_special = false, .parse_special = false});
        if (plain != c["plain"].get<std::vector<TokenId>>() && failures++ < 10)
            ADD_FAILURE() << name << " [" << id << "] plain\n  llama.cpp " << format_ids(c["plain"].get<std::vector<TokenId>>())
                          << "\n  kiln      " << format_ids(plain);
        auto want = c["special"].get<std::vector<TokenId>>();
        const TokenId bos = tok.special().bos;
        if (tok.add_bos() && want.size() >= 2 && want[0] == bos && want[1] == bos) want.erase(want.begin());
        auto special = tok.encode(text, EncodeOptions{.add_special = true, .parse_special = true});
        if (special != want && failures++ < 10)
            ADD_FAILURE() << name << " [" << id << "] special\n  llama.cpp " << format_ids(want) << "\n  kiln      "
                          << format_ids(special);
    }
    for (const auto& c : fx["cases"])
        if (c.contains("error")) (void)tok.encode(corpus_text(c["id"].get<std::string>()));
    EXPECT_EQ(failures, 0u) << "differences over " << n << " corpus texts";
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, PreTokenizers, ::testing::ValuesIn(row_names()), [](const auto& info) {
    std::string s;
    for (char c : info.param) s.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
    return s;
});

// Splitters that implement a plain expression give the pieces PCRE2 gives.
TEST(PreTokenizerSplitters, HandWrittenEqualsRegex) {
    using tok::StepKind;
    const tok::StepSpec steps[] = {
        {StepKind::Numbers, R"(\p{N})"},
        {StepKind::NumberRuns, R"(\p{N}+)"},
        {StepKind::NumberTriples, R"(\p{N}{1,3})"},
        {StepKind::AsciiTriples, R"([0-9][0-9][0-9])"},
        {StepKind::PunctRuns, R"([\p{P}\$\+<=>\^~\|]+)"},
        {StepKind::PunctTickRuns, R"([\p{P}\$\+<=>\^~\|`]+)"},
        {StepKind::LineBreaks, "[\r\n]"},
        {StepKind::Newlines, R"([^\n]+|[\n]+)"},
        {StepKind::TrailingSpace, R"(\s+$)"},
        {StepKind::DigitLookahead, R"((?=(\d{3})+(?!\d)))"},
    };
    std::vector<std::string> texts;
    const nlohmann::json corpus = nlohmann::json::parse(read_file(golden_path("tokenizer/corpus.json")));
    for (const auto& e : corpus) texts.push_back(corpus_text(e["id"].get<std::string>()));
    texts.push_back("1234567 12 123 1234 ab12345cd 9999999999");
    texts.push_back("x   \t ");
    for (const auto& step : steps) {
        tok::PreTokenizerSpec spec;
        spec.family = "test";
        spec.names = {"test"};
        spec.steps = {step};
        tok::PreTokenizer hand(spec), pcre(spec, /*force_regex=*/true);
        for (const std::string& t : texts) {
            std::vector<uint32_t> cps, a, b;
            tok::decode_utf8(t, cps);
            std::vector<uint16_t> flags(cps.size());
            for (size_t i = 0; i < cps.size(); ++i) flags[i] = tok::codepoint_flags(cps[i]);
            hand.split(cps, flags, a);
            pcre.split(cps, flags, b);
            EXPECT_EQ(a, b) << step.regex << " on '" << escape_text(t) << "'";
        }
    }
}

}  // namespace
}  // namespace kiln::test
