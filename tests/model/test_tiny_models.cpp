// Tiny random models of every family (tests/support/tiny_models.cpp) against
// llama.cpp's logits for the same files (tests/golden/tiny, tools/tiny_model_fixtures.py).
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "kiln/catalog.h"
#include "kiln/context.h"
#include "model/registry.h"
#include "support/test_support.h"
#include "support/tiny_encoders.h"
#include "support/tiny_models.h"

namespace {

// Tiny models have large random weights, so their logits spread over tens of
// units; the bound is relative to that spread. The reasons for any difference
// are those of the real models (order of sums, f16 attention in llama.cpp).
constexpr float k_relative_bound = 0.01f;

class TinyModels : public ::testing::TestWithParam<std::string> {};

// The tiny model of a family, written once per test process.
std::string tiny_model_file(const std::string& family) {
    static std::map<std::string, std::string> written;
    auto it = written.find(family);
    if (it != written.end()) return it->second;
    const std::string path = kiln::test::temp_dir() + "/tiny-" + family + ".gguf";
    kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), path);
    return written[family] = path;
}

// With streaming attention: the bound is llama.cpp's own difference between its
// flash attention and its default order on the model (tests/golden/tiny_stream,
// tools/tiny_stream_fixtures.py) where that is larger than the default bound.
float stream_bound(const std::string& family, float spread) {
    auto sx = nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("tiny_stream/" + family + ".json")));
    return std::max(k_relative_bound * spread, sx["llama_fa_max_diff"].get<float>());
}

void check_logits(const std::string& family, bool stream = false) {
    const std::string path = tiny_model_file(family);
    auto fx = nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("tiny/" + family + ".json")));
    auto prompt = fx["prompt"].get<std::vector<int32_t>>();
    ASSERT_EQ(prompt, kiln::test::tiny_model_prompt());
    // The fixture is for these bytes: a changed writer shows here, not as a logit gap.
    ASSERT_EQ(kiln::sha256_file(path), fx["sha256"].get<std::string>())
        << family << ": the tiny model's bytes changed; regenerate its fixture (tools/tiny_model_fixtures.py --families " << family << ")";

    auto model = kiln::Model::load(path);
    kiln::Context ctx(model, {.n_ctx = 256, .n_batch = 16, .kv_type = fx.value("kv_type", "f16"), .flash_attn = stream});
    std::vector<float> logits;
    ctx.decode(prompt, &logits);
    const int n_vocab = fx["n_vocab"];
    ASSERT_EQ(model->n_vocab(), n_vocab);
    float max_diff = 0, spread = 0;
    int mismatches = 0;
    for (size_t r = 0; r < prompt.size(); ++r) {
        const float* row = logits.data() + r * static_cast<size_t>(n_vocab);
        const auto& top_ids = fx["top_ids"][r];
        const auto& top = fx["top_logits"][r];
        spread = std::max(spread, std::fabs(top[0].get<float>()));
        int32_t am = static_cast<int32_t>(std::max_element(row, row + n_vocab) - row);
        if (am != fx["argmax"][r].get<int32_t>()) {
            ++mismatches;
            EXPECT_LT(top[0].get<float>() - top[1].get<float>(), stream ? stream_bound(family, spread) : 0.01f * spread)
                << family << " position " << r;
        }
        for (size_t k = 0; k < top_ids.size(); ++k)
            max_diff = std::max(max_diff, std::fabs(row[top_ids[k].get<int32_t>()] - top[k].get<float>()));
        const auto& rids = fx["random_ids"];
        for (size_t k = 0; k < rids.size(); ++k)
            max_diff = std::max(max_diff, std::fabs(row[rids[k].get<int32_t>()] - fx["random_logits"][r][k].get<float>()));
    }
    const std::string oracle = fx.value("oracle", "llama.cpp");
    const float bound = stream ? stream_bound(family, spread) : k_relative_bound * spread;
    std::printf("[ figures  ] tiny %s%s: max |logit diff| %.5f (largest logit %.2f, bound %.5f), argmax mismatches %d%s\n",
                family.c_str(), stream ? " (streaming attention)" : "", max_diff, spread, bound, mismatches,
                oracle == "llama.cpp" ? "" : (" (against " + oracle + ")").c_str());
    EXPECT_LE(max_diff, bound);
}

// Greedy continuation: kiln's argmax at each step equals llama.cpp's, fed back
// one token at a time (decode, not prefill). Where the fixture has the gap
// between llama.cpp's two best logits at each step, a step where it is within
// the bound may pick either and the comparison stops there; a fixture without
// gaps (the mixture-of-experts, low-bit and recurrent models') wants every token.
void check_greedy(const std::string& family, bool stream = false) {
    const std::string path = tiny_model_file(family);
    auto fx = nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("tiny/" + family + ".json")));
    // Streaming: the greedy tokens and gaps of tools/tiny_stream_fixtures.py's default run.
    const auto sx = stream ? nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("tiny_stream/" + family + ".json")))
                           : nlohmann::json();
    const float spread = std::fabs(fx["top_logits"][0][0].get<float>());
    const float bound = stream ? stream_bound(family, spread) : k_relative_bound * spread;
    if (stream) {
        ASSERT_EQ(sx["sha256"].get<std::string>(), fx["sha256"].get<std::string>()) << family << ": regenerate tiny_stream";
        fx["greedy"] = sx["greedy"];
        fx["greedy_gap"] = sx["greedy_gap"];
    }
    ASSERT_TRUE(fx.contains("greedy")) << family << ": fixture without greedy tokens";
    auto greedy = fx["greedy"].get<std::vector<int32_t>>();
    const bool has_gaps = fx.contains("greedy_gap");
    const auto gaps = has_gaps ? fx["greedy_gap"].get<std::vector<float>>() : std::vector<float>(greedy.size(), 0.0f);
    ASSERT_EQ(greedy.size(), gaps.size());
    ASSERT_FALSE(greedy.empty());
    auto model = kiln::Model::load(path);
    kiln::Context ctx(model, {.n_ctx = 256, .n_batch = 64, .kv_type = fx.value("kv_type", "f16"), .flash_attn = stream});
    ctx.decode(kiln::test::tiny_model_prompt());
    for (size_t i = 0; i < greedy.size(); ++i) {
        auto l = ctx.last_logits();
        const int32_t am = static_cast<int32_t>(std::max_element(l.begin(), l.end()) - l.begin());
        if (am != greedy[i]) {
            EXPECT_TRUE(has_gaps && gaps[i] < bound)
                << family << " greedy step " << i << ": kiln " << am << ", llama.cpp " << greedy[i] << " (gap "
                << (has_gaps ? std::to_string(gaps[i]) : "not recorded") << ")";
            break;
        }
        ctx.decode(std::span<const int32_t>(&greedy[i], 1));
    }
}

// Every runnable registry row has a tiny model, and every tiny model a fixture:
// no family is listed as runnable without being checked against llama.cpp.
TEST(TinyModelCoverage, EveryRunnableArchitectureHasATinyModel) {
    const auto families = kiln::test::tiny_model_families();
    for (const kiln::ArchRow& row : kiln::architecture_rows()) {
        if (!row.configure) continue;
        bool found = false;
        for (const auto& f : families) found |= f.arch == row.name;
        // Encoders (tests/support/tiny_encoders.cpp; checked in tests/engine/test_embedding.cpp).
        for (const auto& f : kiln::test::tiny_encoders()) found |= f.name.substr(0, f.name.find('_')) == row.name;
        // A drafter that runs only beside its target (write_tiny_gemma4_assistant; tests/spec/test_assistant.cpp).
        found |= row.name == "gemma4-assistant";
        EXPECT_TRUE(found) << "architecture '" << row.name << "' is runnable but has no tiny model (tests/support/tiny_models.cpp)";
    }
    for (const auto& f : families) {
        EXPECT_TRUE(kiln::test::missing_reason(kiln::test::golden_path("tiny/" + f.family + ".json")).empty())
            << f.family << ": no llama.cpp fixture; run tools/tiny_model_fixtures.py --families " << f.family;
        const kiln::ArchRow* row = kiln::find_architecture(f.arch);
        EXPECT_TRUE(row && row->configure) << f.family << ": written as '" << f.arch << "', which is not runnable";
    }
}

void check_write_is_deterministic(const std::string& family) {
    const std::string a = tiny_model_file(family);
    const std::string b = kiln::test::temp_dir() + "/tiny-b-" + family + ".gguf";
    kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), b);
    EXPECT_EQ(kiln::test::read_file(a), kiln::test::read_file(b));
}

void check_token_by_token(const std::string& family, bool stream = false) {
    const std::string path = tiny_model_file(family);
    auto model = kiln::Model::load(path);
    auto prompt = kiln::test::tiny_model_prompt();
    std::vector<float> chunked;
    {
        kiln::Context ctx(model, {.n_ctx = 256, .n_batch = 64, .flash_attn = stream});
        ctx.decode(prompt, &chunked);
    }
    kiln::Context one(model, {.n_ctx = 256, .n_batch = 1, .flash_attn = stream});
    const size_t n_vocab = static_cast<size_t>(model->n_vocab());
    for (size_t i = 0; i < prompt.size(); ++i) {
        one.decode(std::span<const int32_t>(&prompt[i], 1));
        auto l = one.last_logits();
        ASSERT_EQ(std::memcmp(l.data(), chunked.data() + i * n_vocab, n_vocab * sizeof(float)), 0) << family << " row " << i;
    }
}

// One test per tiny model (ctest runs each in its own process, so the model is
// written once for all four checks, and once more for the determinism check).
TEST_P(TinyModels, AgreesWithLlamaCpp) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());  // the tokenizer source
    const std::string family = GetParam();
    {
        SCOPED_TRACE("logits at every position");
        check_logits(family);
    }
    {
        SCOPED_TRACE("greedy continuation");
        check_greedy(family);
    }
    {
        SCOPED_TRACE("token by token equals chunked prefill");
        check_token_by_token(family);
    }
    {
        SCOPED_TRACE("write -> write is bit-exact");
        check_write_is_deterministic(family);
    }
}

std::vector<std::string> families() {
    std::vector<std::string> out;
    for (const auto& f : kiln::test::tiny_model_families()) out.push_back(f.family);
    return out;
}

INSTANTIATE_TEST_SUITE_P(AllFamilies, TinyModels, ::testing::ValuesIn(families()),
                         [](const auto& info) {
                             std::string name = info.param;  // "llama@q4_k" -> "llama_q4_k"
                             for (char& c : name)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return name;
                         });

// Streaming attention (ContextOptions::flash_attn) on the families whose
// attention has something of its own: GQA, a sliding window and soft-cap
// (gemma2, gemma3, cohere2), sinks (gpt-oss), ALiBi (bloom, mpt), latent attention
// (deepseek2), chunked and no-RoPE layers (llama4), the attention temperature
// (mistral3), an output gate between recurrent layers (qwen35), an f32 cache
// (olmo2@q4_k). Against the same llama.cpp fixtures (its -fa off run), within the
// default bound or llama.cpp's own flash attention's difference from that run,
// whichever is larger (stream_bound); the same greedy tokens but where two are
// within that bound; and a token evaluated alone equal to it in a prefill chunk
// (speculative decoding's verification and batch invariance rest on that).
class TinyModelsStreaming : public ::testing::TestWithParam<std::string> {};

TEST_P(TinyModelsStreaming, AgreesWithLlamaCpp) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const std::string family = GetParam();
    {
        SCOPED_TRACE("logits at every position");
        check_logits(family, true);
    }
    {
        SCOPED_TRACE("greedy continuation");
        check_greedy(family, true);
    }
    {
        SCOPED_TRACE("token by token equals chunked prefill");
        check_token_by_token(family, true);
    }
}

INSTANTIATE_TEST_SUITE_P(AttentionFamilies, TinyModelsStreaming,
                         ::testing::Values("llama", "gemma2", "gemma3", "cohere2", "gpt-oss", "bloom", "mpt", "deepseek2",
                                           "llama4", "mistral3", "qwen35", "olmo2@q4_k", "phi3@long"),
                         [](const auto& info) {
                             std::string name = info.param;
                             for (char& c : name)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return name;
                         });

}  // namespace
