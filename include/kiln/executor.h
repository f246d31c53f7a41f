// The executor: one pool of worker threads per process, shared by every model,
// context and sequence, so that two models or a server with many connections
// never run more threads than there are cores.
//
//   auto ex = kiln::Executor::shared();   // one thread per physical core
//   kiln::Context ctx(model, {.executor = ex});
//
// Workers spin for a few tens of microseconds after a job (the next operation of
// a forward pass usually follows at once), then sleep on a condition variable:
// an idle process uses no CPU. Jobs from several threads run one after another.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln {

class Executor {
public:
    // n_threads includes the calling thread; 0 means the number of physical cores.
    explicit Executor(int n_threads = 0);
    ~Executor();
    Executor(const Executor&) = delete;
    Executor& operator=(const Executor&) = delete;

    // The process's executor, made on first use with one thread per physical core.
    static std::shared_ptr<Executor> shared();
    static int physical_cores();

    int size() const { return n_threads_.load(std::memory_order_relaxed); }
    // Grows the pool to at least n threads (a context asking for more threads than
    // the shared executor has). Never shrinks it.
    void reserve(int n_threads);

    // Calls fn(task, thread) for every task in [0, n_tasks) on the first `width`
    // threads (0: all; the caller is thread 0). Tasks are handed out in order from a
    // shared counter. Returns when all are done. Calls from several threads are
    // serialized; a task must not call run (not reentrant).
    void run(int64_t n_tasks, const std::function<void(int64_t task, int thread)>& fn, int width = 0);

private:
    void worker_loop(int thread, uint64_t seen);
    void work(int thread);

    std::atomic<int> n_threads_;
    std::vector<std::thread> workers_;
    std::mutex run_mutex_;  // one job at a time
    std::mutex mutex_;      // guards the sleep / wake
    std::condition_variable wake_;
    std::atomic<uint64_t> generation_{0};
    std::atomic<int> active_{0};
    std::atomic<int64_t> next_task_{0};
    int64_t n_tasks_ = 0;
    int width_ = 0;
    const std::function<void(int64_t, int)>* job_ = nullptr;
    std::atomic<bool> stop_{false};
};

}  // namespace kiln
