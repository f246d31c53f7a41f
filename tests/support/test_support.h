// Shared helpers for the tests: fixture paths, the installed real models.
#pragma once

#include <string>
#include <vector>

namespace kiln::test {

// <repo>/tests/data/...
std::string data_path(const std::string& relative);
// <repo>/tests/golden/...
std::string golden_path(const std::string& relative);
// $KILN_MODELS (default ~/.cache/kiln/models) and the installed model files in it
// (setup.sh links them there).
std::string models_dir();
std::string smollm2_path();
std::string gemma3_path();
std::string minilm_path();  // all-MiniLM-L6-v2 converted by setup.sh (tools/bert_to_gguf.py)
// Empty string if the file exists; otherwise the reason to print when skipping.
std::string missing_reason(const std::string& path);
// A scratch directory unique to this test process (created on first use).
std::string temp_dir();
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

}  // namespace kiln::test

namespace kiln::test {
// True when KILN_TESTS_REQUIRE_DATA=1 (set by CI): then a missing model or
// vocabulary fails the test instead of skipping it, so that a broken setup cannot
// pass as green.
bool data_required();
}  // namespace kiln::test

// Skips the current test with a printed reason because an installed input is
// missing (fails instead when data is required).
#define KILN_SKIP_MISSING(reason)                                                  \
    do {                                                                           \
        const std::string _why = (reason);                                         \
        if (::kiln::test::data_required()) FAIL() << _why;                         \
        GTEST_SKIP() << _why;                                                      \
    } while (0)

// Skips (or fails, see data_required) when a real model is not installed.
#define KILN_REQUIRE_MODEL(path)                                                   \
    do {                                                                           \
        std::string _reason = ::kiln::test::missing_reason(path);                  \
        if (!_reason.empty()) KILN_SKIP_MISSING(_reason);                          \
    } while (0)
