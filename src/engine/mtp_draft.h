// Drafting with the model's own multi-token-prediction head (kiln/engine.h,
// SpecMode::Mtp; the head: src/model/nextn.h). Position p of the head's cells
// holds its block's K/V for (token p, the trunk's final hidden state at p - 1;
// zeros at p = 0), as llama.cpp's MTP context fills them. A draft of k tokens
// after the pending token at L is one pass that catches the head's cells up to L
// (the rows it lacks, then the pending token's with its output: draft token 1),
// then one row per further token, each with the head's own normed output state
// of the row before instead of the trunk's (its cells past L are then not the
// trunk's: the next catch-up rolls them back).
//
// The trunk's final hidden state of every position the target evaluated is kept
// per sequence (record, after every target decode; copy_states beside the
// target's prefix copies), so a rollback or a new prompt that shares a prefix
// can always catch the head up. Its cells follow the target's tokens by their
// common prefix, as a draft model's do (draft_model.h).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "engine/draft_model.h"
#include "kiln/context.h"
#include "kiln/engine.h"
#include "kiln/model.h"

namespace kiln {

class MtpDrafter {
public:
    // The head's Context sized like the target's (n_seq_max, n_ctx, n_batch,
    // threads, executor, kv_type). Throws Unsupported for a model without a head.
    MtpDrafter(std::shared_ptr<const Model> model, const Context& target_ctx, const ContextOptions& target_options);

    // After a target decode of `batch` (a Context with row_states): each entry's
    // final hidden state, kept at its sequence's position.
    void record(const Batch& batch, const Context& target);
    // The target copied src's first n positions to dst: their states too.
    void copy_states(SeqId src, SeqId dst, int64_t n);

    // Drafts for every request together (each seq at most once; its tokens are
    // what the target holds, then the pending token).
    DraftTiming draft(std::span<const DraftRequest> requests);

    void clear(SeqId seq);
    int n_ctx() const { return ctx_->n_ctx(); }
    uint64_t memory_bytes() const;  // the head's cells and the kept states
    // The head's weight bytes read per drafted token over the trunk's (the cost prior).
    double cost_prior() const { return cost_prior_; }

private:
    const float* state(SeqId seq, int64_t pos) const;  // the trunk's state at pos (pos < 0: zeros)

    std::shared_ptr<const Model> model_;
    std::unique_ptr<Context> ctx_;
    int64_t n_embd_ = 0;
    std::vector<std::vector<float>> states_;  // per sequence: f32 [n_embd, positions recorded]
    std::vector<int64_t> valid_;  // per sequence: the head's cells made from the trunk's states (the rest drafted)
    std::vector<float> zeros_;    // f32 [n_embd]: the state before position 0
    std::vector<std::vector<float>> chain_;  // per request of a draft: the head's last output state
    std::vector<TokenId> end_ids_;
    double cost_prior_ = 0.1;
    Batch batch_;
};

}  // namespace kiln
