// The vocabularies converted from Hugging Face tokenizer files
// (tools/hf_to_gguf_vocab.py) against Hugging Face `tokenizers` itself: on the
// corpus (tests/golden/tokenizer/hf/*.json) and on llama.cpp's vectors of the same
// family (their .out files are Hugging Face's ids as well).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/test_support.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/tokenizer_test_util.h"

namespace kiln::test {
namespace {

class HuggingFace : public ::testing::TestWithParam<std::string> {};

TEST_P(HuggingFace, Corpus) {
    const std::string name = GetParam();
    std::string why;
    const std::string path = fixture_vocab_path("hf-" + name, why);
    if (path.empty()) KILN_SKIP_MISSING(why);
    const Tokenizer& tok = cached_tokenizer(path, TokenizerCompat::HuggingFace);
    const nlohmann::json fx = nlohmann::json::parse(read_file(golden_path("tokenizer/hf/" + name + ".json")));
    size_t n = 0, failures = 0;
    for (const auto& c : fx["cases"]) {
        const std::string id = c["id"].get<std::string>();
        const std::string& text = corpus_text(id);
        ++n;
        // Hugging Face always cuts added tokens out of the text: parse_special on.
        auto plain = tok.encode(text, EncodeOptions{.add_special = false, .parse_special = true});
        auto want = c["plain"].get<std::vector<TokenId>>();
        if (plain != want && failures++ < 12)
            ADD_FAILURE() << name << " [" << id << "] '" << escape_text(text) << "'\n  tokenizers " << format_ids(want)
                          << "\n  kiln       " << format_ids(plain);
        // With the model's own special tokens added (kiln never doubles a BOS the
        // text already has; Hugging Face does).
        auto special = tok.encode(text, EncodeOptions{.add_special = true, .parse_special = true});
        auto want_special = c["special"].get<std::vector<TokenId>>();
        const TokenId bos = tok.special().bos;
        if (tok.add_bos() && want_special.size() >= 2 && want_special[0] == bos && want_special[1] == bos)
            want_special.erase(want_special.begin());
        if (special != want_special && failures++ < 12)
            ADD_FAILURE() << name << " [" << id << "] with special tokens\n  tokenizers " << format_ids(want_special)
                          << "\n  kiln       " << format_ids(special);
    }
    EXPECT_EQ(failures, 0u) << "differences over " << n << " corpus texts";
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, HuggingFace, ::testing::ValuesIn(golden_keys("hf")),
                         [](const auto& info) {
                             std::string s;
                             for (char c : info.param) s.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
                             return s;
                         });

// llama.cpp's vectors of the matching family: the converted Llama 3.1 vocabulary
// against llama-bpe's, Qwen 3 against qwen2's, gpt-oss against gpt-4o's.
struct FamilyVectors {
    const char* hf;
    const char* vectors;
};

class HuggingFaceVectors : public ::testing::TestWithParam<FamilyVectors> {};

TEST_P(HuggingFaceVectors, MatchReference) {
    const FamilyVectors fv = GetParam();
    std::string why;
    const std::string path = fixture_vocab_path(std::string("hf-") + fv.hf, why);
    if (path.empty()) KILN_SKIP_MISSING(why);
    std::vector<VocabVector> vectors = read_vectors(fv.vectors);
    ASSERT_FALSE(vectors.empty()) << "no vectors for " << fv.vectors;
    const Tokenizer& tok = cached_tokenizer(path, TokenizerCompat::HuggingFace);
    size_t failed = 0;
    for (const VocabVector& v : vectors) {
        auto got = tok.encode(v.text, EncodeOptions{.add_special = false, .parse_special = false});
        if (got != v.ids && failed++ < 12)
            ADD_FAILURE() << fv.hf << " on " << fv.vectors << ": '" << escape_text(v.text) << "'\n  expected "
                          << format_ids(v.ids) << "\n  got      " << format_ids(got);
    }
    EXPECT_EQ(failed, 0u) << "of " << vectors.size() << " vectors";
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, HuggingFaceVectors,
                         ::testing::Values(FamilyVectors{"llama-3.1", "llama-bpe"}, FamilyVectors{"qwen3", "qwen2"},
                                           FamilyVectors{"qwen3", "deepseek-r1-qwen"},
                                           FamilyVectors{"gpt-oss", "gpt-4o"}),
                         [](const auto& info) {
                             std::string s = std::string(info.param.hf) + "_" + info.param.vectors;
                             for (char& c : s) if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return s;
                         });

}  // namespace
}  // namespace kiln::test
