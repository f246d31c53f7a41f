// Dequantization of every type in the traits table, bit for bit against the oracle's
// values for random blocks (tests/golden/quant/dequant, tools/quant_fixtures.py).
// A type added to the table without a fixture fails here.
#include <gtest/gtest.h>

#include <vector>

#include "kiln/error.h"
#include "kiln/quant.h"
#include "quant_fixtures.h"

namespace kiln::test {
namespace {

class Dequant : public ::testing::TestWithParam<GgmlType> {};

TEST_P(Dequant, BitExactOnRandomBlocks) {
    const GgmlType type = GetParam();
    const auto& all = quant_manifest().at("dequant");
    ASSERT_TRUE(all.contains(type_name(type))) << "no dequant fixture for " << type_name(type)
                                               << ": add it to tools/quant_fixtures.py and rerun it";
    const auto& entry = all.at(type_name(type));
    const int64_t n = entry.at("n_elements").get<int64_t>();
    const std::vector<uint8_t> blocks = quant_fixture_bytes(entry.at("blocks").get<std::string>());
    const std::vector<float> expect = quant_fixture_f32(entry.at("values").get<std::string>());
    ASSERT_EQ(blocks.size(), ggml_row_bytes(type, static_cast<uint64_t>(n))) << "block size differs from the oracle's";
    ASSERT_EQ(expect.size(), static_cast<size_t>(n));

    std::vector<float> got(static_cast<size_t>(n), -1.0f);
    quant::dequantize_row(type, blocks.data(), got.data(), n);
    int64_t mismatches = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (bits_of(got[i]) != bits_of(expect[i])) {
            if (++mismatches <= 5)
                ADD_FAILURE() << type_name(type) << " element " << i << " (block " << i / ggml_type_info(type).block_size
                              << "): got " << got[i] << " (0x" << std::hex << bits_of(got[i]) << "), expected " << std::dec
                              << expect[i] << " (0x" << std::hex << bits_of(expect[i]) << ")";
        }
    }
    EXPECT_EQ(mismatches, 0) << "oracle: " << entry.at("oracle").get<std::string>();

    // Blocks at an odd address (inside a mapped file they can be) dequantize the same.
    std::vector<uint8_t> shifted(blocks.size() + 1);
    std::copy(blocks.begin(), blocks.end(), shifted.begin() + 1);
    std::vector<float> again(static_cast<size_t>(n));
    quant::dequantize_row(type, shifted.data() + 1, again.data(), n);
    EXPECT_EQ(std::memcmp(again.data(), got.data(), got.size() * sizeof(float)), 0);

    // Row by row, one block at a time, gives the same values.
    const uint32_t bs = ggml_type_info(type).block_size;
    const uint64_t bb = ggml_type_info(type).block_bytes;
    std::vector<float> one(bs);
    for (int64_t b = 0; b < n / bs; ++b) {
        quant::dequantize_row(type, blocks.data() + b * bb, one.data(), bs);
        ASSERT_EQ(std::memcmp(one.data(), got.data() + b * bs, bs * sizeof(float)), 0) << "block " << b;
    }
}

std::vector<GgmlType> all_types() {
    std::vector<GgmlType> out;
    for (const auto& t : quant::quant_traits()) out.push_back(t.type);
    return out;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, Dequant, ::testing::ValuesIn(all_types()),
                         [](const auto& info) { return type_name(info.param); });

TEST(DequantApi, RejectsPartialBlocks) {
    std::vector<uint8_t> block(256);
    std::vector<float> out(256);
    try {
        quant::dequantize_row(GgmlType::Q4_K, block.data(), out.data(), 100);
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("Q4_K"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("100"), std::string::npos) << e.what();
    }
    EXPECT_THROW(quant::dequantize_row(GgmlType::Q8_0, block.data(), out.data(), -32), Error);
    EXPECT_NO_THROW(quant::dequantize_row(GgmlType::Q8_0, block.data(), out.data(), 0));
}

}  // namespace
}  // namespace kiln::test
