// The quant traits table: one row per ggml type. Placeholder rows are filled in
// by the per-family files (quant/*.cpp) as they land.
#include <cstring>
#include <string>

#include "kiln/error.h"
#include "kiln/quant.h"

namespace kiln::quant {

namespace {

void dequantize_f32(const void* src, float* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }
void quantize_f32(const float* src, void* dst, int64_t n) { std::memcpy(dst, src, static_cast<size_t>(n) * 4); }

const QuantTraits k_traits[] = {
    {GgmlType::F32, dequantize_f32, quantize_f32},
};

}  // namespace

const QuantTraits* find_quant_traits(GgmlType type) {
    for (const QuantTraits& t : k_traits)
        if (t.type == type) return &t;
    return nullptr;
}

bool can_dequantize(GgmlType type) {
    const QuantTraits* t = find_quant_traits(type);
    return t && t->dequantize_row;
}

bool can_quantize(GgmlType type) {
    const QuantTraits* t = find_quant_traits(type);
    return t && t->quantize_row_ref;
}

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
    const QuantTraits* t = find_quant_traits(type);
    if (!t || !t->dequantize_row) throw Error("no dequantizer for type " + std::string(ggml_type_name(type)));
    t->dequantize_row(src, dst, n);
}

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
    const QuantTraits* t = find_quant_traits(type);
    if (!t || !t->quantize_row_ref) throw Error("no reference quantizer for type " + std::string(ggml_type_name(type)));
    t->quantize_row_ref(src, dst, n);
}

}  // namespace kiln::quant
