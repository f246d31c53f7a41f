// kiln quantize against llama.cpp's llama-quantize (fixtures:
// tools/quantize_fixtures.py): SmolLM2-135M in F16 (kiln quantize F16
// --allow-requantize of the installed Q4_1 file) quantized to each preset must
// give every tensor the same type and the same bytes (IQ4_NL included: its blocks
// search 15 scales as llama-quantize's quantize_iq4_nl does, quant::quantize_row_for_file).
// kiln imatrix against llama-imatrix, and kiln quantize --imatrix against
// llama-quantize --imatrix (fixtures: tools/imatrix_fixtures.py).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli/cli_runner.h"
#include "kiln/catalog.h"
#include "kiln/error.h"
#include "kiln/gguf/file.h"
#include "kiln/imatrix.h"
#include "kiln/quant.h"
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

// Every tensor of `got` (kiln) against `want` (llama-quantize's digests): the
// same type and the same bytes. Returns the counts of type and byte differences.
std::pair<int, int> compare_tensors(const json& got, const json& want, const char* what) {
    int type_diff = 0, byte_diff = 0;
    EXPECT_EQ(got.size(), want.size());
    for (const auto& [name, w] : want.items()) {
        if (!got.contains(name)) {
            ADD_FAILURE() << name << ": missing from kiln's file";
            continue;
        }
        if (got[name]["type"] != w["type"]) {
            ++type_diff;
            ADD_FAILURE() << name << ": kiln " << got[name]["type"] << ", " << what << " " << w["type"];
        } else if (got[name]["sha256"] != w["sha256"]) {
            ++byte_diff;
            ADD_FAILURE() << name << " (" << w["type"] << "): bytes differ from " << what << "'s";
        }
    }
    return {type_diff, byte_diff};
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
        const auto [type_diff, byte_diff] = compare_tensors(got, want["tensors"], "llama-quantize");
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

// ---- importance matrices (fixtures: tools/imatrix_fixtures.py) ----------------------

namespace {

uint32_t fnv1a32(const std::string& s) {
    uint32_t h = 2166136261u;
    for (unsigned char c : s) h = (h ^ c) * 16777619u;
    return h;
}

// The fixture script's synthetic imatrix: every 2-D blk.* weight of the model,
// value(name, j) = 1 + ((fnv1a32(name) + 2654435761 j) mod 2^32 >> 16) / 4096,
// exact in float, count 1.
kiln::Imatrix synthetic_imatrix(const std::string& model) {
    kiln::Imatrix im;
    im.datasets = {"synthetic"};
    im.chunk_count = 1;
    im.chunk_size = 1;
    auto f = kiln::gguf::File::open(model);
    for (const auto& t : f.tensors()) {
        if (!t.name.starts_with("blk.") || t.shape.size() != 2 || t.shape[1] <= 1) continue;
        kiln::ImatrixEntry e;
        for (uint64_t j = 0; j < t.shape[0]; ++j) {
            const uint32_t k = (fnv1a32(t.name) + static_cast<uint32_t>(2654435761u * j)) >> 16;
            e.sums.push_back(1.0f + static_cast<float>(k) / 4096.0f);
        }
        e.counts = {1};
        im.entries[t.name] = std::move(e);
    }
    return im;
}

}  // namespace

TEST(CliImatrix, EqualsLlamaImatrixWithinTheBound) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const json want = json::parse(kiln::test::read_file(kiln::test::golden_path("imatrix/smollm2_genesis.json")));
    const std::string out = kiln::test::temp_dir() + "/genesis.imatrix.gguf";
    auto r = run_kiln("imatrix -m '" + smollm2_f16() + "' -f '" + kiln::test::data_path("text/genesis-1-5.txt") + "' -c " +
                      std::to_string(want["n_ctx"].get<int>()) + " --chunks " + std::to_string(want["chunks"].get<int>()) +
                      " -o '" + out + "' -t 2");
    ASSERT_EQ(r.status, 0) << r.err;
    const kiln::Imatrix im = kiln::Imatrix::load(out);
    EXPECT_EQ(im.chunk_count, want["chunks"].get<uint32_t>());
    EXPECT_EQ(im.chunk_size, want["n_ctx"].get<uint32_t>());
    ASSERT_EQ(im.entries.size(), want["entries"].size());
    double worst_total = 0, worst_sample = 0;
    for (const auto& [name, w] : want["entries"].items()) {
        SCOPED_TRACE(name);
        ASSERT_TRUE(im.entries.count(name));
        const kiln::ImatrixEntry& e = im.entries.at(name);
        ASSERT_EQ(e.sums.size(), w["n"].get<size_t>());
        EXPECT_EQ(e.counts, w["counts"].get<std::vector<int64_t>>());  // every token, every chunk
        double total = 0, largest = 0;
        for (float v : e.sums) total += v;
        for (const auto& [i, v] : w["samples"].items()) largest = std::max(largest, v.get<double>());
        const double rel_total = std::abs(total - w["total"].get<double>()) / w["total"].get<double>();
        worst_total = std::max(worst_total, rel_total);
        EXPECT_LT(rel_total, 1e-3);
        for (const auto& [i, v] : w["samples"].items()) {
            // kiln's activations differ from llama.cpp's by the usual float spread
            // (docs/numerics.md); squared and summed over 1,024 tokens that stays
            // well under a percent. Measured: 0.22% at worst, totals 0.014%.
            const double rel = std::abs(e.sums[std::stoul(i)] - v.get<double>()) / (std::abs(v.get<double>()) + 1e-3 * largest);
            worst_sample = std::max(worst_sample, rel);
            EXPECT_LT(rel, 1e-2) << "column " << i << ": kiln " << e.sums[std::stoul(i)] << ", llama-imatrix " << v;
        }
    }
    std::printf("[ figures  ] imatrix vs llama-imatrix: %zu entries, counts equal, totals within %.2e, sums within %.2e\n",
                im.entries.size(), worst_total, worst_sample);
    // The file round-trips, and its importances are the means.
    const std::vector<float> imp = im.importance("blk.0.ffn_down.weight");
    const kiln::ImatrixEntry& e = im.entries.at("blk.0.ffn_down.weight");
    ASSERT_EQ(imp.size(), e.sums.size());
    EXPECT_FLOAT_EQ(imp[7], e.sums[7] / static_cast<float>(e.counts[0]));
    EXPECT_TRUE(im.importance("token_embd.weight").empty());
}

TEST(CliImatrix, QuantizingWithAnImatrixEqualsLlamaQuantizeTensorForTensor) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string f16 = smollm2_f16(), imf = kiln::test::temp_dir() + "/synthetic.imatrix.gguf";
    synthetic_imatrix(f16).save(imf);
    int presets = 0;
    for (const auto& entry : fs::directory_iterator(kiln::test::golden_path("imatrix"))) {
        if (entry.path().filename() == "smollm2_genesis.json") continue;
        const json want = json::parse(kiln::test::read_file(entry.path().string()));
        const std::string preset = want["preset"];
        SCOPED_TRACE(preset);
        const std::string out = kiln::test::temp_dir() + "/qi-" + preset + ".gguf";
        auto r = run_kiln("quantize --imatrix '" + imf + "' '" + f16 + "' '" + out + "' " + preset + " -t 2");
        ASSERT_EQ(r.status, 0) << r.err;
        const json got = tensor_digests(out);
        const auto [type_diff, byte_diff] = compare_tensors(got, want["tensors"], "llama-quantize --imatrix");
        const auto md = kiln::gguf::File::open(out);
        EXPECT_EQ(md.metadata().get_i32("quantize.imatrix.entries_count"), 210);
        EXPECT_EQ(md.metadata().get_string("quantize.imatrix.dataset"), "synthetic");
        std::printf("[ figures  ] %s --imatrix: %zu tensors, %d type and %d byte differences from llama-quantize\n", preset.c_str(),
                    got.size(), type_diff, byte_diff);
        fs::remove(out);
        ++presets;
    }
    EXPECT_GE(presets, 12);
}

TEST(CliImatrix, BadImatrixFilesAndUnsupportedTypesAreClearErrors) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string f16 = smollm2_f16(), dir = kiln::test::temp_dir(), out = dir + "/qe.gguf";
    const std::string imf = dir + "/synthetic-e.imatrix.gguf";
    kiln::Imatrix im = synthetic_imatrix(f16);
    im.save(imf);
    // A type kiln has no weighted quantizer for is refused, not quantized as if without one.
    auto r = run_kiln("quantize --imatrix '" + imf + "' '" + f16 + "' '" + out + "' TQ2_0 --tensor-type 'attn_q=TQ1_0'");
    ASSERT_EQ(r.status, 0) << r.err;  // the ternary types ignore an imatrix, as in ggml
    EXPECT_EQ(kiln::quant::importance_use(kiln::GgmlType::Q3_K), kiln::quant::ImportanceUse::Weighted);
    EXPECT_EQ(kiln::quant::importance_use(kiln::GgmlType::Q8_0), kiln::quant::ImportanceUse::Ignored);
    EXPECT_EQ(kiln::quant::importance_use(kiln::GgmlType::IQ2_XXS), kiln::quant::ImportanceUse::Weighted);
    EXPECT_EQ(kiln::quant::importance_use(kiln::GgmlType::NVFP4), kiln::quant::ImportanceUse::Unsupported);
    std::vector<float> row(256, 0.5f), importance(256, 1.0f);
    std::vector<uint8_t> block(256);
    try {
        kiln::quant::quantize_row_for_file(kiln::GgmlType::NVFP4, row.data(), block.data(), 256, importance.data());
        ADD_FAILURE() << "NVFP4 with an importance matrix was quantized";
    } catch (const kiln::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no importance-weighted quantizer for NVFP4"), std::string::npos) << e.what();
    }
    // The presets whose tensors llama-quantize will not make without an imatrix refuse,
    // naming the first such tensor (SmolLM2: the ffn_down after the first eighth, the
    // only 256-divisible rows); --dry-run only warns.
    for (const char* preset : {"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M"}) {
        r = run_kiln("quantize '" + f16 + "' '" + out + "' " + preset);
        EXPECT_NE(r.status, 0) << preset;
        EXPECT_NE(r.err.find(std::string(preset) + " needs an importance matrix"), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("blk.3.ffn_down.weight"), std::string::npos) << r.err;
    }
    // IQ3_XXS without an imatrix: its attn_v becomes IQ3_S and its ffn_down Q3_K / Q4_K,
    // and SmolLM2's 576-wide rows fall back to IQ4_NL: nothing needs one (as in llama-quantize).
    r = run_kiln("quantize '" + f16 + "' - IQ3_XXS --dry-run");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("blk.0.ffn_down.weight                    F16    -> Q4_K"), std::string::npos) << r.out;
    r = run_kiln("quantize '" + f16 + "' - IQ2_XXS --dry-run");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("warning: quantizing for real needs an importance matrix"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("blk.0.ffn_down.weight                    F16    -> Q2_K"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("blk.5.ffn_down.weight                    F16    -> IQ2_XXS"), std::string::npos) << r.out;
    // IQ3_S and IQ4_XS need none; an imatrix missing a tensor the preset needs it for is refused.
    r = run_kiln("quantize '" + f16 + "' - IQ3_S --dry-run");
    EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
    kiln::Imatrix partial = im;
    partial.entries.erase("blk.7.ffn_down.weight");
    partial.save(dir + "/partial.imatrix.gguf");
    r = run_kiln("quantize --imatrix '" + dir + "/partial.imatrix.gguf' '" + f16 + "' '" + out + "' IQ2_XS");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("no entry for blk.7.ffn_down.weight, which becomes IQ2_XS"), std::string::npos) << r.err;
    // Q2_K_S needs one, as in llama-quantize.
    r = run_kiln("quantize '" + f16 + "' '" + out + "' Q2_K_S");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("Q2_K_S needs an importance matrix"), std::string::npos) << r.err;
    // An imatrix made for another model: the tensor and both sizes named.
    kiln::Imatrix other = im;
    other.entries["blk.3.attn_q.weight"].sums.resize(100);
    other.save(dir + "/other.imatrix.gguf");
    r = run_kiln("quantize --imatrix '" + dir + "/other.imatrix.gguf' '" + f16 + "' '" + out + "' Q4_K_M");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("blk.3.attn_q.weight"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("another model"), std::string::npos) << r.err;
    // A model file is not an imatrix.
    r = run_kiln("quantize --imatrix '" + f16 + "' '" + f16 + "' '" + out + "' Q4_K_M");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("not an imatrix"), std::string::npos) << r.err;
    // A truncated legacy file names where it ends; a whole one reads as llama-quantize reads it.
    const std::string legacy = dir + "/legacy.dat";
    {
        std::ofstream f(legacy, std::ios::binary);
        auto i32 = [&](int32_t v) { f.write(reinterpret_cast<const char*>(&v), 4); };
        const std::string name = "blk.0.attn_q.weight";
        const float vals[2] = {6.0f, 9.0f};
        i32(1);
        i32(static_cast<int32_t>(name.size()));
        f.write(name.data(), static_cast<std::streamsize>(name.size()));
        i32(3);  // calls
        i32(2);
        f.write(reinterpret_cast<const char*>(vals), sizeof vals);
        i32(10);  // chunks
        i32(4);
        f.write("text", 4);
    }
    const kiln::Imatrix lg = kiln::Imatrix::load(legacy);
    EXPECT_TRUE(lg.legacy);
    EXPECT_EQ(lg.chunk_count, 10u);
    EXPECT_EQ(lg.datasets, std::vector<std::string>{"text"});
    EXPECT_EQ(lg.importance("blk.0.attn_q.weight"), (std::vector<float>{2.0f, 3.0f}));
    fs::resize_file(legacy, 20);
    EXPECT_THROW(
        {
            try {
                kiln::Imatrix::load(legacy);
            } catch (const kiln::Error& e) {
                EXPECT_NE(std::string(e.what()).find("ends inside"), std::string::npos) << e.what();
                throw;
            }
        },
        kiln::Error);
    // Too short a text for two chunks.
    r = run_kiln("imatrix -m '" + f16 + "' -f '" + kiln::test::data_path("text/genesis-1-5.txt") + "' -c 4096 -o '" + dir + "/x.gguf'");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.err.find("need at least 8192"), std::string::npos) << r.err;
}

// ---- long checks (README "Long checks"; not in CI: each quantizes all of SmolLM2) --------
//
// The i-quant presets against llama-quantize, without an imatrix (IQ4_XS, IQ3_S,
// IQ3_M; tests/golden/quantize_long) and with the synthetic one (tests/golden/
// imatrix_long), as the CI tests above do for the other presets. Fixtures:
// tools/quantize_fixtures.py and tools/imatrix_fixtures.py (their LONG_PRESETS).
// Run: build/tests/test_cli --gtest_also_run_disabled_tests --gtest_filter='*DISABLED_Long*'
// (KILN_LONG_PRESETS=IQ4_XS,IQ3_XXS to run only those).
namespace {

bool wanted_long_preset(const std::string& preset) {
    const char* only = std::getenv("KILN_LONG_PRESETS");
    if (!only || !*only) return true;
    return ("," + std::string(only) + ",").find("," + preset + ",") != std::string::npos;
}

}  // namespace

TEST(CliQuantize, DISABLED_LongIquantPresetsEqualLlamaQuantize) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string f16 = smollm2_f16(), imf = kiln::test::temp_dir() + "/synthetic-long.imatrix.gguf";
    synthetic_imatrix(f16).save(imf);
    int presets = 0;
    for (const char* dir : {"quantize_long", "imatrix_long"}) {
        const bool with_imatrix = std::string(dir) == "imatrix_long";
        for (const auto& entry : fs::directory_iterator(kiln::test::golden_path(dir))) {
            const json want = json::parse(kiln::test::read_file(entry.path().string()));
            const std::string preset = want["preset"];
            if (!wanted_long_preset(preset)) continue;
            SCOPED_TRACE(preset + (with_imatrix ? " --imatrix" : ""));
            const std::string out = kiln::test::temp_dir() + "/ql-" + preset + ".gguf";
            const auto t0 = std::chrono::steady_clock::now();
            auto r = run_kiln("quantize " + (with_imatrix ? "--imatrix '" + imf + "' " : std::string()) + "'" + f16 + "' '" +
                              out + "' " + preset + " -t 2");
            ASSERT_EQ(r.status, 0) << r.err;
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            const json got = tensor_digests(out);
            const auto [type_diff, byte_diff] = compare_tensors(got, want["tensors"], "llama-quantize");
            std::printf("[ figures  ] %s%s: %zu tensors, %d type and %d byte differences from llama-quantize (%.1f s)\n",
                        preset.c_str(), with_imatrix ? " --imatrix" : "", got.size(), type_diff, byte_diff, s);
            fs::remove(out);
            ++presets;
        }
    }
    EXPECT_GE(presets, 1);
}
