// KL divergence of a model's next-token distributions from a base model's (read
// from a log-probability file, logprob_file.h), with the statistics
// llama-perplexity prints for --kl-divergence: both perplexities and their
// ratio, KLD mean / percentiles, the change in the true token's probability
// (Δp) and how often both models' most likely token is the same. The per-token
// arithmetic follows llama-perplexity's (float where it uses float) so that the
// same logits give the same figures.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <span>
#include <vector>

#include "kiln/tokenizer.h"

namespace kiln::cli {

class KlDivergence {
public:
    // One scored position: this model's logits, the base's stored row, the true next token.
    void add(std::span<const float> logits, const uint16_t* base_row, TokenId token);

    size_t count() const { return count_; }
    // The running figures after a chunk: PPL(Q), ln(PPL(Q)/PPL(base)), KLD, RMS Δp, same top.
    nlohmann::json running() const;
    // Everything, with percentiles (llama-perplexity's final report).
    nlohmann::json summary() const;

private:
    double sum_nll_ = 0, sum_nll2_ = 0, sum_nll_base_ = 0, sum_nll_base2_ = 0, sum_nll_nll_base_ = 0;
    double sum_kld_ = 0, sum_kld2_ = 0, sum_p_diff_ = 0, sum_p_diff2_ = 0, sum_p_diff4_ = 0;
    float max_p_diff_ = 0;
    size_t same_top_ = 0, count_ = 0;
    std::vector<float> kld_values_, p_diff_values_;
};

// The summary as llama-perplexity prints it (three sections).
void print_kl_summary(const nlohmann::json& s);

}  // namespace kiln::cli
