// Token sampling: a fixed chain over the logits of one step.
//
//   logit bias -> repetition / presence / frequency penalties (over the last
//   penalty_last_n tokens) -> top-k -> typical-p -> top-p -> min-p ->
//   temperature -> draw
//
// temperature <= 0 is greedy (argmax after bias and penalties). A given seed
// reproduces a run exactly: the generator and the conversion of its output to a
// uniform number are kiln's own, not the standard library's unspecified ones.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace kiln {

struct SamplingParams {
    float temperature = 0.8f;
    int top_k = 40;           // <= 0: off
    float top_p = 0.95f;      // >= 1: off
    float min_p = 0.05f;      // <= 0: off
    float typical_p = 1.0f;   // >= 1: off
    float repeat_penalty = 1.0f;     // 1: off (divides positive logits, multiplies negative ones)
    float presence_penalty = 0.0f;   // subtracted once per token present in the window
    float frequency_penalty = 0.0f;  // subtracted per occurrence in the window
    int penalty_last_n = 64;         // window of recent tokens the penalties look at; 0: off, -1: all
    std::vector<std::pair<int32_t, float>> logit_bias;  // added to the logit; -inf bans a token
    uint64_t seed = 0;
    int n_probs = 0;  // report the top-n log-probabilities of each step

    static SamplingParams greedy() {
        SamplingParams p;
        p.temperature = 0.0f;
        return p;
    }
};

struct TokenLogprob {
    int32_t token;
    float logprob;
};

class Sampler {
public:
    Sampler(const SamplingParams& params, int n_vocab);

    // Picks the next token. `recent` is the token history the penalties see (the
    // sampler keeps only its window of it).
    int32_t sample(std::span<const float> logits, std::span<const int32_t> recent);

    // Log-probability of the chosen token and the top-n alternatives of the last
    // step, from the model's distribution (softmax of the raw logits).
    float last_logprob() const { return last_logprob_; }
    const std::vector<TokenLogprob>& last_top() const { return last_top_; }

    const SamplingParams& params() const { return params_; }

private:
    double next_uniform();  // [0, 1)

    SamplingParams params_;
    int n_vocab_;
    uint64_t rng_state_;
    std::vector<std::pair<float, int32_t>> candidates_;
    float last_logprob_ = 0.0f;
    std::vector<TokenLogprob> last_top_;
};

}  // namespace kiln
