#include <algorithm>
#include <chrono>
#include <optional>

#include "engine/assistant_draft.h"
#include "engine/draft_model.h"
#include "engine/mtp_draft.h"
#include "engine/ngram_draft.h"
#include "engine/spec_control.h"
#include "engine/stop_strings.h"
#include "kiln/engine.h"
#include "kiln/error.h"
#include "model/internals.h"

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

std::string_view spec_mode_name(SpecMode m) {
    switch (m) {
        case SpecMode::Auto: return "auto";
        case SpecMode::Off: return "off";
        case SpecMode::Ngram: return "ngram";
        case SpecMode::Draft: return "draft";
        case SpecMode::Mtp: return "mtp";
    }
    return "auto";
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
    std::vector<TokenId> draft;        // proposed to follow pending, evaluated with it
    int64_t verify_pos = -1;           // position of pending in this step's batch (-1: not generating)
    std::vector<TokenId> history;      // prompt + generated tokens: what the drafter searches
    SpecControl spec;                  // the drafter's (source)
    DraftSource source = DraftSource::Lookup;
    // auto with a draft model or an MTP head: prompt lookup is tried first, with its
    // own control (free drafts that pay where the text repeats), the drafter where it finds none.
    std::optional<SpecControl> lookup;
    DraftSource step_source = DraftSource::Lookup;  // who drafted this step's draft
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
    ContextOptions options;
    std::unique_ptr<Context> ctx;
    std::unique_ptr<Drafter> draft;     // set_draft_model: a DraftModel or an AssistantDrafter
    // The model's multi-token-prediction head (has_head), made at the first request
    // that may draft with it (or prepare_speculation): --spec off pays for none of its cells.
    std::unique_ptr<MtpDrafter> mtp;
    bool has_head = false;
    void ensure_mtp() {
        if (mtp || !has_head) return;
        mtp = std::make_unique<MtpDrafter>(model, *ctx, options);
        spec_cost.set_draft_prior(mtp->cost_prior(), DraftSource::Mtp);
    }
    // Whether a request in `mode` may draft with the head.
    bool wants_mtp(SpecMode mode) const {
        return has_head && (mode == SpecMode::Mtp || (mode == SpecMode::Auto && !draft));
    }
    std::vector<Slot> slots;
    Batch batch;
    std::vector<SeqId> batch_outputs;  // slot of each output of the batch
    uint64_t clock = 0;
    SpecCost spec_cost;

    Slot& slot(SeqId seq) {
        if (seq < 0 || seq >= static_cast<SeqId>(slots.size()))
            throw Error("sequence id " + std::to_string(seq) + " is outside 0.." + std::to_string(slots.size() - 1));
        return slots[static_cast<size_t>(seq)];
    }
    // What place() found: the prefix a slot held, how much of it the memory
    // kept, and why not all.
    struct Placed {
        SeqId seq = -1;
        int reusable = 0, reused = 0;
        std::string shortfall;
    };
    Placed place(std::span<const TokenId> prompt, std::span<const int64_t> message_starts);
    void finish(SeqId seq, FinishReason reason);
    TokenId emit_token(SeqId seq, std::span<const float> logits);
    int plan_draft(Slot& s, int64_t length, int batch_room);
    std::vector<DraftRequest> draft_requests;  // this step's, for the draft model
    std::vector<DraftRequest> mtp_requests;    // ... and for the MTP head
    // A target decode; the MTP head keeps every evaluated row's state.
    void decode(const Batch& b) {
        ctx->decode(b);
        if (mtp) mtp->record(b, *ctx);
        if (draft) draft->record(b, *ctx);
    }
    int verify(SeqId seq, int first_output, int n_rows);
};

Engine::Engine(std::shared_ptr<const Model> model, const ContextOptions& options) : impl_(std::make_unique<Impl>()) {
    const bool mtp = ModelInternals::nextn(*model) != nullptr;
    ContextOptions o = options;
    o.row_states = o.row_states || mtp;  // the MTP head reads every position's state
    impl_->ctx = std::make_unique<Context>(model, o);
    impl_->options = options;
    impl_->model = std::move(model);
    impl_->slots.resize(static_cast<size_t>(impl_->ctx->n_seq_max()));
    impl_->has_head = mtp;
}

Engine::~Engine() = default;

const Model& Engine::model() const { return *impl_->model; }
Context& Engine::context() { return *impl_->ctx; }

void check_draft_model(const Model& target, const Model& draft) {
    if (ModelInternals::spec(draft).n_embd_target > 0)
        (void)assistant_spec_for(draft, target);  // the vocabulary too
    else
        check_draft_vocabulary(target, draft);
}

void Engine::set_draft_model(std::shared_ptr<const Model> draft) {
    Impl& im = *impl_;
    if (n_active() > 0) throw Error("the draft model can only change while no sequence is generating");
    im.draft.reset();
    im.ctx->set_hidden_states(im.options.hidden_states);
    if (!draft) return;
    if (ModelInternals::spec(*draft).n_embd_target > 0) {
        // A Gemma 4 assistant reads the target's cells and its final normed states.
        im.draft = std::make_unique<AssistantDrafter>(std::move(draft), *im.model, *im.ctx, im.options);
        im.ctx->set_hidden_states(true);
    } else {
        im.draft = std::make_unique<DraftModel>(std::move(draft), *im.model, *im.ctx, im.options);
    }
    const uint64_t target_bytes = im.model->footprint().decode_bytes;
    if (target_bytes > 0)
        im.spec_cost.set_draft_prior(static_cast<double>(im.draft->decode_bytes()) / static_cast<double>(target_bytes));
}

const Model* Engine::draft_model() const { return impl_->draft ? &impl_->draft->model() : nullptr; }
uint64_t Engine::draft_memory_bytes() const {
    return (impl_->draft ? impl_->draft->memory_bytes() : 0) + (impl_->mtp ? impl_->mtp->memory_bytes() : 0);
}
bool Engine::has_mtp_head() const { return impl_->has_head; }

void Engine::prepare_speculation(SpecMode mode) {
    if (impl_->wants_mtp(mode)) impl_->ensure_mtp();
}

// Picks a free slot for the prompt and brings it to the longest prefix of the
// prompt that any slot holds. Returns the slot and the positions it then holds
// (at most prompt.size() - 1: the last prompt token is always evaluated, so its
// logits are fresh), and plans the checkpoints the rest of the prompt leaves.
Engine::Impl::Placed Engine::Impl::place(std::span<const TokenId> prompt, std::span<const int64_t> message_starts) {
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
    if (src >= 0 && mtp) mtp->copy_states(src, dst, held);
    Placed p;
    p.seq = dst;
    p.reused = static_cast<int>(held);
    p.reusable = static_cast<int>(want);
    if (held < want) p.shortfall = std::string(c.last_shortfall());
    c.seq_plan_checkpoints(dst, message_starts, static_cast<int64_t>(prompt.size()));
    return p;
}

SeqId Engine::submit(std::span<const TokenId> prompt, const GenerateOptions& o, TokenCallback on_token,
                     std::unique_ptr<SamplerStage> constraint) {
    Impl& im = *impl_;
    // Options first: a refused request leaves the slots as they were.
    if (o.spec.draft_max < 0 || o.spec.draft_min < 0 || o.spec.ngram_min < 1 || o.spec.ngram_max < o.spec.ngram_min)
        throw Error("speculation options: draft_max and draft_min must be >= 0, 1 <= ngram_min <= ngram_max");
    if (o.spec.mode == SpecMode::Draft && !im.draft)
        throw Error("speculation 'draft' needs a draft model (--draft-model)");
    if (o.spec.mode == SpecMode::Mtp && !im.has_head)
        throw Error("speculation 'mtp': model '" + im.model->path() + "' has no multi-token-prediction layers" +
                        (ModelInternals::spec(*im.model).n_layer_nextn > 0
                             ? " kiln drafts with (its architecture '" + im.model->architecture() + "' is not supported for MTP)"
                             : " (nextn_predict_layers)"),
                    ErrorKind::Unsupported);
    if (im.wants_mtp(o.spec.mode)) im.ensure_mtp();  // before place: it copies the head's states too
    const Impl::Placed placed = im.place(prompt, o.message_starts);
    const SeqId seq = placed.seq;
    const int reused = placed.reused;
    Slot& s = im.slots[static_cast<size_t>(seq)];
    s = Slot{};
    s.last_used = ++im.clock;
    s.prompt.assign(prompt.begin(), prompt.end());
    s.prompt_next = static_cast<size_t>(reused);
    s.options = o;
    s.on_token = std::move(on_token);
    s.sampler.emplace(o.sampling, im.model->n_vocab());
    if (constraint) s.sampler->add_constraint(std::move(constraint));
    s.sampler->accept_prompt(prompt);  // the penalties' history starts with the prompt
    const SpecOptions so = o.spec;
    s.options.spec = so;
    s.source = so.mode == SpecMode::Mtp                                       ? DraftSource::Mtp
               : im.draft && (so.mode == SpecMode::Draft || so.mode == SpecMode::Auto) ? DraftSource::Model
               : im.has_head && so.mode == SpecMode::Auto                         ? DraftSource::Mtp
                                                                                  : DraftSource::Lookup;
    s.spec = SpecControl(so, s.source);
    // auto with a drafter that costs passes (a draft model, the MTP head): prompt
    // lookup first, free where the sequence's own text repeats.
    if (so.mode == SpecMode::Auto && s.source != DraftSource::Lookup) s.lookup.emplace(so, DraftSource::Lookup);
    if (so.mode != SpecMode::Off) s.history.assign(prompt.begin(), prompt.end());
    s.stream.emplace(im.model->tokenizer());
    s.stops.emplace(o.stop);
    s.result.prompt_tokens = static_cast<int>(prompt.size());
    s.result.reused_tokens = reused;
    s.result.reusable_tokens = placed.reusable;
    s.result.reuse_shortfall = placed.shortfall;
    s.t_submit = Clock::now();
    s.active = true;  // last: a step of the set-up that throws leaves the slot free
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

// Samples the sequence's next token from its logits and passes it on. Returns
// the token sampled (the slot is finished if it ended the reply).
TokenId Engine::Impl::emit_token(SeqId seq, std::span<const float> logits) {
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
        return e.token;
    }
    s.sampler->accept(e.token);
    s.result.tokens.push_back(e.token);
    if (s.options.spec.mode != SpecMode::Off) s.history.push_back(e.token);
    ++s.result.completion_tokens;
    e.text = s.stops->push(s.stream->push(e.token));
    s.result.text += e.text;
    const bool go_on = s.on_token ? s.on_token(e) : true;
    if (s.stops->stopped()) {
        s.result.stop_string = s.stops->matched();
        finish(seq, FinishReason::Stop);
        return e.token;
    }
    if (!go_on) {
        finish(seq, FinishReason::Cancelled);
        return e.token;
    }
    if (s.options.max_tokens >= 0 && s.result.completion_tokens >= s.options.max_tokens) {
        finish(seq, FinishReason::Length);
        return e.token;
    }
    // Evaluated at the start of the next step, so a reply that ends here does
    // not pay for one more forward pass.
    s.pending = e.token;
    return e.token;
}

// Plans the draft for the step that evaluates s.pending at `length`: as many
// tokens as the controller allows within the room the context, max_tokens and
// the batch leave (the last drafted row must still fit the context, and a draft
// never asks for more tokens than the reply may still emit). Prompt lookup
// fills s.draft now; a draft model's request is queued in draft_requests, all
// of a step's answered together. Returns the rows reserved.
int Engine::Impl::plan_draft(Slot& s, int64_t length, int batch_room) {
    s.draft.clear();
    if (s.options.spec.mode == SpecMode::Off) return 0;
    int64_t room = std::min<int64_t>(ctx->n_ctx() - 1 - length, batch_room);
    if (s.options.max_tokens >= 0) room = std::min<int64_t>(room, s.options.max_tokens - s.result.completion_tokens - 1);
    // The draft model's cells hold the sequence and k - 1 drafted tokens.
    if (s.source == DraftSource::Model) room = std::min<int64_t>(room, draft->n_ctx() - length);
    const int room_k = static_cast<int>(std::max<int64_t>(room, 0));
    const SpecOptions& so = s.options.spec;
    auto lookup = [&](int k) {
        ngram_draft(s.history, {.n_max = so.ngram_max, .n_min = so.ngram_min, .draft_max = k}, s.draft);
        if (static_cast<int>(s.draft.size()) < std::max(so.draft_min, 1)) s.draft.clear();
        s.step_source = DraftSource::Lookup;
        return static_cast<int>(s.draft.size());
    };
    if (s.lookup) {  // auto with a draft model or an MTP head: prompt lookup first
        const int k = s.lookup->plan(room_k, spec_cost);
        if (k > 0 && lookup(k) > 0) return static_cast<int>(s.draft.size());
    }
    const int k = s.spec.plan(room_k, spec_cost);
    if (k <= 0) return 0;
    if (s.source == DraftSource::Model || s.source == DraftSource::Mtp) {
        // history is what the cells hold, then the pending token.
        if (static_cast<int64_t>(s.history.size()) != length + 1) return 0;
        const SeqId seq = static_cast<SeqId>(&s - slots.data());
        (s.source == DraftSource::Model ? draft_requests : mtp_requests)
            .push_back({.seq = seq, .tokens = s.history, .k = k, .out = &s.draft});
        s.step_source = s.source;
        return k;
    }
    return lookup(k);
}

// Samples the n_rows outputs of one generating sequence (its pending token and
// its draft) in order, as plain decoding would one step at a time, and stops at
// the first row whose sampled token is not the next drafted one: that token is
// the sequence's new pending one. Returns the drafted tokens accepted.
int Engine::Impl::verify(SeqId seq, int first_output, int n_rows) {
    Slot& s = slots[static_cast<size_t>(seq)];
    const int n_draft = static_cast<int>(s.draft.size());
    int accepted = 0;
    for (int j = 0; j < n_rows; ++j) {
        const TokenId t = emit_token(seq, ctx->logits(first_output + j));
        if (s.finished || j >= n_draft || t != s.draft[static_cast<size_t>(j)]) break;
        ++accepted;  // draft[j] is already evaluated (row j + 1): its logits come next
        s.pending = k_no_token;
    }
    ++s.result.spec.steps;
    if (n_draft > 0) {
        ++s.result.spec.draft_steps;
        s.result.spec.drafted += n_draft;
        s.result.spec.accepted += accepted;
        (s.lookup && s.step_source == DraftSource::Lookup ? *s.lookup : s.spec).result(n_draft, accepted, spec_cost);
    }
    s.draft.clear();
    return accepted;
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
    // Generating sequences first (their next token and any draft), then prompt
    // chunks in slot order while the batch has room.
    int n_generating = 0;
    for (const Slot& s : im.slots) n_generating += s.active && s.pending != k_no_token ? 1 : 0;
    int draft_room = std::max(0, c.n_batch() - n_generating);
    im.draft_requests.clear();
    im.mtp_requests.clear();
    for (SeqId seq = 0; seq < static_cast<SeqId>(im.slots.size()); ++seq) {
        Slot& s = im.slots[static_cast<size_t>(seq)];
        if (!s.active || s.pending == k_no_token) continue;
        draft_room -= im.plan_draft(s, c.seq_length(seq), draft_room);
    }
    if (!im.draft_requests.empty()) {
        const DraftTiming t = im.draft->draft(im.draft_requests);
        if (im.draft_requests.size() == 1 && n_generating == 1) im.spec_cost.record_draft(t.passes, t.seconds);
    }
    if (!im.mtp_requests.empty()) {
        const DraftTiming t = im.mtp->draft(im.mtp_requests);
        if (im.mtp_requests.size() == 1 && n_generating == 1) im.spec_cost.record_draft(t.passes, t.seconds, DraftSource::Mtp);
    }
    for (SeqId seq = 0; seq < static_cast<SeqId>(im.slots.size()); ++seq) {
        Slot& s = im.slots[static_cast<size_t>(seq)];
        if (!s.active || s.pending == k_no_token) continue;
        const int64_t pos = c.seq_length(seq);
        s.verify_pos = pos;
        b.add(s.pending, pos, seq, true);
        im.batch_outputs.push_back(seq);
        for (size_t j = 0; j < s.draft.size(); ++j) {
            b.add(s.draft[j], pos + 1 + static_cast<int64_t>(j), seq, true);
            im.batch_outputs.push_back(seq);
        }
        s.pending = k_no_token;
    }
    const int generating_rows = b.size();
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
    const Clock::time_point t0 = Clock::now();
    im.decode(b);
    // The cost of k + 1 rows against one, measured where one sequence had the pass to itself.
    if (n_generating == 1 && generating_rows == b.size())
        im.spec_cost.record(b.size(), std::chrono::duration<double>(Clock::now() - t0).count());
    // Sequences whose memory could not return to the accepted length (a recurrent
    // state's checkpoint): their kept tokens after what it holds, evaluated again
    // once every output of this batch is read.
    std::vector<std::pair<SeqId, std::vector<TokenId>>> redo;
    for (int i = 0; i < c.n_outputs();) {
        const SeqId seq = im.batch_outputs[static_cast<size_t>(i)];
        Slot& s = im.slots[static_cast<size_t>(seq)];
        int n_rows = 1;
        while (i + n_rows < c.n_outputs() && im.batch_outputs[static_cast<size_t>(i + n_rows)] == seq) ++n_rows;
        if (s.verify_pos < 0) {
            im.emit_token(seq, c.logits(i));  // a prompt's last row
            ++s.result.spec.steps;
        } else {
            const bool drafted = n_rows > 1;
            const int64_t keep = s.verify_pos + 1 + im.verify(seq, i, n_rows);
            s.verify_pos = -1;
            if (drafted && c.seq_length(seq) > keep) {
                // history[0, keep) is what the cells must hold: the prompt and the
                // tokens emitted before the new pending one.
                const int64_t held = c.seq_rollback(seq, keep);
                if (held < keep && !s.finished)
                    redo.emplace_back(seq, std::vector<TokenId>(s.history.begin() + held, s.history.begin() + keep));
            }
        }
        if (s.finished) done.push_back(seq);
        i += n_rows;
    }
    if (!redo.empty()) {
        b.clear();
        for (const auto& [seq, toks] : redo) {
            const int64_t pos0 = c.seq_length(seq);
            for (size_t j = 0; j < toks.size(); ++j) b.add(toks[j], pos0 + static_cast<int64_t>(j), seq, false);
        }
        im.decode(b);
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
    const Impl::Placed placed = im.place(prompt, {});
    const SeqId seq = placed.seq;
    const int reused = placed.reused;
    im.slots[static_cast<size_t>(seq)].last_used = ++im.clock;
    im.slots[static_cast<size_t>(seq)].finished = false;
    Batch& b = im.batch;
    b.clear();
    for (size_t i = static_cast<size_t>(reused); i < prompt.size(); ++i)
        b.add(prompt[i], static_cast<int64_t>(i), seq, i + 1 == prompt.size());
    im.decode(b);
    return reused;
}

void Engine::clear() {
    for (SeqId s = 0; s < static_cast<SeqId>(impl_->slots.size()); ++s)
        if (!impl_->slots[static_cast<size_t>(s)].active) {
            impl_->ctx->seq_clear(s);
            if (impl_->draft) impl_->draft->clear(s);
            if (impl_->mtp) impl_->mtp->clear(s);
        }
}

}  // namespace kiln
