// kiln archs [--json]: the architectures kiln knows, with their layer kinds and
// whether each runs and is checked against llama.cpp.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/model.h"

namespace kiln::cli {

int cmd_archs(int argc, char** argv) {
    CLI::App app{"List the architectures kiln knows: layer kinds, whether each runs and is checked against llama.cpp",
                 "archs"};
    bool json = false;
    app.add_flag("--json", json, "print a JSON array");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;

    const std::vector<ArchitectureInfo> archs = known_architectures();
    if (json) {
        nlohmann::json out = nlohmann::json::array();
        for (const ArchitectureInfo& a : archs)
            out.push_back({{"name", a.name},     {"aliases", a.aliases}, {"runnable", a.runnable}, {"mixer", a.mixer},
                           {"ffn", a.ffn},       {"memory", a.memory},   {"rope", a.rope},         {"checked", a.checked},
                           {"checked_against", a.checked_against}});
        std::printf("%s\n", out.dump(2).c_str());
        return 0;
    }
    // Columns as wide as their text on a terminal: UTF-8 continuation bytes take no column ("ReLU²").
    auto columns = [](const std::string& t) {
        return static_cast<int>(std::count_if(t.begin(), t.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
    };
    int ffn_width = 3;  // the widest FFN description ("plain (parallel block or sequential)")
    int name_width = 4;  // the longest name ("gemma-embedding")
    for (const ArchitectureInfo& a : archs) {
        ffn_width = std::max(ffn_width, columns(a.ffn));
        name_width = std::max(name_width, static_cast<int>(a.name.size()));
    }
    std::printf("%-*s %-9s %-22s %-*s %-10s %-5s %-8s %s\n", name_width, "name", "runs", "mixer", ffn_width, "ffn", "memory",
                "rope", "checked", "aliases");
    int n_run = 0, n_checked = 0, n_reference = 0;
    for (const ArchitectureInfo& a : archs) {
        std::string aliases;
        for (const auto& s : a.aliases) aliases += (aliases.empty() ? "" : ", ") + s;
        std::printf("%-*s %-9s %-22s %-*s %-10s %-5s %-8s %s\n", name_width, a.name.c_str(), a.runnable ? "yes" : "not yet",
                    a.mixer.c_str(), ffn_width + static_cast<int>(a.ffn.size()) - columns(a.ffn), a.ffn.c_str(), a.memory.c_str(), a.rope.c_str(),
                    !a.checked ? "-" : a.checked_against == "llama.cpp" ? "yes" : "ref", aliases.c_str());
        n_run += a.runnable;
        n_checked += a.checked_against == "llama.cpp";
        n_reference += a.checked_against == "reference";
    }
    std::printf("\n%zu architectures known, %d run, %d checked against llama.cpp (a tiny random model's logits at every "
                "position and its greedy continuation)",
                archs.size(), n_run, n_checked);
    if (n_reference > 0)
        std::printf(", %d (\"ref\") against an independent reference forward where llama.cpp has no graph", n_reference);
    std::printf("\n");
    return 0;
}

}  // namespace kiln::cli
