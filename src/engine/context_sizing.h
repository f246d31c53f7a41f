// How a Context sizes itself from its options: the one place that arithmetic
// lives, used by the Context and by the memory plan (memory_plan.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "cache/kv_cache.h"
#include "kiln/context.h"
#include "model/spec.h"

namespace kiln {

struct ContextSizing {
    int n_batch = 0;                   // entries of one forward pass
    std::vector<KvLayerShape> shapes;  // per layer
    KvCacheOptions kv;                 // kv.n_ctx: positions per sequence after the budget
    uint64_t memory_bytes = 0;         // the sequences' memory (KvCache::bytes_needed)
};

// Validates the options against the model (context above its maximum, sizes
// below one, a budget too small for one position) as the Context does.
ContextSizing size_context(const ModelSpec& spec, const ContextOptions& options);

}  // namespace kiln
