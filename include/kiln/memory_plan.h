// The memory plan: what loading a model and running it at a context will take,
// computed before anything is allocated from the file's front and the same
// sizing code the loader and the Context use (weight repacking, the KV cache,
// the forward pass's buffers).
//
//   kiln::MemoryPlan plan = kiln::plan_memory("model.gguf", {.n_ctx = 4096});
//   if (plan.total_bytes > kiln::available_memory_bytes()) ...
//
// total_bytes is the planned peak resident set of a process that loads the
// model and evaluates n_seq_max sequences of n_ctx positions (`kiln run`,
// `kiln bench`): the larger of the load's peak (every repacked matrix plus the
// source pages of the one being repacked) and the run's (repacked weights, the
// mapped pages still read, the sequences' memory, scratch).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct MemoryPlanOptions {
    int n_ctx = 0;               // positions per sequence; 0: the model's trained context, at most 4096 (as ContextOptions)
    int n_seq_max = 1;           // sequences held at once (the server's --parallel)
    std::string kv_type = "f16";  // f16 | f32 | q8_0
    int n_batch = 512;           // most entries evaluated in one forward pass
    uint64_t memory_budget = 0;  // bytes for the sequences' memory (shortens n_ctx as the Context does); 0: none
    // A draft model run beside it (speculative decoding): planned as the engine
    // runs it (the target's sequences, context capped at the draft's trained one,
    // the same cache type and batch) and added as the part "draft_model".
    std::string draft_model;
    // Bytes of expert matrices repacked, as LoadOptions::expert_memory_budget
    // (unset: what the memory available now leaves, as the load decides).
    std::optional<uint64_t> expert_memory_budget;
};

struct MemoryPart {
    std::string name;     // "weights_repacked", "kv_cache", ...
    uint64_t bytes = 0;
    std::string meaning;  // one line
};

struct MemoryPlan {
    std::string path, architecture;
    int n_ctx = 0;  // per sequence, after the budget
    int n_seq_max = 1;
    int n_batch = 0;
    std::string kv_type;
    uint64_t file_bytes = 0;    // mapped (address space, not all resident)
    std::vector<MemoryPart> parts;  // the run's resident parts
    uint64_t load_peak_bytes = 0;   // the load's peak
    uint64_t run_bytes = 0;         // sum of parts
    uint64_t total_bytes = 0;       // max(load_peak_bytes, run_bytes): the planned peak RSS
    uint64_t kv_bytes_per_position = 0;  // one position of one sequence, all layers
    // The sliding-window layers' checkpoints (a rollback past a window restores
    // one): taken as chat messages and long prompts are evaluated, allocated as
    // they are, so a run that never takes them (kiln bench) never pays; this is
    // the most the sequences can hold, not part of total_bytes.
    uint64_t window_checkpoints_max_bytes = 0;
    // Mixture-of-experts matrices past the expert memory budget, left in the
    // file's mapping and read in place: the page cache holds the ones decode
    // selects and gives them back under pressure, so they are not part of
    // total_bytes (a model larger than memory still runs).
    uint64_t experts_in_place_bytes = 0;
};

// Throws kiln::Error naming the file on an unreadable or unsupported model, a
// context above the model's, or a budget too small for one position.
MemoryPlan plan_memory(const std::string& path, const MemoryPlanOptions& options = {});

// Bytes this machine can give a new load now (MemAvailable of /proc/meminfo);
// 0 when unknown.
uint64_t available_memory_bytes();

// The refusal text for a plan above `limit` bytes (named `what`: "this machine's
// available memory", "--memory-budget"): the numbers, and the largest context
// (and cache type) that would fit. "" when it fits.
std::string plan_refusal(const MemoryPlan& plan, uint64_t limit, const std::string& what, const MemoryPlanOptions& options);

}  // namespace kiln
