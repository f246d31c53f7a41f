// Runs a request's jobs on the scheduler and answers: one JSON response when
// every choice has finished, or a Server-Sent Events stream of chunks as the
// tokens come (a keep-alive comment while nothing does; a client that goes
// away cancels its sequences at the next step, streaming or not).
#pragma once

#include <algorithm>

#include <functional>
#include <memory>
#include <vector>

#include "state.h"

namespace httplib {
struct Request;
struct Response;
}

namespace kiln::server {

// The API-specific part: turns events into stream chunks and the response.
class ResponseBuilder {
public:
    virtual ~ResponseBuilder() = default;
    // Takes one event; when streaming, appends the chunks it produces.
    virtual void add(const JobEvent& event, std::vector<Json>* chunks) = 0;
    // Non-streaming: the whole response.
    virtual Json response() = 0;
    // Streaming: chunks after every choice has finished (usage).
    virtual std::vector<Json> stream_end() = 0;
    // How a chunk, the end of the stream and an error are written as SSE
    // (OpenAI: data lines and [DONE]; Anthropic: named events).
    virtual std::string frame(const Json& chunk) const { return "data: " + json_text(chunk) + "\n\n"; }
    virtual std::string end_frame() const { return "data: [DONE]\n\n"; }
    virtual const char* stream_content_type() const { return "text/event-stream"; }
    virtual std::string keep_alive_frame() const { return ": keep-alive\n\n"; }
    virtual std::string error_frame(int status, const std::string& message) const {
        return frame(error_body(status, message));
    }
};

// `model` stays resident until the response has been sent. `after_stream`, if
// given, runs once a stream has been sent and its reference to the model dropped.
void run_jobs(ServerState& state, const httplib::Request& req, std::shared_ptr<LoadedModel> model, std::vector<Job> jobs,
              std::shared_ptr<Channel> channel, std::shared_ptr<ResponseBuilder> builder, bool stream,
              httplib::Response& res, std::function<void()> after_stream = nullptr);

// Counts a finished choice in /metrics.
void record_usage(ServerState& state, const GenerationResult& r);

// llama-server's timings object (draft_n / draft_n_accepted: speculative
// decoding's drafted and accepted tokens, 0 without it).
Json timings_json(int prompt_n, int cache_n, double prompt_s, int predicted_n, double predicted_s, int draft_n = 0,
                  int draft_n_accepted = 0);

// prompt_tokens_details: the prompt tokens served from the cache and, when the
// memory could not keep all of the prefix a slot held (a sliding window or a
// recurrent state without a checkpoint there), how many it re-evaluated and why.
// {"tokens", "reason"}, or null when reuse took all the slot held (every API's
// usage carries it under its own key: cache_shortfall).
inline Json cache_shortfall(const GenerationResult& r) {
    if (r.reuse_shortfall.empty()) return nullptr;
    return {{"tokens", r.reusable_tokens - r.reused_tokens}, {"reason", r.reuse_shortfall}};
}

inline Json prompt_tokens_details(const GenerationResult& r) {
    Json d = {{"cached_tokens", r.reused_tokens}};
    if (Json s = cache_shortfall(r); !s.is_null()) d["cache_shortfall"] = s;
    return d;
}

// The usage and timings of a request's choices: several sequences of one prompt,
// each with its GenerationResult in `.result` (the first one's prompt figures).
template <typename Choices>
Json choices_usage(const Choices& choices) {
    const GenerationResult& first = choices[0].result;
    int completion = 0;
    for (const auto& c : choices) completion += c.result.completion_tokens;
    return {{"prompt_tokens", first.prompt_tokens},
            {"completion_tokens", completion},
            {"total_tokens", first.prompt_tokens + completion},
            {"prompt_tokens_details", prompt_tokens_details(first)}};
}

template <typename Choices>
Json choices_timings(const Choices& choices) {
    const GenerationResult& first = choices[0].result;
    int predicted = 0, drafted = 0, accepted = 0;
    double decode = 0;
    for (const auto& c : choices) {
        predicted += c.result.completion_tokens;
        drafted += c.result.spec.drafted;
        accepted += c.result.spec.accepted;
        decode = std::max(decode, c.result.decode_seconds);  // the choices decode together
    }
    return timings_json(first.prompt_tokens - first.reused_tokens, first.reused_tokens, first.prefill_seconds, predicted, decode,
                        drafted, accepted);
}

}  // namespace kiln::server
