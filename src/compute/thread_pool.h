// The compute layer's handle on the executor (kiln/executor.h): a width (how many
// of its threads an operation may use) over a shared Executor. Kernels split
// their work by size() and run it through run() / parallel_for().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "kiln/executor.h"

namespace kiln {

class ThreadPool {
public:
    // n_threads of the executor's threads (0 or more than it has: all of them).
    ThreadPool(std::shared_ptr<Executor> executor, int n_threads = 0);
    // A private executor of n_threads (tests, benchmarks, the machine probes).
    explicit ThreadPool(int n_threads = 0);

    int size() const { return n_threads_; }
    Executor& executor() const { return *executor_; }

    // Calls fn(task, thread) for every task in [0, n_tasks), thread < size().
    void run(int64_t n_tasks, const std::function<void(int64_t task, int thread)>& fn) const;
    // Splits [0, n) into contiguous chunks of at least `grain` items and calls
    // fn(begin, end, thread) for each.
    void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t, int)>& fn) const;

private:
    std::shared_ptr<Executor> executor_;
    int n_threads_;
};

}  // namespace kiln
