// A matrix in a type without a dot product is converted once at load (to Q8_0)
// with a note; the model then runs and gives the logits of the same weights
// stored as Q8_0 directly.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "kiln/gguf/writer.h"
#include "kiln/context.h"
#include "kiln/quant.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

// Rewrites `src` with every ffn_up matrix (not its scales) re-encoded as `type` (through f32).
void reencode_ffn_up(const std::string& src_path, const std::string& out, kiln::GgmlType type) {
    kiln::gguf::File src = kiln::gguf::File::open(src_path);
    kiln::gguf::Writer w;
    w.metadata() = kiln::gguf::materialize_metadata(src);
    for (const auto& t : src.tensors()) {
        if (t.name.find("ffn_up.weight") == std::string::npos) {
            w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
            continue;
        }
        const int64_t n_in = static_cast<int64_t>(t.shape[0]), rows = static_cast<int64_t>(t.n_rows());
        std::vector<float> row(static_cast<size_t>(n_in));
        const uint64_t src_rb = kiln::ggml_row_bytes(t.type, t.shape[0]), rb = kiln::ggml_row_bytes(type, t.shape[0]);
        std::vector<uint8_t> bytes(static_cast<size_t>(rb * static_cast<uint64_t>(rows)));
        for (int64_t r = 0; r < rows; ++r) {
            kiln::quant::dequantize_row(t.type, src.tensor_data(t) + r * src_rb, row.data(), n_in);
            kiln::quant::quantize_row(type, row.data(), bytes.data() + r * rb, n_in);
        }
        w.add_tensor(t.name, type, t.shape, std::move(bytes));
    }
    w.write(out);
}

}  // namespace

TEST(LoadConversion, TypeWithoutDotProductIsConvertedWithANote) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string dir = kiln::test::temp_dir();
    kiln::test::write_tiny_model("llama", kiln::test::smollm2_path(), dir + "/conv-base.gguf");
    // Q8_1 has a dequantizer but no dot product as a weight type.
    ASSERT_FALSE(kiln::quant::can_vec_dot(kiln::GgmlType::Q8_1));
    reencode_ffn_up(dir + "/conv-base.gguf", dir + "/conv-q8_1.gguf", kiln::GgmlType::Q8_1);
    auto model = kiln::Model::load(dir + "/conv-q8_1.gguf");
    bool noted = false;
    for (const auto& n : model->load_notes()) noted |= n.find("converted at load: Q8_1 -> Q8_0") != std::string::npos;
    EXPECT_TRUE(noted);
    kiln::Context ctx(model, {.n_ctx = 64});
    auto prompt = kiln::test::tiny_model_prompt();
    ctx.decode(prompt);
    for (float v : ctx.last_logits()) ASSERT_TRUE(std::isfinite(v));
}
