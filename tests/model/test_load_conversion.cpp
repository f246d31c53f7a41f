// A matrix in a type without a dot product is converted once at load (to Q8_0)
// with a note; the model then runs and gives the logits of the same weights
// stored as Q8_0 directly. A type with kernels stays in its own type: the load
// report's resident size is about the file's.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "compute/kernels/kernels.h"
#include "kiln/gguf/writer.h"
#include "kiln/context.h"
#include "kiln/quant.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

// Rewrites `src` with every matrix whose name contains `which` re-encoded as
// `type` (through f32).
void reencode(const std::string& src_path, const std::string& out, kiln::GgmlType type, const std::string& which) {
    kiln::gguf::File src = kiln::gguf::File::open(src_path);
    kiln::gguf::Writer w;
    w.metadata() = kiln::gguf::materialize_metadata(src);
    for (const auto& t : src.tensors()) {
        if (t.name.find(which) == std::string::npos || t.shape.size() != 2 || t.name == "token_embd.weight") {
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
    reencode(dir + "/conv-base.gguf", dir + "/conv-q8_1.gguf", kiln::GgmlType::Q8_1, "ffn_up");
    auto model = kiln::Model::load(dir + "/conv-q8_1.gguf");
    bool noted = false;
    bool reported = false;
    for (const auto& n : model->load_notes()) {
        noted |= n.find("converted at load: Q8_1 -> Q8_0") != std::string::npos;
        reported |= n.find("Q8_1 ") != std::string::npos && n.find("converted to Q8_0") != std::string::npos;
    }
    EXPECT_TRUE(noted);
    EXPECT_TRUE(reported);
    kiln::Context ctx(model, {.n_ctx = 64});
    auto prompt = kiln::test::tiny_model_prompt();
    ctx.decode(prompt);
    for (float v : ctx.last_logits()) ASSERT_TRUE(std::isfinite(v));
}

// Every low-bit type with kernels: a tiny model whose layer matrices are all in
// that type loads without conversion, its resident matrices about the file's size
// (the packed layouts add at most a few bytes per block: Q3_K 114 / 110), and
// runs.
TEST(LoadConversion, LowBitTypesStayInTheirOwnSize) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string dir = kiln::test::temp_dir();
    kiln::test::write_tiny_model("qwen2", kiln::test::smollm2_path(), dir + "/res-base.gguf");  // widths of 256
    struct Case {
        kiln::GgmlType type;
        double max_ratio;  // resident / file bytes of the layers' matrices
    };
    for (const Case c : {Case{kiln::GgmlType::Q2_K, 1.0}, Case{kiln::GgmlType::Q3_K, 114.0 / 110}, Case{kiln::GgmlType::TQ2_0, 1.0},
                         Case{kiln::GgmlType::TQ1_0, 1.0}, Case{kiln::GgmlType::MXFP4, 1.0}, Case{kiln::GgmlType::IQ4_NL, 1.0}}) {
        const std::string name(kiln::ggml_type_name(c.type));
        SCOPED_TRACE(name);
        const std::string path = dir + "/res-" + name + ".gguf";
        reencode(dir + "/res-base.gguf", path, c.type, "blk.");
        auto model = kiln::Model::load(path);
        std::string report;
        for (const auto& n : model->load_notes()) {
            EXPECT_EQ(n.find("converted"), std::string::npos) << n;
            if (n.rfind("matrices in memory:", 0) == 0) report = n;
        }
        EXPECT_NE(report.find(name + " "), std::string::npos) << report;
        // KILN_ISA=scalar runs the reference dot products on the file's rows, in place.
        EXPECT_NE(report.find(kiln::kernels().isa == kiln::Isa::Scalar ? "in place" : "repacked"), std::string::npos) << report;
        // The layers' matrices: the totals less the Q8_0 embedding (the tied head,
        // packed at Q8_0's own 34 bytes per 32 elements).
        const kiln::ModelFootprint f = model->footprint();
        const uint64_t embd = model->file().find_tensor("token_embd.weight")->bytes;
        ASSERT_GT(f.matrix_file_bytes, embd);
        const double ratio = static_cast<double>(f.matrix_resident_bytes - embd) / static_cast<double>(f.matrix_file_bytes - embd);
        EXPECT_GE(ratio, 0.99) << report;
        EXPECT_LE(ratio, c.max_ratio * (1 + 1e-9)) << report;
        std::printf("[ %-7s] %s (resident / file %.3f)\n", name.c_str(), report.c_str(), ratio);
        kiln::Context ctx(model, {.n_ctx = 64});
        ctx.decode(kiln::test::tiny_model_prompt());
        for (float v : ctx.last_logits()) ASSERT_TRUE(std::isfinite(v));
    }
}

// The types kiln cannot quantize, in the tiny families that hold them as random
// blocks (tests/support/tiny_models.cpp): no conversion, resident about the file.
TEST(LoadConversion, GridIQuantsStayInTheirOwnSize) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string dir = kiln::test::temp_dir();
    struct Case {
        std::string family, attn, ffn;
        double max_ratio;  // the larger of the two types' panel / file bytes
    };
    for (const Case& c : {Case{"llama@iq2", "IQ2_XXS", "IQ2_XS", 1.0}, Case{"llama@iq3", "IQ3_XXS", "IQ2_S", 1.0},
                          Case{"llama@iq1", "IQ1_S", "IQ1_M", 58.0 / 56}, Case{"llama@iq4_xs", "IQ3_S", "IQ4_XS", 138.0 / 136}}) {
        SCOPED_TRACE(c.family);
        const std::string path = dir + "/res-" + c.family + ".gguf";
        kiln::test::write_tiny_model(c.family, kiln::test::smollm2_path(), path);
        auto model = kiln::Model::load(path);
        std::string report;
        for (const auto& n : model->load_notes()) {
            EXPECT_EQ(n.find("converted"), std::string::npos) << n;
            if (n.rfind("matrices in memory:", 0) == 0) report = n;
        }
        EXPECT_NE(report.find(c.attn + " "), std::string::npos) << report;
        EXPECT_NE(report.find(c.ffn + " "), std::string::npos) << report;
        const kiln::ModelFootprint f = model->footprint();
        const uint64_t embd = model->file().find_tensor("token_embd.weight")->bytes;
        ASSERT_GT(f.matrix_file_bytes, embd);
        const double ratio = static_cast<double>(f.matrix_resident_bytes - embd) / static_cast<double>(f.matrix_file_bytes - embd);
        EXPECT_GE(ratio, 0.99) << report;
        EXPECT_LE(ratio, c.max_ratio * (1 + 1e-9)) << report;
        std::printf("[ %-12s] %s (layers resident / file %.3f)\n", c.family.c_str(), report.c_str(), ratio);
    }
}
