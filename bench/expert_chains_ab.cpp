// One model loaded once, decode timed in short blocks that alternate the expert
// layers' two decode paths (model/moe.h set_expert_chains: each selected
// expert's gate / up -> down as one task of one region, or two regions): on a
// machine whose memory bandwidth drifts, blocks of a few dozen tokens side by
// side compare the paths better than separate runs. Prints each path's median
// t/s and the median of the per-round ratios. Not a test: figures only.
//
//   build/bench/expert_chains_ab -m MODEL.gguf [-n 32] [-r 20] [-t 2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/model.h"
#include "model/moe.h"

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
    std::string path;
    int n = 32, rounds = 20, threads = 2;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "-m") path = argv[i + 1];
        else if (a == "-n") n = std::atoi(argv[i + 1]);
        else if (a == "-r") rounds = std::atoi(argv[i + 1]);
        else if (a == "-t") threads = std::atoi(argv[i + 1]);
        else {
            std::fprintf(stderr, "unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (path.empty() || n < 1 || rounds < 1) {
        std::fprintf(stderr, "usage: expert_chains_ab -m MODEL.gguf [-n 32] [-r 20] [-t 2]\n");
        return 2;
    }
    try {
        auto model = kiln::Model::load(path);
        kiln::Context ctx(model, {.n_ctx = n + 8, .n_threads = threads});
        std::vector<int32_t> tokens(static_cast<size_t>(n) + 1);
        for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7919 + 13) % static_cast<size_t>(model->n_vocab()));
        // One block: a fresh sequence, its first token, then n decode steps timed.
        auto block = [&](bool chains) {
            kiln::set_expert_chains(chains);
            ctx.clear();
            ctx.decode(std::span<const int32_t>(tokens.data(), 1));
            const auto t0 = std::chrono::steady_clock::now();
            for (int i = 1; i <= n; ++i) ctx.decode(std::span<const int32_t>(&tokens[static_cast<size_t>(i)], 1));
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            return n / s;
        };
        block(true);  // warm-up: pages, buffers
        block(false);
        std::vector<double> on, off, ratio;
        for (int r = 0; r < rounds; ++r) {
            double a, b;
            if (r % 2) {
                b = block(false);
                a = block(true);
            } else {
                a = block(true);
                b = block(false);
            }
            on.push_back(a);
            off.push_back(b);
            ratio.push_back(a / b);
        }
        kiln::set_expert_chains(true);
        std::printf("%s: %d rounds of %d decode steps, %d threads\n", path.c_str(), rounds, n, threads);
        std::printf("chains (one region): median %.1f t/s (best %.1f)\n", median(on), *std::max_element(on.begin(), on.end()));
        std::printf("two regions:         median %.1f t/s (best %.1f)\n", median(off), *std::max_element(off.begin(), off.end()));
        std::printf("median of per-round ratios: %.3f (min %.3f, max %.3f)\n", median(ratio), *std::min_element(ratio.begin(), ratio.end()),
                    *std::max_element(ratio.begin(), ratio.end()));
    } catch (const kiln::Error& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
