// Embeddings (kiln/embedding.h) of the tiny random encoders against llama.cpp
// (tests/golden/embedding/tiny, tools/tiny_embedding_fixtures.py): tokens equal,
// pooled vectors within cosine 0.9999 (max abs diff printed), a batch of inputs
// of different lengths equal to each input alone bit for bit; pooling,
// normalization, Matryoshka dimensions and truncation.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "kiln/context.h"
#include "kiln/embedding.h"
#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/gguf/writer.h"
#include "kiln/model.h"
#include "support/test_support.h"
#include "support/tiny_encoders.h"

namespace kiln {
namespace {

std::string vocab_path() { return std::string(KILN_SOURCE_DIR) + "/../shared/testdata/tokenizer/ggml-vocab-bert-bge.gguf"; }

std::shared_ptr<const Model> tiny(const std::string& name) {
    const std::string path = test::temp_dir() + "/tiny-enc-" + name + ".gguf";
    test::write_tiny_encoder(name, test::tiny_encoder_vocab(name), path);
    return Model::load(path);
}

nlohmann::json fixture(const std::string& name) {
    std::ifstream f(test::golden_path("embedding/tiny/" + name + ".json"));
    return nlohmann::json::parse(f);
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        ab += static_cast<double>(a[i]) * b[i];
        aa += static_cast<double>(a[i]) * a[i];
        bb += static_cast<double>(b[i]) * b[i];
    }
    return ab / std::sqrt(aa * bb);
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(static_cast<double>(a[i]) - b[i]));
    return m;
}

class TinyEncoder : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override {
        const std::string why = test::missing_reason(test::tiny_encoder_vocab(GetParam()));
        if (!why.empty()) KILN_SKIP_MISSING(why);
    }
};

TEST_P(TinyEncoder, MatchesLlamaCppAloneAndBatched) {
    const std::string name = GetParam();
    auto model = tiny(name);
    const nlohmann::json fx = fixture(name);
    const auto texts = fx["texts"].get<std::vector<std::string>>();
    ASSERT_EQ(texts, test::tiny_encoder_texts()) << "the fixture's texts are stale: rerun tools/tiny_embedding_fixtures.py";
    Embedder emb(model, {.n_seq_max = 8});
    EmbedOptions o;
    o.normalize = Normalization::None;
    const bool rank = fx["pooling"].get<int>() == 4;
    ASSERT_EQ(emb.pooling(o), static_cast<Pooling>(fx["pooling"].get<int>()));

    std::vector<std::vector<TokenId>> tokens;
    for (size_t i = 0; i < texts.size(); ++i) {
        tokens.push_back(emb.tokenize(texts[i]));
        EXPECT_EQ(tokens.back(), fx["tokens"][i].get<std::vector<TokenId>>()) << texts[i];
    }
    // Alone, then all in one batch: the same bits.
    std::vector<Embedding> alone;
    for (const auto& t : tokens) alone.push_back(emb.embed(std::span(&t, 1), o).at(0));
    const std::vector<Embedding> batch = emb.embed(tokens, o);
    ASSERT_EQ(batch.size(), texts.size());
    // A score's bound: 1e-3, or twice llama.cpp's own spread between the same
    // input alone and in a batch where that is larger (modern-bert_rank: its
    // sliding layers and head put llama.cpp's two answers 9.6e-4 apart).
    double oracle_spread = 0;
    for (size_t i = 0; i < texts.size(); ++i)
        oracle_spread = std::max(oracle_spread, max_abs_diff(fx["alone"][i].get<std::vector<float>>(), fx["batch"][i].get<std::vector<float>>()));
    const double score_bound = std::max(1e-3, 2 * oracle_spread);
    double worst_cos = 1, worst_diff = 0;
    for (size_t i = 0; i < texts.size(); ++i) {
        EXPECT_EQ(batch[i].values, alone[i].values) << "input " << i << " differs in a batch";
        EXPECT_EQ(batch[i].n_tokens, static_cast<int>(tokens[i].size()));
        for (const char* which : {"alone", "batch"}) {
            const auto want = fx[which][i].get<std::vector<float>>();
            ASSERT_EQ(alone[i].values.size(), want.size());
            const double d = max_abs_diff(alone[i].values, want);
            worst_diff = std::max(worst_diff, d);
            if (rank) {
                EXPECT_LE(d, score_bound * std::max(1.0, std::fabs(static_cast<double>(want[0])))) << which << " " << i;
            } else {
                const double c = cosine(alone[i].values, want);
                worst_cos = std::min(worst_cos, c);
                EXPECT_GE(c, 0.9999) << which << " " << i << " max abs diff " << d;
            }
        }
    }
    std::printf("[ %s ] vs llama.cpp: min cosine %.7f, max abs diff %.3g\n", name.c_str(), worst_cos, worst_diff);
}

INSTANTIATE_TEST_SUITE_P(Embedding, TinyEncoder,
                         ::testing::Values("bert", "bert_q8_0", "bert_rank", "nomic-bert", "nomic-bert_q8_0", "jina-bert-v2",
                                           "jina-bert-v2_code", "modern-bert", "bert_rank1",
                                           "bert_xlmr_rank", "qwen3_embed", "llama-embed", "qwen3_rerank",
                                           "jina-bert-v2_rank", "modern-bert_rank", "gemma-embedding", "nomic-bert-moe", "nomic-bert-moe_q8_0", "neo-bert", "neo-bert_rank", "eurobert"));

class EmbeddingOptions : public ::testing::Test {
protected:
    void SetUp() override {
        const std::string why = test::missing_reason(vocab_path());
        if (!why.empty()) KILN_SKIP_MISSING(why);
        if (!model_) model_ = tiny("bert");
    }
    static std::shared_ptr<const Model> model_;
};
std::shared_ptr<const Model> EmbeddingOptions::model_;

TEST_F(EmbeddingOptions, PoolingKindsFromTokenVectors) {
    Embedder emb(model_);
    const std::vector<std::string> texts = {"pooling over the tokens of this input"};
    EmbedOptions o;
    o.normalize = Normalization::None;
    o.pooling = Pooling::None;
    const Embedding all = emb.embed_texts(texts, o).at(0);
    const size_t e = static_cast<size_t>(emb.n_embd());
    ASSERT_EQ(all.values.size(), e * static_cast<size_t>(all.n_tokens));
    o.pooling = Pooling::Cls;
    EXPECT_EQ(emb.embed_texts(texts, o).at(0).values, std::vector<float>(all.values.begin(), all.values.begin() + static_cast<long>(e)));
    o.pooling = Pooling::Last;
    EXPECT_EQ(emb.embed_texts(texts, o).at(0).values, std::vector<float>(all.values.end() - static_cast<long>(e), all.values.end()));
    o.pooling = Pooling::Mean;
    const Embedding mean = emb.embed_texts(texts, o).at(0);
    for (size_t j = 0; j < e; ++j) {
        double s = 0;
        for (int t = 0; t < all.n_tokens; ++t) s += all.values[static_cast<size_t>(t) * e + j];
        EXPECT_NEAR(mean.values[j], s / all.n_tokens, 1e-5);
    }
    o.pooling = Pooling::Rank;
    EXPECT_THROW(emb.embed_texts(texts, o), Error);  // no classification head
}

TEST_F(EmbeddingOptions, Normalizations) {
    Embedder emb(model_);
    const std::vector<std::string> texts = {"normalize me"};
    EmbedOptions o;
    o.normalize = Normalization::None;
    const std::vector<float> raw = emb.embed_texts(texts, o).at(0).values;
    auto norm = [&](Normalization n, float p) {
        o.normalize = n;
        o.p = p;
        return emb.embed_texts(texts, o).at(0).values;
    };
    double l2 = 0, l1 = 0, mx = 0, p3 = 0;
    for (float x : norm(Normalization::L2, 2)) l2 += x * x;
    for (float x : norm(Normalization::L1, 2)) l1 += std::fabs(x);
    for (float x : norm(Normalization::MaxAbs, 2)) mx = std::max(mx, static_cast<double>(std::fabs(x)));
    for (float x : norm(Normalization::PNorm, 3)) p3 += std::pow(std::fabs(x), 3.0);
    EXPECT_NEAR(l2, 1.0, 1e-5);
    EXPECT_NEAR(l1, 1.0, 1e-5);
    EXPECT_NEAR(mx, 1.0, 1e-6);
    EXPECT_NEAR(p3, 1.0, 1e-5);
    // The default is L2, and the direction is the raw vector's.
    EXPECT_GT(cosine(emb.embed_texts(texts).at(0).values, raw), 0.999999);
    float p = 0;
    EXPECT_EQ(parse_normalization("p3", p), Normalization::PNorm);
    EXPECT_EQ(p, 3.0f);
    EXPECT_EQ(parse_normalization("maxabs", p), Normalization::MaxAbs);
    EXPECT_THROW(parse_normalization("p0", p), Error);
    EXPECT_THROW(parse_normalization("l3", p), Error);
    EXPECT_EQ(parse_pooling("cls"), Pooling::Cls);
    EXPECT_THROW(parse_pooling("max"), Error);
}

TEST_F(EmbeddingOptions, MatryoshkaDimensions) {
    Embedder emb(model_);
    const std::vector<std::string> texts = {"first and shortest", "a second input, longer than the first one"};
    EmbedOptions o;
    o.normalize = Normalization::None;
    const auto raw = emb.embed_texts(texts, o);
    o.normalize = Normalization::L2;
    o.dimensions = 16;
    const auto cut = emb.embed_texts(texts, o);
    for (size_t i = 0; i < texts.size(); ++i) {
        ASSERT_EQ(cut[i].values.size(), 16u);
        std::vector<float> want(raw[i].values.begin(), raw[i].values.begin() + 16);
        normalize_embedding(want, Normalization::L2);
        EXPECT_EQ(cut[i].values, want);
    }
    o.dimensions = emb.n_embd() + 1;
    EXPECT_THROW(emb.embed_texts(texts, o), Error);
}

TEST_F(EmbeddingOptions, TruncationOrALengthError) {
    Embedder emb(model_, {.n_ctx = 8});
    const std::vector<std::string> texts = {"this input has many more tokens than the tiny context of eight holds"};
    const auto ids = emb.tokenize(texts[0]);
    ASSERT_GT(ids.size(), 8u);
    try {
        emb.embed_texts(texts);
        FAIL() << "no error for an over-long input";
    } catch (const Error& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find(std::to_string(ids.size()) + " tokens"), std::string::npos) << m;
        EXPECT_NE(m.find("context of 8"), std::string::npos) << m;
    }
    EmbedOptions o;
    o.truncate = true;
    const Embedding e = emb.embed_texts(texts, o).at(0);
    EXPECT_TRUE(e.truncated);
    EXPECT_EQ(e.n_tokens, 8);
    // The same as the first 7 tokens and the SEP given directly.
    std::vector<TokenId> cut(ids.begin(), ids.begin() + 7);
    cut.push_back(ids.back());
    EXPECT_EQ(emb.embed(std::span(&cut, 1)).at(0).values, e.values);
}

TEST_F(EmbeddingOptions, ManyInputsOverSeveralBatches) {
    // More inputs than sequences per batch and than one batch's tokens: still each alone's bits.
    Embedder emb(model_, {.n_seq_max = 3, .n_batch = 40});
    std::vector<std::string> texts;
    for (int i = 0; i < 10; ++i) texts.push_back("input number " + std::to_string(i) + std::string(static_cast<size_t>(i), '!'));
    const auto all = emb.embed_texts(texts);
    Embedder single(model_, {.n_seq_max = 1});
    for (size_t i = 0; i < texts.size(); ++i)
        EXPECT_EQ(all[i].values, single.embed_texts(std::span(&texts[i], 1)).at(0).values) << i;
}

TEST_F(EmbeddingOptions, EncoderHasNoLogits) {
    EXPECT_TRUE(model_->is_embedding_model());
    EXPECT_FALSE(model_->has_output_head());
    Context ctx(model_, {.n_ctx = 16, .hidden_states = true});
    Batch b;
    b.add(101, 0, 0, true);
    b.add(102, 1, 0, true);
    ctx.decode(b);
    EXPECT_EQ(ctx.hidden(1).size(), static_cast<size_t>(model_->n_embd()));
    EXPECT_THROW(ctx.logits(0), Error);
    // Token types beyond the file's two are an error naming them.
    Context c2(model_, {.n_ctx = 16, .hidden_states = true});
    Batch t;
    t.add(101, 0, 0, true, 2);
    EXPECT_THROW(c2.decode(t), Error);
}

TEST_F(EmbeddingOptions, PairsTakeTypeOneForTheSecondSegment) {
    Embedder emb(model_);
    const EmbedInput pair = emb.tokenize_pair("a query", "the document");
    const Tokenizer& tok = model_->tokenizer();
    ASSERT_EQ(pair.tokens.front(), tok.special().bos);
    ASSERT_EQ(pair.tokens.back(), tok.special().sep);
    ASSERT_EQ(pair.tokens.size(), pair.token_types.size());
    const auto q = tok.encode("a query", {.add_special = false});
    EXPECT_EQ(pair.token_types[q.size() + 1], 0);  // the first SEP
    EXPECT_EQ(pair.token_types[q.size() + 2], 1);
    EXPECT_EQ(pair.token_types.back(), 1);
    // Type 1's row changes the result.
    EmbedInput zero = pair;
    std::fill(zero.token_types.begin(), zero.token_types.end(), 0);
    const std::vector<EmbedInput> both = {pair, zero};
    const auto out = emb.embed(std::span<const EmbedInput>(both));
    EXPECT_NE(out[0].values, out[1].values);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

TEST(Rerank, ScoresArePairsThroughTheClassificationHead) {
    const std::string why = test::missing_reason(vocab_path());
    if (!why.empty()) KILN_SKIP_MISSING(why);
    auto model = tiny("bert_rank");
    ASSERT_EQ(model->n_cls_out(), 1);
    Embedder emb(model);
    const std::vector<std::string> docs = {"a short document", "another, somewhat longer document about something else", "x"};
    const std::string query = "which document?";
    int64_t tokens = 0;
    const std::vector<float> scores = emb.rerank(query, docs, false, &tokens);
    ASSERT_EQ(scores.size(), docs.size());
    int64_t want_tokens = 0;
    for (size_t i = 0; i < docs.size(); ++i) {
        const EmbedInput pair = emb.tokenize_pair(query, docs[i]);
        want_tokens += static_cast<int64_t>(pair.tokens.size());
        EXPECT_EQ(emb.embed(std::span(&pair, 1)).at(0).values.at(0), scores[i]) << i;  // alone == batched
    }
    EXPECT_EQ(tokens, want_tokens);
    EXPECT_NE(scores[0], scores[1]);
    // A model without the head is not a reranker.
    Embedder plain(tiny("bert"));
    EXPECT_THROW(plain.rerank(query, docs), Error);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// nomic-embed-text is trained for Matryoshka truncation: the first d values of
// llama.cpp's pooled vector, renormalized, are what `dimensions` gives.
TEST(NomicBert, MatryoshkaDimensionsAgainstLlamaCpp) {
    const std::string why = test::missing_reason(vocab_path());
    if (!why.empty()) KILN_SKIP_MISSING(why);
    const nlohmann::json fx = fixture("nomic-bert");
    Embedder emb(tiny("nomic-bert"));
    const auto texts = fx["texts"].get<std::vector<std::string>>();
    for (int d : {16, 32}) {
        EmbedOptions o;
        o.dimensions = d;
        const auto cut = emb.embed_texts(texts, o);
        for (size_t i = 0; i < texts.size(); ++i) {
            auto want = fx["alone"][i].get<std::vector<float>>();
            want.resize(static_cast<size_t>(d));
            normalize_embedding(want, Normalization::L2);
            ASSERT_EQ(cut[i].values.size(), static_cast<size_t>(d));
            EXPECT_GE(cosine(cut[i].values, want), 0.9999) << d << " " << i;
            EXPECT_LE(max_abs_diff(cut[i].values, want), 1e-3) << d << " " << i;
        }
    }
}

// llama.cpp's nomic-bert graph adds no FFN bias: a file with one is refused
// naming the tensor, not run without it.
TEST(NomicBert, AnFfnBiasIsRefusedNamingIt) {
    const std::string why = test::missing_reason(vocab_path());
    if (!why.empty()) KILN_SKIP_MISSING(why);
    const std::string base = test::temp_dir() + "/tiny-enc-nomic-bias-base.gguf";
    test::write_tiny_encoder("nomic-bert", vocab_path(), base);
    const gguf::File src = gguf::File::open(base);
    gguf::Writer w;
    w.metadata() = gguf::materialize_metadata(src);
    for (const auto& t : src.tensors()) w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
    w.add_tensor("blk.0.ffn_up.bias", GgmlType::F32, {128}, std::vector<uint8_t>(128 * 4, 0));
    const std::string path = test::temp_dir() + "/tiny-enc-nomic-bias.gguf";
    w.write(path);
    try {
        Model::load(path);
        FAIL() << "loaded a nomic-bert file with an FFN bias";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("'blk.0.ffn_up.bias' is not used by architecture 'nomic-bert'"), std::string::npos)
            << e.what();
    }
}

// nomic-bert-moe's expert layers are the ones moe_every_n_layers names, as
// llama.cpp's loader schedules them: a file whose scheduled layer lacks its
// router is refused naming it, and one with experts on an unscheduled layer too.
TEST(NomicBertMoe, TheLayerScheduleComesFromTheFile) {
    const std::string why = test::missing_reason(vocab_path());
    if (!why.empty()) KILN_SKIP_MISSING(why);
    const std::string base = test::temp_dir() + "/tiny-enc-nomic-moe-base.gguf";
    test::write_tiny_encoder("nomic-bert-moe", vocab_path(), base);
    const gguf::File src = gguf::File::open(base);
    auto error_with_every = [&](uint32_t every) {
        gguf::Writer w;
        const gguf::Metadata md = gguf::materialize_metadata(src);
        for (const auto& [k, v] : md.entries())
            w.metadata().add(k, k == "nomic-bert-moe.moe_every_n_layers" ? gguf::Value::u32(every) : v);
        for (const auto& t : src.tensors()) w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
        const std::string path = test::temp_dir() + "/tiny-enc-nomic-moe.gguf";
        w.write(path);
        try {
            Model::load(path);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("(loaded)");
    };
    EXPECT_EQ(error_with_every(2), "(loaded)");
    // Every third layer: layer 1 is still an expert layer, layer 3 is dense and has no ffn_up.
    std::string m = error_with_every(3);
    EXPECT_NE(m.find("'blk.3.ffn_up.weight' not found"), std::string::npos) << m;
    // No key (no expert layers, as llama.cpp): layer 1 has no dense FFN.
    m = error_with_every(0);
    EXPECT_NE(m.find("ffn_up.weight' not found"), std::string::npos) << m;
}

// gemma-embedding's Dense projections are shaped by the file's feature keys, as
// llama.cpp creates them: a projection whose key is missing, or whose keys do
// not chain back to the embedding width, is refused naming it.
TEST(GemmaEmbedding, DenseProjectionsNeedTheirKeys) {
    const std::string vocab = test::tiny_encoder_vocab("gemma-embedding");
    const std::string why = test::missing_reason(vocab);
    if (!why.empty()) KILN_SKIP_MISSING(why);
    const std::string base = test::temp_dir() + "/tiny-enc-gemma-dense-base.gguf";
    test::write_tiny_encoder("gemma-embedding", vocab, base);
    const gguf::File src = gguf::File::open(base);
    auto rewrite = [&](const std::string& drop_key, uint32_t dense_3_in) {
        gguf::Writer w;
        const gguf::Metadata md = gguf::materialize_metadata(src);
        for (const auto& [k, v] : md.entries()) {
            if (k == drop_key) continue;
            if (k == "gemma-embedding.dense_3_feat_in") w.metadata().add(k, gguf::Value::u32(dense_3_in));
            else w.metadata().add(k, v);
        }
        for (const auto& t : src.tensors()) w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
        const std::string path = test::temp_dir() + "/tiny-enc-gemma-dense.gguf";
        w.write(path);
        return path;
    };
    auto error_of = [](const std::string& path) {
        try {
            Model::load(path);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("(loaded)");
    };
    std::string m = error_of(rewrite("gemma-embedding.dense_2_feat_out", 512));
    EXPECT_NE(m.find("'dense_2.weight': the file has no 'gemma-embedding.dense_2_feat_out'"), std::string::npos) << m;
    m = error_of(rewrite("", 256));  // dense_3 [256, 256] declared, the tensor is [512, 256]
    EXPECT_NE(m.find("dense_3.weight"), std::string::npos) << m;
    // Without pooling the projections apply to every token, and mean pooling
    // projects the tokens' mean (both before normalization), as llama.cpp.
    auto model = Model::load(base);
    EXPECT_TRUE(model->is_embedding_model());
    EXPECT_FALSE(model->has_output_head());
    Embedder emb(model, {.n_ctx = 64, .n_seq_max = 1});
    EmbedOptions o;
    o.normalize = Normalization::None;
    const std::vector<std::string> texts = {"dense projections after pooling"};
    const Embedding mean = emb.embed_texts(texts, o).at(0);
    o.pooling = Pooling::None;
    const Embedding rows = emb.embed_texts(texts, o).at(0);
    ASSERT_EQ(rows.values.size(), static_cast<size_t>(emb.n_embd()) * static_cast<size_t>(rows.n_tokens));
    // The projections are linear (no bias): the mean of projected rows is the projected mean.
    const size_t e = static_cast<size_t>(emb.n_embd());
    std::vector<float> avg(e, 0.0f);
    for (int t = 0; t < rows.n_tokens; ++t)
        for (size_t j = 0; j < e; ++j) avg[j] += rows.values[static_cast<size_t>(t) * e + j] / static_cast<float>(rows.n_tokens);
    EXPECT_GT(cosine(avg, mean.values), 0.9999);
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// The rerank oracle (tools/tiny_embedding_fixtures.py "pairs"): llama.cpp's rank
// pooling of query / document pairs, fed as kiln joins them ([CLS] q [SEP] d
// [SEP], Hugging Face's layout) and as llama-server's /v1/rerank joins them
// (for a BERT vocabulary: [CLS] q [SEP] d, no closing SEP, since it adds no
// EOS; for XLM-R <s> q </s> d </s>, one </s> between where Hugging Face and kiln
// put two). llama.cpp's graph gives every token type 0; with one token type
// (bge-reranker-like) kiln does too, so `kiln rerank` is llama.cpp's score;
// with two, kiln gives the document type 1 as Hugging Face does. A decoder
// reranker (qwen3_rerank) joins a pair by its file's rerank prompt, kiln and
// llama-server alike, and scores "yes" (the softmax of yes / no).
class RerankOracle : public ::testing::TestWithParam<std::string> {};

TEST_P(RerankOracle, ScoresEqualLlamaCppOnTheSamePairs) {
    const std::string name = GetParam();
    const std::string why = test::missing_reason(test::tiny_encoder_vocab(name));
    if (!why.empty()) KILN_SKIP_MISSING(why);
    const nlohmann::json px = fixture(name)["pairs"];
    auto model = tiny(name);
    Embedder emb(model);
    const auto query = px["query"].get<std::string>();
    const auto docs = px["documents"].get<std::vector<std::string>>();
    EmbedOptions o;
    o.pooling = Pooling::Rank;
    auto score_all_type0 = [&](const std::vector<TokenId>& tokens) {
        EmbedInput in;
        in.tokens = tokens;
        in.token_types.assign(tokens.size(), 0);
        return emb.embed(std::span(&in, 1), o).at(0).values.at(0);
    };
    const std::vector<float> reranked = emb.rerank(query, docs);
    const bool one_type = name != "bert_rank";  // token_type_count 1 (bert_rank1, the XLM-R one)
    // neo-bert_rank: its pre-RMS-norm trunk's F16 rounding (2.3e-3 max abs on the
    // pooled vectors, as the other F16 encoders) comes through the head at 1.4e-3.
    const double bound = name == "neo-bert_rank" ? 2e-3 : 1e-3;
    double worst = 0;
    for (size_t i = 0; i < docs.size(); ++i) {
        const EmbedInput pair = emb.tokenize_pair(query, docs[i]);
        EXPECT_EQ(pair.tokens, px["kiln_tokens"][i].get<std::vector<TokenId>>()) << i;
        for (const char* layout : {"kiln", "server"}) {
            const auto tokens = px[std::string(layout) + "_tokens"][i].get<std::vector<TokenId>>();
            const float want = px[std::string(layout) + "_scores"][i].get<float>();
            const double d = std::fabs(static_cast<double>(score_all_type0(tokens)) - want);
            worst = std::max(worst, d);
            EXPECT_LE(d, bound) << layout << " " << i;
        }
        const float want = px["kiln_scores"][i].get<float>();
        if (one_type) {
            EXPECT_LE(std::fabs(static_cast<double>(reranked[i]) - want), bound) << i;  // kiln rerank == llama.cpp
        } else {
            EXPECT_GT(std::fabs(static_cast<double>(reranked[i]) - want), 1e-3) << i;  // type 1's row counts
        }
    }
    std::printf("[ %s ] pair scores vs llama.cpp (same tokens, type 0): max abs diff %.3g\n", name.c_str(), worst);
}

INSTANTIATE_TEST_SUITE_P(Embedding, RerankOracle, ::testing::Values("bert_rank", "bert_rank1", "bert_xlmr_rank", "qwen3_rerank", "neo-bert_rank"));

}  // namespace
}  // namespace kiln
