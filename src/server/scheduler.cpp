#include "scheduler.h"

#include <chrono>

namespace kiln::server {

namespace {

constexpr const char* k_shutdown_message = "the server shut down before this reply was finished";

// The job's prefill events (once) ahead of `events`.
std::vector<ReplyEvent> with_prefill(Job& job, std::vector<ReplyEvent> events) {
    if (job.prefill_reply.empty()) return events;
    std::vector<ReplyEvent> out = std::move(job.prefill_reply);
    job.prefill_reply.clear();
    for (ReplyEvent& e : events) out.push_back(std::move(e));
    return out;
}

ReplyFinish reply_finish(const GenerationResult& r, const ReplyParser& parser) {
    switch (r.finish) {
        case FinishReason::Stop: return ReplyFinish::Stop;
        case FinishReason::Cancelled: return ReplyFinish::Cancelled;
        case FinishReason::Length:
        case FinishReason::ContextFull:
            // Complete tool calls are what the client acts on, even when the
            // model rambled on to the limit afterwards (as ChatSession decides).
            return parser.message().tool_calls.empty() ? ReplyFinish::Length : ReplyFinish::Stop;
    }
    return ReplyFinish::Stop;
}

JobEvent failure(int index, const std::string& message, ErrorKind kind) {
    JobEvent e;
    e.kind = JobEvent::Kind::Failed;
    e.index = index;
    e.error = message;
    e.error_kind = kind;
    return e;
}

}  // namespace

Scheduler::Scheduler(std::shared_ptr<const Model> model, const ContextOptions& options, size_t max_queue,
                     const SpecOptions& spec, std::shared_ptr<const Model> draft)
    : engine_(std::make_unique<Engine>(std::move(model), options)), spec_(spec), max_queue_(max_queue) {
    if (draft) engine_->set_draft_model(std::move(draft));
    has_draft_ = engine_->draft_model() != nullptr;
    engine_->prepare_speculation(spec_.mode);  // counted in memory_bytes_ below
    // --spec draft for a model its draft does not fit: prompt lookup instead (the server logs it).
    if (spec_.mode == SpecMode::Draft && !has_draft_) spec_.mode = SpecMode::Ngram;
    has_mtp_ = engine_->has_mtp_head();
    // --spec mtp for a model without an MTP head (one of several served): prompt lookup instead.
    if (spec_.mode == SpecMode::Mtp && !has_mtp_) spec_.mode = SpecMode::Ngram;
    n_ctx_ = engine_->context().n_ctx();
    n_batch_ = engine_->context().n_batch();
    n_threads_ = engine_->context().n_threads();
    kv_type_ = options.kv_type;
    memory_bytes_ = engine_->context().memory_bytes() + engine_->draft_memory_bytes();
    n_slots_ = options.n_seq_max;
    active_.resize(static_cast<size_t>(n_slots_));
    thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() {
    stop();
    if (thread_.joinable()) thread_.join();
}

void Scheduler::enqueue(std::vector<Job> jobs) {
    {
        std::lock_guard lock(mutex_);
        if (stopping_) throw Error("the server is shutting down", ErrorKind::ResourceExhausted);
        if (queue_.size() + jobs.size() > max_queue_)
            throw Error("the request queue is full (" + std::to_string(max_queue_) + " waiting); retry later",
                        ErrorKind::ResourceExhausted);
        for (const Job& j : jobs)
            if (j.spec.mode == SpecMode::Draft && !has_draft_)
                throw Error("speculative.mode 'draft': this model is served without a draft model (kiln serve --draft-model)",
                            ErrorKind::InvalidInput);
            else if (j.spec.mode == SpecMode::Mtp && !has_mtp_)
                throw Error("speculative.mode 'mtp': this model has no multi-token-prediction layers kiln drafts with",
                            ErrorKind::InvalidInput);
        for (Job& j : jobs) {
            auto job = std::make_unique<Job>(std::move(j));
            job->options.cancel = &job->channel->cancelled;
            queue_.push_back(std::move(job));
        }
    }
    wake_.notify_one();
}

void Scheduler::stop() {
    {
        std::lock_guard lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
}

void Scheduler::cancel_all() {
    {
        std::lock_guard lock(mutex_);
        cancel_all_ = true;
    }
    wake_.notify_one();
}

SchedulerStats Scheduler::stats() const {
    std::lock_guard lock(mutex_);
    return {queue_.size(), busy_, n_slots_, kv_used_, static_cast<int64_t>(n_slots_) * n_ctx_,
            prompt_tokens_, cached_tokens_, generated_tokens_, drafted_tokens_, accepted_tokens_};
}

void Scheduler::update_busy() {
    busy_ = engine_->n_active();
    int64_t used = 0;
    for (SeqId s = 0; s < static_cast<SeqId>(active_.size()); ++s)
        if (active_[static_cast<size_t>(s)]) used += engine_->context().seq_length(s);
    kv_used_ = used;
}

void Scheduler::start(std::unique_ptr<Job> job) {
    Job* j = job.get();
    if (j->channel->shutdown.load()) {
        j->channel->push(failure(j->index, k_shutdown_message, ErrorKind::ResourceExhausted));
        return;
    }
    if (j->channel->cancelled.load()) {  // its client left while it waited
        JobEvent e;
        e.kind = JobEvent::Kind::Done;
        e.index = j->index;
        e.result.finish = FinishReason::Cancelled;
        j->channel->push(std::move(e));
        return;
    }
    SeqId seq = -1;
    // The server's settings, and the request's own over them.
    j->options.spec.mode = j->spec.mode.value_or(spec_.mode);
    j->options.spec.draft_max = j->spec.draft_max.value_or(spec_.draft_max);
    j->options.spec.draft_min = std::min(j->spec.draft_min.value_or(spec_.draft_min), j->options.spec.draft_max);
    try {
        std::unique_ptr<SamplerStage> constraint;
        if (j->grammar) {
            if (!vocab_) vocab_ = TokenVocabulary::from_tokenizer(engine_->model().tokenizer());
            constraint = j->grammar_triggers.empty() ? grammar_stage(*j->grammar, *vocab_)
                                                     : lazy_grammar_stage(*j->grammar, *vocab_, j->grammar_triggers,
                                                                          j->grammar_prefix);
        }
        seq = engine_->submit(j->prompt, j->options, [j](const TokenEvent& t) {
            JobEvent e;
            e.index = j->index;
            e.token = t;
            if (j->parser) e.reply = with_prefill(*j, j->parser->push(t.text));
            j->channel->push(std::move(e));
            return !(j->parser && j->parser->done());
        }, std::move(constraint));
    } catch (const Error& e) {
        j->channel->push(failure(j->index, e.what(), e.kind()));
        return;
    } catch (const std::exception& e) {
        j->channel->push(failure(j->index, std::string("internal error: ") + e.what(), ErrorKind::Internal));
        return;
    }
    active_[static_cast<size_t>(seq)] = std::move(job);
}

void Scheduler::finish(SeqId seq) {
    std::unique_ptr<Job> job = std::move(active_[static_cast<size_t>(seq)]);
    if (!job) return;
    if (job->channel->shutdown.load()) {
        job->channel->push(failure(job->index, k_shutdown_message, ErrorKind::ResourceExhausted));
        return;
    }
    JobEvent e;
    e.kind = JobEvent::Kind::Done;
    e.index = job->index;
    e.result = engine_->result(seq);
    {
        std::lock_guard lock(mutex_);
        prompt_tokens_ += static_cast<uint64_t>(e.result.prompt_tokens);
        cached_tokens_ += static_cast<uint64_t>(e.result.reused_tokens);
        generated_tokens_ += static_cast<uint64_t>(e.result.completion_tokens);
        drafted_tokens_ += static_cast<uint64_t>(e.result.spec.drafted);
        accepted_tokens_ += static_cast<uint64_t>(e.result.spec.accepted);
    }
    if (job->parser) {
        const GenerationResult& r = e.result;
        e.reply = with_prefill(*job, job->parser->finish(reply_finish(r, *job->parser),
                                                         Usage{r.prompt_tokens, r.reused_tokens, r.completion_tokens, 0}));
    }
    job->channel->push(std::move(e));
}

// A failed forward pass fails the sequences in it; the engine and the requests
// that come next go on.
void Scheduler::fail_active(const std::string& message, ErrorKind kind) {
    for (SeqId s = 0; s < static_cast<SeqId>(active_.size()); ++s) {
        auto& job = active_[static_cast<size_t>(s)];
        if (!job) continue;
        job->channel->push(failure(job->index, message, kind));
        engine_->cancel(s);
        job.reset();
    }
}

void Scheduler::loop() {
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] {
                return engine_->busy() || cancel_all_ || stopping_ || (!queue_.empty() && engine_->n_free() > 0);
            });
            if (cancel_all_) {
                for (auto& job : queue_) job->channel->shutdown = job->channel->cancelled = true;
                for (auto& job : active_)
                    if (job) job->channel->shutdown = job->channel->cancelled = true;
                cancel_all_ = false;
            }
            while (!queue_.empty() && engine_->n_free() > 0) {
                std::unique_ptr<Job> job = std::move(queue_.front());
                queue_.pop_front();
                lock.unlock();
                start(std::move(job));
                lock.lock();
            }
            update_busy();
            if (stopping_ && queue_.empty() && !engine_->busy()) return;
        }
        if (!engine_->busy()) continue;
        std::vector<SeqId> done;
        try {
            done = engine_->step();
        } catch (const Error& e) {
            fail_active(e.what(), e.kind());
            continue;
        } catch (const std::bad_alloc&) {
            fail_active("out of memory", ErrorKind::ResourceExhausted);
            continue;
        } catch (const std::exception& e) {
            fail_active(std::string("internal error: ") + e.what(), ErrorKind::Internal);
            continue;
        }
        for (SeqId seq : done) finish(seq);
        std::lock_guard lock(mutex_);
        update_busy();
    }
}

}  // namespace kiln::server
