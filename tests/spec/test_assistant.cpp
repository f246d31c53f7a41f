// Drafting with a Gemma 4 assistant (a gemma4-assistant file as the draft model
// of a gemma4 target; src/engine/assistant_draft.h) on tiny random pairs: the
// gemma4 target with an assistant of its shapes, and gemma4@e2b (whose last
// layers share earlier layers' caches: the assistant reads those). The
// assistant's draft logits against llama.cpp's graph with the target's memory
// shared (tests/golden/assistant, tools/assistant_fixtures.py), then
// losslessness (greedy and seeded sampling equal with --spec draft / auto and
// off, one sequence and several with prefix reuse), and the pairing errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/assistant_draft.h"
#include "model/internals.h"
#include "kiln/catalog.h"
#include "kiln/context.h"
#include "kiln/engine.h"
#include "kiln/error.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

using kiln::SpecMode;
using kiln::TokenId;
using ModelPtr = std::shared_ptr<const kiln::Model>;

constexpr float k_relative_bound = 0.01f;  // the tiny models' bound: 1% of the largest logit

const std::vector<std::string> k_targets = {"gemma4", "gemma4@e2b"};

ModelPtr tiny(const std::string& family) {
    static std::map<std::string, ModelPtr> models;
    ModelPtr& m = models[family];
    if (!m) {
        std::string name = family;
        std::replace(name.begin(), name.end(), ':', '_');
        const std::string p = kiln::test::temp_dir() + "/assistant-tiny-" + name + ".gguf";
        kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), p);
        m = kiln::Model::load(p);
    }
    return m;
}
ModelPtr assistant(const std::string& target) { return tiny("assistant:" + target); }

kiln::GenerateOptions options(SpecMode mode, int max_tokens, bool sample) {
    kiln::GenerateOptions o;
    o.max_tokens = max_tokens;
    o.ignore_eos = true;
    o.spec.mode = mode;
    if (sample) {
        o.sampling.temperature = 0.9f;
        o.sampling.top_k = 40;
        o.sampling.seed = 1234;
    } else {
        o.sampling = kiln::SamplingParams::greedy();
    }
    return o;
}

std::vector<TokenId> prompt_of(int n, int salt) {
    std::vector<TokenId> p = kiln::test::tiny_model_prompt();
    p.resize(static_cast<size_t>(n));
    for (size_t i = 1; i < p.size(); ++i) p[i] = (p[i] + salt * 7919) % 49000 + 100;
    return p;
}

class Assistant : public ::testing::TestWithParam<std::string> {};

// llama.cpp's rows: the pending token at n with the target's state at n - 1,
// then each draft with the assistant's own post-projected state, all at n.
TEST_P(Assistant, DraftLogitsEqualLlamaCppsGraph) {
    const std::string family = GetParam();
    const ModelPtr target = tiny(family), asst = assistant(family);
    auto fx = nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("assistant/" + family + ".json")));
    const std::string regen = "; regenerate the fixture (tools/assistant_fixtures.py --targets " + family + ")";
    ASSERT_EQ(kiln::sha256_file(target->path()), fx["target_sha256"].get<std::string>()) << family << ": the target changed" << regen;
    ASSERT_EQ(kiln::sha256_file(asst->path()), fx["assistant_sha256"].get<std::string>()) << family << ": the assistant changed" << regen;
    const auto prompt = fx["prompt"].get<std::vector<int32_t>>();
    const int n = static_cast<int>(prompt.size());

    const kiln::ContextOptions co{.n_ctx = 256, .n_batch = 16, .hidden_states = true};
    kiln::Context ctx(target, co);
    kiln::AssistantDrafter drafter(asst, *target, ctx, co);
    kiln::Batch b;
    for (int p = 0; p < n; ++p) b.add(prompt[static_cast<size_t>(p)], p, 0, p + 1 == n);
    ctx.decode(b);  // in chunks of 16
    drafter.record(b, ctx);
    const auto last = ctx.logits(0);
    const TokenId pending = static_cast<TokenId>(std::max_element(last.begin(), last.end()) - last.begin());
    ASSERT_EQ(pending, fx["pending_token"].get<int>()) << family << ": the target's own greedy token (tests/model checks its logits)";

    std::vector<std::vector<float>> rows;
    drafter.set_debug_hook([&](const char* name, int, const float* data, int64_t per_row, int64_t n_rows) {
        if (std::string(name) == "result_output")
            for (int64_t r = 0; r < n_rows; ++r) rows.emplace_back(data + r * per_row, data + (r + 1) * per_row);
    });
    std::vector<TokenId> tokens(prompt.begin(), prompt.end());
    tokens.push_back(pending);
    std::vector<TokenId> draft;
    const int k = static_cast<int>(fx["argmax"].size());
    drafter.draft(std::vector<kiln::DraftRequest>{{.seq = 0, .tokens = tokens, .k = k, .out = &draft}});
    ASSERT_EQ(static_cast<int>(rows.size()), k);

    float max_diff = 0, spread = 0;
    int mismatches = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
        const auto& top_ids = fx["top_ids"][r];
        const auto& top = fx["top_logits"][r];
        spread = std::max(spread, std::fabs(top[0].get<float>()));
        if (draft[r] != fx["argmax"][r].get<int>()) {
            ++mismatches;
            EXPECT_LT(top[0].get<float>() - top[1].get<float>(), k_relative_bound * std::fabs(top[0].get<float>()))
                << family << " draft row " << r;
            break;  // the chain differs from here
        }
        for (size_t j = 0; j < top_ids.size(); ++j)
            max_diff = std::max(max_diff, std::fabs(rows[r][top_ids[j].get<size_t>()] - top[j].get<float>()));
        const auto& rids = fx["random_ids"];
        for (size_t j = 0; j < rids.size(); ++j)
            max_diff = std::max(max_diff, std::fabs(rows[r][rids[j].get<size_t>()] - fx["random_logits"][r][j].get<float>()));
    }
    std::printf("[ figures  ] assistant for %s: max |logit diff| %.5f (largest logit %.2f) over %zu draft rows, argmax mismatches %d\n",
                family.c_str(), max_diff, spread, rows.size(), mismatches);
    EXPECT_EQ(mismatches, 0);
    EXPECT_LE(max_diff, k_relative_bound * spread);
}

// Greedy and seeded sampling: the same tokens with the assistant drafting
// (draft, and auto, which drafts with it) as without; the random assistant is
// mostly wrong, so rejection and the target's rollback run on nearly every step.
TEST_P(Assistant, LosslessGreedyAndSeededSampling) {
    const ModelPtr target = tiny(GetParam());
    kiln::Session session(target, {.n_ctx = 256, .n_batch = 32});
    session.engine().set_draft_model(assistant(GetParam()));
    ASSERT_NE(session.engine().draft_model(), nullptr);
    for (bool sample : {false, true}) {
        const std::vector<TokenId> prompt = prompt_of(24, sample ? 3 : 1);
        session.reset();
        const kiln::GenerationResult off = session.generate(prompt, options(SpecMode::Off, 40, sample));
        for (SpecMode mode : {SpecMode::Draft, SpecMode::Auto}) {
            session.reset();
            const kiln::GenerationResult on = session.generate(prompt, options(mode, 40, sample));
            EXPECT_EQ(on.tokens, off.tokens) << GetParam() << " " << kiln::spec_mode_name(mode) << (sample ? " sampled" : " greedy");
            if (mode == SpecMode::Draft) {
                EXPECT_GT(on.spec.drafted, 0);
                EXPECT_EQ(on.spec.draft_steps, on.spec.steps - 2);  // every generating step but the last
            }
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Tiny, Assistant, ::testing::ValuesIn(k_targets), [](const auto& info) {
    std::string s = info.param;
    std::replace(s.begin(), s.end(), '@', '_');
    return s;
});

// Several sequences drafting together (their rows share the assistant's
// passes), one continuing another's prefix (copied cells, read as the target's).
TEST(AssistantDraft, SeveralSequencesAndPrefixReuse) {
    const ModelPtr target = tiny("gemma4@e2b");
    const std::vector<TokenId> a = prompt_of(30, 1), b = prompt_of(20, 2);
    std::vector<TokenId> c(a.begin(), a.begin() + 26);
    c.push_back(777);
    std::map<std::string, std::vector<TokenId>> expect;
    {
        kiln::Session s(target, {.n_ctx = 128});
        for (const auto& [name, p] : {std::pair{"a", a}, std::pair{"b", b}, std::pair{"c", c}}) {
            s.reset();
            expect[name] = s.generate(p, options(SpecMode::Off, 24, false)).tokens;
        }
    }
    kiln::Engine engine(target, {.n_ctx = 128, .n_seq_max = 3});
    engine.set_draft_model(assistant("gemma4@e2b"));
    const kiln::SeqId sa = engine.submit(a, options(SpecMode::Draft, 24, false));
    const kiln::SeqId sb = engine.submit(b, options(SpecMode::Draft, 24, false));
    while (engine.busy()) engine.step();
    EXPECT_EQ(engine.result(sa).tokens, expect["a"]);
    EXPECT_EQ(engine.result(sb).tokens, expect["b"]);
    EXPECT_GT(engine.result(sa).spec.drafted, 0);
    const kiln::SeqId sc = engine.submit(c, options(SpecMode::Draft, 24, false));
    while (engine.busy()) engine.step();
    EXPECT_GE(engine.result(sc).reused_tokens, 26);
    EXPECT_EQ(engine.result(sc).tokens, expect["c"]);
    EXPECT_GT(engine.result(sc).spec.drafted, 0);
}

void expect_error(const std::function<void()>& f, const std::vector<std::string>& parts) {
    try {
        f();
        ADD_FAILURE() << "no error";
    } catch (const kiln::Error& e) {
        for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks: " << p;
    }
}

// A target it cannot read: each error names what differs.
// The cost prior (SpecCost's gamma before it is measured) is the weight bytes one
// drafted token reads: Q, O and the FFN of each layer, the pre / post
// projections and the tied head; no K / V (the target's cells are read).
TEST(AssistantDraft, CostPriorIsItsPerTokenWeightBytes) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const ModelPtr target = tiny("gemma4"), asst = assistant("gemma4");
    const kiln::ContextOptions co{.n_ctx = 64, .hidden_states = true};
    kiln::Context ctx(target, co);
    const kiln::AssistantDrafter drafter(asst, *target, ctx, co);
    const kiln::ModelWeights& w = kiln::ModelInternals::weights(*asst);
    auto bytes = [](const kiln::Matrix& m) { return m.empty() ? uint64_t{0} : m.row_bytes * static_cast<uint64_t>(m.n_out); };
    uint64_t want = bytes(w.output) + bytes(w.assistant_pre) + bytes(w.assistant_post);
    for (const kiln::LayerWeights& l : w.layers) {
        EXPECT_TRUE(l.wk.empty() && l.wv.empty() && l.wqkv.empty()) << "an assistant has no K / V products";
        want += bytes(l.wq) + bytes(l.wo) + bytes(l.ffn_gate) + bytes(l.ffn_up) + bytes(l.ffn_down);
    }
    EXPECT_EQ(drafter.decode_bytes(), want);
    EXPECT_GT(bytes(w.assistant_pre) + bytes(w.assistant_post), 0u);
    // The footprint a draft model's prior would use leaves the projections out.
    EXPECT_EQ(drafter.decode_bytes(), asst->footprint().decode_bytes + bytes(w.assistant_pre) + bytes(w.assistant_post));
}

TEST(AssistantDraft, PairingErrorsNameWhatDiffers) {
    auto pair = [](const std::string& target, const std::string& for_target) {
        kiln::Engine engine(tiny(target), {.n_ctx = 64});
        engine.set_draft_model(assistant(for_target));
    };
    expect_error([&] { pair("llama", "gemma4"); }, {"gemma4 model", "the target is llama"});
    expect_error([&] { pair("gemma4@q8_0", "gemma4"); }, {"embedding_length_out is 64", "width 256"});
    // gemma4@e2b's assistant has 1 KV head on its sliding layer; gemma4's sliding layers have 2.
    expect_error([&] { pair("gemma4", "gemma4@e2b"); }, {"layer 0 (sliding)", "target's layer 2", "2 KV heads"});
    // The same checks without an Engine (the server's, for its further models).
    EXPECT_NO_THROW(kiln::check_draft_model(*tiny("gemma4@e2b"), *assistant("gemma4@e2b")));
    expect_error([&] { kiln::check_draft_model(*tiny("gemma4"), *assistant("gemma4@e2b")); }, {"2 KV heads"});
    // Alone, it has no cache to read.
    expect_error([&] { kiln::Context ctx(assistant("gemma4"), {.n_ctx = 64}); }, {"gemma4-assistant", "--draft-model"});
}

}  // namespace
