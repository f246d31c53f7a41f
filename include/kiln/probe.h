// A probe: one sequence evaluated token by token with a view inside the model —
// the next token's top candidates, the KV positions used and, when asked, the
// residual stream's statistics after each layer and each attention head's
// entropy and most-attended positions. The web explorer's live view
// (POST /explore/live/*) is a thin user of it.
//
// It has its own Context and reads the forward pass through the tensor hook
// (Context::set_tensor_hook): nothing in the forward pass changes, and a
// Context without a probe pays nothing.
//
//   kiln::Probe probe(model, {.top_k = 5});
//   kiln::ProbeStep s = probe.feed(prompt_tokens);   // the prediction after the prompt
//   s = probe.feed({{s.candidates[0].id}});           // greedy: the next one
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "kiln/model.h"
#include "kiln/tokenizer.h"

namespace kiln {

struct ProbeOptions {
    int n_ctx = 1024;               // positions the probe's sequence may hold
    int n_threads = 0;              // 0: every thread of the executor
    int top_k = 10;                 // candidates reported per step
    bool layer_stats = false;       // residual stream after each layer (l_out)
    bool attention_stats = false;   // per head: entropy and top positions of the last token's attention
    int attention_top = 4;          // positions reported per head
};

struct ProbeCandidate {
    TokenId id = 0;
    float logit = 0;
    double prob = 0;  // softmax over the whole vocabulary (temperature 1)
};

// The residual stream of the step's last token after one layer.
struct LayerStats {
    double norm = 0, mean = 0, std = 0, max = 0, min = 0;
};

struct HeadStats {
    double entropy = 0;  // of the attention weights, in bits
    std::vector<std::pair<int64_t, double>> top;  // (position, weight), heaviest first
};

struct ProbeStep {
    int64_t n_past = 0;            // positions the sequence holds after this step
    int n_ctx = 0;
    std::vector<int64_t> kv_visible;  // per layer: positions the last token's attention read (a sliding window's fewer)
    std::vector<ProbeCandidate> candidates;  // top_k by probability, ties by lower id
    std::vector<LayerStats> layers;          // when layer_stats
    std::vector<std::vector<HeadStats>> heads;  // [layer][head] when attention_stats
};

class Probe {
public:
    Probe(std::shared_ptr<const Model> model, const ProbeOptions& options = {});
    ~Probe();
    Probe(const Probe&) = delete;
    Probe& operator=(const Probe&) = delete;

    // Appends tokens to the sequence (one forward pass per n_batch) and reports on
    // the position after the last: what the model predicts next. Errors (a full
    // context, a token outside the vocabulary) leave the sequence as it was.
    ProbeStep feed(std::span<const TokenId> tokens);

    int64_t n_past() const;
    const std::vector<TokenId>& tokens() const;
    const Model& model() const;
    const ProbeOptions& options() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
