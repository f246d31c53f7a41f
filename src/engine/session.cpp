#include <algorithm>
#include <chrono>

#include "engine/stop_strings.h"
#include "kiln/engine.h"
#include "kiln/error.h"

namespace kiln {

std::string_view finish_reason_name(FinishReason r) {
    switch (r) {
        case FinishReason::Stop: return "stop";
        case FinishReason::Length: return "length";
        case FinishReason::Cancelled: return "cancelled";
        case FinishReason::ContextFull: return "context_full";
    }
    return "stop";
}

struct Session::Impl {
    std::shared_ptr<const Model> model;
    std::unique_ptr<Context> ctx;
};

Session::Session(std::shared_ptr<const Model> model, const ContextOptions& options) : impl_(std::make_unique<Impl>()) {
    impl_->ctx = std::make_unique<Context>(model, options);
    impl_->model = std::move(model);
}

Session::~Session() = default;

const Model& Session::model() const { return *impl_->model; }
const Tokenizer& Session::tokenizer() const { return impl_->model->tokenizer(); }
Context& Session::context() { return *impl_->ctx; }
void Session::reset() { impl_->ctx->clear(); }

int Session::prefill(std::span<const TokenId> prompt) {
    Context& ctx = *impl_->ctx;
    if (prompt.empty()) throw Error("empty prompt");
    if (static_cast<int64_t>(prompt.size()) > ctx.n_ctx())
        throw Error("prompt of " + std::to_string(prompt.size()) + " tokens does not fit in a context of " +
                    std::to_string(ctx.n_ctx()));
    const auto& hist = ctx.history();
    size_t common = 0;
    while (common < hist.size() && common < prompt.size() && hist[common] == prompt[common]) ++common;
    // The last prompt token is always evaluated so its logits are fresh.
    if (common == prompt.size()) --common;
    if (!ctx.keep_prefix(static_cast<int64_t>(common))) common = 0;
    ctx.decode(prompt.subspan(common));
    return static_cast<int>(common);
}

GenerationResult Session::generate(std::span<const TokenId> prompt, const GenerateOptions& o, const TokenCallback& on_token) {
    Context& ctx = *impl_->ctx;
    const Tokenizer& tok = tokenizer();
    GenerationResult r;
    r.prompt_tokens = static_cast<int>(prompt.size());
    auto t0 = std::chrono::steady_clock::now();
    r.reused_tokens = prefill(prompt);
    auto t1 = std::chrono::steady_clock::now();
    r.prefill_seconds = std::chrono::duration<double>(t1 - t0).count();

    Sampler sampler(o.sampling, impl_->model->n_vocab());
    StreamDecoder stream(tok);
    StopStringFilter stops(o.stop);
    auto emit = [&](TokenEvent& e, const std::string& raw) -> bool {
        e.text = stops.push(raw);
        r.text += e.text;
        return on_token ? on_token(e) : true;
    };
    r.finish = FinishReason::Length;
    // A sampled token is evaluated at the start of the next step, so a reply that
    // ends (length, stop, cancel) does not pay for one more forward pass.
    TokenId pending = k_no_token;
    for (int i = 0; o.max_tokens < 0 || i < o.max_tokens; ++i) {
        if (o.cancel && o.cancel->load()) {
            r.finish = FinishReason::Cancelled;
            break;
        }
        if (pending != k_no_token) {
            if (ctx.n_past() >= ctx.n_ctx()) {
                r.finish = FinishReason::ContextFull;
                break;
            }
            ctx.decode(std::span<const TokenId>(&pending, 1));
        }
        TokenEvent e;
        e.token = sampler.sample(ctx.last_logits(), ctx.history());
        e.logprob = sampler.last_logprob();
        e.top = sampler.last_top();
        if (!o.ignore_eos && tok.is_end_of_generation(e.token)) {
            r.finish = FinishReason::Stop;
            break;
        }
        r.tokens.push_back(e.token);
        ++r.completion_tokens;
        bool go_on = emit(e, stream.push(e.token));
        if (stops.stopped()) {
            r.finish = FinishReason::Stop;
            r.stop_string = stops.matched();
            break;
        }
        if (!go_on) {
            r.finish = FinishReason::Cancelled;
            break;
        }
        pending = e.token;
    }
    if (!stops.stopped()) {
        TokenEvent tail;
        std::string rest = stops.push(stream.flush());
        rest += stops.flush();
        if (!rest.empty()) {
            tail.text = rest;
            r.text += rest;
            if (on_token) on_token(tail);
        }
    }
    r.decode_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    return r;
}

}  // namespace kiln
