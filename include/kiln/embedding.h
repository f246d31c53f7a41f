// Embeddings: many inputs evaluated as separate sequences of one Context,
// pooled into one vector each and normalized.
//
//   auto model = kiln::Model::load("all-MiniLM-L6-v2.gguf");
//   kiln::Embedder embedder(model);
//   auto out = embedder.embed_texts({"first text", "second text"});
//   // out[i].values: f32 [n_embd], L2-normalized
//
// An input's vector is the same bits alone or in a batch with others (each
// input is its own sequence; attention never crosses sequences and the
// matrix products are batch-invariant). All failures throw kiln::Error.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/executor.h"
#include "kiln/model.h"
#include "kiln/tokenizer.h"

namespace kiln {

// What a vector is divided by: nothing, its largest magnitude (values in
// [-1, 1]), its L1 norm, its L2 norm (unit length, the default, as llama.cpp),
// or its p-norm (EmbedOptions::p).
enum class Normalization { None, MaxAbs, L1, L2, PNorm };

// "none" | "maxabs" | "l1" | "l2" | "pN" (N > 0, e.g. "p3"); throws naming the text.
Normalization parse_normalization(std::string_view text, float& p);
// "none" | "mean" | "cls" | "last" | "rank"; throws naming the text.
Pooling parse_pooling(std::string_view text);
std::string_view pooling_name(Pooling pooling);

// Divides v in place by its norm of the given kind (a zero vector stays zero).
void normalize_embedding(std::span<float> v, Normalization kind, float p = 2.0f);

struct EmbedOptions {
    std::optional<Pooling> pooling;  // unset: the file's {arch}.pooling_type (an error if it sets none)
    Normalization normalize = Normalization::L2;
    float p = 2.0f;                  // the exponent of Normalization::PNorm
    // An input longer than the context: cut to fit (its last token, the SEP /
    // EOS the tokenizer added, is kept at the end) or, false, an error that
    // names both lengths.
    bool truncate = false;
    // Matryoshka: keep the first `dimensions` values of each pooled vector and
    // normalize what is kept (0: all n_embd; more than n_embd is an error).
    int dimensions = 0;
};

struct EmbedderOptions {
    int n_ctx = 0;       // tokens one input may have; 0: the model's trained context, capped at 8192
    int n_seq_max = 16;  // inputs evaluated together in one batch
    int n_batch = 0;     // most tokens in one batch; 0: max(n_ctx, 2048)
    int n_threads = 0;   // 0: every thread of the executor
    std::shared_ptr<Executor> executor;  // null: Executor::shared()
};

struct Embedding {
    // Pooled: f32 [dimensions or n_embd]. Pooling none: every token's vector,
    // f32 [n_embd, n_tokens] (each normalized). Rank: the classifier's
    // n_cls_out scores (never normalized).
    std::vector<float> values;
    int n_tokens = 0;        // tokens evaluated (after truncation)
    bool truncated = false;  // the input was cut to the context
};

// An input of token ids, with token types for a pair (empty: all 0).
struct EmbedInput {
    std::vector<TokenId> tokens;
    std::vector<int32_t> token_types;
};

class Embedder {
public:
    explicit Embedder(std::shared_ptr<const Model> model, const EmbedderOptions& options = {});
    ~Embedder();
    Embedder(const Embedder&) = delete;
    Embedder& operator=(const Embedder&) = delete;

    const Model& model() const;
    int n_ctx() const;   // tokens one input may have
    int n_embd() const;
    // The pooling options.pooling or the file asks for; throws when neither says.
    Pooling pooling(const EmbedOptions& options) const;

    // Token ids of a text as the model expects it (CLS ... SEP for BERT).
    std::vector<TokenId> tokenize(std::string_view text) const;
    // A (query, document) pair: [CLS] q [SEP] d [SEP], types 0 then 1 (rank pooling);
    // a file with a rerank prompt (tokenizer.chat_template.rerank: Qwen3 rerankers)
    // fills its {query} and {document} in, as llama-server does.
    EmbedInput tokenize_pair(std::string_view query, std::string_view document) const;

    std::vector<Embedding> embed(std::span<const EmbedInput> inputs, const EmbedOptions& options = {});
    std::vector<Embedding> embed(std::span<const std::vector<TokenId>> inputs, const EmbedOptions& options = {});
    std::vector<Embedding> embed_texts(std::span<const std::string> texts, const EmbedOptions& options = {});

    // A reranker's (rank pooling, classification head) score of each document
    // for the query: the head's first output for [CLS] query [SEP] document [SEP]
    // (higher: more relevant; raw, no sigmoid). `truncate` as EmbedOptions.
    // n_tokens, if given, receives the tokens evaluated.
    std::vector<float> rerank(std::string_view query, std::span<const std::string> documents, bool truncate = false,
                              int64_t* n_tokens = nullptr);
    // Whether rank pooling's scores are already probabilities: the classifier's
    // labels softmaxed (a Qwen3 reranker's P(yes)), so a caller that maps raw
    // scores into (0, 1) with a sigmoid (TEI's /rerank) must not map these again.
    bool rank_is_probability() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
