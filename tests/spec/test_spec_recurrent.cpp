// Speculative decoding on recurrent and hybrid models (every recurrent family the
// tiny-model generator writes): a rollback into a verification batch replays the
// logged recurrences (SsmMixer's replay log, src/model/ssm_replay.cpp), so
//  - the recurrent state after rolling a k + 1-row batch back to any row is the
//    bits a plain decode of the kept tokens leaves, and what follows decodes to
//    the same logits (KV cells of the hybrids too);
//  - greedy output with --spec ngram and auto is byte-identical to --spec off,
//    auto drafts (it no longer leaves these models alone), and seeded sampling is
//    the same on and off;
//  - several sequences drafting in one batch equal each alone, and a second turn
//    reusing a speculative turn's prefix equals a cold run;
//  - a checkpoint or sequence copy taken right after a rollback holds the kept
//    rows (the delta net's deferred rows are applied before anything copies the state).
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "cache/recurrent_state.h"
#include "engine/context_internals.h"
#include "kiln/context.h"
#include "kiln/engine.h"
#include "kiln/memory_plan.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

using kiln::SpecMode;
using kiln::TokenId;
using ModelPtr = std::shared_ptr<const kiln::Model>;

const std::vector<std::string> k_families = {"qwen35",     "qwen35moe", "qwen3next", "qwen3next@ssm_in", "mamba",  "mamba@falcon",
                                             "mamba2",     "nemotron_h", "granitehybrid", "falcon-h1",   "jamba",  "lfm2",
                                             "rwkv6",      "rwkv6qwen2", "rwkv7",     "arwkv7"};

ModelPtr tiny(const std::string& family) {
    static std::map<std::string, ModelPtr> models;
    ModelPtr& m = models[family];
    if (!m) {
        const std::string p = kiln::test::temp_dir() + "/spec-recurrent-" + family + ".gguf";
        kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), p);
        m = kiln::Model::load(p);
    }
    return m;
}

// A prompt that repeats itself, so that prompt lookup finds drafts.
std::vector<TokenId> repeating_prompt() {
    std::vector<TokenId> toks;
    for (int r = 0; r < 4; ++r)
        for (TokenId t : {101, 202, 303, 404, 505, 606, 707}) toks.push_back(t);
    return toks;
}

// The state in memory once the delta net's deferred rows are applied (what any reader of it does first).
std::vector<uint8_t> live_state(kiln::Context& c, kiln::SeqId seq) {
    kiln::ContextInternals::flush_recurrent(c, seq);
    const std::span<uint8_t> s = kiln::ContextInternals::memory(c).recurrent()->live(seq);
    return {s.begin(), s.end()};
}

std::vector<float> logits_of(const kiln::Context& c, int output) {
    const auto l = c.logits(output);
    return {l.begin(), l.end()};
}

void decode_prompt(kiln::Context& c, const std::vector<TokenId>& toks) {
    kiln::Batch b;
    for (size_t i = 0; i < toks.size(); ++i) b.add(toks[i], static_cast<int64_t>(i), 0, i + 1 == toks.size());
    c.decode(b);
}

kiln::GenerateOptions options(SpecMode mode, int max_tokens, const kiln::SamplingParams& sampling) {
    kiln::GenerateOptions o;
    o.max_tokens = max_tokens;
    o.sampling = sampling;
    o.spec.mode = mode;
    o.ignore_eos = true;
    return o;
}

void expect_same(const kiln::GenerationResult& a, const kiln::GenerationResult& b, const std::string& what) {
    EXPECT_EQ(a.tokens, b.tokens) << what;
    EXPECT_EQ(a.text, b.text) << what;
    EXPECT_EQ(a.finish, b.finish) << what;
    EXPECT_EQ(a.completion_tokens, b.completion_tokens) << what;
}

// Long enough for the tiny models' greedy replies to repeat themselves (lookup drafts).
constexpr int k_reply_tokens = 160;

class SpecRecurrent : public ::testing::TestWithParam<std::string> {};

// The delta net's kept rows stay pending after a rollback (SsmMixer's deferred
// rows): flush_first reads the state first (flushing them), else the next step
// applies them in its pass, and the state is read after it.
TEST_P(SpecRecurrent, RollbackIntoAVerifyBatchLeavesAPlainDecodesState) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const ModelPtr model = tiny(GetParam());
    const std::vector<TokenId> prompt = repeating_prompt();
    const std::vector<TokenId> rows = {808, 101, 202, 909, 303, 404};  // the pending token and a draft of 5
    const int64_t p0 = static_cast<int64_t>(prompt.size());
    const kiln::ContextOptions co{.n_ctx = 128, .n_batch = 16};
    for (bool flush_first : {true, false})
        for (int kept = 1; kept < static_cast<int>(rows.size()); ++kept) {
            const std::string what = GetParam() + " keeping " + std::to_string(kept) + " rows" + (flush_first ? "" : ", the next step first");
            kiln::Context spec(model, co);
            decode_prompt(spec, prompt);
            kiln::Batch v;
            for (size_t j = 0; j < rows.size(); ++j) v.add(rows[j], p0 + static_cast<int64_t>(j), 0, true);
            spec.decode(v);
            const std::vector<float> row_logits = logits_of(spec, kept - 1);
            ASSERT_EQ(spec.seq_rollback(0, p0 + kept), p0 + kept) << what;

            kiln::Context plain(model, co);
            decode_prompt(plain, prompt);
            std::vector<float> last;
            for (int j = 0; j < kept; ++j) {
                kiln::Batch one;
                one.add(rows[static_cast<size_t>(j)], p0 + j, 0, true);
                plain.decode(one);
                last = logits_of(plain, 0);
            }
            EXPECT_EQ(row_logits, last) << what << ": a verification row's logits are a single step's";
            if (flush_first) EXPECT_TRUE(live_state(spec, 0) == live_state(plain, 0)) << what << ": the recurrent state differs";
            // What follows the rollback: the same logits (the hybrids' KV cells too).
            for (kiln::Context* c : {&spec, &plain}) {
                kiln::Batch next;
                next.add(555, p0 + kept, 0, true);
                c->decode(next);
            }
            EXPECT_EQ(logits_of(spec, 0), logits_of(plain, 0)) << what << ": the next step";
            if (!flush_first) EXPECT_TRUE(live_state(spec, 0) == live_state(plain, 0)) << what << ": the state after the next step";
        }
}

// Verifications whose every row is kept (the delta net makes the state's spare
// block, which the rows wrote, the live state), then one rolled back: the state
// and the next step's logits are a plain decode's, read right after each
// verification (flushing), after a next step following each, or only after the
// last of back-to-back verifications.
TEST_P(SpecRecurrent, VerificationsKeptWholeLeaveAPlainDecodesState) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const ModelPtr model = tiny(GetParam());
    const std::vector<TokenId> prompt = repeating_prompt();
    const std::vector<std::vector<TokenId>> drafts = {{808, 101, 202, 909, 303, 404}, {111, 222, 333, 444}, {515, 616, 717, 818, 919}};
    const std::vector<int> keep = {6, 4, 2};  // the last verification rolled back
    const kiln::ContextOptions co{.n_ctx = 128, .n_batch = 16};
    for (const std::string between : {"flush", "step", "nothing"}) {
        kiln::Context spec(model, co), plain(model, co);
        decode_prompt(spec, prompt);
        decode_prompt(plain, prompt);
        int64_t pos = static_cast<int64_t>(prompt.size());
        for (size_t d = 0; d < drafts.size(); ++d) {
            const std::string what = GetParam() + " verification " + std::to_string(d) + ", then " + between;
            kiln::Batch v;
            for (size_t j = 0; j < drafts[d].size(); ++j) v.add(drafts[d][j], pos + static_cast<int64_t>(j), 0, true);
            spec.decode(v);
            const int kept = keep[d];
            const std::vector<float> row_logits = logits_of(spec, kept - 1);
            ASSERT_EQ(spec.seq_rollback(0, pos + kept), pos + kept) << what;
            for (int j = 0; j < kept; ++j) {
                kiln::Batch one;
                one.add(drafts[d][static_cast<size_t>(j)], pos + j, 0, true);
                plain.decode(one);
            }
            EXPECT_EQ(row_logits, logits_of(plain, 0)) << what << ": the last kept row's logits";
            pos += kept;
            const bool last = d + 1 == drafts.size();
            if (between == "flush") EXPECT_TRUE(live_state(spec, 0) == live_state(plain, 0)) << what << ": the recurrent state";
            if (between != "step" && !last) continue;
            for (kiln::Context* c : {&spec, &plain}) {
                kiln::Batch next;
                next.add(555, pos, 0, true);
                c->decode(next);
            }
            ++pos;
            EXPECT_EQ(logits_of(spec, 0), logits_of(plain, 0)) << what << ": the next step";
            EXPECT_TRUE(live_state(spec, 0) == live_state(plain, 0)) << what << ": the state after the next step";
        }
    }
}

// What copies a sequence's state right after a rollback (a checkpoint, a
// sequence copy) holds the kept rows: restoring the checkpoint later, or
// decoding on the copy, is what a plain decode of the kept tokens gives.
TEST_P(SpecRecurrent, CheckpointAndCopyRightAfterARollbackHoldTheKeptRows) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const ModelPtr model = tiny(GetParam());
    const std::vector<TokenId> prompt = repeating_prompt();
    const std::vector<TokenId> rows = {808, 101, 202, 909, 303};
    const int64_t p0 = static_cast<int64_t>(prompt.size());
    const int kept = 2;
    const kiln::ContextOptions co{.n_ctx = 128, .n_seq_max = 2, .n_batch = 16};
    kiln::Context plain(model, co);
    decode_prompt(plain, prompt);
    for (int j = 0; j < kept; ++j) {
        kiln::Batch one;
        one.add(rows[static_cast<size_t>(j)], p0 + j, 0, true);
        plain.decode(one);
    }
    const std::vector<uint8_t> want = live_state(plain, 0);

    kiln::Context spec(model, co);
    decode_prompt(spec, prompt);
    kiln::Batch v;
    for (size_t j = 0; j < rows.size(); ++j) v.add(rows[j], p0 + static_cast<int64_t>(j), 0, true);
    spec.decode(v);
    ASSERT_EQ(spec.seq_rollback(0, p0 + kept), p0 + kept);
    spec.seq_checkpoint(0);
    ASSERT_EQ(spec.seq_copy(0, 1, p0 + kept), p0 + kept);
    EXPECT_TRUE(live_state(spec, 1) == want) << GetParam() << ": the copy's state";
    // Move seq 0 on by single steps (no checkpoints of their own), then back to the checkpoint.
    for (int j = 0; j < 3; ++j) {
        kiln::Batch one;
        one.add(static_cast<TokenId>(600 + j), p0 + kept + j, 0, true);
        spec.decode(one);
    }
    ASSERT_EQ(spec.seq_rollback(0, p0 + kept), p0 + kept) << GetParam() << ": the checkpoint was not restored";
    EXPECT_TRUE(live_state(spec, 0) == want) << GetParam() << ": the checkpoint's state";
    kiln::Batch next;
    next.add(555, p0 + kept, 0, true);
    plain.decode(next);
    const std::vector<float> want_logits = logits_of(plain, 0);
    spec.decode(next);
    EXPECT_EQ(logits_of(spec, 0), want_logits) << GetParam() << ": the step after the restored checkpoint";
    kiln::Batch on_copy;
    on_copy.add(555, p0 + kept, 1, true);
    spec.decode(on_copy);
    EXPECT_EQ(logits_of(spec, 0), want_logits) << GetParam() << ": the step on the copy";
}

// A verification batch split over passes (n_batch 4 of 6 rows): the delta net's
// second pass continues its rows on the state's spare block, where the first
// pass left them; a rollback into either pass, or keeping every row, leaves a
// plain decode's state.
TEST(SpecRecurrentBatch, AVerificationSplitOverPassesRollsBackExactly) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    for (const std::string family : {"qwen35", "qwen3next"}) {
        const ModelPtr model = tiny(family);
        const std::vector<TokenId> prompt = repeating_prompt();
        const std::vector<TokenId> rows = {808, 101, 202, 909, 303, 404};
        const int64_t p0 = static_cast<int64_t>(prompt.size());
        const kiln::ContextOptions co{.n_ctx = 128, .n_batch = 4};
        for (int kept : {2, 5, 6}) {  // 6: every row kept
            kiln::Context spec(model, co);
            decode_prompt(spec, prompt);
            kiln::Batch v;
            for (size_t j = 0; j < rows.size(); ++j) v.add(rows[j], p0 + static_cast<int64_t>(j), 0, true);
            spec.decode(v);
            const std::vector<float> row_logits = logits_of(spec, kept - 1);
            ASSERT_EQ(spec.seq_rollback(0, p0 + kept), p0 + kept) << family << " keeping " << kept;
            kiln::Context plain(model, co);
            decode_prompt(plain, prompt);
            for (int j = 0; j < kept; ++j) {
                kiln::Batch one;
                one.add(rows[static_cast<size_t>(j)], p0 + j, 0, true);
                plain.decode(one);
            }
            EXPECT_EQ(row_logits, logits_of(plain, 0)) << family << " keeping " << kept << ": the kept row's logits";
            EXPECT_TRUE(live_state(spec, 0) == live_state(plain, 0)) << family << " keeping " << kept << ": the state";
        }
    }
}

// kiln plan's "replay_log" part is what a verification of the default draft
// (draft_max + 1 rows) and its rollback allocate, not a guess.
TEST_P(SpecRecurrent, PlannedReplayLogIsWhatADraftAllocates) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const ModelPtr model = tiny(GetParam());
    const std::string path = kiln::test::temp_dir() + "/spec-recurrent-" + GetParam() + ".gguf";
    const kiln::MemoryPlan plan = kiln::plan_memory(path, {.n_ctx = 128});
    uint64_t planned = 0;
    for (const kiln::MemoryPart& part : plan.parts)
        if (part.name == "replay_log") planned = part.bytes;
    ASSERT_GT(planned, 0u) << GetParam() << ": no replay_log part in the plan";

    const std::vector<TokenId> prompt = repeating_prompt();
    const int64_t p0 = static_cast<int64_t>(prompt.size());
    const int n_rows = kiln::SpecOptions{}.draft_max + 1;
    kiln::Context spec(model, {.n_ctx = 128, .n_batch = 16});
    decode_prompt(spec, prompt);
    // Two drafts, the first rolled back to 2 rows, the second kept whole: the
    // second verification's log is allocated while the first one's kept rows are
    // still pending (the delta net's two record buffers), and it writes the
    // state's spare block (the delta net's verification whose every row is kept).
    int64_t pos = p0;
    for (int round = 0; round < 2; ++round) {
        kiln::Batch v;
        for (int j = 0; j < n_rows; ++j) v.add(100 + j, pos + j, 0, true);
        spec.decode(v);
        if (round == 0) ASSERT_EQ(spec.seq_rollback(0, pos + 2), pos + 2) << GetParam();
        pos += round == 0 ? 2 : n_rows;
    }
    kiln::Batch next;
    next.add(777, pos, 0, true);
    spec.decode(next);
    const uint64_t allocated = kiln::ContextInternals::replay_log_bytes(spec);
    EXPECT_GE(planned, allocated) << GetParam();
    EXPECT_LE(static_cast<double>(planned), 1.05 * static_cast<double>(allocated)) << GetParam();
}

TEST_P(SpecRecurrent, GreedyAndSeededOutputIsTheSameWithAndWithoutDrafting) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    const ModelPtr model = tiny(GetParam());
    const std::vector<TokenId> toks = repeating_prompt();
    kiln::Session session(model, {.n_ctx = 256});
    const auto plain = session.generate(toks, options(SpecMode::Off, k_reply_tokens, kiln::SamplingParams::greedy()));
    int drafted = 0;
    for (SpecMode mode : {SpecMode::Ngram, SpecMode::Auto}) {
        session.reset();
        const auto spec = session.generate(toks, options(mode, k_reply_tokens, kiln::SamplingParams::greedy()));
        expect_same(plain, spec, GetParam() + " " + std::string(kiln::spec_mode_name(mode)));
        drafted += spec.spec.drafted;
    }
    // Their random replies do not repeat within the reply (the rollback test above covers them).
    if (GetParam() != "rwkv6qwen2" && GetParam() != "arwkv7") EXPECT_GT(drafted, 0) << GetParam() << ": auto and ngram drafted nothing";
    kiln::SamplingParams sp;
    sp.seed = 77;
    sp.repeat_penalty = 1.05f;
    session.reset();
    const auto seeded_off = session.generate(toks, options(SpecMode::Off, k_reply_tokens, sp));
    session.reset();
    const auto seeded_on = session.generate(toks, options(SpecMode::Ngram, k_reply_tokens, sp));
    expect_same(seeded_off, seeded_on, GetParam() + " seeded");
}

INSTANTIATE_TEST_SUITE_P(Tiny, SpecRecurrent, ::testing::ValuesIn(k_families), [](const auto& info) {
    std::string n = info.param;
    for (char& c : n)
        if (c == '@' || c == '-') c = '_';
    return n;
});

TEST(SpecRecurrentBatch, SequencesDraftingInOneBatchEqualEachAlone) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    for (const std::string family : {"qwen35", "nemotron_h", "rwkv7"}) {
        const ModelPtr model = tiny(family);
        std::vector<std::vector<TokenId>> toks;
        std::vector<kiln::GenerationResult> alone;
        for (int i = 0; i < 3; ++i) {
            std::vector<TokenId> t = repeating_prompt();
            t.push_back(100 + 7 * i);  // each its own
            toks.push_back(t);
            kiln::Session s(model, {.n_ctx = 256});
            alone.push_back(s.generate(t, options(SpecMode::Off, 96, kiln::SamplingParams::greedy())));
        }
        kiln::Engine engine(model, {.n_ctx = 256, .n_seq_max = 3});
        std::vector<kiln::SeqId> seqs;
        for (int i = 0; i < 3; ++i)
            seqs.push_back(engine.submit(toks[static_cast<size_t>(i)], options(SpecMode::Ngram, 96, kiln::SamplingParams::greedy())));
        while (engine.busy()) engine.step();
        int drafted = 0;
        for (int i = 0; i < 3; ++i) {
            const auto& r = engine.result(seqs[static_cast<size_t>(i)]);
            expect_same(alone[static_cast<size_t>(i)], r, family + " seq " + std::to_string(i));
            drafted += r.spec.drafted;
        }
        EXPECT_GT(drafted, 0) << family;
    }
}

// A second turn that extends a speculative turn's sequence reuses its prefix and
// gives what a cold run of the whole prompt gives.
TEST(SpecRecurrentBatch, PrefixReuseAfterASpeculativeTurn) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    for (const std::string family : {"qwen35", "mamba2"}) {
        const ModelPtr model = tiny(family);
        kiln::Engine engine(model, {.n_ctx = 256});
        const std::vector<TokenId> first = repeating_prompt();
        const kiln::SeqId s1 = engine.submit(first, options(SpecMode::Ngram, 24, kiln::SamplingParams::greedy()));
        while (engine.busy()) engine.step();
        const auto turn1 = engine.result(s1);
        EXPECT_GT(turn1.spec.drafted, 0) << family;
        std::vector<TokenId> second = first;
        second.insert(second.end(), turn1.tokens.begin(), turn1.tokens.end());
        for (TokenId t : {111, 222, 333}) second.push_back(t);
        const kiln::SeqId s2 = engine.submit(second, options(SpecMode::Ngram, 24, kiln::SamplingParams::greedy()));
        while (engine.busy()) engine.step();
        const auto turn2 = engine.result(s2);
        EXPECT_GT(turn2.reused_tokens, static_cast<int>(first.size())) << family << ": the first turn's reply is reused";

        kiln::Session cold(model, {.n_ctx = 256});
        expect_same(cold.generate(second, options(SpecMode::Off, 24, kiln::SamplingParams::greedy())), turn2, family + " second turn");
    }
}

}  // namespace
