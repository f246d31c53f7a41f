// What a speculative verification costs a recurrent / hybrid model beyond its
// forward pass: saving the sequence's recurrent state before a k + 1-row batch
// (the replay log) and rolling back into it (restoring that state and replaying
// the kept rows' recurrences: src/model/ssm_replay.cpp), against a one-row
// decode step. Rounds interleave: a one-row step, then a k + 1-row verification
// rolled back to `keep` rows (1: every draft rejected); medians in ms.
//
//   replay_cost MODEL [-k 4] [--keep 1] [-r 20] [-t THREADS] [-p 64]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "engine/context_internals.h"
#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/model.h"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: replay_cost MODEL [-k 4] [--keep 1] [-r 20] [-t THREADS] [-p 64]\n");
        return 2;
    }
    int k = 4, keep = 1, rounds = 20, threads = 0, n_prompt = 64;
    for (int i = 2; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        const int v = std::atoi(argv[i + 1]);
        if (a == "-k") k = v;
        else if (a == "--keep") keep = v;
        else if (a == "-r") rounds = v;
        else if (a == "-t") threads = v;
        else if (a == "-p") n_prompt = v;
        else {
            std::fprintf(stderr, "replay_cost: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (k < 1 || keep < 1 || keep > k || rounds < 1 || n_prompt < 1) {
        std::fprintf(stderr, "replay_cost: need 1 <= --keep <= -k, -r >= 1, -p >= 1\n");
        return 2;
    }
    try {
        auto model = kiln::Model::load(argv[1]);
        kiln::ContextOptions co;
        co.n_ctx = n_prompt + 4 * rounds * (k + 2) + 16;
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
        std::vector<double> one_ms, verify_ms, save_ms, rollback_ms;
        for (int r = 0; r <= rounds; ++r) {  // r == 0: warm-up
            b.clear();
            b.add(token(), ctx.seq_length(0), 0, true);
            auto t0 = Clock::now();
            ctx.decode(b);
            const double one = ms_since(t0);
            const kiln::ReplayStats before = kiln::ContextInternals::replay_stats(ctx);
            const int64_t pos = ctx.seq_length(0);
            b.clear();
            for (int j = 0; j <= k; ++j) b.add(token(), pos + j, 0, true);
            t0 = Clock::now();
            ctx.decode(b);
            const double verify = ms_since(t0);
            t0 = Clock::now();
            const int64_t held = ctx.seq_rollback(0, pos + keep);
            const double rollback = ms_since(t0);
            const kiln::ReplayStats& after = kiln::ContextInternals::replay_stats(ctx);
            if (held != pos + keep || after.replays != before.replays + 1)
                throw kiln::Error("the rollback did not replay (held " + std::to_string(held) + " of " + std::to_string(pos + keep) +
                                  "): is the model recurrent?");
            if (r == 0) continue;
            one_ms.push_back(one);
            verify_ms.push_back(verify);
            save_ms.push_back(1e3 * (after.log_seconds - before.log_seconds));
            rollback_ms.push_back(rollback);
        }
        std::printf("%s: %d rounds, %d threads, a %d-row verification rolled back to %d row(s); medians in ms\n", argv[1], rounds,
                    ctx.n_threads(), k + 1, keep);
        std::printf("| one-row step | %d-row verification | of which saving the state | rollback (restore + replay %d) | overhead / one-row step |\n",
                    k + 1, keep);
        std::printf("|---|---|---|---|---|\n");
        const double over = median(save_ms) + median(rollback_ms);
        std::printf("| %.3f | %.3f | %.3f | %.3f | %.3f (%.1f%%) |\n", median(one_ms), median(verify_ms), median(save_ms),
                    median(rollback_ms), over, 100.0 * over / std::max(median(one_ms), 1e-9));
        return 0;
    } catch (const kiln::Error& e) {
        std::fprintf(stderr, "replay_cost: %s\n", e.what());
        return 1;
    }
}
