// kiln quantize against llama.cpp's llama-quantize (fixtures:
// tools/quantize_fixtures.py): SmolLM2-135M in F16 (kiln quantize F16
// --allow-requantize of the installed Q4_1 file) quantized to each preset must
// give every tensor the same type and the same bytes (IQ4_NL included: its blocks
// search 15 scales as llama-quantize's quantize_iq4_nl does, quant::quantize_row_for_file).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "kiln/catalog.h"
#include "kiln/gguf/file.h"
#include "support/test_support.h"

using kiln::test::run_kiln;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

// SmolLM2 as F16, made once per test process.
const std::string& smollm2_f16() {
    static const std::string path = [] {
        const std::string p = kiln::test::temp_dir() + "/smollm2-f16.gguf";
        auto r = run_kiln("quantize '" + kiln::test::smollm2_path() + "' '" + p + "' F16 --allow-requantize");
        EXPECT_EQ(r.status, 0) << r.err;
        return p;
    }();
    return path;
}

json tensor_digests(const std::string& path) {
    auto f = kiln::gguf::File::open(path);
    json out = json::object();
    for (const auto& t : f.tensors())
        out[t.name] = {{"type", std::string(kiln::ggml_type_name(t.type))}, {"sha256", kiln::sha256_hex(f.tensor_data(t), t.bytes)}};
    return out;
}

}  // namespace

TEST(CliQuantize, EveryPresetEqualsLlamaQuantizeTensorForTensor) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string f16 = smollm2_f16();
    int presets = 0;
    for (const auto& entry : fs::directory_iterator(kiln::test::golden_path("quantize"))) {
        const json want = json::parse(kiln::test::read_file(entry.path().string()));
        const std::string preset = want["preset"];
        SCOPED_TRACE(preset);
        const std::string out = kiln::test::temp_dir() + "/q-" + preset + ".gguf";
        auto r = run_kiln("quantize '" + f16 + "' '" + out + "' " + preset + " -t 2");
        ASSERT_EQ(r.status, 0) << r.err;
        const json got = tensor_digests(out);
        ASSERT_EQ(got.size(), want["tensors"].size());
        int type_diff = 0, byte_diff = 0;
        for (const auto& [name, w] : want["tensors"].items()) {
            ASSERT_TRUE(got.contains(name)) << name;
            if (got[name]["type"] != w["type"]) {
                ++type_diff;
                ADD_FAILURE() << name << ": kiln " << got[name]["type"] << ", llama-quantize " << w["type"];
            } else if (got[name]["sha256"] != w["sha256"]) {
                ++byte_diff;
                ADD_FAILURE() << name << " (" << w["type"] << "): bytes differ from llama-quantize's";
            }
        }
        EXPECT_EQ(kiln::gguf::File::open(out).metadata().get_u32("general.file_type"), want["file_type"].get<uint32_t>());
        std::printf("[ figures  ] %s: %zu tensors, %d type and %d byte differences from llama-quantize\n", preset.c_str(),
                    got.size(), type_diff, byte_diff);
        fs::remove(out);
        ++presets;
    }
    EXPECT_GE(presets, 5);
}

TEST(CliQuantize, TheOutputRunsAndBadRequestsAreClearErrors) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string f16 = smollm2_f16(), out = kiln::test::temp_dir() + "/q8.gguf";
    auto r = run_kiln("quantize '" + f16 + "' '" + out + "' q8_0");  // preset names are case-insensitive
    ASSERT_EQ(r.status, 0) << r.err;
    r = run_kiln("run -m '" + out + "' -p 'The capital of France is' -n 4 --temp 0");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("Paris"), std::string::npos) << r.out;
    // A quantized source needs --allow-requantize, naming the tensor and its type.
    r = run_kiln("quantize '" + kiln::test::smollm2_path() + "' '" + out + "' Q4_K_M");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("is already Q4_1"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--allow-requantize"), std::string::npos) << r.err;
    r = run_kiln("quantize '" + f16 + "' '" + out + "' Q4_K_X");
    EXPECT_NE(r.err.find("unknown type 'Q4_K_X'"), std::string::npos) << r.err;
    r = run_kiln("quantize '" + f16 + "' '" + f16 + "' Q8_0");
    EXPECT_NE(r.err.find("would overwrite the input"), std::string::npos) << r.err;
    r = run_kiln("quantize '" + f16 + "' '" + out + "' Q8_0 --tensor-type 'attn_v=Q9_9'");
    EXPECT_NE(r.err.find("Q9_9"), std::string::npos) << r.err;
    // --tensor-type, --pure and --dry-run do what they say.
    r = run_kiln("quantize '" + f16 + "' - Q4_K_M --dry-run --tensor-type 'attn_v=Q8_0'");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("blk.0.attn_v.weight                      F16    -> Q8_0"), std::string::npos) << r.out;
    r = run_kiln("quantize '" + f16 + "' - Q6_K --dry-run --pure");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out.find("\noutput.weight"), std::string::npos);  // tied embeddings: no output.weight
    EXPECT_NE(r.out.find("token_embd.weight                        F16    -> Q8_0"), std::string::npos) << r.out;
}
