// Generation in steps. An Engine owns a Context of n_seq_max sequence slots and
// turns prompts into streams of tokens, all sequences together: each step() is
// one forward pass over every active sequence (the next token of those that
// are generating, then prompt chunks up to the batch size), after which each
// sequence that produced logits samples its next token with its own sampler.
// A server's scheduler, a speculative decoder and the CLI are thin users of
// submit / step / cancel; Session is the one-sequence case.
//
//   kiln::Engine engine(model, {.n_ctx = 4096, .n_seq_max = 4});
//   auto a = engine.submit(prompt_a, {.max_tokens = 64}, on_token_a);
//   auto b = engine.submit(prompt_b, {.max_tokens = 64}, on_token_b);
//   while (engine.busy()) engine.step();
//   engine.result(a).text;
//
// A prompt reuses the longest token prefix any slot holds: the slot's own cells
// when it is free, else a copy of another slot's (a shared system prompt is
// evaluated once).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/context.h"
#include "kiln/model.h"
#include "kiln/sampling.h"
#include "kiln/tokenizer.h"

namespace kiln {

enum class FinishReason { Stop, Length, Cancelled, ContextFull };
std::string_view finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "context_full"

// Speculative decoding (lossless): a step evaluates the sequence's next token
// together with k drafted ones as one batch of k + 1 rows, keeps the longest
// prefix of the draft that the sequence's own sampler draws at each position
// (greedy: the argmax; sampling: the same draw from the same random stream as
// plain decoding), emits those plus the sampler's token at the first mismatch,
// and rolls the sequence back past it. The text is the same with it on or off
// (seeded sampling too); a constraint, stop strings, EOS and max_tokens behave
// as without it. Drafts come from prompt lookup (what followed the most recent
// earlier occurrence of the sequence's last n tokens, prompt and generated),
// from a draft model the Engine was given (set_draft_model): a smaller model of
// the same vocabulary, run greedily for k tokens on the same executor, or from
// the model's own multi-token-prediction head (a file with NextN layers:
// glm4moe, deepseek2, qwen35 / qwen35moe), chained greedily for k tokens from the
// trunk's hidden state.
enum class SpecMode {
    Auto,   // prompt lookup where the sequence's context has a match, else the draft model if the
            // Engine has one, else (where the model has one) its MTP head; each drafting only
            // while the measured acceptance and cost say it pays (recurrent models too)
    Off,
    Ngram,  // prompt lookup on every step that finds a match, draft_max tokens
    Draft,  // the draft model on every step, as many tokens (draft_min..draft_max) as pay best
    Mtp,    // the model's multi-token-prediction head on every step, draft_min..draft_max as Draft
};
std::string_view spec_mode_name(SpecMode m);  // "auto", "off", "ngram", "draft", "mtp"

struct SpecOptions {
    SpecMode mode = SpecMode::Auto;
    int draft_max = 8;  // most tokens drafted per step (also bounded by the context, max_tokens, the batch)
    int draft_min = 1;  // a shorter draft is not verified
    int ngram_max = 3;  // longest suffix looked up (tried first)
    int ngram_min = 1;  // shortest suffix looked up
};

// What speculation did for a sequence (summed over replies by chat and agents).
struct SpecStats {
    int drafted = 0;      // tokens drafted and verified
    int accepted = 0;     // of those, kept
    int steps = 0;        // forward passes that gave the sequence tokens
    int draft_steps = 0;  // of those, passes that verified a draft
    double acceptance() const { return drafted > 0 ? static_cast<double>(accepted) / drafted : 0.0; }
    SpecStats& operator+=(const SpecStats& o) {
        drafted += o.drafted;
        accepted += o.accepted;
        steps += o.steps;
        draft_steps += o.draft_steps;
        return *this;
    }
};

struct GenerateOptions {
    int max_tokens = 256;               // < 0: until a stop or the context is full
    SamplingParams sampling;
    std::vector<std::string> stop;      // stop strings: never part of the emitted text
    bool ignore_eos = false;            // keep going past end-of-generation tokens
    const std::atomic<bool>* cancel = nullptr;  // set from another thread to stop
    SpecOptions spec;
    // Prompt positions where its chat messages start (the template rendering
    // knows them): the prompt leaves checkpoints there, so a later request that
    // diverges inside a message (an edited turn) re-evaluates from its start
    // where the memory cannot return anywhere (recurrent, sliding-window layers).
    std::vector<int64_t> message_starts;
};

struct TokenEvent {
    TokenId token = k_no_token;
    std::string text;      // newly complete text (stop-string safe; may be empty)
    float logprob = 0.0f;  // of the chosen token under the model (NaN unless sampling.logprobs or n_probs > 0)
    std::vector<TokenLogprob> top;  // when sampling.n_probs > 0
};

struct GenerationResult {
    FinishReason finish = FinishReason::Stop;
    std::string text;               // everything emitted
    std::vector<TokenId> tokens;    // generated ids (without the stop token)
    int prompt_tokens = 0;
    int reused_tokens = 0;          // prompt tokens served from the cache
    int reusable_tokens = 0;        // the prompt's prefix a slot held (reuse can fall short of it)
    std::string reuse_shortfall;    // why reused < reusable: "no checkpoint", "checkpoint too early", "evicted"
    int completion_tokens = 0;
    double prefill_seconds = 0;     // submit to the first sampled token
    double decode_seconds = 0;      // the first sampled token to the end
    std::string stop_string;        // the stop string that ended it, if any
    SpecStats spec;
};

// Throws InvalidInput unless `draft` can draft for `target`: the same number of
// tokens (vocabulary and output rows), the same token texts (the message names
// the first that differs), the same BOS / EOS / EOT ids and BOS rule.
void check_draft_vocabulary(const Model& target, const Model& draft);
// check_draft_vocabulary, and for a draft model that reads its target's cache
// (a gemma4-assistant) that it can read this target's: architecture, width,
// each layer's kind, head size, KV heads and the sliding window (the message
// names what differs). Engine::set_draft_model throws the same errors.
void check_draft_model(const Model& target, const Model& draft);

// Return false to stop generating (finish reason: cancelled).
using TokenCallback = std::function<bool(const TokenEvent&)>;

class Engine {
public:
    Engine(std::shared_ptr<const Model> model, const ContextOptions& options = {});
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    const Model& model() const;
    Context& context();

    // Gives the engine a draft model for SpecMode::Draft (and Auto): its
    // vocabulary must be the target's — the same token count, token texts and
    // BOS / EOS / EOT ids — else InvalidInput naming the first difference. It
    // gets its own Context (n_seq_max sequences of n_ctx positions) on the same
    // executor and threads. Null removes it; only while no sequence is active.
    void set_draft_model(std::shared_ptr<const Model> draft);
    const Model* draft_model() const;  // null: none
    uint64_t draft_memory_bytes() const;  // its Context's memory (0: none); with an MTP head, the head's too
    // The model has a multi-token-prediction head the engine drafts with (SpecMode::Mtp).
    bool has_mtp_head() const;
    // Makes now what drafting in `mode` needs (the MTP head's cells: otherwise made
    // at the first request that may draft with it, so --spec off never pays for them).
    void prepare_speculation(SpecMode mode);

    // Starts generating a reply to `prompt` in a free slot and returns the slot.
    // The prompt's tokens are evaluated by the following steps. `constraint`, if
    // given, is put in front of the sampler chain (a grammar). Throws
    // ResourceExhausted when every slot is busy, InvalidInput for an empty
    // prompt or one longer than the context, SpecMode::Draft without a draft model,
    // or SpecMode::Mtp for a model without multi-token-prediction layers.
    // (has_mtp_head says whether it has them.)
    SeqId submit(std::span<const TokenId> prompt, const GenerateOptions& options, TokenCallback on_token = nullptr,
                 std::unique_ptr<SamplerStage> constraint = nullptr);

    // One forward pass over every active sequence, then sampling; calls each
    // sequence's callback with its new token. Returns the slots that finished in
    // this step (their results stay until the slot is submitted to again).
    std::vector<SeqId> step();

    bool busy() const;    // any sequence still generating
    int n_active() const;
    int n_free() const;
    bool finished(SeqId seq) const;
    const GenerationResult& result(SeqId seq) const;
    // Stops a sequence now (finish reason: cancelled) and frees its slot.
    void cancel(SeqId seq);
    // Evaluates a prompt into a free slot without generating (prefix reuse as
    // submit); returns the tokens reused. The slot stays free.
    int prefill(std::span<const TokenId> prompt);
    void clear();  // every slot's cells

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

// One sequence: generate() submits and steps until the reply ends. Each call
// reuses the longest common token prefix of the previous one, so a
// conversation only evaluates what is new.
//
//   kiln::Session session(model, {.n_ctx = 4096});
//   session.generate(prompt, {.max_tokens = 64}, [](const kiln::TokenEvent& e) { ...; return true; });
class Session {
public:
    Session(std::shared_ptr<const Model> model, const ContextOptions& options = {});
    ~Session();

    const Model& model() const;
    const Tokenizer& tokenizer() const;
    Context& context();
    Engine& engine();

    GenerationResult generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                              const TokenCallback& on_token = nullptr, std::unique_ptr<SamplerStage> constraint = nullptr);
    // Evaluates a prompt without generating (reusing the cached prefix); returns
    // the number of tokens reused.
    int prefill(std::span<const TokenId> prompt);
    void reset();

private:
    std::unique_ptr<Engine> engine_;
};

}  // namespace kiln
