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
    uint64_t logs = 0;          // decodes of a sequence that saved its state for a replay
    uint64_t replays = 0;       // rollbacks done by replaying
    uint64_t replayed_rows = 0;
    double log_seconds = 0;     // saving the states
    double replay_seconds = 0;  // restoring and replaying
};

struct ContextInternals {
    static SequenceMemory& memory(Context& c);
    static const ReplayStats& replay_stats(const Context& c);
    static const ThreadPool& pool(const Context& c);
};

}  // namespace kiln
