#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <utility>

#include "compute/thread_pool.h"
#include "kiln/executor.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define KILN_CPU_RELAX() _mm_pause()
#else
#define KILN_CPU_RELAX() ((void)0)
#endif

namespace kiln {

namespace {
constexpr int k_spin_iterations = 1 << 14;  // ~tens of microseconds before sleeping
constexpr int k_wait_spins = 1 << 12;       // the caller's wait for the last tasks, before yielding
}  // namespace

int Executor::physical_cores() {
    // Count distinct (physical id, core id) pairs; fall back to the logical count.
    std::ifstream in("/proc/cpuinfo");
    std::set<std::pair<int, int>> cores;
    std::string line;
    int phys = 0;
    while (std::getline(in, line)) {
        if (line.rfind("physical id", 0) == 0) phys = std::stoi(line.substr(line.find(':') + 1));
        if (line.rfind("core id", 0) == 0) cores.insert({phys, std::stoi(line.substr(line.find(':') + 1))});
    }
    int n = static_cast<int>(cores.size());
    int logical = static_cast<int>(std::thread::hardware_concurrency());
    if (n <= 0 || n > logical) n = logical;
    return n > 0 ? n : 1;
}

std::shared_ptr<Executor> Executor::shared() {
    static std::shared_ptr<Executor> executor = std::make_shared<Executor>(0);
    return executor;
}

Executor::Executor(int n_threads) : n_threads_(1) { reserve(n_threads > 0 ? n_threads : physical_cores()); }

Executor::~Executor() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
        generation_.fetch_add(1);
    }
    wake_.notify_all();
    for (auto& w : workers_) w.join();
}

void Executor::reserve(int n_threads) {
    std::lock_guard<std::mutex> run_lock(run_mutex_);  // no job in flight while workers are added
    const int have = size();
    if (n_threads <= have) return;
    const uint64_t seen = generation_.load(std::memory_order_acquire);
    for (int t = have; t < n_threads; ++t) workers_.emplace_back([this, t, seen] { worker_loop(t, seen); });
    n_threads_.store(n_threads, std::memory_order_relaxed);
}

void Executor::work(int thread) {
    if (thread >= width_) return;
    const auto& fn = *job_;
    for (;;) {
        int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
        if (task >= n_tasks_) break;
        fn(task, thread);
    }
}

void Executor::worker_loop(int thread, uint64_t seen) {
    for (;;) {
        // Spin, then sleep.
        int spins = 0;
        while (generation_.load(std::memory_order_acquire) == seen && spins < k_spin_iterations) {
            KILN_CPU_RELAX();
            ++spins;
        }
        if (generation_.load(std::memory_order_acquire) == seen) {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return generation_.load() != seen; });
        }
        seen = generation_.load(std::memory_order_acquire);
        if (stop_) return;
        work(thread);
        active_.fetch_sub(1, std::memory_order_acq_rel);
    }
}

void Executor::run(int64_t n_tasks, const std::function<void(int64_t, int)>& fn, int width) {
    if (n_tasks <= 0) return;
    std::lock_guard<std::mutex> run_lock(run_mutex_);
    const int n = size();
    width = width <= 0 ? n : std::min(width, n);
    if (width == 1 || n_tasks == 1) {
        for (int64_t t = 0; t < n_tasks; ++t) fn(t, 0);
        return;
    }
    job_ = &fn;
    n_tasks_ = n_tasks;
    width_ = width;
    next_task_.store(0, std::memory_order_relaxed);
    active_.store(n - 1, std::memory_order_relaxed);
    {
        std::lock_guard<std::mutex> lock(mutex_);
        generation_.fetch_add(1, std::memory_order_acq_rel);
    }
    wake_.notify_all();
    work(0);
    // Wait for the workers still busy. On a machine with more runnable threads
    // than cores a worker may have been descheduled mid-task: after a short spin,
    // give the core away instead of spinning through the rest of the time slice.
    for (int spins = 0; active_.load(std::memory_order_acquire) != 0; ++spins) {
        if (spins < k_wait_spins)
            KILN_CPU_RELAX();
        else
            std::this_thread::yield();
    }
    job_ = nullptr;
}

ThreadPool::ThreadPool(std::shared_ptr<Executor> executor, int n_threads) : executor_(std::move(executor)) {
    if (n_threads > executor_->size()) executor_->reserve(n_threads);
    n_threads_ = n_threads > 0 ? n_threads : executor_->size();
}

ThreadPool::ThreadPool(int n_threads) : ThreadPool(std::make_shared<Executor>(n_threads), 0) {}

void ThreadPool::run(int64_t n_tasks, const std::function<void(int64_t, int)>& fn) const {
    executor_->run(n_tasks, fn, n_threads_);
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t, int)>& fn) const {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    // A few chunks per thread balance uneven progress without much overhead.
    int64_t chunks = std::min<int64_t>((n + grain - 1) / grain, static_cast<int64_t>(n_threads_) * 4);
    if (chunks < 1) chunks = 1;
    int64_t per = (n + chunks - 1) / chunks;
    chunks = (n + per - 1) / per;
    run(chunks, [&](int64_t c, int thread) {
        int64_t b = c * per, e = std::min(n, b + per);
        fn(b, e, thread);
    });
}

}  // namespace kiln
