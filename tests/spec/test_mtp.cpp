// Drafting with a model's own multi-token-prediction head (SpecMode::Mtp;
// src/model/nextn.h, src/engine/mtp_draft.h) on tiny random models with a NextN
// block: glm4moe (no optional NextN tensors: the trunk's embedding, norm and
// head serve) and deepseek2@nextn (latent attention, its own embed_tokens,
// shared_head_norm and shared_head_head). The head's logits against llama.cpp's
// MTP graph on the same rows (tests/golden/mtp, tools/mtp_fixtures.py), then
// losslessness: greedy and seeded sampling equal with --spec mtp / auto and off,
// one sequence and several, and the errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/mtp_draft.h"
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

// The tiny models' bound (tests/model/test_tiny_models.cpp): 1% of the largest logit.
constexpr float k_relative_bound = 0.01f;

const std::vector<std::string> k_families = {"glm4moe", "glm4moe@q8_0", "deepseek2@nextn", "qwen35@mtp", "qwen35moe@mtp"};

ModelPtr tiny(const std::string& family) {
    static std::map<std::string, ModelPtr> models;
    ModelPtr& m = models[family];
    if (!m) {
        const std::string p = kiln::test::temp_dir() + "/mtp-tiny-" + family + ".gguf";
        kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), p);
        m = kiln::Model::load(p);
    }
    return m;
}

class MtpHead : public ::testing::TestWithParam<std::string> {};

// llama.cpp's rows: token p with the trunk's state at p - 1 (zeros at 0), every
// row's logits; then the chained row from the head's own state of the last one.
TEST_P(MtpHead, LogitsEqualLlamaCppsMtpGraph) {
    const std::string family = GetParam();
    const ModelPtr model = tiny(family);
    auto fx = nlohmann::json::parse(kiln::test::read_file(kiln::test::golden_path("mtp/" + family + ".json")));
    ASSERT_EQ(kiln::sha256_file(model->path()), fx["sha256"].get<std::string>())
        << family << ": the tiny model's bytes changed; regenerate its fixture (tools/mtp_fixtures.py --families " << family << ")";
    const auto prompt = fx["prompt"].get<std::vector<int32_t>>();
    const int n = static_cast<int>(prompt.size());
    const int64_t e = model->n_embd();

    kiln::Context trunk(model, {.n_ctx = 256, .n_batch = 16, .row_states = true});
    kiln::Batch b;
    for (int p = 0; p < n; ++p) b.add(prompt[static_cast<size_t>(p)], p, 0, true);
    trunk.decode(b);
    int trunk_mismatches = 0;  // the trunk's own logits are tests/model's; near-ties may differ (Q8_0)
    for (int p = 0; p < n; ++p)
        trunk_mismatches += std::max_element(trunk.logits(p).begin(), trunk.logits(p).end()) - trunk.logits(p).begin() !=
                            fx["trunk_argmax"][static_cast<size_t>(p)].get<int>();
    std::vector<float> states(static_cast<size_t>(n * e));
    for (int p = 0; p < n; ++p) std::copy(trunk.row_state(p).begin(), trunk.row_state(p).end(), states.begin() + p * e);

    kiln::Context head(model, {.n_ctx = 256, .n_batch = 16, .hidden_states = true, .nextn = true});
    const std::vector<float> zeros(static_cast<size_t>(e), 0.0f);
    b.clear();
    for (int p = 0; p < n; ++p)
        b.add_with_state(prompt[static_cast<size_t>(p)],
                         p == 0 ? std::span<const float>(zeros) : std::span<const float>(states.data() + (p - 1) * e, e), p, 0, true);
    head.decode(b);  // in chunks of 16: the head's own cells across passes
    std::vector<std::vector<float>> rows;
    for (int p = 0; p < n; ++p) rows.emplace_back(head.logits(p).begin(), head.logits(p).end());
    const std::vector<float> g(head.hidden(n - 1).begin(), head.hidden(n - 1).end());
    const TokenId chained = static_cast<TokenId>(std::max_element(rows.back().begin(), rows.back().end()) - rows.back().begin());
    ASSERT_EQ(chained, fx["chained_token"].get<int>()) << family;
    b.clear();
    b.add_with_state(chained, g, n, 0, true);
    head.decode(b);
    rows.emplace_back(head.logits(0).begin(), head.logits(0).end());

    float max_diff = 0, spread = 0;
    int mismatches = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
        const auto& top_ids = fx["top_ids"][r];
        const auto& top = fx["top_logits"][r];
        spread = std::max(spread, std::fabs(top[0].get<float>()));
        const int am = static_cast<int>(std::max_element(rows[r].begin(), rows[r].end()) - rows[r].begin());
        if (am != fx["argmax"][r].get<int>()) {
            ++mismatches;
            EXPECT_LT(top[0].get<float>() - top[1].get<float>(), k_relative_bound * std::fabs(top[0].get<float>()))
                << family << " MTP row " << r;
        }
        for (size_t k = 0; k < top_ids.size(); ++k)
            max_diff = std::max(max_diff, std::fabs(rows[r][top_ids[k].get<size_t>()] - top[k].get<float>()));
        const auto& rids = fx["random_ids"];
        for (size_t k = 0; k < rids.size(); ++k)
            max_diff = std::max(max_diff, std::fabs(rows[r][rids[k].get<size_t>()] - fx["random_logits"][r][k].get<float>()));
    }
    std::printf("[ figures  ] MTP head %s: max |logit diff| %.5f (largest logit %.2f) over %zu rows, argmax mismatches %d "
                "(trunk: %d)\n",
                family.c_str(), max_diff, spread, rows.size(), mismatches, trunk_mismatches);
    EXPECT_LE(max_diff, k_relative_bound * spread);
}

INSTANTIATE_TEST_SUITE_P(Tiny, MtpHead, ::testing::ValuesIn(k_families), [](const auto& info) {
    std::string s = info.param;
    std::replace(s.begin(), s.end(), '@', '_');
    return s;
});

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

// Greedy and seeded sampling: the same tokens with the head drafting (mtp, and
// auto, which drafts with it beside prompt lookup) as without; the random head
// is mostly wrong, so rejection and rollback run on nearly every step, and the
// counts say drafts were verified.
TEST_P(MtpHead, LosslessGreedyAndSeededSampling) {
    const ModelPtr model = tiny(GetParam());
    kiln::Session session(model, {.n_ctx = 256, .n_batch = 32});
    ASSERT_TRUE(session.engine().has_mtp_head());
    for (bool sample : {false, true}) {
        const std::vector<TokenId> prompt = prompt_of(24, sample ? 3 : 1);
        session.reset();
        const kiln::GenerationResult off = session.generate(prompt, options(SpecMode::Off, 48, sample));
        for (SpecMode mode : {SpecMode::Mtp, SpecMode::Auto}) {
            session.reset();
            const kiln::GenerationResult on = session.generate(prompt, options(mode, 48, sample));
            EXPECT_EQ(on.tokens, off.tokens) << GetParam() << " " << kiln::spec_mode_name(mode) << (sample ? " sampled" : " greedy");
            if (mode == SpecMode::Mtp) {
                EXPECT_GT(on.spec.drafted, 0);
                // Every generating step drafts but the last (no room under max_tokens); the prompt's does not.
                EXPECT_EQ(on.spec.draft_steps, on.spec.steps - 2);
            }
        }
    }
}

// The drafter's k tokens are the head's greedy chain on llama.cpp's rows: one
// catch-up pass (token p with the trunk's state at p - 1) whose last row is the
// pending token's, then the head's own states; asked again after a shorter
// history (a rejection), its cells past the trunk's states are rolled back.
TEST(MtpDraft, DraftsAreTheHeadsGreedyChain) {
    const ModelPtr model = tiny("glm4moe");
    const int64_t e = model->n_embd();
    const std::vector<TokenId> prompt = prompt_of(20, 5);
    const kiln::ContextOptions co{.n_ctx = 128, .n_batch = 8};
    kiln::Context trunk(model, {.n_ctx = 128, .n_batch = 8, .row_states = true});
    kiln::MtpDrafter drafter(model, trunk, co);
    kiln::Batch b;
    for (size_t p = 0; p + 1 < prompt.size(); ++p) b.add(prompt[p], static_cast<int64_t>(p), 0, p + 2 == prompt.size());
    trunk.decode(b);
    drafter.record(b, trunk);
    std::vector<float> states;  // the trunk's, per position
    for (int i = 0; i < b.size(); ++i) states.insert(states.end(), trunk.row_state(i).begin(), trunk.row_state(i).end());

    // The reference chain by hand (a NextN Context of its own).
    auto chain = [&](size_t n_tokens, int k) {
        kiln::Context head(model, {.n_ctx = 128, .n_batch = 8, .hidden_states = true, .nextn = true});
        const std::vector<float> zeros(static_cast<size_t>(e), 0.0f);
        kiln::Batch hb;
        for (size_t p = 0; p < n_tokens; ++p)
            hb.add_with_state(prompt[p], p == 0 ? std::span<const float>(zeros) : std::span<const float>(states.data() + (p - 1) * e, e),
                              static_cast<int64_t>(p), 0, p + 1 == n_tokens);
        std::vector<TokenId> out;
        for (int i = 0; i < k; ++i) {
            head.decode(hb);
            const auto lg = head.logits(head.n_outputs() - 1);
            out.push_back(static_cast<TokenId>(std::max_element(lg.begin(), lg.end()) - lg.begin()));
            const std::vector<float> g(head.hidden(head.n_outputs() - 1).begin(), head.hidden(head.n_outputs() - 1).end());
            hb.clear();
            hb.add_with_state(out.back(), g, static_cast<int64_t>(n_tokens) + i, 0, true);
        }
        return out;
    };
    std::vector<TokenId> got;
    drafter.draft(std::vector<kiln::DraftRequest>{{.seq = 0, .tokens = prompt, .k = 4, .out = &got}});
    EXPECT_EQ(got, chain(prompt.size(), 4));
    // A shorter history (the last two tokens rejected): the catch-up rolls back.
    const std::vector<TokenId> shorter(prompt.begin(), prompt.end() - 2);
    drafter.draft(std::vector<kiln::DraftRequest>{{.seq = 0, .tokens = shorter, .k = 3, .out = &got}});
    EXPECT_EQ(got, chain(shorter.size(), 3));
}

// Several sequences drafting together (their head rows share passes), one of
// them continuing the other's prefix (its states copied with the target's cells).
TEST(MtpDraft, SeveralSequencesAndPrefixReuse) {
    const ModelPtr model = tiny("deepseek2@nextn");
    const std::vector<TokenId> a = prompt_of(30, 1), b = prompt_of(20, 2);
    std::vector<TokenId> c(a.begin(), a.begin() + 26);  // shares 26 tokens with a
    c.push_back(777);
    std::map<std::string, std::vector<TokenId>> expect;
    {
        kiln::Session s(model, {.n_ctx = 128});
        for (const auto& [name, p] : {std::pair{"a", a}, std::pair{"b", b}, std::pair{"c", c}}) {
            s.reset();
            expect[name] = s.generate(p, options(SpecMode::Off, 24, false)).tokens;
        }
    }
    kiln::Engine engine(model, {.n_ctx = 128, .n_seq_max = 3});
    const kiln::SeqId sa = engine.submit(a, options(SpecMode::Mtp, 24, false));
    const kiln::SeqId sb = engine.submit(b, options(SpecMode::Mtp, 24, false));
    while (engine.busy()) engine.step();
    EXPECT_EQ(engine.result(sa).tokens, expect["a"]);
    EXPECT_EQ(engine.result(sb).tokens, expect["b"]);
    EXPECT_GT(engine.result(sa).spec.drafted, 0);
    // c reuses a's cells (a free slot holding a's prefix, or a copy of it).
    const kiln::SeqId sc = engine.submit(c, options(SpecMode::Mtp, 24, false));
    while (engine.busy()) engine.step();
    EXPECT_GE(engine.result(sc).reused_tokens, 26);
    EXPECT_EQ(engine.result(sc).tokens, expect["c"]);
    EXPECT_GT(engine.draft_memory_bytes(), 0u);
}

TEST(MtpDraft, ModelWithoutNextnLayersIsAnError) {
    const ModelPtr model = tiny("llama");
    kiln::Engine engine(model, {.n_ctx = 64});
    EXPECT_FALSE(engine.has_mtp_head());
    try {
        engine.submit(prompt_of(8, 1), options(SpecMode::Mtp, 4, false));
        FAIL() << "--spec mtp on a model without NextN layers";
    } catch (const kiln::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no multi-token-prediction layers"), std::string::npos) << e.what();
        EXPECT_EQ(e.kind(), kiln::ErrorKind::Unsupported);
    }
    EXPECT_EQ(engine.n_active(), 0);
    // auto on such a model simply has no head to draft with.
    EXPECT_NO_THROW(engine.submit(prompt_of(8, 1), options(SpecMode::Auto, 4, false)));
    try {
        kiln::Context head(model, {.n_ctx = 64, .nextn = true});
        FAIL() << "a NextN head Context for a model without one";
    } catch (const kiln::Error& e) {
        EXPECT_NE(std::string(e.what()).find("no multi-token-prediction head"), std::string::npos) << e.what();
    }
}

}  // namespace

namespace {

// The head's cells are made at the first request that may draft with it: an
// engine whose requests run with --spec off never pays for them.
TEST(MtpDraft, HeadMadeOnlyWhenARequestMayUseIt) {
    const ModelPtr model = tiny("glm4moe");
    kiln::Engine engine(model, {.n_ctx = 128});
    EXPECT_TRUE(engine.has_mtp_head());
    EXPECT_EQ(engine.draft_memory_bytes(), 0u);
    const std::vector<TokenId> prompt = prompt_of(16, 4);
    const kiln::SeqId off = engine.submit(prompt, options(SpecMode::Off, 8, false));
    while (engine.busy()) engine.step();
    EXPECT_EQ(engine.draft_memory_bytes(), 0u) << "--spec off made the MTP head's cells";
    const std::vector<TokenId> off_tokens = engine.result(off).tokens;
    const kiln::SeqId on = engine.submit(prompt, options(SpecMode::Mtp, 8, false));
    while (engine.busy()) engine.step();
    EXPECT_GT(engine.draft_memory_bytes(), 0u);
    EXPECT_EQ(engine.result(on).tokens, off_tokens);
    EXPECT_GT(engine.result(on).spec.drafted, 0);
    kiln::Engine prepared(model, {.n_ctx = 128});
    prepared.prepare_speculation(SpecMode::Auto);
    EXPECT_GT(prepared.draft_memory_bytes(), 0u);
}

}  // namespace
