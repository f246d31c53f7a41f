#include "generation_fields.h"

#include <limits>
#include <random>

namespace kiln::server {

SpecRequest parse_spec_request(const Json& body) {
    SpecRequest r;
    constexpr int k_most = 64;  // kiln's --draft-max bound
    if (const Json* sp = get_object(body, "speculative")) try {
        if (auto m = get_string(*sp, "mode")) {
            for (SpecMode mode : {SpecMode::Auto, SpecMode::Off, SpecMode::Ngram, SpecMode::Draft, SpecMode::Mtp})
                if (*m == spec_mode_name(mode)) r.mode = mode;
            if (!r.mode) throw bad_field("mode", "must be auto, off, ngram, draft or mtp, found '" + *m + "'");
        }
        if (auto v = get_int(*sp, "n_max", 1, k_most)) r.draft_max = static_cast<int>(*v);
        if (auto v = get_int(*sp, "n_min", 1, k_most)) r.draft_min = static_cast<int>(*v);
        for (const auto& [key, value] : sp->items())
            if (key != "mode" && key != "n_max" && key != "n_min" && !value.is_null())
                throw bad_field(key, "is not a speculative decoding setting kiln has (mode, n_max, n_min)");
    } catch (const ApiError& e) {  // the field's path, not its key alone
        const std::string why = e.what();
        throw bad_field("speculative." + e.param(), why.substr(why.find(": ") + 2));
    }
    // llama-server's names; its draft probability cut-off has no counterpart (kiln
    // verifies every drafted token), so it is refused rather than ignored.
    if (auto v = get_int(body, "speculative.n_max", 1, k_most)) r.draft_max = static_cast<int>(*v);
    if (auto v = get_int(body, "speculative.n_min", 1, k_most)) r.draft_min = static_cast<int>(*v);
    if (field(body, "speculative.p_min"))
        throw bad_field("speculative.p_min", "is not supported: kiln drafts without a probability cut-off");
    if (r.draft_max && r.draft_min && *r.draft_min > *r.draft_max)
        throw bad_field("speculative.n_min", "is larger than speculative.n_max");
    return r;
}

GenerationFields parse_generation_fields(const Json& body, Api api, int n_vocab) {
    GenerationFields f;
    GenerateOptions& o = f.options;
    o.max_tokens = -1;  // as kiln run: until the reply ends or the context is full
    if (auto v = get_int(body, "max_tokens", 0, 1 << 30)) o.max_tokens = static_cast<int>(*v);
    if (api == Api::Chat)
        if (auto v = get_int(body, "max_completion_tokens", 0, 1 << 30)) o.max_tokens = static_cast<int>(*v);
    if (o.max_tokens == 0) throw bad_field("max_tokens", "must be at least 1");
    SamplingParams& s = o.sampling;
    if (auto v = get_number(body, "temperature", 0.0, 100.0)) s.temperature = static_cast<float>(*v);
    if (auto v = get_number(body, "top_p", 0.0, 1.0)) s.top_p = static_cast<float>(*v);
    if (auto v = get_int(body, "top_k", 0, 1 << 30)) s.top_k = static_cast<int>(*v);
    if (auto v = get_number(body, "min_p", 0.0, 1.0)) s.min_p = static_cast<float>(*v);
    if (auto v = get_number(body, "typical_p", 0.0, 1.0)) s.typical_p = static_cast<float>(*v);
    if (auto v = get_number(body, "presence_penalty", -2.0, 2.0)) s.presence_penalty = static_cast<float>(*v);
    if (auto v = get_number(body, "frequency_penalty", -2.0, 2.0)) s.frequency_penalty = static_cast<float>(*v);
    if (auto v = get_number(body, "repeat_penalty", 0.0, 10.0)) s.repeat_penalty = static_cast<float>(*v);
    if (auto v = get_int(body, "seed", std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max()))
        s.seed = static_cast<uint64_t>(*v);
    else
        s.seed = std::random_device{}() | (static_cast<uint64_t>(std::random_device{}()) << 32);
    if (const Json* bias = get_object(body, "logit_bias")) {
        for (const auto& [key, value] : bias->items()) {
            const std::string name = "logit_bias." + key;
            char* end = nullptr;
            const long id = std::strtol(key.c_str(), &end, 10);
            if (key.empty() || *end != '\0' || id < 0 || id >= n_vocab)
                throw bad_field(name, "keys are token ids below " + std::to_string(n_vocab));
            if (!value.is_number()) throw bad_field(name, "expected a number");
            const double b = value.get<double>();
            if (b < -100 || b > 100) throw bad_field(name, "must be between -100 and 100");
            // OpenAI: -100 bans the token.
            s.logit_bias.emplace_back(static_cast<int32_t>(id),
                                      b <= -100 ? -std::numeric_limits<float>::infinity() : static_cast<float>(b));
        }
    }
    o.stop = get_strings(body, "stop", 16);
    if (auto v = get_bool(body, "ignore_eos")) o.ignore_eos = *v;
    if (auto v = get_int(body, "n", 1, 16)) f.n = static_cast<int>(*v);
    if (auto v = get_bool(body, "stream")) f.stream = *v;
    if (const Json* so = get_object(body, "stream_options")) {
        if (auto v = get_bool(*so, "include_usage")) f.include_usage = *v;
    }
    if (api == Api::Chat) {
        if (auto v = get_bool(body, "logprobs")) f.logprobs = *v;
        if (auto v = get_int(body, "top_logprobs", 0, 20)) {
            if (!f.logprobs && *v > 0) throw bad_field("top_logprobs", "needs logprobs: true");
            f.top_logprobs = static_cast<int>(*v);
        }
    } else if (auto v = get_int(body, "logprobs", 0, 5)) {
        f.logprobs = true;
        f.top_logprobs = static_cast<int>(*v);
    }
    s.n_probs = f.top_logprobs;
    s.logprobs = f.logprobs;
    f.spec = parse_spec_request(body);
    return f;
}

}  // namespace kiln::server
