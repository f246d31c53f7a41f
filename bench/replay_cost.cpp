// What a speculative verification costs a recurrent / hybrid model beyond its
// forward pass. Rounds interleave, all in one process:
//   A  a one-row decode step (nothing pending);
//   P  a k + 1-row verification evaluated in place, not logged (the reference;
//      ContextInternals::set_verification_logging), every row kept;
//   V  the same verification logged (src/model/ssm.h: the delta net defers its
//      rows, the other kinds save the state), then R, the rollback to `keep` rows;
//   C  the one-row step right after it (the delta net applies the kept rows there);
//   F  (diagnostic) another V + R, then flushing the kept rows alone (the apply
//      outside a pass: every byte of the state read and written once more).
// The overhead of a block is (V - P) + R + (C - A), per round; medians in ms (the
// differences' medians are of the per-round differences).
// --clock cpu (with -t 1, where every pass runs on the calling thread): the
// thread's CPU time instead of the wall clock, so that a loaded machine's
// descheduling does not count (its cache and memory contention still does).
//
//   replay_cost MODEL [-k 4] [--keep 1] [-r 20] [-t THREADS] [-p 64] [--clock wall|cpu]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include "engine/context_internals.h"
#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/model.h"

namespace {

// steady_clock, or with --clock cpu the calling thread's CPU time.
bool g_cpu_clock = false;

struct Clock {
    using time_point = double;  // ms
    static double now() {
        if (!g_cpu_clock)
            return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
    }
};

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double ms_since(Clock::time_point t0) { return Clock::now() - t0; }

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: replay_cost MODEL [-k 4] [--keep 1] [-r 20] [-t THREADS] [-p 64] [--clock wall|cpu]\n");
        return 2;
    }
    int k = 4, keep = 1, rounds = 20, threads = 0, n_prompt = 64;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        const int v = std::atoi(argv[i + 1]);
        if (a == "--clock") {
            const std::string c = argv[i + 1];
            if (c != "wall" && c != "cpu") {
                std::fprintf(stderr, "replay_cost: --clock wall or cpu, not %s\n", c.c_str());
                return 2;
            }
            g_cpu_clock = c == "cpu";
        } else if (a == "-k") k = v;
        else if (a == "--keep") keep = v;
        else if (a == "-r") rounds = v;
        else if (a == "-t") threads = v;
        else if (a == "-p") n_prompt = v;
        else {
            std::fprintf(stderr, "replay_cost: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (g_cpu_clock && threads != 1) {
        std::fprintf(stderr, "replay_cost: --clock cpu needs -t 1 (other threads' work would not be counted)\n");
        return 2;
    }
    if (k < 1 || keep < 1 || keep > k + 1 || rounds < 1 || n_prompt < 1) {
        std::fprintf(stderr, "replay_cost: need 1 <= --keep <= -k + 1, -r >= 1, -p >= 1\n");
        return 2;
    }
    try {
        auto model = kiln::Model::load(argv[1]);
        kiln::ContextOptions co;
        co.n_ctx = n_prompt + (rounds + 1) * (3 * (k + 1) + keep + 4) + 16;
        co.n_threads = threads;
        kiln::Context ctx(model, co);
        const int n_vocab = model->n_vocab();
        uint64_t rng = 12345;
        auto token = [&] {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            return static_cast<kiln::TokenId>((rng >> 33) % static_cast<uint64_t>(n_vocab));
        };
        kiln::Batch b;
        for (int i = 0; i < n_prompt; ++i) b.add(token(), i, 0, i + 1 == n_prompt);
        ctx.decode(b);
        auto step = [&] {
            b.clear();
            b.add(token(), ctx.seq_length(0), 0, true);
            const auto t0 = Clock::now();
            ctx.decode(b);
            return ms_since(t0);
        };
        auto verify = [&] {
            const int64_t pos = ctx.seq_length(0);
            b.clear();
            for (int j = 0; j <= k; ++j) b.add(token(), pos + j, 0, true);
            const auto t0 = Clock::now();
            ctx.decode(b);
            return ms_since(t0);
        };
        auto rollback = [&](int64_t to) {
            if (to == ctx.seq_length(0)) return 0.0;  // every row kept: nothing to roll back
            const uint64_t replays = kiln::ContextInternals::replay_stats(ctx).replays;
            const auto t0 = Clock::now();
            const int64_t held = ctx.seq_rollback(0, to);
            const double ms = ms_since(t0);
            if (held != to || kiln::ContextInternals::replay_stats(ctx).replays != replays + 1)
                throw kiln::Error("the rollback did not replay (held " + std::to_string(held) + " of " + std::to_string(to) +
                                  "): is the model recurrent?");
            return ms;
        };
        std::vector<double> a_ms, p_ms, v_ms, r_ms, c_ms, f_ms, vp_ms, ca_ms, over_ms;
        for (int r = 0; r <= rounds; ++r) {  // r == 0: warm-up
            const double a = step();
            kiln::ContextInternals::set_verification_logging(ctx, false);
            const double p = verify();
            kiln::ContextInternals::set_verification_logging(ctx, true);
            int64_t pos = ctx.seq_length(0);
            const double v = verify();
            const double rb = rollback(pos + keep);
            const double c = step();
            pos = ctx.seq_length(0);
            verify();
            rollback(pos + keep);
            const auto t0 = Clock::now();
            kiln::ContextInternals::flush_recurrent(ctx, 0);
            const double f = ms_since(t0);
            if (r == 0) continue;
            a_ms.push_back(a);
            p_ms.push_back(p);
            v_ms.push_back(v);
            r_ms.push_back(rb);
            c_ms.push_back(c);
            f_ms.push_back(f);
            vp_ms.push_back(v - p);
            ca_ms.push_back(c - a);
            over_ms.push_back((v - p) + rb + (c - a));
        }
        std::printf("%s: %d rounds, %d threads, a %d-row verification rolled back to %d row(s); medians in ms of %s time\n", argv[1],
                    rounds, ctx.n_threads(), k + 1, keep, g_cpu_clock ? "the thread's CPU" : "wall-clock");
        std::printf("| one-row step A | %d-row verification: in place P | logged V | rollback R | next step C | V-P | C-A | "
                    "overhead (V-P)+R+(C-A) | flush alone F |\n",
                    k + 1);
        std::printf("|---|---|---|---|---|---|---|---|---|\n");
        std::printf("| %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f | %.3f (%.1f%% of A) | %.3f |\n", median(a_ms), median(p_ms),
                    median(v_ms), median(r_ms), median(c_ms), median(vp_ms), median(ca_ms), median(over_ms),
                    100.0 * median(over_ms) / std::max(median(a_ms), 1e-9), median(f_ms));
        return 0;
    } catch (const kiln::Error& e) {
        std::fprintf(stderr, "replay_cost: %s\n", e.what());
        return 1;
    }
}
