// Evaluating tokens: a Context holds the per-sequence memory (KV cells,
// recurrent state) of one model for up to n_seq_max sequences and evaluates
// batches of entries from any of them at once.
//
//   auto model = kiln::Model::load("model.gguf");
//   kiln::Context ctx(model, {.n_ctx = 4096, .n_seq_max = 2});
//   kiln::Batch batch;
//   batch.add(tok_a, 0, /*seq=*/0, /*output=*/true);
//   batch.add(tok_b, 0, /*seq=*/1, /*output=*/true);
//   ctx.decode(batch);
//   auto logits_a = ctx.logits(0);   // f32 [n_vocab], outputs in batch order
//
// A token's logits are bit-identical whether it is evaluated alone, in its own
// sequence's batch, or in a batch shared with other sequences, at any thread
// count. All failures throw kiln::Error (kiln/error.h) with a category.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/executor.h"
#include "kiln/model.h"
#include "kiln/tokenizer.h"

namespace kiln {

using SeqId = int32_t;

struct ContextOptions {
    int n_ctx = 0;                // positions one sequence may use; 0: the model's trained context, capped at 4096
    int n_seq_max = 1;            // sequences held at once (the server's --parallel)
    uint64_t memory_budget = 0;   // bytes for the sequences' memory; 0: n_seq_max x n_ctx positions.
                                  // A smaller budget shortens every sequence's context to what fits.
    int n_batch = 256;            // most entries evaluated in one forward pass
    std::string kv_type = "f16";  // f16 | f32 | q8_0
    // Streaming attention (llama.cpp's -fa on): keys and values read once, a block
    // at a time, with an online softmax. Attention's result to float rounding,
    // not the default order's bits (the default matches llama.cpp's -fa off).
    bool flash_attn = false;
    int n_threads = 0;            // 0: every thread of the executor
    std::shared_ptr<Executor> executor;  // null: Executor::shared()
    bool hidden_states = false;   // keep each output's final hidden state (hidden())
    bool logits = true;           // false: no logits (embeddings need only the hidden states)
    // Keep every entry's final hidden state (row_state), not only the outputs':
    // the input a multi-token-prediction head reads for each position.
    bool row_states = false;
    // Evaluate the model's multi-token-prediction head (its first NextN block,
    // nextn_predict_layers) instead of the trunk: each entry is a token with the
    // trunk's final hidden state at the position before it (Batch::add_with_state),
    // its logits predict the token after the next. The head has its own KV cells
    // (one layer). A model without such a head is an Unsupported error.
    bool nextn = false;
};

// Entries to evaluate: each a token (or an embedding row), its position, its
// sequence, and whether its output (logits, hidden state) is wanted.
class Batch {
public:
    // token_type: an encoder's segment (BERT: 0 for the first, 1 for the second
    // of a pair); models without token types take only 0.
    void add(TokenId token, int64_t pos, SeqId seq, bool output = false, int32_t token_type = 0);
    // A token with a hidden state beside it (f32 [n_embd]): the input of a
    // multi-token-prediction head (ContextOptions::nextn).
    void add_with_state(TokenId token, std::span<const float> state, int64_t pos, SeqId seq, bool output = false);
    // An input embedding instead of a token (f32 [n_embd]).
    void add_embedding(std::span<const float> embedding, int64_t pos, SeqId seq, bool output = false);
    void clear();

    int size() const { return static_cast<int>(tokens_.size()); }
    bool empty() const { return tokens_.empty(); }
    std::span<const TokenId> tokens() const { return tokens_; }  // k_no_token for embedding entries
    std::span<const int64_t> positions() const { return pos_; }
    std::span<const SeqId> seqs() const { return seq_; }
    std::span<const uint8_t> outputs() const { return output_; }
    std::span<const int32_t> token_types() const { return types_; }
    std::span<const float> embeddings() const { return embd_; }  // [n_embd, size()] once any entry is one
    int n_embd() const { return n_embd_; }

private:
    std::vector<TokenId> tokens_;
    std::vector<int64_t> pos_;
    std::vector<SeqId> seq_;
    std::vector<uint8_t> output_;
    std::vector<int32_t> types_;
    std::vector<float> embd_;
    int n_embd_ = 0;
};

// name, layer (-1 if none), data f32 [n_per_row, n_rows]
using TensorHook = std::function<void(const char* name, int layer, const float* data, int64_t n_per_row, int64_t n_rows)>;
// Before each product with one of the file's weight matrices: the tensor's name,
// the expert (the matrix's index along a 3-D tensor's third dimension; 0 for a
// 2-D one), and the product's input rows x f32 [n_in, n_rows] (kiln imatrix).
using WeightInputHook = std::function<void(const std::string& tensor, int expert, const float* x, int64_t n_in, int64_t n_rows)>;

class Context {
public:
    Context(std::shared_ptr<const Model> model, const ContextOptions& options = {});
    ~Context();
    Context(const Context&) = delete;
    Context& operator=(const Context&) = delete;

    const Model& model() const;
    int n_ctx() const;      // positions one sequence may hold
    int n_seq_max() const;
    int n_batch() const;
    int n_threads() const;

    // Evaluates a batch (split into forward passes of n_batch entries). Each
    // sequence's entries must continue its positions in order: seq_length(s),
    // seq_length(s) + 1, ... Outputs are numbered in batch order.
    void decode(const Batch& batch);
    int n_outputs() const;                          // of the last decode
    std::span<const float> logits(int output) const;  // f32 [n_vocab] (an encoder has none: throws)
    std::span<const float> hidden(int output) const;  // f32 [n_embd] (hidden_states)
    // The last decode's entry `entry`'s final hidden state, f32 [n_embd] (row_states).
    std::span<const float> row_state(int entry) const;

    int64_t seq_length(SeqId seq) const;
    const std::vector<TokenId>& seq_tokens(SeqId seq) const;  // k_no_token at embedding positions
    // Keeps the first n_keep positions of seq. Returns the positions it really
    // holds afterwards (<= n_keep: a recurrent state's checkpoint, or 0 when a
    // sliding window no longer has what n_keep needs); re-evaluate the rest.
    int64_t seq_rollback(SeqId seq, int64_t n_keep);
    // Makes dst hold src's first n positions (copying its memory). Returns the
    // positions dst holds (<= n, as seq_rollback).
    int64_t seq_copy(SeqId src, SeqId dst, int64_t n);
    void seq_clear(SeqId seq);
    // Records seq's recurrent state (and its sliding layers' windows) at its
    // current length (rollback target); decode does so by itself as below.
    void seq_checkpoint(SeqId seq);
    // Plans where seq's next prompt, positions seq_length(seq) .. end - 1, leaves
    // checkpoints for a later request that diverges inside it (an edited or
    // regenerated turn): at `positions` (the starts of its chat messages), just
    // before `end` and at it (unless a message starts just before), and every 512 positions where nothing else lies near (close
    // ones are merged). They matter where a memory cannot return to every
    // position by itself: recurrent states, sliding-window rings. Without a plan,
    // a multi-token decode checkpoints a recurrent state just before its last
    // entry, at its end, and every 512 positions. seq_clear forgets the plan.
    void seq_plan_checkpoints(SeqId seq, std::span<const int64_t> positions, int64_t end);
    const std::vector<int64_t>& seq_planned_checkpoints(SeqId seq) const;
    // Why the last seq_rollback / seq_copy kept fewer positions than asked:
    // "no checkpoint", "checkpoint too early" or "evicted" ("" when it kept all).
    std::string_view last_shortfall() const;

    // Sequence 0, for single-sequence callers. decode appends tokens and keeps
    // the last one's logits; all_logits, if given, receives every row's,
    // f32 [n_vocab, tokens.size()].
    void decode(std::span<const TokenId> tokens, std::vector<float>* all_logits = nullptr);
    std::span<const float> last_logits() const;
    int64_t n_past() const;
    const std::vector<TokenId>& history() const;
    // Keeps positions [0, n_keep) of sequence 0. Returns false (and clears it)
    // when its memory cannot return there.
    bool keep_prefix(int64_t n_keep);
    void clear();  // every sequence

    uint64_t kv_bytes_per_position() const;
    // The KV cache bytes a decode step at position n_past reads (0 without a KV cache).
    uint64_t kv_bytes_read(int64_t n_past) const;
    uint64_t memory_bytes() const;  // allocated for all sequences

    void set_tensor_hook(TensorHook hook);
    // Throws kiln::Error during a decode if a product's matrix is not one of the
    // file's tensors (a weight converted at load); an empty hook removes it.
    void set_weight_input_hook(WeightInputHook hook);

    // Mixture-of-experts models: how often each expert of each layer was
    // selected by the tokens evaluated since the last reset, [n_layer][n_expert]
    // (a dense layer's row is empty; every row is empty for a dense model).
    const std::vector<std::vector<uint64_t>>& expert_usage() const;
    void reset_expert_usage();

    // Keep each output's final hidden state from the next decode on
    // (ContextOptions::hidden_states; a drafter given later reads them).
    void set_hidden_states(bool on);

private:
    friend struct ContextInternals;  // src/engine/context_internals.h: the memory a drafter reads
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
