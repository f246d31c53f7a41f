// Helpers shared by the subcommands: argument parsing, model paths, formatting.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

namespace kiln::cli {

// Parses with CLI11; on --help prints and returns the exit code in `exit_code`.
// Returns false when the command should exit immediately.
bool parse_args(CLI::App& app, int argc, char** argv, int& exit_code);

// The folder setup.sh links models into: $KILN_MODELS, else ~/.cache/kiln/models.
std::string models_dir();
// The model used when -m is not given (SmolLM2-135M-Instruct from setup).
std::string default_model_path();
// An explicit -m value, or the default model with a clear error when it is missing.
std::string resolve_model(const std::string& flag_value);

// The whole file (an error naming it when it cannot be read).
std::string read_text_file(const std::string& path);

std::string human_bytes(uint64_t bytes);     // "1.50 GiB"
std::string human_count(uint64_t n);         // "134.5 M"
std::string format_float(double v);          // shortest round-trip text

}  // namespace kiln::cli
