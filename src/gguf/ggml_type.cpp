#include "kiln/gguf/ggml_type.h"

#include <array>
#include <cctype>

#include "kiln/error.h"

namespace kiln {

namespace {

constexpr GgmlTypeInfo k_types[] = {
    {GgmlType::F32, "F32", 1, 4, false},
    {GgmlType::F16, "F16", 1, 2, false},
    {GgmlType::Q4_0, "Q4_0", 32, 18, true},
    {GgmlType::Q4_1, "Q4_1", 32, 20, true},
    {GgmlType::Q5_0, "Q5_0", 32, 22, true},
    {GgmlType::Q5_1, "Q5_1", 32, 24, true},
    {GgmlType::Q8_0, "Q8_0", 32, 34, true},
    // ggml's block_q8_1 is {f16 d, f16 s, int8 qs[32]} = 36 bytes (its type_size); the gguf
    // Python package still lists an older 40-byte layout with f32 d and s.
    {GgmlType::Q8_1, "Q8_1", 32, 36, true},
    {GgmlType::Q2_K, "Q2_K", 256, 84, true},
    {GgmlType::Q3_K, "Q3_K", 256, 110, true},
    {GgmlType::Q4_K, "Q4_K", 256, 144, true},
    {GgmlType::Q5_K, "Q5_K", 256, 176, true},
    {GgmlType::Q6_K, "Q6_K", 256, 210, true},
    {GgmlType::Q8_K, "Q8_K", 256, 292, true},
    {GgmlType::IQ2_XXS, "IQ2_XXS", 256, 66, true},
    {GgmlType::IQ2_XS, "IQ2_XS", 256, 74, true},
    {GgmlType::IQ3_XXS, "IQ3_XXS", 256, 98, true},
    {GgmlType::IQ1_S, "IQ1_S", 256, 50, true},
    {GgmlType::IQ4_NL, "IQ4_NL", 32, 18, true},
    {GgmlType::IQ3_S, "IQ3_S", 256, 110, true},
    {GgmlType::IQ2_S, "IQ2_S", 256, 82, true},
    {GgmlType::IQ4_XS, "IQ4_XS", 256, 136, true},
    {GgmlType::I8, "I8", 1, 1, false},
    {GgmlType::I16, "I16", 1, 2, false},
    {GgmlType::I32, "I32", 1, 4, false},
    {GgmlType::I64, "I64", 1, 8, false},
    {GgmlType::F64, "F64", 1, 8, false},
    {GgmlType::IQ1_M, "IQ1_M", 256, 56, true},
    {GgmlType::BF16, "BF16", 1, 2, false},
    {GgmlType::TQ1_0, "TQ1_0", 256, 54, true},
    {GgmlType::TQ2_0, "TQ2_0", 256, 66, true},
    {GgmlType::MXFP4, "MXFP4", 32, 17, true},
    {GgmlType::NVFP4, "NVFP4", 64, 36, true},
    {GgmlType::Q1_0, "Q1_0", 128, 18, true},
};

constexpr uint32_t k_max_id = 42;

constexpr std::array<int8_t, k_max_id> make_index() {
    std::array<int8_t, k_max_id> index{};
    for (auto& v : index) v = -1;
    for (size_t i = 0; i < std::size(k_types); ++i) index[static_cast<uint32_t>(k_types[i].type)] = static_cast<int8_t>(i);
    return index;
}
constexpr auto k_index = make_index();

}  // namespace

std::span<const GgmlTypeInfo> ggml_types() { return k_types; }

const GgmlTypeInfo* find_ggml_type(uint32_t id) {
    if (id >= k_max_id || k_index[id] < 0) return nullptr;
    return &k_types[k_index[id]];
}

const GgmlTypeInfo* find_ggml_type(std::string_view name) {
    for (const auto& t : k_types) {
        if (t.name.size() != name.size()) continue;
        bool same = true;
        for (size_t i = 0; i < name.size() && same; ++i)
            same = std::toupper(static_cast<unsigned char>(name[i])) == t.name[i];
        if (same) return &t;
    }
    return nullptr;
}

const GgmlTypeInfo& ggml_type_info(GgmlType type) {
    const GgmlTypeInfo* info = find_ggml_type(static_cast<uint32_t>(type));
    if (!info) throw Error("unknown ggml type id " + std::to_string(static_cast<uint32_t>(type)));
    return *info;
}

uint64_t ggml_row_bytes(GgmlType type, uint64_t n_elements) {
    const GgmlTypeInfo& info = ggml_type_info(type);
    if (n_elements % info.block_size != 0)
        throw Error(std::string(info.name) + ": " + std::to_string(n_elements) +
                    " elements is not a multiple of the block size " + std::to_string(info.block_size));
    return n_elements / info.block_size * info.block_bytes;
}

}  // namespace kiln
