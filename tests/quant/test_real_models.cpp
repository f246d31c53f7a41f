// Every tensor of both real models dequantized by kiln, digested (FNV-1a 64 of the
// rows' FNV-1a 64 digests of their f32 bytes) and compared with the digests of the
// gguf package's dequantization (tests/golden/quant/manifest.json, "models").
#include <gtest/gtest.h>

#include <filesystem>
#include <vector>

#include "kiln/gguf/file.h"
#include "kiln/quant.h"
#include "quant_fixtures.h"

namespace kiln::test {
namespace {

void check_model(const std::string& path) {
    KILN_REQUIRE_MODEL(path);
    const std::string file = std::filesystem::path(path).filename().string();
    const auto& files = quant_manifest().at("models").at("files");
    ASSERT_TRUE(files.contains(file)) << "no digests for " << file;
    const auto& expect = files.at(file);
    const uint64_t size = std::filesystem::file_size(path);
    if (size != expect.at("file_size").get<uint64_t>())
        KILN_SKIP_MISSING(path + " is not the file the digests were made from (size " + std::to_string(size) +
                          ", expected " + std::to_string(expect.at("file_size").get<uint64_t>()) + ")");

    const gguf::File model = gguf::File::open(path);
    const auto& tensors = expect.at("tensors");
    ASSERT_EQ(model.tensors().size(), tensors.size());
    std::vector<float> row;
    int checked = 0;
    for (const gguf::TensorInfo& t : model.tensors()) {
        ASSERT_TRUE(tensors.contains(t.name)) << t.name;
        const auto& e = tensors.at(t.name);
        ASSERT_EQ(type_name(t.type), e.at("type").get<std::string>()) << t.name;
        const uint64_t row_len = t.shape[0];
        const uint64_t row_bytes = ggml_row_bytes(t.type, row_len);
        const uint8_t* data = model.tensor_data(t);
        row.resize(row_len);
        std::vector<uint64_t> row_digests(t.n_rows());
        for (uint64_t r = 0; r < t.n_rows(); ++r) {
            quant::dequantize_row(t.type, data + r * row_bytes, row.data(), static_cast<int64_t>(row_len));
            row_digests[r] = fnv1a64(row.data(), row_len * sizeof(float));
        }
        const uint64_t digest = fnv1a64(row_digests.data(), row_digests.size() * sizeof(uint64_t));
        EXPECT_EQ(hex64(digest), e.at("digest").get<std::string>()) << t.name << " (" << type_name(t.type) << ")";
        ++checked;
    }
    std::printf("[ models  ] %s: %d tensors bit-identical to the gguf package's dequantization\n", file.c_str(), checked);
}

TEST(RealModels, SmolLM2TensorsDequantizeBitExact) { check_model(smollm2_path()); }
TEST(RealModels, Gemma3TensorsDequantizeBitExact) { check_model(gemma3_path()); }

}  // namespace
}  // namespace kiln::test
