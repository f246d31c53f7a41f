// kiln list [--json]: the GGUF models found in the kiln folder, the Hugging Face
// hub cache, the Ollama store, LM Studio's folder and the configured folders
// (kiln/catalog.h), each with the name -m accepts and whether it fits here.
#include <array>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/error.h"
#include "kiln/memory_plan.h"

namespace kiln::cli {

int cmd_list(int argc, char** argv) {
    CLI::App app{"The models kiln finds (docs/models.md, \"Naming models\")", "list"};
    bool json = false, all = false;
    int n_ctx = 0;
    app.add_flag("--json", json, "print a JSON array");
    app.add_flag("--all", all, "also list files kiln cannot run (unsupported architecture, unreadable)");
    app.add_option("-c,--ctx-size", n_ctx, "context `fits` is judged at (default: the model's, at most 4096)")->check(CLI::Range(0, 1 << 24));
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    const uint64_t available = available_memory_bytes();
    nlohmann::json out = nlohmann::json::array();
    std::vector<std::array<std::string, 7>> rows;
    for (const CatalogEntry& e : catalog().list()) {
        if (!all && (!e.error.empty() || !e.supported)) continue;
        // Whether a load at the default context fits what this machine has free.
        nlohmann::json fits = nullptr;
        uint64_t planned = 0;
        if (e.error.empty() && e.supported) {
            try {
                MemoryPlanOptions po;
                po.n_ctx = n_ctx;
                const MemoryPlan plan = plan_memory(e.path, po);
                planned = plan.total_bytes;
                fits = plan.total_bytes <= available;
            } catch (const Error&) {
                fits = nullptr;  // e.g. a context above the model's: judged as unknown
            }
        }
        nlohmann::json j = {{"name", e.name},
                            {"source", e.source},
                            {"path", e.path},
                            {"architecture", e.architecture},
                            {"file_size", e.file_size},
                            {"quantization", e.quantization},
                            {"context_length", e.context_length},
                            {"fits", fits}};
        if (e.n_shards > 1) j["shards"] = e.n_shards;
        if (planned) j["planned_bytes"] = planned;
        if (!e.supported && e.error.empty()) j["supported"] = false;
        if (!e.error.empty()) j["error"] = e.error;
        out.push_back(j);
        rows.push_back({e.name, e.source, e.architecture.empty() ? "-" : e.architecture, e.quantization.empty() ? "-" : e.quantization,
                        human_bytes(e.file_size), e.context_length ? std::to_string(e.context_length) : "-",
                        !e.error.empty() ? "error: " + e.error : fits.is_null() ? "-" : fits.get<bool>() ? "yes" : "no"});
    }
    if (json) {
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    if (rows.empty()) {
        std::printf("no models found (kiln config --print shows where kiln looks)\n");
        return 0;
    }
    std::printf("| name | source | architecture | quantization | size | context | fits |\n|---|---|---|---|---|---|---|\n");
    for (const auto& r : rows)
        std::printf("| %s | %s | %s | %s | %s | %s | %s |\n", r[0].c_str(), r[1].c_str(), r[2].c_str(), r[3].c_str(), r[4].c_str(),
                    r[5].c_str(), r[6].c_str());
    std::printf("\nfits: the planned memory at the default context (kiln plan -m NAME) within the %s this machine has available\n",
                human_bytes(available).c_str());
    return 0;
}

}  // namespace kiln::cli
