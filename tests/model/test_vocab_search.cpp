// find_tokens and token_neighbors (kiln/vocab.h) on SmolLM2: every match holds the
// text, exact matches come first; neighbours are the cosine ranking of the
// embedding rows, checked against a direct computation for a sample.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/quant.h"
#include "kiln/tokenizer.h"
#include "kiln/vocab.h"
#include "support/test_support.h"

namespace {

std::string lower(std::string s) {
    for (char& c : s)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    return s;
}

}  // namespace

TEST(VocabSearch, FindTokensContainTheTextExactFirst) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const kiln::gguf::File file = kiln::gguf::File::open(kiln::test::smollm2_path());
    const kiln::Tokenizer tok = kiln::Tokenizer::from_gguf(file);
    const auto ids = kiln::find_tokens(tok, "Paris", 1000);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(lower(std::string(tok.token_piece(ids[0], true))), "paris");
    size_t n = 0;
    for (size_t id = 0; id < tok.n_vocab(); ++id)
        n += lower(std::string(tok.token_piece(static_cast<kiln::TokenId>(id), true))).find("paris") != std::string::npos;
    EXPECT_EQ(ids.size(), n);  // all of them, under the limit
    for (auto id : ids) EXPECT_NE(lower(std::string(tok.token_piece(id, true))).find("paris"), std::string::npos);
    EXPECT_EQ(kiln::find_tokens(tok, "e", 7).size(), 7u);
    EXPECT_THROW(kiln::find_tokens(tok, "", 5), kiln::Error);
}

TEST(VocabSearch, NeighborsAreTheCosineRanking) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const kiln::gguf::File file = kiln::gguf::File::open(kiln::test::smollm2_path());
    const kiln::gguf::TensorInfo& t = file.tensor("token_embd.weight");
    const uint64_t n_embd = t.shape[0];
    auto row = [&](int64_t r) {
        std::vector<float> v(n_embd);
        kiln::quant::dequantize_row(t.type, file.tensor_data(t) + static_cast<uint64_t>(r) * kiln::ggml_row_bytes(t.type, n_embd),
                                    v.data(), static_cast<int64_t>(n_embd));
        return v;
    };
    auto cosine = [&](int64_t a, int64_t b) {
        const auto x = row(a), y = row(b);
        double d = 0, nx = 0, ny = 0;
        for (uint64_t i = 0; i < n_embd; ++i) {
            d += static_cast<double>(x[i]) * y[i];
            nx += static_cast<double>(x[i]) * x[i];
            ny += static_cast<double>(y[i]) * y[i];
        }
        return d / (std::sqrt(nx) * std::sqrt(ny));
    };
    const kiln::TokenId token = 1000;
    const auto nb = kiln::token_neighbors(file, token, 20);
    ASSERT_EQ(nb.size(), 20u);
    for (size_t i = 0; i < nb.size(); ++i) {
        EXPECT_NE(nb[i].id, token);
        EXPECT_NEAR(nb[i].similarity, cosine(token, nb[i].id), 1e-12);
        if (i) EXPECT_GE(nb[i - 1].similarity, nb[i].similarity);
    }
    // No other token is nearer than the last one listed (a sample of rows).
    for (int64_t r = 0; r < static_cast<int64_t>(t.n_rows()); r += 97)
        if (r != token) EXPECT_LE(cosine(token, r), nb.front().similarity + 1e-12);
    EXPECT_THROW(kiln::token_neighbors(file, -1, 5), kiln::Error);
    EXPECT_THROW(kiln::token_neighbors(file, static_cast<kiln::TokenId>(t.n_rows()), 5), kiln::Error);
}
