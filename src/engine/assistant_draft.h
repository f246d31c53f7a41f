// Drafting with a Gemma 4 assistant (a gemma4-assistant file given as the draft
// model of a gemma4 target; the model: src/model/arch/gemma4_assistant.cpp),
// as llama.cpp's speculative driver runs it with the target's memory shared:
// the assistant has no cells of its own. Its layers compute only Q and attend
// over the target's cells of the positions before the row's — each sliding
// layer over the target's last sliding layer's cache, each full layer over its
// last full layer's (a shared-KV layer of the target: the cache it reads).
//
// A draft after the pending token at L is k one-row passes at position L: the
// first with the pending token and the target's final normed state at L - 1
// (kept from the target decode that produced the pending token: record), each
// further one with the token just drafted and the assistant's own
// post-projected state (every draft row at the same position, as llama.cpp's
// driver and the reference implementation). Nothing is written to the target's
// cells, so a rejection needs no rollback of the drafter's own: the target's
// rollback is the drafter's.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "compute/matmul.h"
#include "engine/draft_model.h"
#include "model/forward.h"
#include "model/spec.h"
#include "model/weights.h"

namespace kiln {

// The assistant's spec with each layer's kv_source the target layer whose cells
// it reads; throws InvalidInput naming what differs when it cannot read them
// (check_draft_model in kiln/engine.h).
ModelSpec assistant_spec_for(const Model& assistant, const Model& target);

class AssistantDrafter : public Drafter {
public:
    // Throws InvalidInput when `assistant` cannot read `target`'s cache: another
    // architecture, another width, vocabulary, layer kind, head size, KV heads or
    // sliding window (the message names what differs).
    AssistantDrafter(std::shared_ptr<const Model> assistant, const Model& target, Context& target_ctx,
                     const ContextOptions& target_options);

    DraftTiming draft(std::span<const DraftRequest> requests) override;
    void record(const Batch& batch, const Context& target) override;
    void clear(SeqId seq) override;
    const Model& model() const override { return *model_; }
    int n_ctx() const override { return n_ctx_; }
    uint64_t memory_bytes() const override;  // the kept states and the pass's buffers
    // Its layers' Q, O and FFN, the pre / post projections and the tied output
    // head (no K / V products: it reads the target's cells).
    uint64_t decode_bytes() const override;
    // Sees the assistant's named intermediates (result_output: each pass's logits).
    void set_debug_hook(DebugHook hook) { forward_->set_debug_hook(std::move(hook)); }

private:
    std::shared_ptr<const Model> model_;
    ModelSpec spec_;         // the assistant's, each layer's kv_source the target layer it reads
    ModelWeights weights_;   // views of the assistant's (nothing owned), assistant_input set
    AssistantInput input_;
    const ThreadPool& pool_;
    std::unique_ptr<Forward> forward_;
    MatmulScratch mm_;
    int n_ctx_ = 0;
    int64_t n_embd_target_ = 0;
    // Per sequence: the target's final normed states of the output rows of the
    // last decode that had rows of it, f32 [n_embd_target, positions], and their positions.
    struct Kept {
        std::vector<int64_t> pos;
        std::vector<float> states;
    };
    std::vector<Kept> kept_;
    std::vector<TokenId> end_ids_;
    // One pass's rows: tokens, positions, sequences, outputs, states f32 [n_embd_target, n];
    // its logits f32 [n_vocab, n], normed rows f32 [n_embd, n].
    std::vector<int32_t> tokens_, seqs_;
    std::vector<int64_t> pos_;
    std::vector<uint8_t> outputs_;
    std::vector<float> states_, logits_, hidden_;
};

}  // namespace kiln
