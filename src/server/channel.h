// What the scheduler thread hands back to the HTTP thread serving a request:
// one queue of events for all the request's choices (n > 1 runs several
// sequences), guarded by a mutex, waited on with a condition variable.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "kiln/engine.h"
#include "kiln/error.h"
#include "kiln/reply.h"

namespace kiln::server {

struct JobEvent {
    enum class Kind { Token, Done, Failed };
    Kind kind = Kind::Token;
    int index = 0;                   // the choice
    TokenEvent token;                // Token (token is k_no_token for a flushed tail)
    std::vector<ReplyEvent> reply;   // chat: what this token completed; Done: the parser's last events
    GenerationResult result;         // Done
    std::string error;               // Failed
    ErrorKind error_kind = ErrorKind::Internal;
};

class Channel {
public:
    void push(JobEvent event) {
        {
            std::lock_guard lock(mutex_);
            events_.push_back(std::move(event));
        }
        ready_.notify_one();
    }
    // The next event, or nothing after `timeout`.
    std::optional<JobEvent> pop(std::chrono::milliseconds timeout) {
        std::unique_lock lock(mutex_);
        if (!ready_.wait_for(lock, timeout, [&] { return !events_.empty(); })) return std::nullopt;
        JobEvent e = std::move(events_.front());
        events_.pop_front();
        return e;
    }
    // Set by the HTTP side when its client has gone; the engine stops the
    // request's sequences at the next step (GenerateOptions::cancel).
    std::atomic<bool> cancelled{false};
    // Set with `cancelled` when a shutdown's drain ran out of time: the request
    // ends with an error event rather than as if it were complete.
    std::atomic<bool> shutdown{false};

private:
    std::mutex mutex_;
    std::condition_variable ready_;
    std::deque<JobEvent> events_;
};

}  // namespace kiln::server
