#include "support/test_support.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace kiln::test {

std::string data_path(const std::string& relative) { return std::string(KILN_SOURCE_DIR) + "/tests/data/" + relative; }
std::string golden_path(const std::string& relative) { return std::string(KILN_SOURCE_DIR) + "/tests/golden/" + relative; }

std::string models_dir() {
    if (const char* env = std::getenv("KILN_MODELS"); env && *env) return env;
    const char* home = std::getenv("HOME");
    return std::string(home ? home : ".") + "/.cache/kiln/models";
}

std::string smollm2_path() { return models_dir() + "/SmolLM2-135M-Instruct.Q4_1.gguf"; }
std::string gemma3_path() { return models_dir() + "/gemma-3-270m-q4_k_m.gguf"; }
std::string minilm_path() { return models_dir() + "/all-MiniLM-L6-v2.F16.gguf"; }

std::string missing_reason(const std::string& path) {
    if (std::filesystem::exists(path)) return "";
    return "model not installed: " + path + " (run ./setup.sh)";
}

bool data_required() {
    const char* v = std::getenv("KILN_TESTS_REQUIRE_DATA");
    return v && std::string(v) == "1";
}

std::string temp_dir() {
    // Removed when the process exits: ctest runs each test in its own process, and
    // the models and logs they write there would otherwise pile up (gigabytes).
    static std::string dir = [] {
        auto d = std::filesystem::temp_directory_path() / ("kiln-test-" + std::to_string(::getpid()));
        std::filesystem::create_directories(d);
        static const auto* const removed_at_exit = new std::filesystem::path(d);  // outlives every static
        std::atexit([] {
            std::error_code ec;
            std::filesystem::remove_all(*removed_at_exit, ec);
        });
        return d.string();
    }();
    return dir;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
    if (!out) throw std::runtime_error("cannot write " + path);
}

}  // namespace kiln::test
