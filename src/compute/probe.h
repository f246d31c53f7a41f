// The machine probes' building blocks that benchmarks reuse (kiln/system.h has
// probe_machine itself).
#pragma once

#include <cstddef>
#include <cstdint>

#include "compute/thread_pool.h"

namespace kiln {

// One read of the n bytes at buf (64-byte aligned, AVX2 CPUs only) split over
// the pool's threads: the bytes read per second.
double read_pass(ThreadPool& pool, const uint8_t* buf, size_t n);

}  // namespace kiln
