// Options shared by the commands that generate (run, chat): sampling, context,
// threads. Registered on a CLI11 app and turned into the library's structs.
#pragma once

#include <CLI/CLI.hpp>
#include <atomic>
#include <string>
#include <vector>

#include "kiln/catalog.h"
#include "kiln/engine.h"
#include "kiln/model.h"

namespace kiln::cli {

struct GenerationFlags {
    std::string model;
    int n_predict = -1;  // -1: command default
    float temperature = 0.8f;
    int top_k = 40;
    float top_p = 0.95f;
    float min_p = 0.05f;
    float typical_p = 1.0f;
    float repeat_penalty = 1.0f;
    float presence_penalty = 0.0f;
    float frequency_penalty = 0.0f;
    int repeat_last_n = 64;
    int64_t seed = -1;  // -1: random
    int n_ctx = 0;
    int n_batch = 256;
    int n_threads = 0;
    uint64_t memory_budget = 0;  // bytes; 0: no cap
    uint64_t experts_memory = ~uint64_t{0};  // --experts-memory (k_bytes_unset: not given)
    std::string kv_type = "f16";
    std::string flash_attn = "off";  // on: ContextOptions::flash_attn
    std::vector<std::string> stop;
    bool ignore_eos = false;
    bool verbose = false;
    std::string spec = "auto";  // speculative decoding: auto | off | ngram | draft
    std::string draft_model;    // --draft-model (empty: none)
    int draft_max = 8;
    int draft_min = 1;

    void add_to(CLI::App& app);
    // A preset's defaults (context, sampling) for what the command line left unset.
    void apply_preset(const Preset& preset, const CLI::App& app);
    // kiln autotune's settings for this CPU where no flag gave them.
    void apply_tuned(const CLI::App& app);
    SamplingParams sampling() const;
    ContextOptions context() const;
    uint64_t resolved_seed() const;
    SpecOptions speculation() const;
    // Loads --draft-model into the engine (an error for --spec draft without
    // one, or a draft model with --spec off / ngram).
    void attach_draft_model(Engine& engine) const;
};

// The -v line of speculative decoding: "speculation ngram: drafted D, accepted A (R%), ..."
std::string spec_report(const SpecStats& s, const std::string& mode);

// Ctrl-C sets the flag (the reply stops, not the program); a second Ctrl-C
// while the flag is still set exits.
const std::atomic<bool>& install_interrupt_handler();
void clear_interrupt();

}  // namespace kiln::cli
