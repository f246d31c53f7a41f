// Speculative decoding (kiln/engine.h, SpecOptions): the prompt-lookup drafter
// and the adaptive controller as units, then losslessness end to end: on both
// real models, greedy generation with ngram drafting (and auto) is the same
// token sequence and the same text as with speculation off, over the committed
// prompts (tests/data/spec/prompts.json: edits that copy their input, free
// text, a summary); seeded sampling (with penalties) is the same on and off; a
// JSON-schema-constrained reply is the same on and off; stop strings and token
// limits end the reply at the same place; several sequences drafting in one
// batch (recurrent and hybrid models: test_spec_recurrent.cpp).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/ngram_draft.h"
#include "engine/spec_control.h"
#include "kiln/chat.h"
#include "kiln/constraint.h"
#include "kiln/engine.h"
#include "kiln/error.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

using kiln::SpecMode;

kiln::ContextOptions ctx(int n_ctx, int n_seq_max = 1) {
    kiln::ContextOptions o;
    o.n_ctx = n_ctx;
    o.n_seq_max = n_seq_max;
    return o;
}

kiln::SpecOptions spec_opts(SpecMode mode, int draft_max = 8, int draft_min = 1) {
    kiln::SpecOptions o;
    o.mode = mode;
    o.draft_max = draft_max;
    o.draft_min = draft_min;
    return o;
}

kiln::NgramDraftParams ngram(int n_max, int n_min, int draft_max) {
    kiln::NgramDraftParams p;
    p.n_max = n_max;
    p.n_min = n_min;
    p.draft_max = draft_max;
    return p;
}
using kiln::TokenId;

std::vector<TokenId> draft_of(const std::vector<TokenId>& toks, int n_max, int n_min, int draft_max) {
    std::vector<TokenId> d;
    kiln::ngram_draft(toks, ngram(n_max, n_min, draft_max), d);
    return d;
}

TEST(NgramDraft, ProposesWhatFollowedTheLongestSuffixThatOccurredBefore) {
    // Suffix [2 3 4]: occurred at 1..3, followed by 9 8 7 6.
    EXPECT_EQ(draft_of({1, 2, 3, 4, 9, 8, 7, 6, 5, 2, 3, 4}, 3, 1, 3), (std::vector<TokenId>{9, 8, 7}));
    // The longest n wins over a more recent shorter match: [3 4] also follows 5 at 10..11.
    EXPECT_EQ(draft_of({2, 3, 4, 9, 3, 4, 5, 2, 3, 4}, 3, 1, 2), (std::vector<TokenId>{9, 3}));
    // Only 2-grams: the most recent earlier occurrence of [3 4] (followed by 5).
    EXPECT_EQ(draft_of({2, 3, 4, 9, 3, 4, 5, 2, 3, 4}, 2, 2, 2), (std::vector<TokenId>{5, 2}));
}

TEST(NgramDraft, FallsBackToShorterSuffixesDownToNMin) {
    const std::vector<TokenId> t = {7, 1, 8, 5, 6, 1};  // only the 1-gram [1] occurred before
    EXPECT_EQ(draft_of(t, 3, 1, 4), (std::vector<TokenId>{8, 5, 6, 1}));
    EXPECT_TRUE(draft_of(t, 3, 2, 4).empty());
}

TEST(NgramDraft, BoundsAndEdgeCases) {
    EXPECT_TRUE(draft_of({}, 3, 1, 8).empty());
    EXPECT_TRUE(draft_of({5}, 3, 1, 8).empty());
    EXPECT_TRUE(draft_of({1, 2, 3}, 3, 1, 8).empty());      // nothing repeats
    EXPECT_TRUE(draft_of({1, 2, 1, 2}, 2, 1, 0).empty());   // draft_max 0
    // The draft stops at the end of the history: [1 2] at 0..1 is followed by 1 2 only.
    EXPECT_EQ(draft_of({1, 2, 1, 2}, 2, 1, 8), (std::vector<TokenId>{1, 2}));
    // A run of one token overlaps itself: [4 4] at 1..2 is followed by one 4.
    EXPECT_EQ(draft_of({4, 4, 4, 4}, 2, 1, 8), (std::vector<TokenId>{4}));
}

TEST(SpecControl, OffAndNgramModes) {
    kiln::SpecCost cost;
    kiln::SpecControl off(spec_opts(SpecMode::Off));
    EXPECT_EQ(off.plan(100, cost), 0);
    kiln::SpecControl ng(spec_opts(SpecMode::Ngram, 6, 2));
    EXPECT_EQ(ng.plan(100, cost), 6);
    EXPECT_EQ(ng.plan(4, cost), 4);  // bounded by the room
    EXPECT_EQ(ng.plan(1, cost), 0);  // under draft_min
}

TEST(SpecControl, AutoDraftsWhileItPaysAndBacksOffWhileItDoesNot) {
    kiln::SpecCost cost;  // prior: an extra row costs 0.15 of a pass
    kiln::SpecControl c(spec_opts(SpecMode::Auto, 8));
    ASSERT_GT(c.plan(100, cost), 0);  // the prior acceptance (1/2) pays
    // Every draft accepted: the controller asks for long drafts.
    for (int i = 0; i < 10; ++i) c.result(8, 8, cost);
    EXPECT_GT(c.acceptance(), 0.9);
    EXPECT_EQ(c.plan(100, cost), 8);
    // Every draft rejected: drafting stops, then comes back as a one-token probe
    // after a wait that doubles with each failed probe.
    for (int i = 0; i < 20; ++i) c.result(4, 0, cost);
    EXPECT_LT(c.acceptance(), 0.1);
    EXPECT_EQ(c.plan(100, cost), 0);
    int waited = 1;
    while (c.plan(100, cost) == 0) ++waited;
    EXPECT_EQ(waited, 8);
    c.result(1, 0, cost);  // the probe failed
    waited = 0;
    while (c.plan(100, cost) == 0) ++waited;
    EXPECT_EQ(waited, 16);
}

TEST(SpecCost, MeasuresTheExtraRowsRelativeToOne) {
    kiln::SpecCost cost;
    cost.record(1, 0.010);
    for (int i = 0; i < 40; ++i) cost.record(5, 0.012);  // 4 extra rows: +20%
    EXPECT_NEAR(cost.beta(), 0.05, 1e-3);
    EXPECT_NEAR(cost.ratio(4), 1.2, 1e-3);
}

// --- end to end ---

struct Prompt {
    std::string name, user;
    int max_tokens;
};

std::vector<Prompt> prompts() {
    std::ifstream in(kiln::test::data_path("spec/prompts.json"));
    const auto j = nlohmann::json::parse(in);
    std::vector<Prompt> out;
    for (const auto& p : j) out.push_back({p.at("name"), p.at("user"), p.at("max_tokens")});
    return out;
}

std::shared_ptr<const kiln::Model> load(const std::string& path) {
    static std::map<std::string, std::shared_ptr<const kiln::Model>> models;
    auto& m = models[path];
    if (!m) m = kiln::Model::load(path);
    return m;
}

std::vector<TokenId> chat_prompt(const std::shared_ptr<const kiln::Model>& model, const std::string& user) {
    kiln::EncodeOptions eo;
    eo.parse_special = true;
    kiln::ChatSession chat(model);
    chat.add_user(user);
    return model->tokenizer().encode(chat.render({}), eo);
}

kiln::GenerateOptions options(SpecMode mode, int max_tokens, const kiln::SamplingParams& sampling) {
    kiln::GenerateOptions o;
    o.max_tokens = max_tokens;
    o.sampling = sampling;
    o.spec.mode = mode;
    return o;
}

void expect_same(const kiln::GenerationResult& a, const kiln::GenerationResult& b, const std::string& what) {
    EXPECT_EQ(a.tokens, b.tokens) << what;
    EXPECT_EQ(a.text, b.text) << what;
    EXPECT_EQ(a.finish, b.finish) << what;
    EXPECT_EQ(a.stop_string, b.stop_string) << what;
    EXPECT_EQ(a.completion_tokens, b.completion_tokens) << what;
}

class RealModel : public ::testing::TestWithParam<std::string> {
protected:
    std::string path() const { return GetParam() == "smollm2" ? kiln::test::smollm2_path() : kiln::test::gemma3_path(); }
};

TEST_P(RealModel, GreedyWithDraftingEqualsPlainGreedy) {
    KILN_REQUIRE_MODEL(path());
    auto model = load(path());
    int drafted = 0, accepted = 0;
    for (const Prompt& p : prompts()) {
        const auto toks = chat_prompt(model, p.user);
        kiln::Session session(model, ctx(1024));
        const auto plain = session.generate(toks, options(SpecMode::Off, p.max_tokens, kiln::SamplingParams::greedy()));
        EXPECT_EQ(plain.spec.drafted, 0);
        for (SpecMode mode : {SpecMode::Ngram, SpecMode::Auto}) {
            session.reset();  // no prefix reuse: the draft path evaluates the prompt too
            const auto spec = session.generate(toks, options(mode, p.max_tokens, kiln::SamplingParams::greedy()));
            expect_same(plain, spec, GetParam() + " " + p.name + " " + std::string(kiln::spec_mode_name(mode)));
            EXPECT_LE(spec.spec.accepted, spec.spec.drafted);
            EXPECT_EQ(spec.spec.steps + spec.spec.accepted, spec.completion_tokens + (spec.finish == kiln::FinishReason::Stop && spec.stop_string.empty()));
            if (mode == SpecMode::Ngram) {
                drafted += spec.spec.drafted;
                accepted += spec.spec.accepted;
            }
        }
        if (p.name == "edit_replace") {
            EXPECT_GT(plain.completion_tokens, 40) << "the edit should copy its input";
        }
    }
    EXPECT_GT(drafted, 0);
    EXPECT_GT(accepted, 0);
    std::printf("%s: ngram drafted %d, accepted %d (%.1f%%)\n", GetParam().c_str(), drafted, accepted,
                drafted ? 100.0 * accepted / drafted : 0.0);
}

TEST_P(RealModel, SeededSamplingIsTheSameWithAndWithoutDrafting) {
    KILN_REQUIRE_MODEL(path());
    auto model = load(path());
    const auto toks = chat_prompt(model, prompts()[0].user);
    kiln::SamplingParams sp;  // temperature 0.8, top-k 40, top-p 0.95, min-p 0.05
    sp.seed = 1234;
    sp.repeat_penalty = 1.05f;  // the penalties' history must advance as in plain decoding
    kiln::Session session(model, ctx(1024));
    const auto plain = session.generate(toks, options(SpecMode::Off, 80, sp));
    session.reset();
    const auto spec = session.generate(toks, options(SpecMode::Ngram, 80, sp));
    expect_same(plain, spec, GetParam() + " seeded");
    EXPECT_GT(spec.spec.drafted, 0);
}

TEST_P(RealModel, StopStringsAndTokenLimitsEndWhereTheyDoWithoutDrafting) {
    KILN_REQUIRE_MODEL(path());
    auto model = load(path());
    const auto toks = chat_prompt(model, prompts()[0].user);
    kiln::Session session(model, ctx(1024));
    for (int max_tokens : {7, 23}) {
        session.reset();
        const auto plain = session.generate(toks, options(SpecMode::Off, max_tokens, kiln::SamplingParams::greedy()));
        session.reset();
        const auto spec = session.generate(toks, options(SpecMode::Ngram, max_tokens, kiln::SamplingParams::greedy()));
        expect_same(plain, spec, GetParam() + " -n " + std::to_string(max_tokens));
    }
    auto o = options(SpecMode::Off, 96, kiln::SamplingParams::greedy());
    o.stop = {"mat was"};  // inside the copied text
    session.reset();
    const auto plain = session.generate(toks, o);
    o.spec.mode = SpecMode::Ngram;
    session.reset();
    const auto spec = session.generate(toks, o);
    expect_same(plain, spec, GetParam() + " stop string");
}

INSTANTIATE_TEST_SUITE_P(Models, RealModel, ::testing::Values("smollm2", "gemma3"));

TEST(SpecConstrained, JsonSchemaReplyIsTheSameWithAndWithoutDrafting) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto model = load(kiln::test::smollm2_path());
    const auto toks = chat_prompt(model,
        "Copy this record as JSON with the fields name, city and note: name Ada Lovelace, city London, "
        "note The Analytical Engine weaves algebraic patterns just as the Jacquard loom weaves flowers and leaves.");
    const auto grammar = kiln::Grammar::from_json_schema(
        R"({"type":"object","properties":{"name":{"type":"string"},"city":{"type":"string"},"note":{"type":"string"}},)"
        R"("required":["name","city","note"],"additionalProperties":false})");
    const auto vocab = kiln::TokenVocabulary::from_tokenizer(model->tokenizer());
    kiln::Session session(model, ctx(1024));
    const auto plain = session.generate(toks, options(SpecMode::Off, 96, kiln::SamplingParams::greedy()), nullptr,
                                        kiln::grammar_stage(grammar, vocab));
    session.reset();
    const auto spec = session.generate(toks, options(SpecMode::Ngram, 96, kiln::SamplingParams::greedy()), nullptr,
                                       kiln::grammar_stage(grammar, vocab));
    expect_same(plain, spec, "json schema");
    EXPECT_GT(spec.spec.drafted, 0);
    EXPECT_EQ(plain.text.substr(0, 1), "{");
}

TEST(SpecBatch, SequencesDraftingInOneBatchEqualEachAlone) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto model = load(kiln::test::smollm2_path());
    const auto all = prompts();
    std::vector<std::vector<TokenId>> toks;
    std::vector<kiln::GenerationResult> alone;
    for (int i = 0; i < 3; ++i) {
        toks.push_back(chat_prompt(model, all[static_cast<size_t>(i)].user));
        kiln::Session s(model, ctx(512));
        alone.push_back(s.generate(toks.back(), options(SpecMode::Off, 48, kiln::SamplingParams::greedy())));
    }
    kiln::Engine engine(model, ctx(512, 3));
    std::vector<kiln::SeqId> seqs;
    for (int i = 0; i < 3; ++i) seqs.push_back(engine.submit(toks[static_cast<size_t>(i)], options(SpecMode::Ngram, 48, kiln::SamplingParams::greedy())));
    while (engine.busy()) engine.step();
    for (int i = 0; i < 3; ++i) expect_same(alone[static_cast<size_t>(i)], engine.result(seqs[static_cast<size_t>(i)]), "seq " + std::to_string(i));
}

TEST(SpecOptions, BadValuesAreErrors) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto model = load(kiln::test::smollm2_path());
    kiln::Engine engine(model, ctx(128));
    auto o = options(SpecMode::Ngram, 8, kiln::SamplingParams::greedy());
    o.spec.ngram_min = 0;
    EXPECT_THROW(engine.submit(std::vector<TokenId>{1, 2, 3}, o), kiln::Error);
}

}  // namespace
