// llama.cpp's tokenizer test vectors (ggml-vocab-NAME.gguf.inp / .out): one test
// per vocabulary. The expected ids are Hugging Face's encode(text,
// add_special_tokens=False), so they are compared with add_special and
// parse_special off.
#include <gtest/gtest.h>

#include "support/test_support.h"
#include "tokenizer/tokenizer_test_util.h"

namespace kiln::test {
namespace {

class VocabVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabVectors, MatchReference) {
    const std::string name = GetParam();
    const std::string path = vocab_path(name);
    if (path.empty())
        KILN_SKIP_MISSING("ggml-vocab-" + name + ".gguf not found in " + shared_vocab_dir() + " or " +
                          cached_vocab_dir() + " (run tools/fetch_llamacpp_vocabs.sh)");
    std::vector<VocabVector> vectors = read_vectors(name);
    if (vectors.empty()) GTEST_SKIP() << "no .inp/.out vectors for " << name;
    const Tokenizer& tok = cached_tokenizer(path);
    size_t failed = 0;
    for (const VocabVector& v : vectors) {
        std::vector<TokenId> got = tok.encode(v.text, EncodeOptions{.add_special = false, .parse_special = false});
        if (got != v.ids) {
            ++failed;
            ADD_FAILURE() << name << ": '" << escape_text(v.text) << "'\n  expected " << format_ids(v.ids)
                          << "\n  got      " << format_ids(got);
        }
    }
    RecordProperty("vectors", static_cast<int>(vectors.size()));
    EXPECT_EQ(failed, 0u) << "of " << vectors.size() << " vectors";
}

std::string param_name(const ::testing::TestParamInfo<std::string>& info) {
    std::string s;
    for (char c : info.param) s.push_back(std::isalnum(static_cast<unsigned char>(c)) ? c : '_');
    return s;
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, VocabVectors, ::testing::ValuesIn(all_vocab_names()), param_name);

}  // namespace
}  // namespace kiln::test
