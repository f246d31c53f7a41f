// What a drafter that reads a target's cells (a Gemma 4 assistant,
// src/engine/assistant_draft.h) needs of the target's Context beyond the public
// API: its memory and its thread pool (the drafter's forward pass runs on them).
#pragma once

#include "cache/memory.h"
#include "compute/thread_pool.h"
#include "kiln/context.h"

namespace kiln {

struct ContextInternals {
    static SequenceMemory& memory(Context& c);
    static const ThreadPool& pool(const Context& c);
};

}  // namespace kiln
