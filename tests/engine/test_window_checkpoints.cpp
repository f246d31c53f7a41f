// Checkpoints of sliding-window rings (and, through the same policy, of
// recurrent states): a rollback or a copy past what a ring still holds restores
// the nearest checkpoint at or before the kept position, and evaluating the rest
// from there gives logits bit-identical to a cold run of the same history; a
// restore that falls short says why (checkpoint too early, no checkpoint,
// evicted). On tiny gemma3 (window 8), tiny hybrids, and Gemma 3 270M.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "cache/kv_cache.h"
#include "kiln/context.h"
#include "kiln/engine.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

std::shared_ptr<const kiln::Model> load_tiny(const std::string& family) {
    static std::map<std::string, std::shared_ptr<const kiln::Model>> models;
    auto& m = models[family];
    if (!m) {
        const std::string path = kiln::test::temp_dir() + "/ckpt-tiny-" + family + ".gguf";
        kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), path);
        m = kiln::Model::load(path);
    }
    return m;
}

std::vector<int32_t> tokens_for(int seed, int n, int n_vocab) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(seed + 1);
    for (auto& v : t) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        v = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(std::min(n_vocab, 30000)));
    }
    return t;
}

bool same(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Evaluates t[from, to) on seq, outputs at every row; returns their logits.
std::vector<float> eval(kiln::Context& ctx, const std::vector<int32_t>& t, int from, int to, kiln::SeqId seq = 0) {
    kiln::Batch b;
    for (int i = from; i < to; ++i) b.add(t[static_cast<size_t>(i)], i, seq, true);
    ctx.decode(b);
    std::vector<float> out;
    for (int i = 0; i < to - from; ++i) {
        auto l = ctx.logits(i);
        out.insert(out.end(), l.begin(), l.end());
    }
    return out;
}

class WindowCheckpoints : public ::testing::Test {
protected:
    void SetUp() override { KILN_REQUIRE_MODEL(kiln::test::smollm2_path()); }
};

}  // namespace

TEST_F(WindowCheckpoints, RollbackPastTheRingRestoresACheckpointBitIdentical) {
    // Window 8, batch 4: rings of 11 cells, so 80 positions wrap them many times.
    auto model = load_tiny("gemma3");
    const size_t nv = static_cast<size_t>(model->n_vocab());
    auto t = tokens_for(7, 80, model->n_vocab());
    kiln::Context cold(model, {.n_ctx = 128, .n_batch = 4});
    const std::vector<float> want = eval(cold, t, 0, 80);

    kiln::Context ctx(model, {.n_ctx = 128, .n_seq_max = 2, .n_batch = 4});
    const std::vector<int64_t> starts = {20, 40};
    ctx.seq_plan_checkpoints(0, starts, 80);
    EXPECT_EQ(ctx.seq_planned_checkpoints(0), (std::vector<int64_t>{20, 40, 79, 80}));
    eval(ctx, t, 0, 80);
    // Within the ring: exact, no checkpoint needed.
    EXPECT_EQ(ctx.seq_rollback(0, 78), 78);
    EXPECT_EQ(ctx.last_shortfall(), "");
    eval(ctx, t, 78, 80);
    // Past it: the checkpoint at 40.
    EXPECT_EQ(ctx.seq_rollback(0, 45), 40);
    EXPECT_EQ(ctx.last_shortfall(), "checkpoint too early");
    std::vector<float> got = eval(ctx, t, 40, 80);
    for (size_t i = 0; i < 40; ++i)
        EXPECT_TRUE(same(std::span<const float>(got.data() + i * nv, nv), std::span<const float>(want.data() + (40 + i) * nv, nv)))
            << "position " << 40 + i;
    // Another sequence takes a prefix from a checkpoint of this one.
    EXPECT_EQ(ctx.seq_copy(0, 1, 30), 20);
    EXPECT_EQ(ctx.last_shortfall(), "checkpoint too early");
    got = eval(ctx, t, 20, 40, 1);
    for (size_t i = 0; i < 20; ++i)
        EXPECT_TRUE(same(std::span<const float>(got.data() + i * nv, nv), std::span<const float>(want.data() + (20 + i) * nv, nv)))
            << "copied, position " << 20 + i;
    // Before the first checkpoint: everything again.
    EXPECT_EQ(ctx.seq_rollback(0, 15), 0);
    EXPECT_EQ(ctx.last_shortfall(), "no checkpoint");
}

// The cache on its own: a window-4 ring of 4 cells (batch 1), three checkpoint
// slots. Rows hold their position, so a restore shows which rows came back.
TEST(KvCacheCheckpoints, TheLeastRecentlyUsedIsEvictedAndRestoresSayWhy) {
    const std::vector<kiln::KvLayerShape> layers = {{.n_head_kv = 1, .head_dim_k = 32, .head_dim_v = 32, .window = 4},
                                                    {.n_head_kv = 1, .head_dim_k = 32, .head_dim_v = 32}};
    kiln::KvCache kv(layers, {.type = kiln::KvType::F32, .n_seq = 1, .n_ctx = 64, .n_batch_max = 1, .n_checkpoints = 3});
    EXPECT_TRUE(kv.keeps_checkpoints());
    auto write = [&](int64_t from, int64_t to) {
        for (int64_t p = from; p < to; ++p) {
            std::vector<float> row(32, static_cast<float>(p));
            for (int il = 0; il < 2; ++il) kv.store(il, 0, p, row.data(), row.data());
            if (p + 1 == 10 || p + 1 == 20 || p + 1 == 30 || p + 1 == 40) kv.checkpoint(0, p + 1);
        }
    };
    auto row_is = [&](int64_t p) { return *reinterpret_cast<const float*>(kv.k_row(0, 0, p)) == static_cast<float>(p); };
    write(0, 41);
    EXPECT_EQ(kv.checkpoints(0), (std::vector<int64_t>{20, 30, 40}));  // 10 was evicted
    EXPECT_EQ(kv.rollback(0, 40, 41), 40);                             // the ring still holds it
    EXPECT_EQ(kv.last_shortfall(), kiln::Shortfall::None);
    EXPECT_EQ(kv.rollback(0, 35, 40), 30);
    EXPECT_EQ(kv.last_shortfall(), kiln::Shortfall::CheckpointTooEarly);
    for (int64_t p = 27; p < 30; ++p) EXPECT_TRUE(row_is(p)) << p;
    EXPECT_EQ(kv.checkpoints(0), (std::vector<int64_t>{20, 30}));  // 40 lay in the dropped future
    write(30, 41);
    EXPECT_EQ(kv.rollback(0, 15, 41), 0);
    EXPECT_EQ(kv.last_shortfall(), kiln::Shortfall::Evicted);
    write(0, 12);
    EXPECT_EQ(kv.rollback(0, 5, 12), 0);
    EXPECT_EQ(kv.last_shortfall(), kiln::Shortfall::NoCheckpoint);
}

// The engine: a prompt that diverges inside its third message re-evaluates from
// that message's start (a checkpoint the first prompt left there), and what it
// generates is what a cold engine generates; the result says what was reused
// and why not more. Sliding-window and hybrid (recurrent) tiny models.
TEST_F(WindowCheckpoints, EngineEditedMessageRestartsAtItsStart) {
    for (const char* family : {"gemma3", "qwen35", "nemotron_h"}) {
        auto model = load_tiny(family);
        auto a = tokens_for(9, 300, model->n_vocab());
        std::vector<int32_t> edited(a.begin(), a.begin() + 250);
        auto tail = tokens_for(10, 40, model->n_vocab());
        edited.insert(edited.end(), tail.begin(), tail.end());
        kiln::GenerateOptions o;
        o.max_tokens = 6;
        o.ignore_eos = true;
        o.sampling.temperature = 0;
        o.spec.mode = kiln::SpecMode::Off;
        o.message_starts = {100, 200, 240};
        kiln::Engine engine(model, {.n_ctx = 512, .n_batch = 32});
        auto run = [&](kiln::Engine& e, const std::vector<int32_t>& prompt) {
            const kiln::SeqId s = e.submit(prompt, o);
            while (e.busy()) e.step();
            return e.result(s);
        };
        const kiln::GenerationResult first = run(engine, a);
        EXPECT_EQ(first.reused_tokens, 0) << family;
        const kiln::GenerationResult second = run(engine, edited);
        EXPECT_EQ(second.reusable_tokens, 250) << family;
        EXPECT_EQ(second.reused_tokens, 240) << family;
        EXPECT_EQ(second.reuse_shortfall, "checkpoint too early") << family;
        kiln::Engine cold(model, {.n_ctx = 512, .n_batch = 32});
        EXPECT_EQ(second.tokens, run(cold, edited).tokens) << family;
        // The same prompt again: its last token is evaluated again, from the
        // checkpoint just before it.
        const kiln::GenerationResult again = run(engine, edited);
        EXPECT_EQ(again.reused_tokens, static_cast<int>(edited.size()) - 1) << family;
        EXPECT_EQ(again.tokens, second.tokens) << family;
    }
}

TEST(WindowCheckpointsGemma3, RestoreEqualsColdPrefill) {
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    auto model = kiln::Model::load(kiln::test::gemma3_path());
    const size_t nv = static_cast<size_t>(model->n_vocab());
    auto t = tokens_for(11, 1400, 30000);
    auto last_rows = [&](kiln::Context& ctx, int from, int to) {
        kiln::Batch b;
        for (int i = from; i < to; ++i) b.add(t[static_cast<size_t>(i)], i, 0, i >= to - 3);
        ctx.decode(b);
        std::vector<float> out;
        for (int i = 0; i < 3; ++i) out.insert(out.end(), ctx.logits(i).begin(), ctx.logits(i).end());
        return out;
    };
    kiln::Context cold(model, {.n_ctx = 2048, .n_batch = 256});
    const std::vector<float> want = last_rows(cold, 0, 1400);
    kiln::Context ctx(model, {.n_ctx = 2048, .n_batch = 256});
    const std::vector<int64_t> starts = {300, 900};
    ctx.seq_plan_checkpoints(0, starts, 1400);
    last_rows(ctx, 0, 1400);
    // Window 512: position 1000 is long gone from the rings; 900's checkpoint is not.
    EXPECT_EQ(ctx.seq_rollback(0, 1000), 900);
    EXPECT_EQ(ctx.last_shortfall(), "checkpoint too early");
    const std::vector<float> got = last_rows(ctx, 900, 1400);
    ASSERT_EQ(got.size(), 3 * nv);
    EXPECT_TRUE(same(got, want));
}
