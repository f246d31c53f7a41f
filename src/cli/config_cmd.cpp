// kiln config --print [--json]: the configuration in effect and where each value
// came from (flag, environment, file, built-in), the folders, aliases and presets.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/mcp.h"

namespace kiln::cli {

int cmd_config(int argc, char** argv) {
    CLI::App app{"The configuration: each value and where it came from (docs/models.md)", "config"};
    bool print = false, json = false;
    app.add_flag("--print", print, "print the configuration in effect");
    app.add_flag("--json", json, "print it as one JSON object");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    if (!print && !json) {
        std::fprintf(stderr, "kiln config: nothing to do (--print shows the configuration)\n");
        return 1;
    }
    const Config& c = config();
    const std::vector<McpServerConfig> mcp = configured_mcp_servers(c);
    std::string mcp_from = c.mcp_servers().origin;
    if (!c.mcp_servers().file.empty()) mcp_from += " = " + c.mcp_servers().file;
    const std::string file = c.path().empty() ? "none (built-in defaults)" : c.path();
    if (json) {
        nlohmann::json j;
        j["file"] = c.path().empty() ? nlohmann::json(nullptr) : nlohmann::json(c.path());
        nlohmann::json settings = nlohmann::json::object();
        for (const ConfigSetting& s : c.settings())
            settings[s.key] = {{"value", s.value}, {"origin", s.origin}, {"env", s.env.empty() ? nlohmann::json(nullptr) : nlohmann::json(s.env)}};
        j["settings"] = settings;
        j["model_folders"] = c.model_folders();
        j["aliases"] = c.aliases();
        nlohmann::json presets = nlohmann::json::object();
        for (const auto& [name, p] : c.presets())
            presets[name] = {{"model", p.model}, {"sha256", p.sha256}, {"context", p.n_ctx}, {"sampling", p.sampling}};
        j["presets"] = presets;
        nlohmann::json servers = nlohmann::json::array();
        for (const McpServerConfig& m : mcp) {
            nlohmann::json env_names = nlohmann::json::array();  // names only: values may be secrets
            for (const auto& [k, v] : m.env) env_names.push_back(k);
            servers.push_back({{"name", m.name}, {"argv", m.argv}, {"env", env_names}, {"cwd", m.cwd}, {"allow", m.allow}});
        }
        j["mcp_servers"] = {{"origin", mcp_from}, {"servers", servers}};
        const CatalogOptions o = catalog().options();
        j["stores"] = {{"kiln", o.kiln_models}, {"hf", o.hf_hub}, {"ollama", o.ollama_models}, {"lmstudio", o.lmstudio_models}};
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("config file: %s\n\n", file.c_str());
    std::printf("| setting | value | from | environment |\n|---|---|---|---|\n");
    for (const ConfigSetting& s : c.settings())
        std::printf("| %s | %s | %s | %s |\n", s.key.c_str(), s.value.empty() ? "(none)" : s.value.c_str(), s.origin.c_str(),
                    s.env.empty() ? "-" : s.env.c_str());
    const std::string from = c.path().empty() ? "" : " (file " + c.path() + ")";
    std::printf("\nmodel folders%s:%s\n", from.c_str(), c.model_folders().empty() ? " none" : "");
    for (const std::string& f : c.model_folders()) std::printf("  %s\n", f.c_str());
    std::printf("aliases%s:%s\n", from.c_str(), c.aliases().empty() ? " none" : "");
    for (const auto& [name, target] : c.aliases()) std::printf("  %s -> %s\n", name.c_str(), target.c_str());
    std::printf("presets%s:%s\n", from.c_str(), c.presets().empty() ? " none" : "");
    for (const auto& [name, p] : c.presets()) {
        std::printf("  %s -> %s, sha256 %s", name.c_str(), p.model.c_str(), p.sha256.c_str());
        if (p.n_ctx > 0) std::printf(", context %d", p.n_ctx);
        for (const auto& [k, v] : p.sampling) std::printf(", %s %s", k.c_str(), format_float(v).c_str());
        std::printf("\n");
    }
    std::printf("MCP servers for kiln chat (%s; --mcp / --mcp-config replace them):%s\n", mcp_from.c_str(),
                mcp.empty() ? " none" : "");
    for (const McpServerConfig& m : mcp) {
        std::string cmd;
        for (const std::string& a : m.argv) cmd += (cmd.empty() ? "" : " ") + a;
        std::printf("  %s: %s", m.name.c_str(), cmd.c_str());
        if (!m.cwd.empty()) std::printf(", cwd %s", m.cwd.c_str());
        for (const auto& [k, v] : m.env) std::printf(", env %s", k.c_str());  // names only: values may be secrets
        if (!m.allow.empty()) {
            std::string allow;
            for (const std::string& a : m.allow) allow += (allow.empty() ? "" : " ") + a;
            std::printf(", runs without asking: %s", allow.c_str());
        }
        std::printf("\n");
    }
    const CatalogOptions o = catalog().options();
    std::printf("stores (environment):\n  kiln      %s\n  hf        %s\n  ollama    %s\n", o.kiln_models.c_str(), o.hf_hub.c_str(),
                o.ollama_models.c_str());
    for (const std::string& l : o.lmstudio_models) std::printf("  lmstudio  %s\n", l.c_str());
    return 0;
}

}  // namespace kiln::cli
