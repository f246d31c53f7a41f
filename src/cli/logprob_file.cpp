#include "logprob_file.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "kiln/error.h"

namespace kiln::cli {

namespace {

constexpr char k_magic[8] = {'_', 'l', 'o', 'g', 'i', 't', 's', '_'};

// Round to nearest (ties to even) through the float mantissa, as llama-perplexity
// does, so the stored levels are the same for the same logits.
int nearest_int(float v) {
    const float shifted = v + 12582912.f;
    int32_t i;
    std::memcpy(&i, &shifted, sizeof i);
    return (i & 0x007fffff) - 0x00400000;
}

}  // namespace

double encode_logprob_row(std::span<const float> logits, TokenId token, std::span<uint16_t> row) {
    float max_logit = logits[0], min_logit = logits[0];
    for (float v : logits) {
        max_logit = std::max(max_logit, v);
        min_logit = std::min(min_logit, v);
    }
    min_logit = std::max(min_logit, max_logit - 16);
    double sum_exp = 0.0;
    for (float v : logits) sum_exp += std::exp(v - max_logit);
    const auto log_sum_exp = static_cast<float>(std::log(sum_exp));
    const float min_log_prob = min_logit - max_logit - log_sum_exp;
    const float scale = (max_logit - min_logit) / 65535.f;
    std::memcpy(row.data(), &scale, sizeof scale);
    std::memcpy(row.data() + 2, &min_log_prob, sizeof min_log_prob);
    uint16_t* levels = row.data() + 4;
    std::fill(levels, row.data() + row.size(), uint16_t{0});
    if (scale != 0) {
        const float inv_scale = 1 / scale;
        for (size_t i = 0; i < logits.size(); ++i)
            levels[i] = logits[i] > min_logit ? static_cast<uint16_t>(nearest_int(inv_scale * (logits[i] - min_logit))) : 0;
    }
    return max_logit + log_sum_exp - logits[static_cast<size_t>(token)];
}

LogProbWriter::LogProbWriter(const std::string& path, int n_ctx, int n_vocab, int n_chunk, std::span<const TokenId> tokens)
    : path_(path), out_(path, std::ios::binary | std::ios::trunc) {
    if (!out_) throw Error("cannot write " + path);
    const int32_t header[3] = {n_ctx, n_vocab, n_chunk};
    out_.write(k_magic, sizeof k_magic);
    out_.write(reinterpret_cast<const char*>(header), sizeof header);
    out_.write(reinterpret_cast<const char*>(tokens.data()),
               static_cast<std::streamsize>(static_cast<size_t>(n_chunk) * static_cast<size_t>(n_ctx) * sizeof(TokenId)));
    if (!out_) throw Error("cannot write " + path);
}

void LogProbWriter::write_rows(std::span<const uint16_t> rows) {
    out_.write(reinterpret_cast<const char*>(rows.data()), static_cast<std::streamsize>(rows.size_bytes()));
    if (!out_) throw Error("cannot write " + path_ + " (disk full?)");
}

void LogProbWriter::close() {
    out_.close();
    if (!out_) throw Error("cannot write " + path_);
}

LogProbReader::LogProbReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
    if (!in_) throw Error("cannot read " + path);
    char magic[8] = {};
    int32_t header[3] = {};
    in_.read(magic, sizeof magic);
    in_.read(reinterpret_cast<char*>(header), sizeof header);
    if (!in_ || std::memcmp(magic, k_magic, sizeof magic) != 0)
        throw Error(path + " is not a log-probability file (kiln perplexity --kl-divergence-base or llama-perplexity "
                           "--kl-divergence-base writes one)");
    n_ctx_ = header[0], n_vocab_ = header[1], n_chunk_ = header[2];
    if (n_ctx_ < 8 || n_ctx_ > (1 << 20) || n_vocab_ < 1 || n_vocab_ > (1 << 24) || n_chunk_ < 1)
        throw Error(path + ": implausible header (n_ctx " + std::to_string(n_ctx_) + ", n_vocab " + std::to_string(n_vocab_) +
                    ", chunks " + std::to_string(n_chunk_) + ")");
    // The file must hold every row it announces (a truncated copy is an error, not fewer chunks).
    const uint64_t rows = static_cast<uint64_t>(n_chunk_) * static_cast<uint64_t>(n_ctx_ - 1 - n_ctx_ / 2);
    const uint64_t want = sizeof magic + sizeof header + static_cast<uint64_t>(n_chunk_) * static_cast<uint64_t>(n_ctx_) * 4 +
                          rows * row_stride(n_vocab_) * 2;
    std::error_code ec;
    const uint64_t have = std::filesystem::file_size(path, ec);
    if (ec || have != want)
        throw Error(path + ": " + std::to_string(have) + " bytes where its header (" + std::to_string(n_chunk_) + " chunks of " +
                    std::to_string(n_ctx_) + ", " + std::to_string(n_vocab_) + " tokens) means " + std::to_string(want));
    tokens_.resize(static_cast<size_t>(n_chunk_) * static_cast<size_t>(n_ctx_));
    in_.read(reinterpret_cast<char*>(tokens_.data()), static_cast<std::streamsize>(tokens_.size() * sizeof(TokenId)));
    if (!in_) throw Error("cannot read " + path);
    for (TokenId t : tokens_)
        if (t < 0 || t >= n_vocab_) throw Error(path + ": token id " + std::to_string(t) + " outside its vocabulary of " + std::to_string(n_vocab_));
}

void LogProbReader::read_rows(std::vector<uint16_t>& rows) {
    rows.resize(static_cast<size_t>(n_ctx_ - 1 - n_ctx_ / 2) * row_stride(n_vocab_));
    in_.read(reinterpret_cast<char*>(rows.data()), static_cast<std::streamsize>(rows.size() * sizeof(uint16_t)));
    if (!in_) throw Error("cannot read " + path_);
}

}  // namespace kiln::cli
