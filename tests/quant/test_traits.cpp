// The traits table itself: one row per ggml type, the ggml pairing of weight and
// activation types, and the checked entry points' errors.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "kiln/error.h"
#include "kiln/quant.h"
#include "quant_fixtures.h"

namespace kiln::test {
namespace {

TEST(QuantTraits, OneRowPerTypeInTableOrder) {
    const auto types = ggml_types();
    const auto rows = quant::quant_traits();
    ASSERT_EQ(rows.size(), types.size());
    for (size_t i = 0; i < rows.size(); ++i) {
        EXPECT_EQ(rows[i].type, types[i].type) << "row " << i;
        EXPECT_NE(rows[i].dequantize_row, nullptr) << types[i].name;
        EXPECT_EQ(quant::find_quant_traits(types[i].type), &rows[i]);
    }
}

TEST(QuantTraits, DotProductPairsAsGgml) {
    // The activation format each weight format is multiplied with, as ggml pairs them.
    const std::map<GgmlType, GgmlType> expected = {
        {GgmlType::F32, GgmlType::F32},     {GgmlType::F16, GgmlType::F16},     {GgmlType::BF16, GgmlType::BF16},
        {GgmlType::Q4_0, GgmlType::Q8_0},   {GgmlType::Q4_1, GgmlType::Q8_1},   {GgmlType::Q5_0, GgmlType::Q8_0},
        {GgmlType::Q5_1, GgmlType::Q8_1},   {GgmlType::Q8_0, GgmlType::Q8_0},   {GgmlType::Q2_K, GgmlType::Q8_K},
        {GgmlType::Q3_K, GgmlType::Q8_K},   {GgmlType::Q4_K, GgmlType::Q8_K},   {GgmlType::Q5_K, GgmlType::Q8_K},
        {GgmlType::Q6_K, GgmlType::Q8_K},   {GgmlType::IQ4_NL, GgmlType::Q8_0}, {GgmlType::IQ4_XS, GgmlType::Q8_K},
        {GgmlType::TQ1_0, GgmlType::Q8_K},  {GgmlType::TQ2_0, GgmlType::Q8_K},  {GgmlType::MXFP4, GgmlType::Q8_0},
        {GgmlType::IQ2_XXS, GgmlType::Q8_K}, {GgmlType::IQ2_XS, GgmlType::Q8_K}, {GgmlType::IQ2_S, GgmlType::Q8_K},
        {GgmlType::IQ3_XXS, GgmlType::Q8_K}, {GgmlType::IQ3_S, GgmlType::Q8_K},  {GgmlType::IQ1_S, GgmlType::Q8_K},
        {GgmlType::IQ1_M, GgmlType::Q8_K},
    };
    for (const auto& row : quant::quant_traits()) {
        const auto it = expected.find(row.type);
        if (it == expected.end()) {
            EXPECT_EQ(row.vec_dot_ref, nullptr) << type_name(row.type) << " has an unexpected dot product";
            continue;
        }
        ASSERT_NE(row.vec_dot_ref, nullptr) << type_name(row.type);
        EXPECT_EQ(row.vec_dot_type, it->second) << type_name(row.type);
        // The compute layer quantizes activations with the vec_dot type's reference quantizer.
        EXPECT_TRUE(quant::can_quantize(row.vec_dot_type)) << type_name(row.vec_dot_type);
        // Block sizes line up, so a row of weights and a row of activations cover the same elements.
        EXPECT_EQ(ggml_type_info(row.type).block_size % ggml_type_info(row.vec_dot_type).block_size, 0u);
    }
}

TEST(QuantTraits, TypeTableMatchesTheOracleSizes) {
    // The fixtures' block files were sized by ggml's type_size; each one pins a row of the table.
    for (const auto& [name, entry] : quant_manifest().at("dequant").items()) {
        const GgmlTypeInfo* info = find_ggml_type(name);
        ASSERT_NE(info, nullptr) << name;
        const uint64_t n = entry.at("n_elements").get<uint64_t>();
        EXPECT_EQ(quant_fixture(entry.at("blocks").get<std::string>()).size(), ggml_row_bytes(info->type, n)) << name;
    }
}

TEST(QuantTraits, CheckedEntryPointsNameTheType) {
    float x[256] = {};
    uint8_t buf[1024] = {};
    auto message = [](auto&& fn) {
        try {
            fn();
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(message([&] { quant::quantize_row(GgmlType::IQ2_XXS, x, buf, 256); }).find("IQ2_XXS"), std::string::npos);
    EXPECT_NE(message([&] { quant::vec_dot(GgmlType::NVFP4, 256, buf, buf); }).find("NVFP4"), std::string::npos);
    EXPECT_NE(message([&] { quant::vec_dot(GgmlType::Q4_0, 48, buf, buf); }).find("48"), std::string::npos);
    EXPECT_NE(message([&] { quant::quantize_row(GgmlType::Q6_K, x, buf, 128); }).find("Q6_K"), std::string::npos);
    EXPECT_NE(message([&] { quant::dequantize_row(static_cast<GgmlType>(4), buf, x, 32); }).find("4"), std::string::npos);
    EXPECT_FALSE(quant::can_quantize(GgmlType::IQ1_S));
    EXPECT_TRUE(quant::can_quantize(GgmlType::Q8_K));
    EXPECT_FALSE(quant::can_vec_dot(GgmlType::Q8_K));
    EXPECT_TRUE(quant::can_dequantize(GgmlType::NVFP4));
}

}  // namespace
}  // namespace kiln::test
