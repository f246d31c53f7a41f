// The quant traits table: one row per ggml type, in the order of ggml_types().
// Adding a type: its block struct in blocks.h, its kernels in the family's file,
// one row here; the tests iterate this table.
#include <string>

#include "kiln/error.h"
#include "kiln/quant.h"
#include "quant/kernels.h"

namespace kiln::quant {

namespace {

using T = GgmlType;

const QuantTraits k_traits[] = {
    // type     dequantize_row          quantize_row_ref     vec_dot_type  vec_dot_ref
    {T::F32, dequantize_row_f32, quantize_row_f32, T::F32, vec_dot_f32},
    {T::F16, dequantize_row_f16, quantize_row_f16, T::F16, vec_dot_f16},
    {T::Q4_0, dequantize_row_q4_0, quantize_row_q4_0, T::Q8_0, vec_dot_q4_0_q8_0},
    {T::Q4_1, dequantize_row_q4_1, quantize_row_q4_1, T::Q8_1, vec_dot_q4_1_q8_1},
    {T::Q5_0, dequantize_row_q5_0, quantize_row_q5_0, T::Q8_0, vec_dot_q5_0_q8_0},
    {T::Q5_1, dequantize_row_q5_1, quantize_row_q5_1, T::Q8_1, vec_dot_q5_1_q8_1},
    {T::Q8_0, dequantize_row_q8_0, quantize_row_q8_0, T::Q8_0, vec_dot_q8_0_q8_0},
    {T::Q8_1, dequantize_row_q8_1, quantize_row_q8_1},
    {T::Q2_K, dequantize_row_q2_K, quantize_row_q2_K, T::Q8_K, vec_dot_q2_K_q8_K},
    {T::Q3_K, dequantize_row_q3_K, quantize_row_q3_K, T::Q8_K, vec_dot_q3_K_q8_K},
    {T::Q4_K, dequantize_row_q4_K, quantize_row_q4_K, T::Q8_K, vec_dot_q4_K_q8_K},
    {T::Q5_K, dequantize_row_q5_K, quantize_row_q5_K, T::Q8_K, vec_dot_q5_K_q8_K},
    {T::Q6_K, dequantize_row_q6_K, quantize_row_q6_K, T::Q8_K, vec_dot_q6_K_q8_K},
    {T::Q8_K, dequantize_row_q8_K, quantize_row_q8_K},
    {T::IQ2_XXS, dequantize_row_iq2_xxs, nullptr, T::Q8_K, vec_dot_iq2_xxs_q8_K},
    {T::IQ2_XS, dequantize_row_iq2_xs, nullptr, T::Q8_K, vec_dot_iq2_xs_q8_K},
    {T::IQ3_XXS, dequantize_row_iq3_xxs, nullptr, T::Q8_K, vec_dot_iq3_xxs_q8_K},
    {T::IQ1_S, dequantize_row_iq1_s, nullptr, T::Q8_K, vec_dot_iq1_s_q8_K},
    {T::IQ4_NL, dequantize_row_iq4_nl, quantize_row_iq4_nl, T::Q8_0, vec_dot_iq4_nl_q8_0},
    {T::IQ3_S, dequantize_row_iq3_s, nullptr, T::Q8_K, vec_dot_iq3_s_q8_K},
    {T::IQ2_S, dequantize_row_iq2_s, nullptr, T::Q8_K, vec_dot_iq2_s_q8_K},
    {T::IQ4_XS, dequantize_row_iq4_xs, nullptr, T::Q8_K, vec_dot_iq4_xs_q8_K},
    {T::I8, dequantize_row_i8},
    {T::I16, dequantize_row_i16},
    {T::I32, dequantize_row_i32},
    {T::I64, dequantize_row_i64},
    {T::F64, dequantize_row_f64},
    {T::IQ1_M, dequantize_row_iq1_m, nullptr, T::Q8_K, vec_dot_iq1_m_q8_K},
    {T::BF16, dequantize_row_bf16, quantize_row_bf16, T::BF16, vec_dot_bf16},
    {T::TQ1_0, dequantize_row_tq1_0, quantize_row_tq1_0, T::Q8_K, vec_dot_tq1_0_q8_K},
    {T::TQ2_0, dequantize_row_tq2_0, quantize_row_tq2_0, T::Q8_K, vec_dot_tq2_0_q8_K},
    {T::MXFP4, dequantize_row_mxfp4, quantize_row_mxfp4, T::Q8_0, vec_dot_mxfp4_q8_0},
    {T::NVFP4, dequantize_row_nvfp4},
    {T::Q1_0, dequantize_row_q1_0},
};

const QuantTraits& require(GgmlType type) {
    const QuantTraits* t = find_quant_traits(type);
    if (!t) throw Error("no quantization traits for ggml type id " + std::to_string(static_cast<uint32_t>(type)));
    return *t;
}

std::string name_of(GgmlType type) {
    const GgmlTypeInfo* info = find_ggml_type(static_cast<uint32_t>(type));
    return info ? std::string(info->name) : "id " + std::to_string(static_cast<uint32_t>(type));
}

void check_length(GgmlType type, int64_t n, const char* what) {
    const uint32_t block = ggml_type_info(type).block_size;
    if (n < 0 || n % block != 0)
        throw Error(std::string(what) + " " + name_of(type) + ": " + std::to_string(n) +
                    " elements is not a whole number of blocks of " + std::to_string(block));
}

}  // namespace

std::span<const QuantTraits> quant_traits() { return k_traits; }

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

bool can_vec_dot(GgmlType weight_type) {
    const QuantTraits* t = find_quant_traits(weight_type);
    return t && t->vec_dot_ref;
}

void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n) {
    const QuantTraits& t = require(type);
    if (!t.dequantize_row) throw Error("no dequantizer for type " + name_of(type));
    check_length(type, n, "dequantize");
    t.dequantize_row(src, dst, n);
}

void quantize_row(GgmlType type, const float* src, void* dst, int64_t n) {
    const QuantTraits& t = require(type);
    if (!t.quantize_row_ref) throw Error("no reference quantizer for type " + name_of(type));
    check_length(type, n, "quantize");
    t.quantize_row_ref(src, dst, n);
}

namespace {

using RowFn = void (*)(const float* src, void* dst, int64_t n);

// What ggml_quantize_chunk runs without an importance matrix where that is not the
// type's reference quantizer (or the type has none in the traits table: IQ4_XS is
// kept out of it so that the tiny test models' random IQ4_XS blocks stay as they are).
RowFn file_quantizer(GgmlType type) {
    switch (type) {
        case GgmlType::IQ4_NL: return quantize_row_iq4_nl_search;
        case GgmlType::IQ4_XS: return quantize_row_iq4_xs;
        case GgmlType::IQ3_XXS: return quantize_row_iq3_xxs;
        case GgmlType::IQ3_S: return quantize_row_iq3_s;
        case GgmlType::IQ2_S: return quantize_row_iq2_s;
        case GgmlType::IQ1_M: return quantize_row_iq1_m;
        default: {
            const QuantTraits* t = find_quant_traits(type);
            return t ? t->quantize_row_ref : nullptr;
        }
    }
}

}  // namespace

void quantize_row_for_file(GgmlType type, const float* src, void* dst, int64_t n) {
    const RowFn fn = file_quantizer(type);
    if (!fn) {
        require(type);
        throw Error("quantize: " + name_of(type) + " needs an importance matrix (--imatrix; kiln imatrix makes one)",
                    ErrorKind::Unsupported);
    }
    check_length(type, n, "quantize");
    fn(src, dst, n);
}

namespace {

using WeightedRowFn = void (*)(const float* src, void* dst, int64_t n, const float* qw);

WeightedRowFn weighted_quantizer(GgmlType type) {
    switch (type) {
        case GgmlType::Q4_0: return quantize_row_q4_0_weighted;
        case GgmlType::Q4_1: return quantize_row_q4_1_weighted;
        case GgmlType::Q5_0: return quantize_row_q5_0_weighted;
        case GgmlType::Q5_1: return quantize_row_q5_1_weighted;
        case GgmlType::Q2_K: return quantize_row_q2_K_weighted;
        case GgmlType::Q3_K: return quantize_row_q3_K_weighted;
        case GgmlType::Q4_K: return quantize_row_q4_K_weighted;
        case GgmlType::Q5_K: return quantize_row_q5_K_weighted;
        case GgmlType::Q6_K: return quantize_row_q6_K_weighted;
        case GgmlType::IQ4_NL: return quantize_row_iq4_nl_weighted;
        case GgmlType::IQ4_XS: return quantize_row_iq4_xs_weighted;
        case GgmlType::IQ3_XXS: return quantize_row_iq3_xxs_weighted;
        case GgmlType::IQ3_S: return quantize_row_iq3_s_weighted;
        case GgmlType::IQ2_XXS: return quantize_row_iq2_xxs_weighted;
        case GgmlType::IQ2_XS: return quantize_row_iq2_xs_weighted;
        case GgmlType::IQ2_S: return quantize_row_iq2_s_weighted;
        case GgmlType::IQ1_S: return quantize_row_iq1_s_weighted;
        case GgmlType::IQ1_M: return quantize_row_iq1_m_weighted;
        default: return nullptr;
    }
}

}  // namespace

bool can_quantize_for_file(GgmlType type) { return file_quantizer(type) || weighted_quantizer(type); }

bool needs_importance(GgmlType type) { return !file_quantizer(type) && weighted_quantizer(type); }

ImportanceUse importance_use(GgmlType type) {
    if (weighted_quantizer(type)) return ImportanceUse::Weighted;
    switch (type) {
        // ggml's quantize_* for these ignore quant_weights.
        case GgmlType::F32:
        case GgmlType::F16:
        case GgmlType::BF16:
        case GgmlType::Q8_0:
        case GgmlType::TQ1_0:
        case GgmlType::TQ2_0:
        case GgmlType::MXFP4: return ImportanceUse::Ignored;
        default: return ImportanceUse::Unsupported;
    }
}

void quantize_row_for_file(GgmlType type, const float* src, void* dst, int64_t n, const float* importance) {
    if (!importance) return quantize_row_for_file(type, src, dst, n);
    switch (importance_use(type)) {
        case ImportanceUse::Ignored: return quantize_row_for_file(type, src, dst, n);
        case ImportanceUse::Weighted:
            check_length(type, n, "quantize");
            return weighted_quantizer(type)(src, dst, n, importance);
        case ImportanceUse::Unsupported: break;
    }
    throw Error("quantize: kiln has no importance-weighted quantizer for " + name_of(type) +
                    " (an imatrix is used for Q4_0, Q4_1, Q5_0, Q5_1, Q2_K to Q6_K and the i-quants)",
                ErrorKind::Unsupported);
}

float vec_dot(GgmlType weight_type, int64_t n, const void* weight_row, const void* act_row) {
    const QuantTraits& t = require(weight_type);
    if (!t.vec_dot_ref) throw Error("no dot product for weight type " + name_of(weight_type), ErrorKind::Unsupported);
    check_length(weight_type, n, "dot product of");
    check_length(t.vec_dot_type, n, "dot product activations");
    return t.vec_dot_ref(n, weight_row, act_row);
}

}  // namespace kiln::quant
