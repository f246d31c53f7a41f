// kiln plan -m MODEL [-c CTX] [--parallel N] [--kv-type T] [--memory-budget B] [--experts-memory B] [--json]:
// the memory a load and a run at that context will take (kiln/memory_plan.h),
// computed before anything is allocated, and whether it fits.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/memory_plan.h"

namespace kiln::cli {

int cmd_plan(int argc, char** argv) {
    CLI::App app{"The memory a model will take, before loading it (docs/models.md, \"Memory plan\")", "plan"};
    std::string model;
    MemoryPlanOptions o;
    uint64_t budget = 0;
    bool json = false;
    app.add_option("-m,--model", model, "model name or GGUF file (default: the model setup installed)");
    app.add_option("-c,--ctx-size", o.n_ctx, "positions per sequence (0: the model's, at most 4096)")->check(CLI::Range(0, 1 << 24));
    app.add_option("--parallel", o.n_seq_max, "sequences held at once")->check(CLI::Range(1, 1024));
    app.add_option("--kv-type", o.kv_type, "KV cache type: f16, f32 or q8_0")->check(CLI::IsMember({"f16", "f32", "q8_0"}));
    app.add_option("-b,--batch", o.n_batch, "most entries of one forward pass")->check(CLI::Range(1, 1 << 16));
    app.add_option("--memory-budget", budget, "the most the whole load may take, e.g. 1GiB (default: this machine's available memory)")
        ->transform(CLI::AsSizeValue(false));
    app.add_option("--draft-model", o.draft_model, "a draft model run beside it (speculative decoding): added to the plan");
    uint64_t experts_memory = k_bytes_unset;
    add_experts_memory_flag(app, experts_memory);
    app.add_flag("--json", json, "print one JSON object");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    const ResolvedModel r = resolve_model_full(model);
    if (r.preset && r.preset->n_ctx > 0 && o.n_ctx == 0) o.n_ctx = r.preset->n_ctx;
    if (!o.draft_model.empty()) o.draft_model = resolve_model(o.draft_model);
    o.expert_memory_budget = bytes_if_set(experts_memory);
    const MemoryPlan plan = plan_memory(r.path, o);
    const uint64_t available = available_memory_bytes();
    const uint64_t limit = budget ? budget : available;
    const std::string what = budget ? "--memory-budget" : "this machine's available memory";
    const bool fits = limit == 0 || plan.total_bytes <= limit;
    const std::string refusal = fits ? "" : plan_refusal(plan, limit, what, o);
    if (json) {
        nlohmann::json parts = nlohmann::json::object();
        for (const MemoryPart& p : plan.parts) parts[p.name] = p.bytes;
        nlohmann::json j = {{"model", r.name},
                            {"path", plan.path},
                            {"architecture", plan.architecture},
                            {"n_ctx", plan.n_ctx},
                            {"parallel", plan.n_seq_max},
                            {"n_batch", plan.n_batch},
                            {"kv_type", plan.kv_type},
                            {"file_bytes", plan.file_bytes},
                            {"kv_bytes_per_position", plan.kv_bytes_per_position},
                            {"breakdown", parts},
                            {"run_bytes", plan.run_bytes},
                            {"load_peak_bytes", plan.load_peak_bytes},
                            {"total_bytes", plan.total_bytes},
                            {"window_checkpoints_max_bytes", plan.window_checkpoints_max_bytes},
                            {"experts_in_place_bytes", plan.experts_in_place_bytes},
                            {"limit_bytes", limit},
                            {"limit", what},
                            {"fits", fits}};
        if (!fits) j["advice"] = refusal;
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("%s (%s), %d x %d positions, %s cache, batch %d; file %s mapped\n\n", plan.path.c_str(), plan.architecture.c_str(),
                plan.n_seq_max, plan.n_ctx, plan.kv_type.c_str(), plan.n_batch, human_bytes(plan.file_bytes).c_str());
    std::printf("| part | bytes | what |\n|---|---|---|\n");
    for (const MemoryPart& p : plan.parts)
        std::printf("| %s | %s | %s |\n", p.name.c_str(), human_bytes(p.bytes).c_str(), p.meaning.c_str());
    std::printf("\nrun %s, load peak %s: planned peak %s; %s %s: %s\n", human_bytes(plan.run_bytes).c_str(),
                human_bytes(plan.load_peak_bytes).c_str(), human_bytes(plan.total_bytes).c_str(), what.c_str(),
                human_bytes(limit).c_str(), fits ? "fits" : "does not fit");
    if (plan.window_checkpoints_max_bytes)
        std::printf("sliding-window checkpoints, taken as chat messages and long prompts are evaluated: up to %s more\n",
                    human_bytes(plan.window_checkpoints_max_bytes).c_str());
    if (plan.experts_in_place_bytes)
        std::printf("experts read in place from the file (over the expert memory budget), through the page cache: %s\n",
                    human_bytes(plan.experts_in_place_bytes).c_str());
    if (!fits) std::printf("%s\n", refusal.c_str());
    return 0;
}

}  // namespace kiln::cli
