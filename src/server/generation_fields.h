// The generation fields chat and text completions share (OpenAI's names),
// read strictly into the engine's GenerateOptions. A field absent takes the
// same default as `kiln run`.
#pragma once

#include "kiln/engine.h"
#include "request_fields.h"
#include "scheduler.h"

namespace kiln::server {

struct GenerationFields {
    GenerateOptions options;
    SpecRequest spec;
    int n = 1;                  // choices: one sequence each, seeds seed, seed+1, ...
    bool stream = false;
    bool include_usage = false; // stream_options.include_usage
    int top_logprobs = 0;       // reported alternatives per token
    bool logprobs = false;      // report the chosen tokens' log-probabilities
};

enum class Api { Chat, Completions };

GenerationFields parse_generation_fields(const Json& body, Api api, int n_vocab);
SpecRequest parse_spec_request(const Json& body);  // part of parse_generation_fields
// Its fields, which the Responses, Anthropic and Ollama readers pass through as they are.
inline constexpr const char* k_speculative_fields[] = {"speculative", "speculative.n_max", "speculative.n_min",
                                                       "speculative.p_min"};

}  // namespace kiln::server
