// Shared helpers of the quant tests: the fixture manifest written by
// tools/quant_fixtures.py, its binary files, FNV-1a 64 and bit-level float helpers.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kiln/gguf/ggml_type.h"
#include "support/test_support.h"

namespace kiln::test {

inline const nlohmann::json& quant_manifest() {
    static const nlohmann::json manifest = nlohmann::json::parse(read_file(golden_path("quant/manifest.json")));
    return manifest;
}

inline std::string quant_fixture(const std::string& relative) { return read_file(golden_path("quant/" + relative)); }

inline std::vector<uint8_t> quant_fixture_bytes(const std::string& relative) {
    const std::string s = quant_fixture(relative);
    return std::vector<uint8_t>(s.begin(), s.end());
}

inline std::vector<float> quant_fixture_f32(const std::string& relative) {
    const std::string s = quant_fixture(relative);
    std::vector<float> v(s.size() / sizeof(float));
    std::memcpy(v.data(), s.data(), v.size() * sizeof(float));
    return v;
}

inline std::string type_name(GgmlType t) { return std::string(ggml_type_name(t)); }

constexpr uint64_t k_fnv_offset = 0xcbf29ce484222325ull;
constexpr uint64_t k_fnv_prime = 0x100000001b3ull;

inline uint64_t fnv1a64(const void* data, size_t n, uint64_t h = k_fnv_offset) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < n; ++i) {
        h ^= p[i];
        h *= k_fnv_prime;
    }
    return h;
}

inline std::string hex64(uint64_t v) {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

inline uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

inline float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

}  // namespace kiln::test
