// A persistent thread pool for the forward pass: threads are created once and
// reused for every operation (creating threads per matmul costs more than a
// small matmul). Workers spin briefly after each job, since the next operation
// usually follows within microseconds, then park on a condition variable.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

class ThreadPool {
public:
    // n_threads includes the calling thread; 0 means the number of physical cores.
    explicit ThreadPool(int n_threads = 0);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    int size() const { return n_threads_; }

    // Calls fn(task, thread) for every task in [0, n_tasks), spread over the
    // threads (the caller is thread 0). Tasks are handed out in order from a
    // shared counter. Returns when all are done. Not reentrant.
    void run(int64_t n_tasks, const std::function<void(int64_t task, int thread)>& fn);

    // Splits [0, n) into contiguous chunks of at least `grain` items and calls
    // fn(begin, end, thread) for each.
    void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t, int)>& fn);

    static int physical_cores();

private:
    void worker_loop(int thread);
    void work(int thread);

    int n_threads_;
    std::vector<std::thread> workers_;
    std::mutex mutex_;
    std::condition_variable wake_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> active_{0};
    std::atomic<int64_t> next_task_{0};
    int64_t n_tasks_ = 0;
    const std::function<void(int64_t, int)>* job_ = nullptr;
    std::atomic<bool> stop_{false};
};

}  // namespace kiln
