// Token sampling: a chain of stages over the candidates of one step, built from
// SamplingParams:
//
//   logit bias -> repetition / presence / frequency penalties (over the last
//   penalty_last_n tokens) -> then either greedy (argmax), or: drop banned ->
//   top-k -> typical-p -> top-p -> min-p -> temperature -> draw
//
// Each stage has apply (narrow or reweigh the candidates; the last stage selects
// one), accept (a token was chosen: stages with history update it) and reset.
// Greedy is the chain whose selecting stage is argmax. A constraint (a grammar)
// is one more stage, inserted before the others with add_constraint. A Sampler
// belongs to one sequence: its penalties' history and random state are that
// sequence's.
//
// A given seed reproduces a run exactly: the generator and the conversion of its
// output to a uniform number are kiln's own, not the standard library's.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln {

struct SamplingParams {
    float temperature = 0.8f;  // <= 0: greedy
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
    // Compute each step's chosen-token log-probability (a log-sum-exp over the
    // whole vocabulary: up to a tenth of a small model's decode step, so only on
    // request); n_probs > 0 implies it.
    bool logprobs = false;

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

struct TokenCandidate {
    int32_t token;
    float logit;
};

// The candidates of one step. Stages may remove entries, change logits, sort
// them (then set sorted: descending logit, ties by token id) and, the last one,
// set selected.
struct Candidates {
    std::vector<TokenCandidate> items;
    bool sorted = false;
    int32_t selected = -1;
};

class SamplerStage {
public:
    virtual ~SamplerStage() = default;
    virtual std::string_view name() const = 0;
    virtual void apply(Candidates& candidates) = 0;
    // A token was generated (and will be evaluated next).
    virtual void accept(int32_t token) { (void)token; }
    // Tokens of the prompt, before the first step: history for the penalties;
    // a constraint ignores them.
    virtual void accept_prompt(std::span<const int32_t> tokens) { (void)tokens; }
    virtual void reset() {}
};

class Sampler {
public:
    Sampler(const SamplingParams& params, int n_vocab);
    ~Sampler();
    Sampler(Sampler&&) noexcept;
    Sampler& operator=(Sampler&&) noexcept;

    // Puts a stage at the front of the chain (a grammar constraint: it masks the
    // candidates before bias, penalties and selection see them).
    void add_constraint(std::unique_ptr<SamplerStage> stage);

    // Runs the chain over the logits of one step and returns the selected token.
    // The token is not accepted yet: call accept once it is kept.
    int32_t sample(std::span<const float> logits);
    void accept(int32_t token);
    void accept_prompt(std::span<const int32_t> tokens);
    void reset();

    // Log-probability of the chosen token and the top-n alternatives of the last
    // step, from the model's distribution (softmax of the raw logits). NaN and
    // none unless params().logprobs or n_probs > 0.
    float last_logprob() const { return last_logprob_; }
    const std::vector<TokenLogprob>& last_top() const { return last_top_; }

    const SamplingParams& params() const { return params_; }
    std::vector<std::string_view> stage_names() const;

private:
    void report(std::span<const float> logits, int32_t chosen);

    SamplingParams params_;
    int n_vocab_;
    std::vector<std::unique_ptr<SamplerStage>> stages_;
    Candidates candidates_;
    float last_logprob_ = 0.0f;
    std::vector<TokenLogprob> last_top_;
};

}  // namespace kiln
