// The ggml tensor type table: ids as stored in GGUF, names, block sizes and bytes.
//
// Ids and sizes follow ggml's enum ggml_type (checked against the `gguf` Python
// package's GGMLQuantizationType and GGML_QUANT_SIZES by tests/gguf). The kernels
// for each type (dequantize, quantize, dot) live in src/quant, keyed by this enum.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace kiln {

enum class GgmlType : uint32_t {
    F32 = 0,
    F16 = 1,
    Q4_0 = 2,
    Q4_1 = 3,
    // 4 and 5 were Q4_2 / Q4_3, removed from ggml.
    Q5_0 = 6,
    Q5_1 = 7,
    Q8_0 = 8,
    Q8_1 = 9,
    Q2_K = 10,
    Q3_K = 11,
    Q4_K = 12,
    Q5_K = 13,
    Q6_K = 14,
    Q8_K = 15,
    IQ2_XXS = 16,
    IQ2_XS = 17,
    IQ3_XXS = 18,
    IQ1_S = 19,
    IQ4_NL = 20,
    IQ3_S = 21,
    IQ2_S = 22,
    IQ4_XS = 23,
    I8 = 24,
    I16 = 25,
    I32 = 26,
    I64 = 27,
    F64 = 28,
    IQ1_M = 29,
    BF16 = 30,
    // 31-33 were Q4_0_4_4 / Q4_0_4_8 / Q4_0_8_8, removed (repacking is now done at load).
    TQ1_0 = 34,
    TQ2_0 = 35,
    // 36-38 were IQ4_NL_4_4 / _4_8 / _8_8, removed.
    MXFP4 = 39,
    NVFP4 = 40,
    Q1_0 = 41,
};

struct GgmlTypeInfo {
    GgmlType type;
    std::string_view name;   // as ggml prints it: "Q4_K", "F16", ...
    uint32_t block_size;     // elements per block (1 for plain types)
    uint32_t block_bytes;    // bytes per block
    bool quantized;          // block-quantized (not a plain number type)
};

// Every known type, in id order.
std::span<const GgmlTypeInfo> ggml_types();

// Lookup by id as stored in a file; nullptr for an unknown id.
const GgmlTypeInfo* find_ggml_type(uint32_t id);
// Lookup by name (case-insensitive: "q4_k" and "Q4_K" both work).
const GgmlTypeInfo* find_ggml_type(std::string_view name);
const GgmlTypeInfo& ggml_type_info(GgmlType type);

inline std::string_view ggml_type_name(GgmlType type) { return ggml_type_info(type).name; }

// Bytes of `n_elements` elements of `type`; n_elements must be a multiple of the block size.
uint64_t ggml_row_bytes(GgmlType type, uint64_t n_elements);

}  // namespace kiln
