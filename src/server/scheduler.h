// Continuous batching: one thread owns the Engine (which is not thread-safe).
// HTTP threads enqueue jobs; the scheduler submits them while slots are free,
// steps every active sequence together and pushes each token to the job's
// channel. A new request joins the running batch at the next step; a finished
// one leaves it.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "channel.h"
#include "kiln/constraint.h"
#include "kiln/engine.h"
#include "kiln/reply.h"

namespace kiln::server {

// A request's own speculative decoding settings (absent: the server's --spec,
// --draft-max, --draft-min): kiln's "speculative": {"mode", "n_max", "n_min"}
// or llama-server's flat "speculative.n_max" / "speculative.n_min".
struct SpecRequest {
    std::optional<SpecMode> mode;
    std::optional<int> draft_max, draft_min;
};

struct Job {
    std::vector<TokenId> prompt;
    GenerateOptions options;            // options.cancel is set to the channel's flag
    int index = 0;                      // choice index within its request
    std::unique_ptr<ReplyParser> parser;  // chat: the reply's parser (it stops generation at an end marker)
    std::shared_ptr<const Grammar> grammar;  // the reply's constraint (response_format, tool calls), if any
    std::vector<std::string> grammar_triggers;  // non-empty: a lazy grammar that starts at one of these
    std::string grammar_prefix;                 // lazy: reply text before generation (the assistant prefill)
    // What the prefill's text made the parser say of tool calls (a call it opened
    // or wrote whole), sent ahead of the first token's events. Its text is not:
    // the client sent it.
    std::vector<ReplyEvent> prefill_reply;
    std::shared_ptr<Channel> channel;
    SpecRequest spec;  // the request's own speculative settings over the server's
};

struct SchedulerStats {
    size_t queued = 0;
    int busy = 0;
    int slots = 0;
    int64_t kv_used = 0;           // positions held by the sequences being generated
    int64_t kv_total = 0;          // slots x context
    uint64_t prompt_tokens = 0;    // of finished sequences: prompt positions asked for (the prefix cache's queries)
    uint64_t cached_tokens = 0;    // of those, served from the prefix cache (its hits)
    uint64_t generated_tokens = 0;
    uint64_t drafted_tokens = 0;   // of finished sequences: tokens drafted and verified
    uint64_t accepted_tokens = 0;  // of those, kept
};

class Scheduler {
public:
    // Every job generates with `spec` (its ngram settings kept); `draft`, if
    // given, is the engine's draft model (throws when its vocabulary differs).
    Scheduler(std::shared_ptr<const Model> model, const ContextOptions& options, size_t max_queue,
              const SpecOptions& spec = {}, std::shared_ptr<const Model> draft = nullptr);
    ~Scheduler();

    int n_ctx() const { return n_ctx_; }
    int n_batch() const { return n_batch_; }      // most entries in one forward pass
    int n_threads() const { return n_threads_; }  // the engine's threads
    const std::string& kv_type() const { return kv_type_; }
    uint64_t memory_bytes() const { return memory_bytes_; }  // the sequences' memory (the draft model's included)
    bool has_draft_model() const { return has_draft_; }
    bool has_mtp_head() const { return has_mtp_; }
    // Queues all of a request's jobs or none: throws ResourceExhausted when the
    // queue cannot take them, or when the scheduler is stopping.
    void enqueue(std::vector<Job> jobs);
    // Lets the queued and active jobs finish, then ends the thread.
    void stop();
    // Ends every queued and active job now.
    void cancel_all();
    SchedulerStats stats() const;

private:
    void loop();
    void start(std::unique_ptr<Job> job);
    void finish(SeqId seq);
    void fail_active(const std::string& message, ErrorKind kind);

    std::unique_ptr<Engine> engine_;
    std::optional<TokenVocabulary> vocab_;  // made on the first constrained job (the scheduler thread only)
    int n_ctx_ = 0;
    int n_batch_ = 0;
    int n_threads_ = 0;
    std::string kv_type_;
    uint64_t memory_bytes_ = 0;
    SpecOptions spec_;
    bool has_draft_ = false;
    bool has_mtp_ = false;  // the model has a multi-token-prediction head
    int n_slots_ = 0;
    size_t max_queue_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    std::deque<std::unique_ptr<Job>> queue_;
    bool stopping_ = false;
    bool cancel_all_ = false;
    // Read by stats() from other threads (under mutex_).
    int busy_ = 0;
    int64_t kv_used_ = 0;
    uint64_t prompt_tokens_ = 0, cached_tokens_ = 0, generated_tokens_ = 0, drafted_tokens_ = 0, accepted_tokens_ = 0;
    void update_busy();  // busy_ and kv_used_ from the engine (scheduler thread, mutex_ held)
    std::vector<std::unique_ptr<Job>> active_;       // by slot; only the scheduler thread
    std::thread thread_;
};

}  // namespace kiln::server
