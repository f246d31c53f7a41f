#include <algorithm>
#include <chrono>
#include <optional>

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

namespace {

using Clock = std::chrono::steady_clock;

size_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}

}  // namespace

// What a slot does with its sequence.
struct Slot {
    bool active = false;    // generating (or evaluating its prompt)
    bool finished = false;  // result() is valid
    uint64_t last_used = 0;
    std::vector<TokenId> prompt;
    size_t prompt_next = 0;            // first prompt token not yet evaluated
    TokenId pending = k_no_token;      // sampled, to be evaluated by the next step
    bool sample_now = false;           // this step's batch gives it logits to sample from
    GenerateOptions options;
    TokenCallback on_token;
    std::optional<Sampler> sampler;
    std::optional<StreamDecoder> stream;
    std::optional<StopStringFilter> stops;
    GenerationResult result;
    Clock::time_point t_submit, t_first;
    bool sampled_any = false;
};

struct Engine::Impl {
    std::shared_ptr<const Model> model;
    std::unique_ptr<Context> ctx;
    std::vector<Slot> slots;
    Batch batch;
    std::vector<SeqId> batch_outputs;  // slot of each output of the batch
    uint64_t clock = 0;

    Slot& slot(SeqId seq) {
        if (seq < 0 || seq >= static_cast<SeqId>(slots.size()))
            throw Error("sequence id " + std::to_string(seq) + " is outside 0.." + std::to_string(slots.size() - 1));
        return slots[static_cast<size_t>(seq)];
    }
    SeqId place(std::span<const TokenId> prompt, int& reused);
    void finish(SeqId seq, FinishReason reason);
    void emit_token(SeqId seq, std::span<const float> logits);
};

Engine::Engine(std::shared_ptr<const Model> model, const ContextOptions& options) : impl_(std::make_unique<Impl>()) {
    impl_->ctx = std::make_unique<Context>(model, options);
    impl_->model = std::move(model);
    impl_->slots.resize(static_cast<size_t>(impl_->ctx->n_seq_max()));
}

Engine::~Engine() = default;

const Model& Engine::model() const { return *impl_->model; }
Context& Engine::context() { return *impl_->ctx; }

// Picks a free slot for the prompt and brings it to the longest prefix of the
// prompt that any slot holds. Returns the slot; `reused` gets the positions it
// then holds (at most prompt.size() - 1: the last prompt token is always
// evaluated, so its logits are fresh).
SeqId Engine::Impl::place(std::span<const TokenId> prompt, int& reused) {
    Context& c = *ctx;
    if (prompt.empty()) throw Error("empty prompt");
    if (static_cast<int64_t>(prompt.size()) > c.n_ctx())
        throw Error("prompt of " + std::to_string(prompt.size()) + " tokens does not fit in a context of " +
                    std::to_string(c.n_ctx()));
    // Each slot's common prefix with the prompt, measured once.
    std::vector<size_t> common(slots.size());
    for (size_t s = 0; s < slots.size(); ++s) common[s] = common_prefix(c.seq_tokens(static_cast<SeqId>(s)), prompt);
    // The free slot that already holds the longest prefix (least recently used among equals).
    SeqId dst = -1;
    for (size_t s = 0; s < slots.size(); ++s) {
        if (slots[s].active) continue;
        const size_t d = static_cast<size_t>(dst);
        if (dst < 0 || common[s] > common[d] || (common[s] == common[d] && slots[s].last_used < slots[d].last_used))
            dst = static_cast<SeqId>(s);
    }
    if (dst < 0)
        throw Error("all " + std::to_string(slots.size()) + " sequence slots are busy", ErrorKind::ResourceExhausted);
    // Another slot (busy or not) with a longer prefix lends it: copying cells is
    // far cheaper than evaluating them again.
    const size_t dst_common = common[static_cast<size_t>(dst)];
    SeqId src = -1;
    size_t src_common = dst_common;
    for (size_t s = 0; s < slots.size(); ++s)
        if (common[s] > src_common) {
            src = static_cast<SeqId>(s);
            src_common = common[s];
        }
    const int64_t want = static_cast<int64_t>(std::min(std::max(dst_common, src_common), prompt.size() - 1));
    // The memory may keep less than asked (a sliding window that moved on): the
    // rest of the prompt is evaluated again.
    const int64_t held = src >= 0 ? c.seq_copy(src, dst, want) : c.seq_rollback(dst, want);
    reused = static_cast<int>(held);
    return dst;
}

SeqId Engine::submit(std::span<const TokenId> prompt, const GenerateOptions& o, TokenCallback on_token,
                     std::unique_ptr<SamplerStage> constraint) {
    Impl& im = *impl_;
    int reused = 0;
    const SeqId seq = im.place(prompt, reused);
    Slot& s = im.slots[static_cast<size_t>(seq)];
    s = Slot{};
    s.active = true;
    s.last_used = ++im.clock;
    s.prompt.assign(prompt.begin(), prompt.end());
    s.prompt_next = static_cast<size_t>(reused);
    s.options = o;
    s.on_token = std::move(on_token);
    s.sampler.emplace(o.sampling, im.model->n_vocab());
    if (constraint) s.sampler->add_constraint(std::move(constraint));
    s.sampler->accept_prompt(prompt);  // the penalties' history starts with the prompt
    s.stream.emplace(im.model->tokenizer());
    s.stops.emplace(o.stop);
    s.result.prompt_tokens = static_cast<int>(prompt.size());
    s.result.reused_tokens = reused;
    s.t_submit = Clock::now();
    if (o.max_tokens == 0) im.finish(seq, FinishReason::Length);
    return seq;
}

void Engine::Impl::finish(SeqId seq, FinishReason reason) {
    Slot& s = slots[static_cast<size_t>(seq)];
    s.result.finish = reason;
    if (!s.stops->stopped()) {
        std::string rest = s.stops->push(s.stream->flush());
        rest += s.stops->flush();
        if (!rest.empty()) {
            s.result.text += rest;
            if (s.on_token) {
                TokenEvent tail;
                tail.text = rest;
                s.on_token(tail);
            }
        }
    }
    const Clock::time_point now = Clock::now();
    if (!s.sampled_any) s.t_first = now;
    s.result.prefill_seconds = std::chrono::duration<double>(s.t_first - s.t_submit).count();
    s.result.decode_seconds = std::chrono::duration<double>(now - s.t_first).count();
    // The prompt's tokens not evaluated (cancelled early) are simply not in the cells.
    s.active = false;
    s.finished = true;
    s.on_token = nullptr;
    s.sampler.reset();
}

// Samples the sequence's next token from its logits and passes it on.
void Engine::Impl::emit_token(SeqId seq, std::span<const float> logits) {
    Slot& s = slots[static_cast<size_t>(seq)];
    const Tokenizer& tok = model->tokenizer();
    if (!s.sampled_any) {
        s.sampled_any = true;
        s.t_first = Clock::now();
    }
    TokenEvent e;
    e.token = s.sampler->sample(logits);
    e.logprob = s.sampler->last_logprob();
    e.top = s.sampler->last_top();
    if (!s.options.ignore_eos && tok.is_end_of_generation(e.token)) {
        finish(seq, FinishReason::Stop);
        return;
    }
    s.sampler->accept(e.token);
    s.result.tokens.push_back(e.token);
    ++s.result.completion_tokens;
    e.text = s.stops->push(s.stream->push(e.token));
    s.result.text += e.text;
    const bool go_on = s.on_token ? s.on_token(e) : true;
    if (s.stops->stopped()) {
        s.result.stop_string = s.stops->matched();
        finish(seq, FinishReason::Stop);
        return;
    }
    if (!go_on) {
        finish(seq, FinishReason::Cancelled);
        return;
    }
    if (s.options.max_tokens >= 0 && s.result.completion_tokens >= s.options.max_tokens) {
        finish(seq, FinishReason::Length);
        return;
    }
    // Evaluated at the start of the next step, so a reply that ends here does
    // not pay for one more forward pass.
    s.pending = e.token;
}

std::vector<SeqId> Engine::step() {
    Impl& im = *impl_;
    Context& c = *im.ctx;
    std::vector<SeqId> done;
    Batch& b = im.batch;
    b.clear();
    im.batch_outputs.clear();
    // Sequences that stopped from outside, or have no room for their next token.
    for (SeqId seq = 0; seq < static_cast<SeqId>(im.slots.size()); ++seq) {
        Slot& s = im.slots[static_cast<size_t>(seq)];
        if (!s.active) continue;
        if (s.options.cancel && s.options.cancel->load()) {
            im.finish(seq, FinishReason::Cancelled);
            done.push_back(seq);
        } else if (s.pending != k_no_token && c.seq_length(seq) >= c.n_ctx()) {
            im.finish(seq, FinishReason::ContextFull);
            done.push_back(seq);
        }
    }
    // Generating sequences first (one token each), then prompt chunks in slot
    // order while the batch has room.
    for (SeqId seq = 0; seq < static_cast<SeqId>(im.slots.size()); ++seq) {
        Slot& s = im.slots[static_cast<size_t>(seq)];
        if (!s.active || s.pending == k_no_token) continue;
        b.add(s.pending, c.seq_length(seq), seq, true);
        im.batch_outputs.push_back(seq);
        s.pending = k_no_token;
    }
    for (SeqId seq = 0; seq < static_cast<SeqId>(im.slots.size()) && b.size() < c.n_batch(); ++seq) {
        Slot& s = im.slots[static_cast<size_t>(seq)];
        if (!s.active || s.prompt_next >= s.prompt.size()) continue;
        const size_t take = std::min(s.prompt.size() - s.prompt_next, static_cast<size_t>(c.n_batch() - b.size()));
        const int64_t pos0 = c.seq_length(seq);
        for (size_t i = 0; i < take; ++i) {
            const bool last = s.prompt_next + i + 1 == s.prompt.size();
            b.add(s.prompt[s.prompt_next + i], pos0 + static_cast<int64_t>(i), seq, last);
            if (last) im.batch_outputs.push_back(seq);
        }
        s.prompt_next += take;
    }
    if (b.empty()) return done;
    c.decode(b);
    for (int i = 0; i < c.n_outputs(); ++i) {
        const SeqId seq = im.batch_outputs[static_cast<size_t>(i)];
        im.emit_token(seq, c.logits(i));
        if (im.slots[static_cast<size_t>(seq)].finished) done.push_back(seq);
    }
    return done;
}

bool Engine::busy() const { return n_active() > 0; }

int Engine::n_active() const {
    int n = 0;
    for (const Slot& s : impl_->slots) n += s.active ? 1 : 0;
    return n;
}

int Engine::n_free() const { return static_cast<int>(impl_->slots.size()) - n_active(); }

bool Engine::finished(SeqId seq) const { return impl_->slot(seq).finished; }

const GenerationResult& Engine::result(SeqId seq) const {
    const Slot& s = impl_->slot(seq);
    if (!s.finished) throw Error("sequence " + std::to_string(seq) + " has not finished");
    return s.result;
}

void Engine::cancel(SeqId seq) {
    if (impl_->slot(seq).active) impl_->finish(seq, FinishReason::Cancelled);
}

int Engine::prefill(std::span<const TokenId> prompt) {
    Impl& im = *impl_;
    int reused = 0;
    const SeqId seq = im.place(prompt, reused);
    im.slots[static_cast<size_t>(seq)].last_used = ++im.clock;
    im.slots[static_cast<size_t>(seq)].finished = false;
    Batch& b = im.batch;
    b.clear();
    for (size_t i = static_cast<size_t>(reused); i < prompt.size(); ++i)
        b.add(prompt[i], static_cast<int64_t>(i), seq, i + 1 == prompt.size());
    im.ctx->decode(b);
    return reused;
}

void Engine::clear() {
    for (SeqId s = 0; s < static_cast<SeqId>(impl_->slots.size()); ++s)
        if (!impl_->slots[static_cast<size_t>(s)].active) impl_->ctx->seq_clear(s);
}

}  // namespace kiln
