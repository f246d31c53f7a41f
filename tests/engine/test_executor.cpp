// The shared executor: one pool for every context; idle workers sleep (a loaded
// model with nothing to do costs no CPU); a width below the pool's size uses
// only that many threads; concurrent callers are serialized.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <set>
#include <thread>

#include "kiln/context.h"
#include "kiln/executor.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

double cpu_seconds() {
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + 1e-6 * static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

}  // namespace

TEST(Executor, IdleProcessWithALoadedModelUsesNoCpu) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto model = kiln::Model::load(kiln::test::smollm2_path());
    kiln::Context ctx(model, {.n_ctx = 64, .n_threads = 2});
    std::vector<int32_t> t = {1, 504, 3458, 282};
    ctx.decode(t);  // the workers have run and are now idle
    const double c0 = cpu_seconds();
    std::this_thread::sleep_for(std::chrono::seconds(10));
    const double used = cpu_seconds() - c0;
    std::printf("[ figures  ] CPU over 10 s idle: %.4f s\n", used);
    EXPECT_LT(used, 0.1);  // < 1% of a core
}

TEST(Executor, ContextsShareTheProcessExecutor) {
    auto a = kiln::Executor::shared(), b = kiln::Executor::shared();
    EXPECT_EQ(a.get(), b.get());
    EXPECT_GE(a->size(), 1);
}

TEST(Executor, WidthLimitsTheThreadsAndConcurrentJobsAreSerialized) {
    kiln::Executor ex(4);
    std::set<int> seen;
    std::mutex m;
    ex.run(64, [&](int64_t, int thread) {
        std::lock_guard<std::mutex> lock(m);
        seen.insert(thread);
    }, 2);
    for (int t : seen) EXPECT_LT(t, 2);
    std::atomic<int> inside{0}, most{0};
    std::atomic<int64_t> total{0};
    auto job = [&] {
        for (int k = 0; k < 50; ++k)
            ex.run(8, [&](int64_t task, int) {
                const int now = ++inside;
                int m0 = most.load();
                while (now > m0 && !most.compare_exchange_weak(m0, now)) {}
                total += task;
                --inside;
            });
    };
    std::thread t1(job), t2(job);
    t1.join();
    t2.join();
    EXPECT_EQ(total.load(), 2 * 50 * 28);
    EXPECT_LE(most.load(), 4);  // one job at a time: never more tasks in flight than threads
    ex.reserve(6);
    EXPECT_EQ(ex.size(), 6);
}
