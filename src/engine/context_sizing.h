// How a Context sizes itself from its options: the one place that arithmetic
// lives, used by the Context and by the memory plan (memory_plan.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "cache/kv_cache.h"
#include "cache/recurrent_state.h"
#include "kiln/context.h"
#include "model/spec.h"

namespace kiln {

struct ContextSizing {
    int n_batch = 0;                   // entries of one forward pass
    std::vector<KvLayerShape> shapes;  // per layer
    KvCacheOptions kv;                 // kv.n_ctx: positions per sequence after the budget
    std::vector<uint64_t> state_bytes; // recurrent / hybrid: per layer, one sequence's state (0: attention)
    RecurrentStateOptions recurrent;   //   and its store's options (checkpoints)
    uint64_t memory_bytes = 0;         // the sequences' memory: KV cells plus recurrent state
};

// Validates the options against the model (context above its maximum, sizes
// below one, a budget too small for one position) as the Context does.
ContextSizing size_context(const ModelSpec& spec, const ContextOptions& options);

}  // namespace kiln
