// The base-model log-probability file of `kiln perplexity --kl-divergence-base`,
// in llama-perplexity's format so that either tool reads the other's:
//
//   "_logits_"  int32 n_ctx  int32 n_vocab  int32 n_chunk  int32 tokens[n_chunk * n_ctx]
//   then for each chunk, for each scored position (n_ctx - 1 - n_ctx/2 of them) one row
//   of row_stride(n_vocab) uint16: float scale, float min_log_prob, then each token's
//   log-probability as round((logit - min_logit) / scale), 0 below min_logit (which is
//   at most 16 below the largest logit), padded to an even count.
//
// All integers and floats little-endian, as x86 writes them.
#pragma once

#include <cstdint>
#include <fstream>
#include <span>
#include <string>
#include <vector>

#include "kiln/tokenizer.h"

namespace kiln::cli {

inline size_t row_stride(int n_vocab) { return 2 * ((static_cast<size_t>(n_vocab) + 1) / 2) + 4; }

// One row of logits as the file stores it; returns -log p(token) computed as
// llama-perplexity does while writing (float log-sum-exp).
double encode_logprob_row(std::span<const float> logits, TokenId token, std::span<uint16_t> row);

class LogProbWriter {
public:
    LogProbWriter(const std::string& path, int n_ctx, int n_vocab, int n_chunk, std::span<const TokenId> tokens);
    void write_rows(std::span<const uint16_t> rows);  // a chunk's rows
    void close();                                      // flushes; an error naming the file if it failed

private:
    std::string path_;
    std::ofstream out_;
};

class LogProbReader {
public:
    explicit LogProbReader(const std::string& path);  // reads and checks the header
    int n_ctx() const { return n_ctx_; }
    int n_vocab() const { return n_vocab_; }
    int n_chunk() const { return n_chunk_; }
    const std::vector<TokenId>& tokens() const { return tokens_; }  // n_chunk * n_ctx
    // The next chunk's rows (n_ctx - 1 - n_ctx/2 of row_stride(n_vocab) each).
    void read_rows(std::vector<uint16_t>& rows);

private:
    std::string path_;
    std::ifstream in_;
    int n_ctx_ = 0, n_vocab_ = 0, n_chunk_ = 0;
    std::vector<TokenId> tokens_;
};

}  // namespace kiln::cli
