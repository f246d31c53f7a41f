// Generation: a Session owns a context (KV cache) and turns a prompt into a
// stream of tokens, reusing the longest common token prefix of the previous
// call so a conversation only prefills what is new.
//
//   kiln::Session session(model, {.n_ctx = 4096});
//   auto prompt = model->tokenizer().encode("Once upon a time");
//   session.generate(prompt, {.max_tokens = 64}, [](const kiln::TokenEvent& e) {
//       std::fputs(e.text.c_str(), stdout);
//       return true;  // false stops
//   });
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "kiln/model.h"
#include "kiln/sampling.h"
#include "kiln/tokenizer.h"

namespace kiln {

enum class FinishReason { Stop, Length, Cancelled, ContextFull };
std::string_view finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "context_full"

struct GenerateOptions {
    int max_tokens = 256;               // < 0: until a stop or the context is full
    SamplingParams sampling;
    std::vector<std::string> stop;      // stop strings: never part of the emitted text
    bool ignore_eos = false;            // keep going past end-of-generation tokens
    const std::atomic<bool>* cancel = nullptr;  // set from another thread to stop
};

struct TokenEvent {
    TokenId token = k_no_token;
    std::string text;      // newly complete text (stop-string safe; may be empty)
    float logprob = 0.0f;  // of the chosen token under the model
    std::vector<TokenLogprob> top;  // when sampling.n_probs > 0
};

struct GenerationResult {
    FinishReason finish = FinishReason::Stop;
    std::string text;               // everything emitted
    std::vector<TokenId> tokens;    // generated ids (without the stop token)
    int prompt_tokens = 0;
    int reused_tokens = 0;          // prompt tokens served from the cache
    int completion_tokens = 0;
    double prefill_seconds = 0;
    double decode_seconds = 0;
    std::string stop_string;        // the stop string that ended it, if any
};

// Return false to stop generating (finish reason: cancelled).
using TokenCallback = std::function<bool(const TokenEvent&)>;

class Session {
public:
    Session(std::shared_ptr<const Model> model, const ContextOptions& options = {});
    ~Session();

    const Model& model() const;
    const Tokenizer& tokenizer() const;
    Context& context();

    GenerationResult generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                              const TokenCallback& on_token = nullptr);
    // Evaluates a prompt without generating (reusing the cached prefix); returns
    // the number of tokens reused.
    int prefill(std::span<const TokenId> prompt);
    void reset();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
