#include "common.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "kiln/error.h"
#include "kiln/mcp.h"
#include "kiln/memory_plan.h"
#include "kiln/system.h"

namespace kiln::cli {

bool parse_args(CLI::App& app, int argc, char** argv, int& exit_code) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        exit_code = app.exit(e);
        return false;
    } catch (const CLI::ParseError& e) {
        std::fprintf(stderr, "kiln %s: %s\n", app.get_name().c_str(), e.what());
        exit_code = 1;
        return false;
    }
    return true;
}

std::string models_dir() {
    if (const char* env = std::getenv("KILN_MODELS"); env && *env) return env;
    const char* home = std::getenv("HOME");
    return std::string(home && *home ? home : ".") + "/.cache/kiln/models";
}

std::string default_model_path() { return models_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf"; }

namespace {
std::string g_config_path;
}

void set_config_path(const std::string& path) { g_config_path = path; }
const std::string& config_path_flag() { return g_config_path; }

Config& config() {
    static Config c = [] {
        Config loaded = Config::load(g_config_path);
        (void)configured_mcp_servers(loaded);  // the servers' keys are checked as the rest of the file is
        return loaded;
    }();
    return c;
}

std::vector<McpServerConfig> configured_mcp_servers(const Config& c) {
    const Config::McpServers& m = c.mcp_servers();
    if (!m.file.empty()) return load_mcp_config(m.file);
    if (m.json_text.empty()) return {};
    return parse_mcp_servers(nlohmann::ordered_json::parse(m.json_text), m.where, m.base_dir);
}

std::string cpu_signature() {
    std::ifstream in("/proc/cpuinfo");
    std::string line, name = "unknown CPU";
    while (std::getline(in, line))
        if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
            name = line.substr(line.find(':') + 1);
            name.erase(0, name.find_first_not_of(" \t"));
            break;
        }
    return name + ", " + std::to_string(std::max(1u, std::thread::hardware_concurrency())) + " threads, " + kernel_level();
}

TunedSettings tuned_settings() {
    const Config& c = config();
    TunedSettings t;
    if (c.get("tuned.cpu").empty() || c.get("tuned.cpu") != cpu_signature()) return t;
    t.threads = c.get_int("tuned.threads");
    t.batch_size = c.get_int("tuned.batch_size");
    t.kv_type = c.get("tuned.kv_type");
    return t;
}

const Catalog& catalog() {
    static const Catalog c(config().catalog_options());
    return c;
}

ResolvedModel resolve_model_full(const std::string& flag_value) {
    if (!flag_value.empty()) return catalog().resolve(flag_value);
    const std::string configured = config().get("default_model");
    if (!configured.empty()) {
        try {
            return catalog().resolve(configured);
        } catch (const Error& e) {
            throw Error("default_model (" + config().origin("default_model") + "): " + e.what(), e.kind());
        }
    }
    std::string path = default_model_path();
    if (!std::filesystem::exists(path))
        throw Error("no model given (-m NAME) and the default model " + path + " is missing; run ./setup.sh");
    return {path, "kiln", path, std::nullopt};
}

std::string resolve_model(const std::string& flag_value) { return resolve_model_full(flag_value).path; }

void add_experts_memory_flag(CLI::App& app, uint64_t& bytes) {
    app.add_option("--experts-memory", bytes,
                   "bytes of mixture-of-experts expert weights held in memory, e.g. 8GiB; expert layers past it are read in "
                   "place from the file through the page cache (default: what the available memory leaves)")
        ->transform(CLI::AsSizeValue(false));
}

std::optional<uint64_t> bytes_if_set(uint64_t bytes) {
    return bytes == k_bytes_unset ? std::nullopt : std::optional<uint64_t>(bytes);
}

LoadOptions load_options(uint64_t experts_memory) {
    LoadOptions lo;
    lo.expert_memory_budget = bytes_if_set(experts_memory);
    return lo;
}

void check_load_fits(const std::string& path, int n_ctx, int n_seq_max, const std::string& kv_type, int n_batch,
                     uint64_t memory_budget, const std::string& draft_path, std::optional<uint64_t> expert_memory_budget) {
    MemoryPlanOptions o;
    o.n_ctx = n_ctx;
    o.n_seq_max = n_seq_max;
    o.kv_type = kv_type;
    o.n_batch = n_batch;
    o.memory_budget = memory_budget;
    o.draft_model = draft_path;
    o.expert_memory_budget = expert_memory_budget;
    const MemoryPlan plan = plan_memory(path, o);
    const uint64_t available = available_memory_bytes();
    if (available == 0 || plan.total_bytes <= available) return;
    throw Error(plan_refusal(plan, available, "this machine's available memory", o), ErrorKind::ResourceExhausted);
}

std::string human_bytes(uint64_t bytes) {
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(bytes);
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    char buf[64];
    if (u == 0)
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    else
        std::snprintf(buf, sizeof buf, "%.2f %s", v, units[u]);
    return buf;
}

std::string human_count(uint64_t n) {
    char buf[64];
    if (n >= 1000000000ull)
        std::snprintf(buf, sizeof buf, "%.2f B", static_cast<double>(n) / 1e9);
    else if (n >= 1000000ull)
        std::snprintf(buf, sizeof buf, "%.1f M", static_cast<double>(n) / 1e6);
    else if (n >= 1000ull)
        std::snprintf(buf, sizeof buf, "%.1f K", static_cast<double>(n) / 1e3);
    else
        std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
    return buf;
}

std::string format_float(double v) {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

std::string read_text_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot read");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace kiln::cli
