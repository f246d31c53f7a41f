// kiln autotune [-m MODEL] [--rounds R] [--lossy-kv] [--dry-run]
//
// Measures on this machine, with the model, the settings that matter for speed
// and writes the best to the config file (its "tuned" section), which kiln run,
// chat and serve read when no flag gives them (and only on the CPU measured):
//   1. threads: decode speed (tokens / s generating one token at a time) for each
//      count from 1 to the hardware threads; the fastest wins (decode is what a
//      user waits on; prefill speed is shown beside it);
//   2. batch size: prefill speed for 64 ... 512 prompt tokens per forward pass at
//      those threads;
//   3. KV cache type: decode speed after a 512-token prompt with f16 and f32 (the
//      lossless types); q8_0 is measured and shown, and chosen only with
//      --lossy-kv (it changes the numbers the model sees).
// Each candidate is measured in R interleaved rounds (default 3) and its median
// taken. Other keys of the config file are kept as they are.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "commands.h"
#include "common.h"
#include "kiln/config.h"
#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/executor.h"
#include "kiln/model.h"
#include "kiln/system.h"

namespace kiln::cli {

namespace {

using Clock = std::chrono::steady_clock;

struct Trial {
    int threads = 1;
    int n_batch = 256;
    std::string kv_type = "f16";
};

// Tokens / s of a prompt of n_prompt tokens (prefill) and of n_gen tokens
// decoded one at a time after it.
struct Speed {
    double prefill = 0, decode = 0;
};

Speed measure(const std::shared_ptr<const Model>& model, const Trial& t, const std::vector<TokenId>& prompt, int n_gen) {
    ContextOptions co;
    co.n_ctx = static_cast<int>(prompt.size()) + n_gen + 8;
    co.n_batch = t.n_batch;
    co.kv_type = t.kv_type;
    co.executor = std::make_shared<Executor>(t.threads);
    co.n_threads = t.threads;
    Context ctx(model, co);
    const auto t0 = Clock::now();
    ctx.decode(prompt);
    const auto t1 = Clock::now();
    TokenId next = prompt.back();
    for (int i = 0; i < n_gen; ++i) {
        const TokenId one[] = {next};
        ctx.decode(one);
        next = static_cast<TokenId>((next * 31 + 7) % static_cast<TokenId>(model->n_vocab()));
    }
    const auto t2 = Clock::now();
    Speed s;
    s.prefill = prompt.size() / std::chrono::duration<double>(t1 - t0).count();
    s.decode = n_gen / std::chrono::duration<double>(t2 - t1).count();
    return s;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// Median speeds of each trial over `rounds` interleaved rounds.
std::vector<Speed> measure_all(const std::shared_ptr<const Model>& model, const std::vector<Trial>& trials,
                               const std::vector<TokenId>& prompt, int n_gen, int rounds, const std::string& what, bool tty) {
    std::vector<std::vector<double>> pp(trials.size()), tg(trials.size());
    for (int r = 0; r < rounds; ++r)
        for (size_t i = 0; i < trials.size(); ++i) {
            if (tty) std::fprintf(stderr, "\r\033[K%s: round %d of %d, candidate %zu of %zu", what.c_str(), r + 1, rounds, i + 1, trials.size());
            const Speed s = measure(model, trials[i], prompt, n_gen);
            pp[i].push_back(s.prefill);
            tg[i].push_back(s.decode);
        }
    if (tty) std::fprintf(stderr, "\r\033[K");
    std::vector<Speed> out(trials.size());
    for (size_t i = 0; i < trials.size(); ++i) out[i] = {median(pp[i]), median(tg[i])};
    return out;
}

std::vector<TokenId> random_tokens(const Model& model, int n) {
    std::mt19937 rng(1234);
    std::uniform_int_distribution<int> d(0, static_cast<int>(model.n_vocab()) - 1);
    std::vector<TokenId> t(static_cast<size_t>(n));
    for (TokenId& x : t) x = static_cast<TokenId>(d(rng));
    return t;
}

}  // namespace

int cmd_autotune(int argc, char** argv) {
    CLI::App app{"Measure the fastest threads, batch size and KV cache type here and save them to the config file", "autotune"};
    std::string path;
    int rounds = 3;
    bool lossy_kv = false, dry_run = false;
    app.add_option("-m,--model", path, "GGUF file or catalog name (default: the model setup installed)");
    app.add_option("--rounds", rounds, "interleaved rounds per measurement (median; default 3)")->check(CLI::Range(1, 50));
    app.add_flag("--lossy-kv", lossy_kv, "let q8_0 (a lossy KV cache) win if it is the fastest");
    app.add_flag("--dry-run", dry_run, "measure and print, write nothing");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    // A --config file that does not exist yet is the one to write: start it empty.
    if (!config_path_flag().empty() && !dry_run && !std::filesystem::exists(config_path_flag())) {
        std::ofstream(config_path_flag()) << "{}\n";
        if (!std::filesystem::exists(config_path_flag())) throw Error(config_path_flag() + ": cannot create the config file");
    }
    const std::string resolved = resolve_model(path);
    auto model = Model::load(resolved);
    const bool tty = isatty(STDERR_FILENO);
    const int hw = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const std::string cpu = cpu_signature();
    std::printf("autotune: %s on %s\n", resolved.c_str(), cpu.c_str());
    const std::vector<TokenId> short_prompt = random_tokens(*model, 128), long_prompt = random_tokens(*model, 512);
    const int n_gen = 32;

    // 1. Threads, by decode speed.
    std::vector<Trial> trials;
    for (int t = 1; t <= hw; ++t) trials.push_back({t, 256, "f16"});
    std::vector<Speed> s = measure_all(model, trials, short_prompt, n_gen, rounds, "threads", tty);
    size_t best = 0;
    std::printf("\n%-8s %14s %14s\n", "threads", "prefill t/s", "decode t/s");
    for (size_t i = 0; i < trials.size(); ++i) {
        std::printf("%-8d %14.1f %14.1f\n", trials[i].threads, s[i].prefill, s[i].decode);
        if (s[i].decode > s[best].decode) best = i;
    }
    const int threads = trials[best].threads;

    // 2. Batch size, by prefill speed of a 512-token prompt.
    trials.clear();
    for (int b : {64, 128, 256, 512}) trials.push_back({threads, b, "f16"});
    s = measure_all(model, trials, long_prompt, 4, rounds, "batch size", tty);
    best = 0;
    std::printf("\n%-8s %14s\n", "batch", "prefill t/s");
    for (size_t i = 0; i < trials.size(); ++i) {
        std::printf("%-8d %14.1f\n", trials[i].n_batch, s[i].prefill);
        if (s[i].prefill > s[best].prefill) best = i;
    }
    const int n_batch = trials[best].n_batch;

    // 3. KV cache type, by decode speed after the long prompt.
    trials.clear();
    for (const char* kv : {"f16", "f32", "q8_0"}) trials.push_back({threads, n_batch, kv});
    s = measure_all(model, trials, long_prompt, n_gen, rounds, "KV cache type", tty);
    best = 0;
    std::printf("\n%-8s %14s\n", "kv type", "decode t/s");
    for (size_t i = 0; i < trials.size(); ++i) {
        const bool lossy = trials[i].kv_type == "q8_0";
        std::printf("%-8s %14.1f%s\n", trials[i].kv_type.c_str(), s[i].decode, lossy && !lossy_kv ? "   (lossy: not chosen without --lossy-kv)" : "");
        if ((!lossy || lossy_kv) && s[i].decode > s[best].decode) best = i;
    }
    const std::string kv_type = trials[best].kv_type;
    std::printf("\nbest here: threads %d, batch size %d, KV cache %s\n", threads, n_batch, kv_type.c_str());
    if (dry_run) return 0;

    // Into the config file, keeping everything else in it.
    const std::string file = config().path().empty() ? Config::default_path() : config().path();
    nlohmann::json j = nlohmann::json::object();
    if (std::filesystem::exists(file)) {
        try {
            j = nlohmann::json::parse(read_text_file(file));
        } catch (const nlohmann::json::exception& e) {
            throw Error(file + ": not valid JSON (" + e.what() + "); not overwritten");
        }
        if (!j.is_object()) throw Error(file + ": not a JSON object; not overwritten");
    }
    j["tuned"] = {{"threads", threads}, {"batch_size", n_batch}, {"kv_type", kv_type}, {"cpu", cpu}, {"model", resolved}};
    Config::parse(j.dump(), file);  // what is written must read back
    std::filesystem::create_directories(std::filesystem::path(file).parent_path());
    const std::string tmp = file + ".tmp";
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        out << j.dump(2) << "\n";
        if (!out) throw Error(tmp + ": cannot write");
    }
    std::filesystem::rename(tmp, file);
    std::printf("written to %s (\"tuned\"); kiln run, chat and serve use it on this CPU unless a flag says otherwise\n", file.c_str());
    return 0;
}

}  // namespace kiln::cli
