// kiln bench [-m FILE] [-p 512] [-n 128] [-t THREADS] [-r REPS] [--parallel N] [--json]:
// prompt processing (pp) and token generation (tg) speed, like llama-bench.
//
// pp: a prompt of -p random tokens evaluated in chunks of -b from an empty cache.
// tg: -n tokens decoded one at a time after a one-token prompt (greedy feedback
// would make runs depend on the model; random ids keep the work identical).
// With --parallel N > 1: N sequences, each prefilled with its own -p-token
// prompt (pp counts all N x p tokens), then decoding -n tokens each, all N in
// one batch per step (aggregate tg: N x n tokens over the decode time).
// Each figure is the mean ± standard deviation over -r repetitions after one
// warm-up run. The bound fractions compare with this machine's measured memory
// bandwidth (decode reads every weight once per token; of an expert layer, the
// selected experts) and int8 throughput. For a mixture-of-experts model a table
// of each layer's expert usage follows (a histogram of the experts' loads).
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <numeric>

#include "commands.h"
#include "common.h"
#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/model.h"
#include "kiln/system.h"

namespace kiln::cli {

namespace {

struct Stats {
    double mean = 0, stddev = 0;
};

Stats stats(const std::vector<double>& v) {
    Stats s;
    if (v.empty()) return s;
    s.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
    double sq = 0;
    for (double x : v) sq += (x - s.mean) * (x - s.mean);
    s.stddev = v.size() > 1 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) : 0.0;
    return s;
}

double peak_rss_bytes() {
    struct rusage ru {};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_maxrss) * 1024.0;
}

std::vector<int32_t> random_tokens(int n, int n_vocab, uint64_t seed) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& x : t) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x = static_cast<int32_t>((seed >> 33) % static_cast<uint64_t>(n_vocab));
    }
    return t;
}

// Per expert layer: how the selections spread over its experts. The buckets
// count experts by their load relative to an even spread (1.0 = n_selections /
// n_expert): idle, < 0.5, 0.5-0.8, 0.8-1.25, 1.25-2, >= 2.
struct LayerUsage {
    int layer = 0;
    uint64_t selections = 0;
    int n_expert = 0, used = 0, top = 0;
    double top_share = 0, min_share = 0;
    std::array<int, 6> buckets{};
};

std::vector<LayerUsage> summarize_usage(const std::vector<std::vector<uint64_t>>& usage) {
    std::vector<LayerUsage> out;
    for (size_t il = 0; il < usage.size(); ++il) {
        const auto& row = usage[il];
        if (row.empty()) continue;
        LayerUsage u;
        u.layer = static_cast<int>(il);
        u.n_expert = static_cast<int>(row.size());
        for (uint64_t c : row) u.selections += c;
        if (u.selections == 0) continue;
        const double even = static_cast<double>(u.selections) / static_cast<double>(row.size());
        uint64_t mx = 0, mn = UINT64_MAX;
        for (size_t x = 0; x < row.size(); ++x) {
            const uint64_t c = row[x];
            if (c > mx) mx = c, u.top = static_cast<int>(x);
            mn = std::min(mn, c);
            u.used += c > 0 ? 1 : 0;
            const double load = static_cast<double>(c) / even;
            const int b = c == 0 ? 0 : load < 0.5 ? 1 : load < 0.8 ? 2 : load < 1.25 ? 3 : load < 2.0 ? 4 : 5;
            ++u.buckets[static_cast<size_t>(b)];
        }
        u.top_share = static_cast<double>(mx) / static_cast<double>(u.selections);
        u.min_share = static_cast<double>(mn) / static_cast<double>(u.selections);
        out.push_back(u);
    }
    return out;
}

// The machine probes in a grandchild process that init reaps: their 512 MiB
// buffer then counts neither in this process's peak RSS nor in what a parent
// waiting for it sees (wait4's ru_maxrss is the largest of a process and its
// reaped descendants, which /usr/bin/time -f %M prints): the peak of a bench run
// stays the model's, which `kiln plan` predicts. Falls back to probing here.
MachineProbe probe_in_grandchild(int threads) {
    int fd[2];
    if (pipe(fd) != 0) return probe_machine(threads);
    std::fflush(nullptr);
    const pid_t child = fork();
    if (child < 0) {
        close(fd[0]);
        close(fd[1]);
        return probe_machine(threads);
    }
    if (child == 0) {
        close(fd[0]);
        const pid_t grandchild = fork();
        if (grandchild == 0) {
            const MachineProbe p = probe_machine(threads);  // its own threads: none of the parent's exist here
            const ssize_t n = write(fd[1], &p, sizeof p);
            _exit(n == static_cast<ssize_t>(sizeof p) ? 0 : 1);
        }
        _exit(grandchild < 0 ? 1 : 0);
    }
    close(fd[1]);
    int status = 0;
    waitpid(child, &status, 0);
    MachineProbe p;
    size_t got = 0;
    auto* bytes = reinterpret_cast<char*>(&p);
    while (got < sizeof p) {
        const ssize_t n = read(fd[0], bytes + got, sizeof p - got);
        if (n <= 0) break;
        got += static_cast<size_t>(n);
    }
    close(fd[0]);
    // int8_kind points at a string literal of this same executable image.
    return got == sizeof p ? p : MachineProbe{};
}

}  // namespace

int cmd_bench(int argc, char** argv) {
    CLI::App app{"Measure prompt processing and generation speed", "bench"};
    std::string path;
    int n_prompt = 512, n_gen = 128, n_threads = 0, reps = 3, n_batch = 512, depth = 0, parallel = 1, n_ctx_opt = 0;
    std::string kv_type = "f16";
    bool json = false, no_probe = false;
    app.add_option("-m,--model", path, "GGUF file (default: the model setup installed)");
    app.add_option("-p,--n-prompt", n_prompt, "prompt tokens (0 skips pp)")->check(CLI::Range(0, 1 << 20));
    app.add_option("-n,--n-gen", n_gen, "generated tokens (0 skips tg)")->check(CLI::Range(0, 1 << 20));
    app.add_option("-t,--threads", n_threads, "threads (default: physical cores)")->check(CLI::Range(0, 1024));
    app.add_option("-r,--reps", reps, "repetitions")->check(CLI::Range(1, 1000));
    app.add_option("-b,--batch", n_batch, "prefill chunk size")->check(CLI::Range(1, 1 << 16));
    app.add_option("-d,--depth", depth, "tokens already in the cache before each test (as llama-bench -d)")
        ->check(CLI::Range(0, 1 << 20));
    app.add_option("--parallel", parallel, "sequences decoded together in one batch")->check(CLI::Range(1, 1024));
    app.add_option("-c,--ctx-size", n_ctx_opt, "positions per sequence (default: what the test needs)")->check(CLI::Range(0, 1 << 24));
    app.add_option("--kv-type", kv_type, "KV cache type: f16, f32 or q8_0")->check(CLI::IsMember({"f16", "f32", "q8_0"}));
    uint64_t experts_memory = k_bytes_unset;
    add_experts_memory_flag(app, experts_memory);
    std::string flash_attn = "off";
    app.add_option("--flash-attn", flash_attn, "attention: off (the default: llama.cpp's -fa off order) or on (streaming: keys and values read once with an online softmax)")->check(CLI::IsMember({"on", "off"}));
    app.add_flag("--json", json, "print one JSON object");
    app.add_flag("--no-probe", no_probe, "skip the bandwidth / int8 probes");
    std::string json_schema;
    app.add_option("--json-schema", json_schema, "instead: greedy decode with vs without this JSON Schema's constraint");
    SpecBenchOptions spec;
    app.add_option("--spec", spec.mode,
                   "instead: greedy decode with --spec off vs this mode (auto, ngram, draft, mtp): speed, drafted / "
                   "accepted tokens, acceptance rate")
        ->check(CLI::IsMember({"auto", "ngram", "draft", "mtp", "off"}));
    app.add_option("--draft-model", spec.draft_model, "with --spec draft / auto: the draft model");
    app.add_option("--draft-max", spec.draft_max, "with --spec: most tokens drafted per step")->check(CLI::Range(1, 64));
    app.add_option("--draft-min", spec.draft_min, "with --spec: shortest draft worth verifying")->check(CLI::Range(1, 64));
    app.add_option("--prompt-file", spec.prompt_file, "with --spec: the prompt (default: an editing task that copies its input)");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    if (!spec.mode.empty() && !json_schema.empty()) throw Error("bench: --spec and --json-schema are separate measurements");
    if (spec.mode == "draft" && spec.draft_model.empty()) throw Error("bench --spec draft needs --draft-model FILE");
    if (!spec.draft_model.empty() && spec.mode != "draft" && spec.mode != "auto")
        throw Error("bench: --draft-model needs --spec draft or auto");
    const ResolvedModel resolved = resolve_model_full(path);
    path = resolved.path;
    if (resolved.preset && resolved.preset->n_ctx > 0 && n_ctx_opt == 0) n_ctx_opt = resolved.preset->n_ctx;
    if (json_schema.empty() && spec.mode.empty()) {
        try {
            check_load_fits(path, n_ctx_opt > 0 ? n_ctx_opt : (parallel > 1 ? depth + n_prompt + n_gen + 1 : depth + std::max(n_prompt, n_gen + 1) + 1),
                            parallel, kv_type, n_batch, 0, "", bytes_if_set(experts_memory));
        } catch (const Error& e) {
            if (e.kind() == ErrorKind::ResourceExhausted) throw;  // other faults: bench's own checks below name them
        }
    }

    auto model = Model::load(path, load_options(experts_memory));
    if (!json_schema.empty()) return bench_constraint(model, json_schema, n_gen, std::max(reps, 5), n_threads, json);
    if (!spec.mode.empty()) {
        spec.n_gen = n_gen;
        spec.reps = std::max(reps, 5);
        spec.n_threads = n_threads;
        spec.json = json;
        return bench_spec(model, spec);
    }
    const double load_s = model->load_seconds();
    const int needed = parallel > 1 ? depth + n_prompt + n_gen + 1 : depth + std::max(n_prompt, n_gen + 1) + 1;
    const int n_ctx = n_ctx_opt > 0 ? n_ctx_opt : needed;
    if (n_ctx < needed)
        throw kiln::Error("bench: -c " + std::to_string(n_ctx) + " is less than the " + std::to_string(needed) +
                          " positions the test needs");
    if (n_ctx > model->n_ctx_train())
        throw kiln::Error("bench: depth + tokens = " + std::to_string(n_ctx) + " is above the model's context of " +
                    std::to_string(model->n_ctx_train()));
    ContextOptions co;
    co.n_ctx = n_ctx;
    co.n_seq_max = parallel;
    co.n_batch = std::min(n_batch, std::max(1, std::max(n_prompt * parallel, depth)));
    co.n_threads = n_threads;
    co.kv_type = kv_type;
    co.flash_attn = flash_attn == "on";
    Context ctx(model, co);
    const int threads = ctx.n_threads();
    if (!json)
        std::fprintf(stderr, "model %s (%s), %d threads, %d sequence%s, load %.3f s\n", path.c_str(), model->architecture().c_str(),
                     threads, parallel, parallel > 1 ? "s" : "", load_s);

    // Every sequence's cache filled with `depth` tokens (not timed).
    const std::vector<int32_t> context_tokens = random_tokens(depth, model->n_vocab(), 7);
    Batch batch;
    auto fill = [&] {
        ctx.clear();
        if (depth == 0) return;
        batch.clear();
        for (int s = 0; s < parallel; ++s)
            for (int i = 0; i < depth; ++i) batch.add(context_tokens[static_cast<size_t>(i)], i, s, false);
        ctx.decode(batch);
    };
    std::vector<double> pp, tg;
    for (int r = 0; r <= reps; ++r) {  // r == 0 is the warm-up
        if (parallel == 1) {
            if (n_prompt > 0) {
                auto tokens = random_tokens(n_prompt, model->n_vocab(), 1 + static_cast<uint64_t>(r));
                fill();
                auto t0 = std::chrono::steady_clock::now();
                ctx.decode(tokens);
                double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                if (r > 0) pp.push_back(n_prompt / s);
            }
            if (n_gen > 0) {
                auto tokens = random_tokens(n_gen + 1, model->n_vocab(), 100 + static_cast<uint64_t>(r));
                fill();
                ctx.decode(std::span<const int32_t>(tokens.data(), 1));
                auto t0 = std::chrono::steady_clock::now();
                for (int i = 1; i <= n_gen; ++i) ctx.decode(std::span<const int32_t>(&tokens[static_cast<size_t>(i)], 1));
                double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                if (r > 0) tg.push_back(n_gen / s);
            }
        } else {
            fill();
            // Each sequence's own prompt, all evaluated together.
            batch.clear();
            for (int s = 0; s < parallel; ++s) {
                auto tokens = random_tokens(n_prompt, model->n_vocab(), 1000 * static_cast<uint64_t>(s) + 1 + static_cast<uint64_t>(r));
                for (int i = 0; i < n_prompt; ++i) batch.add(tokens[static_cast<size_t>(i)], depth + i, s, i + 1 == n_prompt);
            }
            auto t0 = std::chrono::steady_clock::now();
            ctx.decode(batch);
            double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            if (r > 0 && n_prompt > 0) pp.push_back(static_cast<double>(n_prompt) * parallel / s);
            if (n_gen > 0) {
                std::vector<std::vector<int32_t>> gen(static_cast<size_t>(parallel));
                for (int q = 0; q < parallel; ++q)
                    gen[static_cast<size_t>(q)] = random_tokens(n_gen, model->n_vocab(), 100 + 1000 * static_cast<uint64_t>(q) + static_cast<uint64_t>(r));
                t0 = std::chrono::steady_clock::now();
                for (int i = 0; i < n_gen; ++i) {
                    batch.clear();
                    for (int q = 0; q < parallel; ++q)
                        batch.add(gen[static_cast<size_t>(q)][static_cast<size_t>(i)], depth + n_prompt + i, q, true);
                    ctx.decode(batch);
                }
                s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                if (r > 0) tg.push_back(static_cast<double>(n_gen) * parallel / s);
            }
        }
        if (!json && r > 0)
            std::fprintf(stderr, "rep %d: pp %.1f t/s, tg %.1f t/s%s\n", r, pp.empty() ? 0.0 : pp.back(),
                         tg.empty() ? 0.0 : tg.back(), parallel > 1 ? " (all sequences)" : "");
    }
    Stats pps = stats(pp), tgs = stats(tg);
    const std::vector<LayerUsage> usage = summarize_usage(ctx.expert_usage());
    const double peak_rss = peak_rss_bytes();  // before the probes' own buffers

    MachineProbe probe;
    if (!no_probe) probe = probe_in_grandchild(threads);
    const ModelFootprint fp = model->footprint();
    const double weight_bytes = static_cast<double>(fp.decode_bytes);
    // A decode step reads every weight once, for all sequences of the batch, and
    // each sequence's cached keys and values (at the tests' middle position).
    const int middle = (parallel > 1 ? depth + n_prompt : depth) + n_gen / 2;
    const double cache_bytes = static_cast<double>(ctx.kv_bytes_read(middle)) * parallel;
    const double tg_bound = probe.read_bandwidth > 0 ? probe.read_bandwidth / (weight_bytes + cache_bytes) * parallel : 0;
    // Prefill is bound by int8 dot products for quantized weights, by f32
    // multiply-adds for float ones, by the BF16 dot product for BF16 ones where the
    // kernels run it (2 operations per weight and prompt token).
    const bool float_weights = fp.float_weights;
    const bool bf16_dot = fp.bf16_weights && probe.bf16_flops > 0;
    const double compute_rate = bf16_dot ? probe.bf16_flops : float_weights ? probe.f32_flops : probe.int8_ops;
    const double pp_bound = compute_rate > 0 ? compute_rate / (2.0 * static_cast<double>(fp.layer_params)) : 0;

    if (json) {
        nlohmann::json j = {{"model", path},
                            {"architecture", model->architecture()},
                            {"threads", threads},
                            {"n_prompt", n_prompt},
                            {"n_gen", n_gen},
                            {"parallel", parallel},
                            {"n_ctx", ctx.n_ctx()},
                            {"depth", depth},
                            {"kv_type", kv_type},
                            {"flash_attn", flash_attn == "on"},
                            {"reps", reps},
                            {"load_seconds", load_s},
                            {"pp_tokens_per_s", pps.mean},
                            {"pp_stddev", pps.stddev},
                            // Per sequence; aggregate_tg_tokens_per_s is all sequences together.
                            {"tg_tokens_per_s", tgs.mean / parallel},
                            {"tg_stddev", tgs.stddev / parallel},
                            {"aggregate_tg_tokens_per_s", tgs.mean},
                            {"peak_rss_bytes", peak_rss},
                            {"weight_bytes", weight_bytes},
                            {"cache_bytes_per_step", cache_bytes},
                            {"repacked_bytes", static_cast<double>(fp.repacked_bytes)},
                            {"kernels", kernel_level()},
                            {"read_bandwidth_bytes_per_s", probe.read_bandwidth},
                            {"int8_ops_per_s", probe.int8_ops},
                            {"f32_flops_per_s", probe.f32_flops},
                            {"bf16_flops_per_s", probe.bf16_flops},
                            {"pp_bound_kind", bf16_dot ? "bf16 dot" : float_weights ? "f32 fma" : "int8"},
                            {"tg_bound_tokens_per_s", tg_bound},
                            {"pp_bound_tokens_per_s", pp_bound}};
        if (!usage.empty()) {
            // Every selection of every run (warm-up included), per layer and expert.
            nlohmann::json layers = nlohmann::json::array();
            for (const LayerUsage& u : usage)
                layers.push_back({{"layer", u.layer}, {"counts", ctx.expert_usage()[static_cast<size_t>(u.layer)]}});
            j["expert_usage"] = layers;
        }
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("| model | threads | test | t/s | of bound |\n|---|---|---|---|---|\n");
    auto frac = [](double v, double b) { return b > 0 ? std::to_string(static_cast<int>(std::lround(100.0 * v / b))) + "% of " + std::to_string(static_cast<int>(b)) : std::string("-"); };
    const std::string at = (depth > 0 ? " @ d" + std::to_string(depth) : "") + (parallel > 1 ? " x" + std::to_string(parallel) : "");
    if (n_prompt > 0)
        std::printf("| %s | %d | pp%d%s | %.2f ± %.2f | %s |\n", model->architecture().c_str(), threads, n_prompt, at.c_str(),
                    pps.mean, pps.stddev, frac(pps.mean, pp_bound).c_str());
    if (n_gen > 0)
        std::printf("| %s | %d | tg%d%s | %.2f ± %.2f | %s |\n", model->architecture().c_str(), threads, n_gen, at.c_str(),
                    tgs.mean, tgs.stddev, frac(tgs.mean, tg_bound).c_str());
    std::printf("\nload %.3f s, peak RSS %s, weights %s, %s kernels", load_s, human_bytes(static_cast<uint64_t>(peak_rss)).c_str(),
                human_bytes(static_cast<uint64_t>(weight_bytes)).c_str(), kernel_level().c_str());
    if (probe.read_bandwidth > 0)
        std::printf(", memory read %.1f GB/s, int8 %.0f Gop/s, f32 fma %.0f GFLOP/s", probe.read_bandwidth / 1e9, probe.int8_ops / 1e9,
                    probe.f32_flops / 1e9);
    if (probe.bf16_flops > 0) std::printf(", bf16 dot %.0f GFLOP/s", probe.bf16_flops / 1e9);
    std::printf("\n");
    if (!usage.empty()) {
        // Random prompt tokens: the spread says how the router treats this
        // input, and whether a layer funnels tokens to a few experts.
        std::printf("\nexpert usage (every run's tokens; experts by load against an even spread)\n"
                    "| layer | selections | experts used | busiest | its share | least share | idle | <0.5x | 0.5-0.8x | 0.8-1.25x | 1.25-2x | >=2x |\n"
                    "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        for (const LayerUsage& u : usage)
            std::printf("| %d | %llu | %d / %d | %d | %.1f%% | %.2f%% | %d | %d | %d | %d | %d | %d |\n", u.layer,
                        static_cast<unsigned long long>(u.selections), u.used, u.n_expert, u.top, 100.0 * u.top_share,
                        100.0 * u.min_share, u.buckets[0], u.buckets[1], u.buckets[2], u.buckets[3], u.buckets[4], u.buckets[5]);
    }
    return 0;
}

}  // namespace kiln::cli
