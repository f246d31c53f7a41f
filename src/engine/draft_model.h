// Drafting with a second model (kiln/engine.h, SpecMode::Draft): a smaller
// model with the target's vocabulary proposes the next k tokens greedily, and
// the target verifies them as usual (lossless whatever the draft says).
//
// The draft model has its own Context, one sequence per target slot, on the
// target's executor and threads. Its cells follow the target's sequence by
// their common prefix: before drafting, a sequence's draft cells are rolled
// back to the longest prefix they share with what the target holds (plus its
// pending token), so a rejected draft, a new prompt in the slot, or prefix
// reuse on the target side need no bookkeeping of their own. The drafting
// sequences of a step share the draft model's passes: one pass catches each up
// and gives its first draft token, then one row per sequence per further token.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "kiln/context.h"
#include "kiln/engine.h"
#include "kiln/model.h"

namespace kiln {

// One sequence's draft request (a draft model's or the MTP head's).
struct DraftRequest {
    SeqId seq = 0;
    std::span<const TokenId> tokens;      // what the target's sequence holds, then its pending token
    int k = 0;                            // tokens to draft (> 0)
    std::vector<TokenId>* out = nullptr;  // receives up to k tokens (fewer after an end-of-generation token)
};
// The drafter's passes that evaluated at most two rows per request (the
// steady-state cost of drafting one token for each).
struct DraftTiming {
    double seconds = 0;
    int passes = 0;
};

// A second model that drafts for the target (set_draft_model): DraftModel, with
// cells of its own, or AssistantDrafter (assistant_draft.h), which reads the
// target's.
class Drafter {
public:
    virtual ~Drafter() = default;
    // Drafts for every request together (each request's seq at most once).
    virtual DraftTiming draft(std::span<const DraftRequest> requests) = 0;
    // After every target decode of `batch` (the assistant keeps the target's states).
    virtual void record(const Batch& batch, const Context& target) {
        (void)batch;
        (void)target;
    }
    virtual void clear(SeqId seq) = 0;
    virtual const Model& model() const = 0;
    virtual int n_ctx() const = 0;  // a sequence drafts only while it fits
    virtual uint64_t memory_bytes() const = 0;
    // The weight bytes one drafted token reads (SpecCost's prior for gamma, over
    // the target's): a draft model's decode bytes.
    virtual uint64_t decode_bytes() const { return model().footprint().decode_bytes; }
};

class DraftModel : public Drafter {
public:
    // A Context for the draft model sized like `target` (n_seq_max, n_ctx —
    // at most the draft model's trained context —, n_batch, threads, executor,
    // kv_type).
    DraftModel(std::shared_ptr<const Model> draft, const Model& target, const Context& target_ctx,
               const ContextOptions& target_options);

    using Request = DraftRequest;
    using Timing = DraftTiming;
    Timing draft(std::span<const Request> requests) override;

    void clear(SeqId seq) override;
    const Model& model() const override { return *model_; }
    int n_ctx() const override { return ctx_->n_ctx(); }
    std::shared_ptr<const Model> shared_model() const { return model_; }
    uint64_t memory_bytes() const override { return ctx_->memory_bytes(); }

private:
    int64_t sync(SeqId seq, std::span<const TokenId> tokens);

    std::shared_ptr<const Model> model_;
    std::unique_ptr<Context> ctx_;
    bool checkpoints_ = false;  // a recurrent draft model: checkpoint after catching up
    std::vector<TokenId> end_ids_;  // the target's end-of-generation tokens: drafting past one is wasted
    Batch batch_;
};

}  // namespace kiln
