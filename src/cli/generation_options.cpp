#include "generation_options.h"

#include "common.h"
#include "kiln/error.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <unistd.h>

namespace kiln::cli {

void GenerationFlags::add_to(CLI::App& app) {
    app.add_option("-m,--model", model, "GGUF file (default: the model setup installed)");
    app.add_option("-n,--n-predict", n_predict, "tokens to generate (-1: until the end of the reply)");
    app.add_option("--temp", temperature, "temperature; 0 is greedy")->check(CLI::Range(0.0f, 100.0f));
    app.add_option("--top-k", top_k, "top-k (0: off)")->check(CLI::Range(0, 1 << 30));
    app.add_option("--top-p", top_p, "top-p (1: off)")->check(CLI::Range(0.0f, 1.0f));
    app.add_option("--min-p", min_p, "min-p (0: off)")->check(CLI::Range(0.0f, 1.0f));
    app.add_option("--typical-p", typical_p, "typical-p (1: off)")->check(CLI::Range(0.0f, 1.0f));
    app.add_option("--repeat-penalty", repeat_penalty, "repetition penalty (1: off)")->check(CLI::Range(0.0f, 10.0f));
    app.add_option("--presence-penalty", presence_penalty, "presence penalty")->check(CLI::Range(-10.0f, 10.0f));
    app.add_option("--frequency-penalty", frequency_penalty, "frequency penalty")->check(CLI::Range(-10.0f, 10.0f));
    app.add_option("--repeat-last-n", repeat_last_n, "tokens the penalties look back (-1: all)")->check(CLI::Range(-1, 1 << 30));
    app.add_option("-s,--seed", seed, "random seed (-1: random)");
    app.add_option("-c,--ctx-size", n_ctx, "context size (0: the model's, at most 4096)")->check(CLI::Range(0, 1 << 24));
    app.add_option("-b,--batch-size", n_batch, "prompt chunk size")->check(CLI::Range(1, 1 << 16));
    app.add_option("-t,--threads", n_threads, "threads (0: physical cores)")->check(CLI::Range(0, 1024));
    app.add_option("--memory-budget", memory_budget,
                   "bytes for the sequences' memory (KV cache), e.g. 512MiB; a smaller budget shortens the context")
        ->transform(CLI::AsSizeValue(false));
    add_experts_memory_flag(app, experts_memory);
    app.add_option("--kv-type", kv_type, "KV cache type: f16, f32 or q8_0")->check(CLI::IsMember({"f16", "f32", "q8_0"}));
    app.add_option("--flash-attn", flash_attn, "attention: off (the default: llama.cpp's -fa off order) or on (streaming: keys and values read once with an online softmax)")->check(CLI::IsMember({"on", "off"}));
    app.add_option("--stop", stop, "stop string (repeatable)");
    app.add_flag("--ignore-eos", ignore_eos, "keep generating past end-of-generation tokens");
    app.add_flag("-v,--verbose", verbose, "load and speed figures on stderr");
    app.add_option("--spec", spec,
                   "speculative decoding (lossless): auto (the draft model if given, else prompt lookup and the model's "
                   "MTP head where it has one, while they pay), off, ngram (prompt lookup, always), draft (the draft "
                   "model, always), mtp (the model's multi-token-prediction head, always)")
        ->check(CLI::IsMember({"auto", "off", "ngram", "draft", "mtp"}));
    app.add_option("--draft-model", draft_model,
                   "draft model for --spec draft / auto: a smaller GGUF with the same vocabulary, or a gemma4-assistant for a gemma4 "
                   "target (a path or catalog name)");
    app.add_option("--draft-max", draft_max, "most tokens drafted per step")->check(CLI::Range(1, 64));
    app.add_option("--draft-min", draft_min, "shortest draft worth verifying")->check(CLI::Range(1, 64));
}

uint64_t GenerationFlags::resolved_seed() const {
    if (seed >= 0) return static_cast<uint64_t>(seed);
    static const uint64_t random_seed =
        static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()) ^ (static_cast<uint64_t>(::getpid()) << 32);
    return random_seed;
}

SpecOptions GenerationFlags::speculation() const {
    SpecOptions s;
    s.mode = spec == "off"     ? SpecMode::Off
             : spec == "ngram" ? SpecMode::Ngram
             : spec == "draft" ? SpecMode::Draft
             : spec == "mtp"   ? SpecMode::Mtp
                               : SpecMode::Auto;
    s.draft_max = draft_max;
    s.draft_min = std::min(draft_min, draft_max);
    return s;
}

void GenerationFlags::attach_draft_model(Engine& engine) const {
    if (draft_model.empty()) {
        if (spec == "draft") throw Error("--spec draft needs --draft-model FILE");
        return;
    }
    if (spec != "draft" && spec != "auto")
        throw Error("--draft-model drafts only with --spec draft or auto (not --spec " + spec + ")");
    const std::string path = resolve_model(draft_model);
    auto draft = Model::load(path);
    engine.set_draft_model(std::move(draft));
}

std::string spec_report(const SpecStats& s, const std::string& mode) {
    char line[256];
    std::snprintf(line, sizeof line,
                  "speculation %s: drafted %d tokens, accepted %d (%.1f%%); %d of %d steps verified a draft",
                  mode.c_str(), s.drafted, s.accepted, 100.0 * s.acceptance(), s.draft_steps, s.steps);
    return line;
}

SamplingParams GenerationFlags::sampling() const {
    SamplingParams p;
    p.temperature = temperature;
    p.top_k = top_k;
    p.top_p = top_p;
    p.min_p = min_p;
    p.typical_p = typical_p;
    p.repeat_penalty = repeat_penalty;
    p.presence_penalty = presence_penalty;
    p.frequency_penalty = frequency_penalty;
    p.penalty_last_n = repeat_last_n;
    p.seed = resolved_seed();
    return p;
}

void GenerationFlags::apply_tuned(const CLI::App& app) {
    const TunedSettings t = tuned_settings();
    if (t.threads > 0 && app.count("--threads") == 0) n_threads = t.threads;
    if (t.batch_size > 0 && app.count("--batch-size") == 0) n_batch = t.batch_size;
    if (!t.kv_type.empty() && app.count("--kv-type") == 0) kv_type = t.kv_type;
}

void GenerationFlags::apply_preset(const Preset& preset, const CLI::App& app) {
    if (preset.n_ctx > 0 && app.count("--ctx-size") == 0) n_ctx = preset.n_ctx;
    for (const auto& [key, value] : preset.sampling) {
        if (key == "temperature" && app.count("--temp") == 0) temperature = static_cast<float>(value);
        if (key == "top_k" && app.count("--top-k") == 0) top_k = static_cast<int>(value);
        if (key == "top_p" && app.count("--top-p") == 0) top_p = static_cast<float>(value);
        if (key == "min_p" && app.count("--min-p") == 0) min_p = static_cast<float>(value);
        if (key == "seed" && app.count("--seed") == 0) seed = static_cast<int64_t>(value);
        if (key == "n_predict" && app.count("--n-predict") == 0) n_predict = static_cast<int>(value);
    }
}

ContextOptions GenerationFlags::context() const {
    ContextOptions c;
    c.n_ctx = n_ctx;
    c.n_batch = n_batch;
    c.kv_type = kv_type;
    c.flash_attn = flash_attn == "on";
    c.n_threads = n_threads;
    c.memory_budget = memory_budget;
    return c;
}

namespace {
std::atomic<bool> g_interrupted{false};

void on_sigint(int) {
    if (g_interrupted.load()) std::_Exit(130);
    g_interrupted.store(true);
}
}  // namespace

const std::atomic<bool>& install_interrupt_handler() {
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    return g_interrupted;
}

void clear_interrupt() { g_interrupted.store(false); }

}  // namespace kiln::cli
