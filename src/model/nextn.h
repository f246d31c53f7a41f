// A model's multi-token-prediction (NextN) head as a one-layer model of its own
// (DeepSeek-V3 / GLM-4.5's form, llama.cpp's MTP graphs for deepseek2 and
// glm4moe): a row is a token t+1 with the trunk's final normed hidden state at
// t (the state llama.cpp's target graph exposes as h_nextn: after output_norm);
// the input eh_proj · [enorm(embedding(t+1)) | hnorm(state)] goes through the
// decoder layer stored at blk.n_layer (the trunk's kind, with its own KV cells),
// then shared_head_norm (or output_norm) and shared_head_head (or the output
// head): the logits predict token t+2, and that normed row is the state a
// further draft step chains from.
#pragma once

#include <memory>

#include "model/spec.h"
#include "model/weights.h"

namespace kiln {

struct NextnHead {
    ModelSpec spec;        // one attention layer: the NextN block's
    ModelWeights weights;  // views of the trunk's (nothing owned); nextn_input set
};

// The head of a model whose first NextN block is bound (ModelWeights::nextn);
// null for every other model. The trunk's weights must outlive it.
std::unique_ptr<NextnHead> make_nextn_head(const ModelSpec& trunk, const ModelWeights& w);

}  // namespace kiln
