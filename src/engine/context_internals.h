// What a drafter that reads a target's cells (a Gemma 4 assistant,
// src/engine/assistant_draft.h) needs of the target's Context beyond the public
// API: its memory and its thread pool (the drafter's forward pass runs on them).
#pragma once

#include "cache/memory.h"
#include "compute/thread_pool.h"
#include "kiln/context.h"

namespace kiln {

// What rolling back into verification batches cost (recurrent layers: the
// replay log, docs/ARCHITECTURE.md "Checkpoints"), summed since the Context was
// made (bench/replay_cost.cpp reports it).
struct ReplayStats {
    uint64_t logs = 0;          // decodes of a sequence that logged its rows for a replay
    uint64_t replays = 0;       // rollbacks done by replaying (the delta net: by shortening its log)
    uint64_t replayed_rows = 0;
    double log_seconds = 0;     // starting the logs (saving the states; the delta net saves none)
    double replay_seconds = 0;  // restoring and replaying
};

struct ContextInternals {
    static SequenceMemory& memory(Context& c);
    static const ReplayStats& replay_stats(const Context& c);
    static const ThreadPool& pool(const Context& c);
    // Applies seq's deferred recurrent rows to its state in memory (what reading
    // that state directly needs: model/ssm.h, SsmMixer::flush).
    static void flush_recurrent(Context& c, SeqId seq);
    // Off: verification batches are evaluated in place, not logged (nor
    // checkpointed): the bench's reference for what logging costs.
    static void set_verification_logging(Context& c, bool on);
    // Bytes the recurrent layers' replay logs hold now (what kiln plan's
    // "replay_log" part plans for; allocated on the first draft).
    static uint64_t replay_log_bytes(const Context& c);
};

}  // namespace kiln
