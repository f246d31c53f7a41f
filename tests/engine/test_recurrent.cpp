// Recurrent (state-space) models through the Context and the Engine: the tiny
// mamba / mamba2 models give bit-identical logits however a prompt is split into
// forward passes; rolling back or copying a sequence restores a checkpoint of
// its state (taken during prefill, just before and at each prompt's end) and the
// positions after it, evaluated again, equal a cold run of the whole history; a
// conversation's next turn reuses what it can through them.
#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "kiln/context.h"
#include "kiln/engine.h"
#include "kiln/error.h"
#include "kiln/gguf/writer.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

const std::vector<std::string> k_families = {"mamba2", "mamba", "lfm2", "qwen35", "nemotron_h", "qwen35moe", "qwen3next",
                                            "nemotron_h_moe", "granitehybrid", "falcon-h1", "jamba", "rwkv6", "rwkv7", "rwkv6qwen2"};

std::shared_ptr<const kiln::Model> load_tiny(const std::string& family) {
    static std::map<std::string, std::shared_ptr<const kiln::Model>> models;
    auto& m = models[family];
    if (!m) {
        const std::string path = kiln::test::temp_dir() + "/rec-tiny-" + family + ".gguf";
        kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), path);
        m = kiln::Model::load(path);
    }
    return m;
}

std::vector<int32_t> tokens(uint64_t seed, int n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (auto& v : t) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        v = static_cast<int32_t>(100 + (seed >> 33) % 30000);
    }
    return t;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

bool same(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// The logits of the history's last token, evaluated cold in one pass.
std::vector<float> cold_last(std::shared_ptr<const kiln::Model> m, const std::vector<int32_t>& history) {
    kiln::Context ctx(m, {.n_ctx = 512, .n_batch = 512});
    ctx.decode(history);
    return {ctx.last_logits().begin(), ctx.last_logits().end()};
}

class Recurrent : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override { KILN_REQUIRE_MODEL(kiln::test::smollm2_path()); }
};

}  // namespace

TEST_P(Recurrent, AnySplitOfThePromptGivesTheSameBits) {
    auto m = load_tiny(GetParam());
    const auto prompt = tokens(1, 70);
    std::vector<float> whole;
    {
        kiln::Context ctx(m, {.n_ctx = 512, .n_batch = 512});
        ctx.decode(prompt, &whole);
    }
    for (auto [n_batch, threads] : {std::pair{1, 2}, std::pair{7, 1}, std::pair{64, 2}}) {
        {
            kiln::Context ctx(m, {.n_ctx = 512, .n_batch = n_batch, .n_threads = threads});
            std::vector<float> got;
            ctx.decode(prompt, &got);
            ASSERT_EQ(got.size(), whole.size());
            EXPECT_EQ(std::memcmp(got.data(), whole.data(), got.size() * sizeof(float)), 0)
                << GetParam() << ": n_batch " << n_batch << ", " << threads << " threads";
        }
    }
    // Token by token through separate decode calls, and in uneven calls.
    kiln::Context one(m, {.n_ctx = 512, .n_batch = 64});
    const size_t nv = static_cast<size_t>(m->n_vocab());
    for (size_t i = 0; i < prompt.size();) {
        const size_t k = std::min<size_t>(prompt.size() - i, 1 + i % 5);
        one.decode(std::span<const int32_t>(prompt.data() + i, k));
        i += k;
        ASSERT_TRUE(same(one.last_logits(), std::span<const float>(whole.data() + (i - 1) * nv, nv))) << GetParam() << " position " << i - 1;
    }
}

TEST_P(Recurrent, SequencesInOneBatchEqualThemAlone) {
    auto m = load_tiny(GetParam());
    const auto a = tokens(2, 30), b = tokens(3, 11), a_next = tokens(4, 5), b_next = tokens(5, 5);
    kiln::Context ctx(m, {.n_ctx = 512, .n_seq_max = 3, .n_batch = 16});
    kiln::Batch batch;
    for (size_t i = 0; i < a.size(); ++i) batch.add(a[i], static_cast<int64_t>(i), 0, i + 1 == a.size());
    for (size_t i = 0; i < b.size(); ++i) batch.add(b[i], static_cast<int64_t>(i), 2, i + 1 == b.size());
    ctx.decode(batch);
    EXPECT_TRUE(same(ctx.logits(0), cold_last(m, a)));
    EXPECT_TRUE(same(ctx.logits(1), cold_last(m, b)));
    for (size_t k = 0; k < a_next.size(); ++k) {
        batch.clear();
        batch.add(b_next[k], ctx.seq_length(2), 2, true);
        batch.add(a_next[k], ctx.seq_length(0), 0, true);
        ctx.decode(batch);
        const auto ha = concat(a, std::vector<int32_t>(a_next.begin(), a_next.begin() + static_cast<std::ptrdiff_t>(k + 1)));
        const auto hb = concat(b, std::vector<int32_t>(b_next.begin(), b_next.begin() + static_cast<std::ptrdiff_t>(k + 1)));
        EXPECT_TRUE(same(ctx.logits(0), cold_last(m, hb))) << "step " << k;
        EXPECT_TRUE(same(ctx.logits(1), cold_last(m, ha))) << "step " << k;
    }
}

TEST_P(Recurrent, RollbackRestoresACheckpointAndRedecodingEqualsAColdRun) {
    auto m = load_tiny(GetParam());
    const auto prompt = tokens(6, 40), reply = tokens(7, 8), other = tokens(8, 6);
    kiln::Context ctx(m, {.n_ctx = 512, .n_batch = 16});
    ctx.decode(prompt);
    for (int32_t t : reply) ctx.decode(std::span<const int32_t>(&t, 1));
    ASSERT_EQ(ctx.n_past(), 48);
    // Inside the reply: back to the prompt's end (its checkpoint), not further.
    EXPECT_EQ(ctx.seq_rollback(0, 45), 40);
    ctx.decode(std::span<const int32_t>(reply.data(), 5));
    ctx.decode(other);
    EXPECT_TRUE(same(ctx.last_logits(), cold_last(m, concat(concat(prompt, {reply.begin(), reply.begin() + 5}), other))));
    // Just before the prompt's end: the checkpoint taken one token early.
    EXPECT_EQ(ctx.seq_rollback(0, 39), 39);
    ctx.decode(std::span<const int32_t>(&prompt[39], 1));
    EXPECT_TRUE(same(ctx.last_logits(), cold_last(m, prompt)));
    // Before any checkpoint: nothing is kept, and that is said.
    EXPECT_EQ(ctx.seq_rollback(0, 20), 0);
    EXPECT_EQ(ctx.n_past(), 0);
    ctx.decode(prompt);
    EXPECT_TRUE(same(ctx.last_logits(), cold_last(m, prompt)));
}

TEST_P(Recurrent, CopiedPrefixThenDivergingEqualsIndependentRuns) {
    auto m = load_tiny(GetParam());
    const auto prompt = tokens(9, 33), a = tokens(10, 4), b = tokens(11, 7);
    kiln::Context ctx(m, {.n_ctx = 512, .n_seq_max = 2, .n_batch = 64});
    kiln::Batch batch;
    for (size_t i = 0; i < prompt.size(); ++i) batch.add(prompt[i], static_cast<int64_t>(i), 0, false);
    ctx.decode(batch);
    // The whole of it (the live state), and one short of it (the early checkpoint).
    EXPECT_EQ(ctx.seq_copy(0, 1, 33), 33);
    EXPECT_EQ(ctx.seq_copy(0, 1, 32), 32);
    batch.clear();
    batch.add(prompt[32], 32, 1, false);
    for (size_t i = 0; i < b.size(); ++i) batch.add(b[i], static_cast<int64_t>(33 + i), 1, i + 1 == b.size());
    for (size_t i = 0; i < a.size(); ++i) batch.add(a[i], static_cast<int64_t>(33 + i), 0, i + 1 == a.size());
    ctx.decode(batch);
    EXPECT_TRUE(same(ctx.logits(0), cold_last(m, concat(prompt, b))));
    EXPECT_TRUE(same(ctx.logits(1), cold_last(m, concat(prompt, a))));
    EXPECT_EQ(ctx.seq_copy(0, 1, 10), 0);  // no checkpoint that early
}

TEST_P(Recurrent, ConversationTurnsReuseTheirPrefixAndMatchColdEngines) {
    auto m = load_tiny(GetParam());
    kiln::GenerateOptions go;
    go.max_tokens = 8;
    go.sampling = kiln::SamplingParams::greedy();
    go.ignore_eos = true;
    auto generate = [&](kiln::Engine& e, const std::vector<int32_t>& prompt) {
        const kiln::SeqId s = e.submit(prompt, go);
        while (e.busy()) e.step();
        return e.result(s);
    };
    kiln::Engine engine(m, {.n_ctx = 512, .n_seq_max = 1, .n_batch = 32});
    auto history = tokens(12, 45);
    for (int turn = 0; turn < 3; ++turn) {
        const auto r = generate(engine, history);
        kiln::Engine cold(m, {.n_ctx = 512, .n_seq_max = 1, .n_batch = 32});
        const auto want = generate(cold, history);
        EXPECT_EQ(r.tokens, want.tokens) << GetParam() << " turn " << turn;
        if (turn > 0) {
            // Everything the slot held: the previous prompt and reply (the reply's
            // last token was sampled, not evaluated).
            EXPECT_EQ(r.reused_tokens, static_cast<int>(history.size()) - 10 - 1) << "turn " << turn;
        }
        // The next turn: this reply, then a new message of 10 tokens.
        history = concat(concat(history, r.tokens), tokens(100 + static_cast<uint64_t>(turn), 10));
    }
    // Regenerating the last turn (the same prompt again) reuses all but its last token.
    const auto again = generate(engine, history);
    const auto again2 = generate(engine, history);
    EXPECT_EQ(again2.reused_tokens, static_cast<int>(history.size()) - 1);
    EXPECT_EQ(again.tokens, again2.tokens);
    // An edited last message (diverging after the previous reply) goes back to the previous prompt's end at most.
    auto edited = history;
    edited[edited.size() - 3] = 777;
    const auto r = generate(engine, edited);
    EXPECT_GE(r.reused_tokens, static_cast<int>(history.size()) - 10 - 8);
    EXPECT_LE(r.reused_tokens, static_cast<int>(edited.size()) - 3);
}

TEST_P(Recurrent, MemoryIsTheStatePerSequenceAndABudgetTooSmallSaysSo) {
    auto m = load_tiny(GetParam());
    kiln::Context ctx(m, {.n_ctx = 512, .n_seq_max = 2});
    // A recurrent model has no per-position memory; the hybrid lfm2 has its two
    // attention layers' f16 K and V (2 KV heads of 16).
    // (the qwen35 family: one attention layer, 2 KV heads of 32; nemotron_h, nemotron_h_moe and
    // granitehybrid, jamba: one, 2 KV heads of 16; falcon-h1: all three, beside their Mamba-2 mixers).
    const bool qwen35_like = GetParam() == "qwen35" || GetParam() == "qwen35moe" || GetParam() == "qwen3next";
    const uint64_t per_position = GetParam() == "lfm2"         ? 2u * 2 * 2 * 16 * 2
                                  : qwen35_like                ? 1u * 2 * 2 * 32 * 2
                                  : GetParam() == "nemotron_h" || GetParam() == "nemotron_h_moe" || GetParam() == "granitehybrid" ||
                                            GetParam() == "jamba"
                                      ? 1u * 2 * 2 * 16 * 2
                                  : GetParam() == "falcon-h1" ? 3u * 2 * 2 * 16 * 2
                                                               : 0u;
    EXPECT_EQ(ctx.kv_bytes_per_position(), per_position);
    EXPECT_GT(ctx.memory_bytes(), 0u);
    try {
        kiln::Context tiny(m, {.n_ctx = 512, .n_seq_max = 2, .memory_budget = 1024});
        FAIL() << "a 1 KiB budget cannot hold the recurrent state";
    } catch (const kiln::Error& e) {
        EXPECT_EQ(e.kind(), kiln::ErrorKind::ResourceExhausted) << e.what();
        EXPECT_NE(std::string(e.what()).find("recurrent state"), std::string::npos) << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(Tiny, Recurrent, ::testing::ValuesIn(k_families), [](const auto& info) {
    std::string name = info.param;  // falcon-h1 -> falcon_h1
    for (char& c : name)
        if (c == '-') c = '_';
    return name;
});

namespace {

// A tiny model rewritten: edited metadata, and tensors left out.
std::string tiny_variant(const std::string& family, const std::string& name, const std::function<void(kiln::gguf::Metadata&)>& edit,
                         const std::function<bool(const std::string&)>& keep) {
    const std::string base = kiln::test::temp_dir() + "/rec-variant-base-" + family + ".gguf";
    kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), base);
    kiln::gguf::File src = kiln::gguf::File::open(base);
    kiln::gguf::Writer w;
    w.metadata() = kiln::gguf::materialize_metadata(src);
    edit(w.metadata());
    for (const auto& t : src.tensors())
        if (keep(t.name)) w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
    const std::string path = kiln::test::temp_dir() + "/rec-variant-" + family + "-" + name + ".gguf";
    w.write(path);
    return path;
}

std::string mamba2_variant(const std::string& name, const std::function<void(kiln::gguf::Metadata&)>& edit,
                           const std::function<bool(const std::string&)>& keep) {
    return tiny_variant("mamba2", name, edit, keep);
}

std::string load_error(const std::string& path) {
    try {
        kiln::Model::load(path);
    } catch (const kiln::Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST(RecurrentFiles, BadMamba2FilesNameTheKeyOrTensor) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto keep_all = [](const std::string&) { return true; };
    auto no_edit = [](kiln::gguf::Metadata&) {};
    EXPECT_NE(load_error(mamba2_variant("no-norm", no_edit, [](const std::string& n) { return n != "blk.1.ssm_norm.weight"; }))
                  .find("blk.1.ssm_norm.weight"),
              std::string::npos);
    EXPECT_NE(load_error(mamba2_variant("groups", [](kiln::gguf::Metadata& md) { md.add("mamba2.ssm.group_count", kiln::gguf::Value::u32(3)); },
                                        keep_all))
                  .find("mamba2.ssm.group_count"),
              std::string::npos);
    EXPECT_NE(load_error(mamba2_variant("state", [](kiln::gguf::Metadata& md) { md.add("mamba2.ssm.state_size", kiln::gguf::Value::u32(16)); },
                                        keep_all))
                  .find("blk.0.ssm_conv1d.weight"),
              std::string::npos);
}

// The hybrid MoE families: a missing shared-expert gate, a dense layer where
// every layer has experts, qwen3next without its fused beta / alpha,
// multi-token-prediction layers, nemotron_h_moe without its selection bias or
// with latent projections, granitehybrid with an expansion factor other than 2,
// falcon-h1 without a layer's SSM projection, jamba without a B norm, rwkv6
// without its fused lerps or with one token shift, rwkv7 without a gate matrix,
// rwkv6qwen2 with two token shifts are errors that name the tensor or key.
TEST(RecurrentFiles, BadHybridExpertFilesNameTheKeyOrTensor) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto keep_all = [](const std::string&) { return true; };
    auto no_edit = [](kiln::gguf::Metadata&) {};
    auto expect_named = [](const std::string& error, const std::string& name) {
        EXPECT_NE(error.find(name), std::string::npos) << "error: " << error << "\nexpected it to name " << name;
    };
    expect_named(load_error(tiny_variant("qwen35moe", "no-shexp-gate", no_edit,
                                         [](const std::string& n) { return n != "blk.2.ffn_gate_inp_shexp.weight"; })),
                 "blk.2.ffn_gate_inp_shexp.weight");
    expect_named(load_error(tiny_variant("qwen35moe", "no-router", no_edit,
                                         [](const std::string& n) { return n.rfind("blk.1.ffn_", 0) != 0; })),
                 "blk.1.ffn_gate_inp.weight");
    expect_named(load_error(tiny_variant("qwen3next", "no-ba", no_edit, [](const std::string& n) { return n != "blk.0.ssm_ba.weight"; })),
                 "blk.0.ssm_ba.weight");
    expect_named(load_error(tiny_variant("qwen3next", "mtp",
                                         [](kiln::gguf::Metadata& md) { md.add("qwen3next.nextn_predict_layers", kiln::gguf::Value::u32(1)); },
                                         keep_all)),
                 "qwen3next.nextn_predict_layers");
    expect_named(load_error(tiny_variant("nemotron_h_moe", "no-bias", no_edit,
                                         [](const std::string& n) { return n != "blk.3.exp_probs_b.bias"; })),
                 "blk.3.exp_probs_b.bias");
    expect_named(load_error(tiny_variant("nemotron_h_moe", "latent",
                                         [](kiln::gguf::Metadata& md) { md.add("nemotron_h_moe.moe_latent_size", kiln::gguf::Value::u32(32)); },
                                         keep_all)),
                 "nemotron_h_moe.moe_latent_size");
    expect_named(load_error(tiny_variant("granitehybrid", "inner",
                                         [](kiln::gguf::Metadata& md) { md.add("granitehybrid.ssm.inner_size", kiln::gguf::Value::u32(64)); },
                                         keep_all)),
                 "granitehybrid.ssm.inner_size");
    expect_named(load_error(tiny_variant("falcon-h1", "no-ssm-in", no_edit, [](const std::string& n) { return n != "blk.1.ssm_in.weight"; })),
                 "blk.1.ssm_in.weight");
    expect_named(load_error(tiny_variant("jamba", "no-b-norm", no_edit, [](const std::string& n) { return n != "blk.3.ssm_b_norm.weight"; })),
                 "blk.3.ssm_b_norm.weight");
    expect_named(load_error(tiny_variant("rwkv6", "no-lerp", no_edit,
                                         [](const std::string& n) { return n != "blk.1.time_mix_lerp_fused.weight"; })),
                 "blk.1.time_mix_lerp_fused.weight");
    expect_named(load_error(tiny_variant("rwkv6", "shift",
                                         [](kiln::gguf::Metadata& md) { md.add("rwkv6.token_shift_count", kiln::gguf::Value::u32(1)); },
                                         keep_all)),
                 "rwkv6.token_shift_count");
    expect_named(load_error(tiny_variant("rwkv7", "no-gate", no_edit, [](const std::string& n) { return n != "blk.2.time_mix_g2.weight"; })),
                 "blk.2.time_mix_g2.weight");
    expect_named(load_error(tiny_variant("rwkv6qwen2", "shift2",
                                         [](kiln::gguf::Metadata& md) { md.add("rwkv6qwen2.token_shift_count", kiln::gguf::Value::u32(2)); },
                                         keep_all)),
                 "rwkv6qwen2.token_shift_count");
}
