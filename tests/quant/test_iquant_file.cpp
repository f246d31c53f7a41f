// The i-quants' file quantizers (what llama-quantize writes: ggml_quantize_chunk)
// bit for bit against ggml, with and without an importance matrix (fixtures:
// tools/iquant_fixtures.py, 4 rows of 1536 of the quantize fixture's input).
// Types only ggml's imatrix search makes (IQ2_XXS, IQ2_XS, IQ1_S) have no
// plain fixture: kiln refuses them without an imatrix, as ggml asserts.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kiln/error.h"
#include "kiln/quant.h"
#include "quant_fixtures.h"

namespace kiln::test {
namespace {

const nlohmann::json& iquant_manifest() {
    static const nlohmann::json m = nlohmann::json::parse(read_file(golden_path("quant/iquant/iquant.json")));
    return m;
}

// The types kiln has the file quantizer for (the rest of the fixture is for those to come).
const GgmlType k_types[] = {GgmlType::IQ4_XS, GgmlType::IQ3_XXS, GgmlType::IQ3_S,
                            GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ1_S, GgmlType::IQ1_M};

// Quantizes the fixture input row by row and compares every block; returns the number of blocks that differ.
int compare(GgmlType type, const std::string& fixture, bool with_importance) {
    const auto& m = iquant_manifest();
    const int64_t n = m.at("n_per_row").get<int64_t>(), rows = m.at("rows").get<int64_t>();
    const std::vector<float> x = quant_fixture_f32(m.at("input").get<std::string>());
    const std::vector<float> qw = quant_fixture_f32(m.at("importance").get<std::string>());
    const std::vector<uint8_t> want = quant_fixture_bytes(fixture);
    const uint64_t rb = ggml_row_bytes(type, static_cast<uint64_t>(n));
    EXPECT_EQ(want.size(), rb * static_cast<uint64_t>(rows));
    std::vector<uint8_t> got(want.size(), 0xAB);
    for (int64_t r = 0; r < rows; ++r)
        quant::quantize_row_for_file(type, x.data() + r * n, got.data() + r * rb, n, with_importance ? qw.data() : nullptr);
    const GgmlTypeInfo& info = ggml_type_info(type);
    int bad = 0;
    for (size_t b = 0; b < got.size() / info.block_bytes; ++b) {
        const size_t off = b * info.block_bytes;
        if (std::memcmp(got.data() + off, want.data() + off, info.block_bytes) == 0) continue;
        size_t k = 0;
        while (got[off + k] == want[off + k]) ++k;
        if (++bad <= 5)
            ADD_FAILURE() << type_name(type) << (with_importance ? " (imatrix)" : "") << " block " << b
                          << " (input chunk " << b * info.block_size / 256 << ") differs first at byte " << k << ": got "
                          << int(got[off + k]) << ", expected " << int(want[off + k]);
    }
    return bad;
}

TEST(IquantFile, EqualsGgmlQuantizeChunkBitForBit) {
    for (GgmlType type : k_types) {
        SCOPED_TRACE(type_name(type));
        const auto& entry = iquant_manifest().at("types").at(type_name(type));
        ASSERT_TRUE(quant::can_quantize_for_file(type));
        EXPECT_EQ(compare(type, entry.at("imatrix").get<std::string>(), true), 0);
        if (entry.contains("plain")) {
            EXPECT_FALSE(quant::needs_importance(type));
            EXPECT_EQ(compare(type, entry.at("plain").get<std::string>(), false), 0);
        } else {
            EXPECT_TRUE(quant::needs_importance(type));
            std::vector<float> x(256, 1.0f);
            std::vector<uint8_t> out(ggml_row_bytes(type, 256));
            try {
                quant::quantize_row_for_file(type, x.data(), out.data(), 256, nullptr);
                ADD_FAILURE() << "quantized without an importance matrix";
            } catch (const Error& e) {
                EXPECT_NE(std::string(e.what()).find("needs an importance matrix"), std::string::npos) << e.what();
            }
        }
    }
}

}  // namespace
}  // namespace kiln::test
