// Helpers shared by the subcommands: argument parsing, model paths, formatting.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/catalog.h"
#include "kiln/config.h"
#include "kiln/model.h"

namespace kiln {
struct McpServerConfig;  // kiln/mcp.h
}

namespace kiln::cli {

// Parses with CLI11; on --help prints and returns the exit code in `exit_code`.
// Returns false when the command should exit immediately.
bool parse_args(CLI::App& app, int argc, char** argv, int& exit_code);

// The folder setup.sh links models into: $KILN_MODELS, else ~/.cache/kiln/models.
std::string models_dir();
// The model used when -m is not given (SmolLM2-135M-Instruct from setup).
std::string default_model_path();

// The config file named by main's --config (before any subcommand reads it).
void set_config_path(const std::string& path);
const std::string& config_path_flag();  // "" when --config was not given
// The configuration (kiln/config.h), read once: --config, $KILN_CONFIG or ~/.config/kiln/config.json.
Config& config();
// The agent's MCP servers the configuration gives (KILN_MCP_CONFIG's file, else the
// file's "mcp_servers"), checked; kiln chat's --mcp / --mcp-config replace them.
std::vector<McpServerConfig> configured_mcp_servers(const Config& c);
// The catalog over the configuration's folders, aliases and presets.
const Catalog& catalog();
// A -m value resolved through the catalog (a path, alias, preset, hf:..., Ollama
// name, file stem); empty: the config's default_model, else the model setup
// installed, with a clear error when it is missing.
ResolvedModel resolve_model_full(const std::string& flag_value);
std::string resolve_model(const std::string& flag_value);
// Plans the load (kiln/memory_plan.h) and refuses one that does not fit this
// machine's available memory, with the numbers and a context that would fit.
// With a draft model (--draft-model) its plan is added (MemoryPlanOptions::draft_model).
void check_load_fits(const std::string& path, int n_ctx, int n_seq_max, const std::string& kv_type, int n_batch,
                     uint64_t memory_budget, const std::string& draft_path = "",
                     std::optional<uint64_t> expert_memory_budget = std::nullopt);

// --experts-memory BYTES (run, chat, bench, serve, plan): the bytes of
// mixture-of-experts expert matrices repacked into memory at load; the expert
// layers past it are read in place from the file (LoadOptions::expert_memory_budget).
// `bytes` stays k_bytes_unset unless the flag is given.
constexpr uint64_t k_bytes_unset = ~uint64_t{0};
void add_experts_memory_flag(CLI::App& app, uint64_t& bytes);
std::optional<uint64_t> bytes_if_set(uint64_t bytes);
LoadOptions load_options(uint64_t experts_memory);

// The whole file (an error naming it when it cannot be read).
std::string read_text_file(const std::string& path);

// This CPU as kiln autotune records it: the model name, the hardware threads and
// the kernel level ("AMD EPYC, 2 threads, avx512-vnni").
std::string cpu_signature();
// The config's "tuned" settings if they were measured on this CPU (else all unset).
struct TunedSettings {
    int threads = 0, batch_size = 0;
    std::string kv_type;
};
TunedSettings tuned_settings();

std::string human_bytes(uint64_t bytes);     // "1.50 GiB"
std::string human_count(uint64_t n);         // "134.5 M"
std::string format_float(double v);          // shortest round-trip text

}  // namespace kiln::cli
