// Many sequences in one Context: a token's logits are bit-identical whether it
// is evaluated alone or in a batch shared with other sequences (N = 1, 2, 7, 16;
// threads 1 and 2; f16 and q8_0 caches; sliding windows); rollback and prefix
// copies equal straight runs; a full memory budget is a clear resource error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <tuple>

#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/gguf/writer.h"
#include "model/moe.h"
#include "support/test_support.h"
#include "support/tiny_models.h"

namespace {

std::shared_ptr<const kiln::Model> load_tiny(const std::string& family) {
    static std::map<std::string, std::shared_ptr<const kiln::Model>> models;
    auto& m = models[family];
    if (!m) {
        const std::string path = kiln::test::temp_dir() + "/seq-tiny-" + family + ".gguf";
        kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), path);
        m = kiln::Model::load(path);
    }
    return m;
}

std::shared_ptr<const kiln::Model> smollm2() {
    static std::shared_ptr<const kiln::Model> m = kiln::Model::load(kiln::test::smollm2_path());
    return m;
}

std::vector<int32_t> tokens_for(int seq, int n, int n_vocab) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    uint64_t x = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(seq + 1);
    for (auto& v : t) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        v = static_cast<int32_t>((x >> 33) % static_cast<uint64_t>(std::min(n_vocab, 30000)));
    }
    return t;
}

bool same(std::span<const float> a, std::span<const float> b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Sequence s: a prompt of 3 + 5 * s tokens (different lengths), then `steps`
// tokens decoded one at a time. Its logits at every decoded position, evaluated
// alone in a one-sequence context.
// (One thread: the batched runs on 1 and 2 threads must both equal it.)
std::vector<std::vector<float>> alone(std::shared_ptr<const kiln::Model> model, int s, int steps, const std::string& kv_type,
                                      bool stream = false) {
    static std::map<std::tuple<const kiln::Model*, int, int, std::string, bool>, std::vector<std::vector<float>>> memo;
    auto& m = memo[{model.get(), s, steps, kv_type, stream}];
    if (!m.empty()) return m;
    const int threads = 1;
    const int n_vocab = model->n_vocab();
    auto prompt = tokens_for(s, 3 + 5 * s, n_vocab);
    auto next = tokens_for(100 + s, steps, n_vocab);
    kiln::Context ctx(model, {.n_ctx = 160, .n_batch = 64, .kv_type = kv_type, .flash_attn = stream, .n_threads = threads});
    std::vector<std::vector<float>> out;
    ctx.decode(prompt);
    out.emplace_back(ctx.last_logits().begin(), ctx.last_logits().end());
    for (int32_t t : next) {
        ctx.decode(std::span<const int32_t>(&t, 1));
        out.emplace_back(ctx.last_logits().begin(), ctx.last_logits().end());
    }
    m = out;
    return out;
}

// The same N sequences together: sequence s joins at step s (its whole prompt
// shares the batch with the others' decode tokens), then all decode together.
void check_together(std::shared_ptr<const kiln::Model> model, int n_seq, int threads, const std::string& kv_type, int steps,
                    bool stream = false) {
    const int n_vocab = model->n_vocab();
    kiln::Context ctx(model,
                      {.n_ctx = 160, .n_seq_max = n_seq, .n_batch = 512, .kv_type = kv_type, .flash_attn = stream, .n_threads = threads});
    std::vector<std::vector<int32_t>> prompt, next;
    std::vector<int> done(static_cast<size_t>(n_seq), -1);  // -1: not started; k: outputs produced
    std::vector<std::vector<std::vector<float>>> got(static_cast<size_t>(n_seq));
    for (int s = 0; s < n_seq; ++s) {
        prompt.push_back(tokens_for(s, 3 + 5 * s, n_vocab));
        next.push_back(tokens_for(100 + s, steps, n_vocab));
    }
    kiln::Batch b;
    for (int step = 0;; ++step) {
        b.clear();
        std::vector<int> owner;
        for (int s = 0; s < n_seq; ++s) {
            auto& d = done[static_cast<size_t>(s)];
            if (d < 0 && s <= step) {
                const auto& p = prompt[static_cast<size_t>(s)];
                for (size_t i = 0; i < p.size(); ++i) b.add(p[i], static_cast<int64_t>(i), s, i + 1 == p.size());
                owner.push_back(s);
                d = 0;
            } else if (d >= 1 && d <= steps) {
                b.add(next[static_cast<size_t>(s)][static_cast<size_t>(d - 1)], ctx.seq_length(s), s, true);
                owner.push_back(s);
            }
        }
        if (b.empty()) break;
        ctx.decode(b);
        ASSERT_EQ(ctx.n_outputs(), static_cast<int>(owner.size()));
        for (size_t i = 0; i < owner.size(); ++i) {
            auto l = ctx.logits(static_cast<int>(i));
            got[static_cast<size_t>(owner[i])].emplace_back(l.begin(), l.end());
            ++done[static_cast<size_t>(owner[i])];
        }
    }
    for (int s = 0; s < n_seq; ++s) {
        auto ref = alone(model, s, steps, kv_type, stream);
        ASSERT_EQ(got[static_cast<size_t>(s)].size(), ref.size());
        for (size_t k = 0; k < ref.size(); ++k)
            EXPECT_TRUE(same(got[static_cast<size_t>(s)][k], ref[k]))
                << "sequence " << s << " of " << n_seq << ", output " << k << ", " << threads << " threads, " << kv_type;
    }
}

class Sequences : public ::testing::Test {
protected:
    void SetUp() override { KILN_REQUIRE_MODEL(kiln::test::smollm2_path()); }
};

}  // namespace

TEST_F(Sequences, SmolLM2BatchedEqualsAloneBitExact) {
    for (int n : {1, 2, 7, 16})
        for (int threads : {1, 2}) check_together(smollm2(), n, threads, "f16", 3);
}

TEST_F(Sequences, TinyFamiliesBatchedEqualsAlone) {
    // gemma3: window-8 sliding layers whose per-sequence rings wrap; q8_0: the
    // per-sequence conversion of cached rows.
    for (const char* family : {"gemma3", "gemma2", "qwen3"}) check_together(load_tiny(family), 7, 2, "f16", 12);
    check_together(load_tiny("gemma3"), 5, 2, "q8_0", 12);
}

TEST_F(Sequences, ExpertModelsBatchedEqualsAlone) {
    // A token's experts depend on the token only; the batch groups every
    // sequence's tokens by expert, so a token shares its experts' products with
    // whatever else the batch routed there: its logits must not change.
    for (const char* family : {"qwen3moe", "qwen2moe"})
        for (int threads : {1, 2}) check_together(load_tiny(family), 6, threads, "f16", 6);
    // llama4: every (token, slot) row scaled by its weight before the experts;
    // gemma4@moe: the dense branch and the router's own input; glm4moe: groups, bias, shared experts.
    for (const char* family : {"llama4", "gemma4@moe", "glm4moe"}) check_together(load_tiny(family), 6, 2, "f16", 6);
}

TEST_F(Sequences, LatentAttentionBatchedEqualsAlone) {
    // deepseek2: each sequence's latent rows are its own cache rows, read as K and
    // (their first kv_lora values) as V; q8_0: the latent rows converted per sequence.
    check_together(load_tiny("deepseek2"), 5, 2, "f16", 6);
    check_together(load_tiny("deepseek2@v3"), 4, 2, "q8_0", 4);
}

// Streaming attention keeps every sequence's result its own too: f16 and q8_0
// caches, a sliding window, latent attention.
TEST_F(Sequences, StreamingAttentionBatchedEqualsAlone) {
    for (int threads : {1, 2}) check_together(smollm2(), 7, threads, "f16", 3, true);
    check_together(smollm2(), 5, 2, "q8_0", 3, true);
    check_together(load_tiny("gemma3"), 5, 2, "f16", 12, true);
    check_together(load_tiny("deepseek2"), 4, 2, "f16", 6, true);
}

TEST_F(Sequences, SmolLM2Q8CacheBatchedEqualsAlone) {
    check_together(smollm2(), 7, 2, "q8_0", 3);
}

TEST_F(Sequences, RollbackThenRedecodeEqualsStraightRun) {
    auto model = load_tiny("llama");
    auto t = tokens_for(1, 40, model->n_vocab());
    kiln::Context straight(model, {.n_ctx = 64});
    std::vector<float> want;
    straight.decode(t, &want);
    kiln::Context ctx(model, {.n_ctx = 64, .n_seq_max = 2});
    kiln::Batch b;
    for (int i = 0; i < 40; ++i) b.add(i < 30 ? t[static_cast<size_t>(i)] : 7, i, 1, false);  // 10 wrong tokens at the end
    ctx.decode(b);
    EXPECT_EQ(ctx.seq_rollback(1, 30), 30);
    EXPECT_EQ(ctx.seq_length(1), 30);
    b.clear();
    for (int i = 30; i < 40; ++i) b.add(t[static_cast<size_t>(i)], i, 1, true);
    ctx.decode(b);
    const size_t nv = static_cast<size_t>(model->n_vocab());
    for (int i = 0; i < 10; ++i)
        EXPECT_TRUE(same(ctx.logits(i), std::span<const float>(want.data() + (30 + static_cast<size_t>(i)) * nv, nv))) << i;
}

TEST_F(Sequences, SlidingWindowRollbackPastTheRingGivesZero) {
    // Tiny gemma3: window 8, batch 4 -> rings of 11 cells. After 40 positions a
    // rollback to 20 needs positions 13.. which the ring has overwritten.
    auto model = load_tiny("gemma3");
    kiln::Context ctx(model, {.n_ctx = 64, .n_batch = 4});
    auto t = tokens_for(2, 40, model->n_vocab());
    ctx.decode(t);
    EXPECT_EQ(ctx.seq_rollback(0, 38), 38);  // within the ring
    EXPECT_EQ(ctx.seq_rollback(0, 20), 0);   // past it: everything is evaluated again
    EXPECT_EQ(ctx.seq_length(0), 0);
}

TEST_F(Sequences, CopiedPrefixThenDivergingEqualsIndependentRuns) {
    for (const char* family : {"llama", "gemma3"}) {
        auto model = load_tiny(family);
        const int nv = model->n_vocab();
        auto shared = tokens_for(3, 30, nv);
        auto tail_a = tokens_for(4, 9, nv), tail_b = tokens_for(5, 9, nv);
        auto run_alone = [&](const std::vector<int32_t>& tail) {
            kiln::Context c(model, {.n_ctx = 64});
            std::vector<int32_t> all = shared;
            all.insert(all.end(), tail.begin(), tail.end());
            std::vector<float> l;
            c.decode(all, &l);
            return std::vector<float>(l.end() - static_cast<std::ptrdiff_t>(tail.size()) * nv, l.end());
        };
        kiln::Context ctx(model, {.n_ctx = 64, .n_seq_max = 3, .n_batch = 16});
        kiln::Batch b;
        for (int i = 0; i < 30; ++i) b.add(shared[static_cast<size_t>(i)], i, 0, false);
        ctx.decode(b);
        ASSERT_EQ(ctx.seq_copy(0, 2, 30), 30) << family;
        b.clear();
        for (int i = 0; i < 9; ++i) {
            b.add(tail_a[static_cast<size_t>(i)], 30 + i, 0, true);
            b.add(tail_b[static_cast<size_t>(i)], 30 + i, 2, true);
        }
        ctx.decode(b);
        auto want_a = run_alone(tail_a), want_b = run_alone(tail_b);
        for (int i = 0; i < 9; ++i) {
            const size_t o = static_cast<size_t>(i) * static_cast<size_t>(nv);
            EXPECT_TRUE(same(ctx.logits(2 * i), std::span<const float>(want_a.data() + o, static_cast<size_t>(nv)))) << family << " a " << i;
            EXPECT_TRUE(same(ctx.logits(2 * i + 1), std::span<const float>(want_b.data() + o, static_cast<size_t>(nv)))) << family << " b " << i;
        }
    }
}

TEST_F(Sequences, MemoryBudgetShortensTheContextAndAFullSequenceIsResourceExhausted) {
    auto model = load_tiny("llama");
    kiln::Context full(model, {.n_ctx = 256, .n_seq_max = 4});
    const uint64_t per_position = full.kv_bytes_per_position();
    // A budget for about 4 x 32 positions (the layers' buffers are 64-byte aligned).
    kiln::Context ctx(model, {.n_ctx = 256, .n_seq_max = 4, .memory_budget = per_position * 4 * 32 + 64});
    const int n = ctx.n_ctx();
    EXPECT_GE(n, 31);
    EXPECT_LE(n, 33);
    EXPECT_LE(ctx.memory_bytes(), per_position * 4 * 32 + 64);
    auto t = tokens_for(6, n + 1, model->n_vocab());
    try {
        ctx.decode(t);
        FAIL() << n + 1 << " tokens fit " << n << " positions";
    } catch (const kiln::Error& e) {
        EXPECT_EQ(e.kind(), kiln::ErrorKind::ResourceExhausted) << e.what();
        EXPECT_NE(std::string(e.what()).find(std::to_string(n)), std::string::npos) << e.what();
    }
    kiln::Batch b;
    for (int i = 0; i <= n; ++i) b.add(t[static_cast<size_t>(i)], i, 3, false);
    try {
        ctx.decode(b);
        FAIL();
    } catch (const kiln::Error& e) {
        EXPECT_EQ(e.kind(), kiln::ErrorKind::ResourceExhausted);
        EXPECT_NE(std::string(e.what()).find("sequence 3"), std::string::npos) << e.what();
    }
    try {
        kiln::Context tiny(model, {.n_ctx = 256, .n_seq_max = 4, .memory_budget = 16});
        FAIL();
    } catch (const kiln::Error& e) {
        EXPECT_EQ(e.kind(), kiln::ErrorKind::ResourceExhausted);
        EXPECT_NE(std::string(e.what()).find("too small"), std::string::npos) << e.what();
    }
}

TEST_F(Sequences, BadBatchesAreClearErrors) {
    auto model = load_tiny("llama");
    kiln::Context ctx(model, {.n_ctx = 32, .n_seq_max = 2});
    kiln::Batch b;
    b.add(1, 1, 0);  // sequence 0 is at position 0
    EXPECT_THROW(ctx.decode(b), kiln::Error);
    b.clear();
    b.add(1, 0, 5);
    EXPECT_THROW(ctx.decode(b), kiln::Error);
    b.clear();
    b.add(model->n_vocab(), 0, 0);
    EXPECT_THROW(ctx.decode(b), kiln::Error);
    EXPECT_EQ(ctx.seq_length(0), 0);  // nothing was evaluated
    EXPECT_THROW(ctx.logits(0), kiln::Error);
}

TEST_F(Sequences, EmbeddingEntriesEqualTheirTokens) {
    // An entry given as its token's embedding row gives the token's logits.
    auto model = load_tiny("llama");  // no embedding scale
    kiln::Context ctx(model, {.n_ctx = 32, .n_seq_max = 2, .hidden_states = true});
    auto t = tokens_for(7, 5, model->n_vocab());
    kiln::Batch b;
    for (int i = 0; i < 5; ++i) b.add(t[static_cast<size_t>(i)], i, 0, i == 4);
    ctx.decode(b);
    std::vector<float> want(ctx.logits(0).begin(), ctx.logits(0).end());
    EXPECT_EQ(ctx.hidden(0).size(), static_cast<size_t>(model->n_embd()));
    kiln::Context ref(model, {.n_ctx = 32, .hidden_states = true});
    // The embedding rows, read back through the tensor hook on inp_embd.
    std::vector<float> rows;
    ref.set_tensor_hook([&](const char* name, int, const float* d, int64_t per_row, int64_t n) {
        if (std::string(name) == "inp_embd") rows.assign(d, d + per_row * n);
    });
    ref.decode(t);
    ASSERT_EQ(rows.size(), static_cast<size_t>(5 * model->n_embd()));
    b.clear();
    for (int i = 0; i < 5; ++i)
        b.add_embedding(std::span<const float>(rows.data() + static_cast<size_t>(i * model->n_embd()), static_cast<size_t>(model->n_embd())), i, 1,
                        i == 4);
    ctx.decode(b);
    EXPECT_TRUE(same(ctx.logits(0), want));
}

TEST(ErrorKinds, AnUnsupportedArchitectureSaysSo) {
    kiln::gguf::Writer w;
    w.metadata().add("general.architecture", kiln::gguf::Value::string("olmo"));  // known, not runnable yet
    const std::string path = kiln::test::temp_dir() + "/olmo-front.gguf";
    w.write(path);
    try {
        kiln::Model::load(path);
        FAIL();
    } catch (const kiln::Error& e) {
        EXPECT_EQ(e.kind(), kiln::ErrorKind::Unsupported) << e.what();
        EXPECT_EQ(kiln::error_kind_name(e.kind()), "unsupported");
    }
}

namespace {

// The tiny llama rewritten: extra metadata, and tensors left out.
std::shared_ptr<const kiln::Model> tiny_variant(const std::string& name, const std::function<void(kiln::gguf::Metadata&)>& edit,
                                                const std::function<bool(const std::string&)>& keep) {
    const std::string base = kiln::test::temp_dir() + "/variant-base.gguf";
    kiln::test::write_tiny_model("llama", kiln::test::smollm2_path(), base);
    kiln::gguf::File src = kiln::gguf::File::open(base);
    kiln::gguf::Writer w;
    w.metadata() = kiln::gguf::materialize_metadata(src);
    edit(w.metadata());
    for (const auto& t : src.tensors())
        if (keep(t.name)) w.add_tensor_view(t.name, t.type, t.shape, src.tensor_data(t), t.bytes);
    const std::string path = kiln::test::temp_dir() + "/variant-" + name + ".gguf";
    w.write(path);
    return kiln::Model::load(path);
}

std::vector<float> prompt_logits(std::shared_ptr<const kiln::Model> m, const std::vector<int32_t>& t, int n_batch = 64) {
    kiln::Context ctx(m, {.n_ctx = 64, .n_batch = n_batch});
    std::vector<float> l;
    if (n_batch > 1) {
        ctx.decode(t, &l);
        return l;
    }
    for (int32_t x : t) {
        ctx.decode(std::span<const int32_t>(&x, 1));
        l.insert(l.end(), ctx.last_logits().begin(), ctx.last_logits().end());
    }
    return l;
}

}  // namespace

TEST_F(Sequences, NonCausalModelSeesTheWholeSequenceInOneBatch) {
    auto model = tiny_variant(
        "noncausal", [](kiln::gguf::Metadata& md) { md.add("llama.attention.causal", kiln::gguf::Value::boolean(false)); },
        [](const std::string&) { return true; });
    const int nv = model->n_vocab();
    auto a = tokens_for(8, 6, nv), b = a;
    b[5] = (b[5] + 1) % nv;
    auto la = prompt_logits(model, a), lb = prompt_logits(model, b);
    // Row 0 sees position 5 in a non-causal model.
    EXPECT_FALSE(same(std::span<const float>(la.data(), static_cast<size_t>(nv)), std::span<const float>(lb.data(), static_cast<size_t>(nv))));
    // Beside another sequence in one batch: the same bits.
    kiln::Context ctx(model, {.n_ctx = 64, .n_seq_max = 2});
    kiln::Batch batch;
    for (int i = 0; i < 6; ++i) {
        batch.add(b[static_cast<size_t>(i)], i, 0, false);
        batch.add(a[static_cast<size_t>(i)], i, 1, true);
    }
    ctx.decode(batch);
    for (int i = 0; i < 6; ++i)
        EXPECT_TRUE(same(ctx.logits(i), std::span<const float>(la.data() + static_cast<size_t>(i * nv), static_cast<size_t>(nv)))) << i;
    // A sequence is evaluated whole: continuing it is an error, not a silent causal step.
    batch.clear();
    batch.add(a[0], 6, 1, true);
    EXPECT_THROW(ctx.decode(batch), kiln::Error);
    // The causal model does not see the future.
    auto causal = load_tiny("llama");
    auto ca = prompt_logits(causal, a), cb = prompt_logits(causal, b);
    EXPECT_TRUE(same(std::span<const float>(ca.data(), static_cast<size_t>(nv)), std::span<const float>(cb.data(), static_cast<size_t>(nv))));
}

TEST_F(Sequences, PlainFfnFromAFileWithoutGateRunsAndIsBatchInvariant) {
    auto plain = tiny_variant(
        "plain-ffn", [](kiln::gguf::Metadata&) {},
        [](const std::string& name) { return name.find("ffn_gate") == std::string::npos; });
    auto gated = load_tiny("llama");
    auto t = tokens_for(9, 12, plain->n_vocab());
    auto chunked = prompt_logits(plain, t), one_by_one = prompt_logits(plain, t, 1);
    EXPECT_TRUE(same(chunked, one_by_one));
    for (float x : chunked) ASSERT_TRUE(std::isfinite(x));
    EXPECT_FALSE(same(chunked, prompt_logits(gated, t)));  // the gate is really gone
}

namespace {

// Experts beyond the expert memory budget stay in the file's mapping and are read
// in place (panels repacked per task): the logits are the repacked model's, bit
// for bit, in prefill and decode; the load notes name the layers and bytes.
TEST(ExpertsInPlace, LogitsEqualRepackedExperts) {
    for (const char* family : {"qwen3moe", "gpt-oss", "qwen2moe"}) {
        SCOPED_TRACE(family);
        const std::string path = kiln::test::temp_dir() + "/in-place-tiny-" + family + ".gguf";
        kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), path);
        auto packed = kiln::Model::load(path);
        // Budgets: none (every expert layer in place), and layer 0's experts (layer 1 in place).
        uint64_t layer0 = 0;
        const kiln::gguf::File file = kiln::gguf::File::open(path);
        for (const auto& ti : file.tensors())
            if (ti.name.starts_with("blk.0.") && ti.name.ends_with("_exps.weight")) layer0 += ti.bytes;
        for (uint64_t budget : {uint64_t{0}, layer0}) {
            kiln::LoadOptions lo;
            lo.expert_memory_budget = budget;
            auto in_place = kiln::Model::load(path, lo);
            bool noted = false;
            const std::string first = budget == 0 ? "(blk.0" : "(blk.1)";
            for (const std::string& n : in_place->load_notes())
                if (n.starts_with("experts read in place from the file") && n.find(first) != std::string::npos) noted = true;
            EXPECT_TRUE(noted) << "no load note names the in-place experts";
            const auto t = tokens_for(3, 12, packed->n_vocab());
            std::vector<float> want, got;
            kiln::Context a(packed, {.n_ctx = 32}), b(in_place, {.n_ctx = 32});
            a.decode(std::span<const int32_t>(t.data(), 8), &want);  // prefill of 8
            b.decode(std::span<const int32_t>(t.data(), 8), &got);
            for (size_t i = 8; i < t.size(); ++i) {  // then decode steps
                std::vector<float> wa, ga;
                a.decode(std::span<const int32_t>(&t[i], 1), &wa);
                b.decode(std::span<const int32_t>(&t[i], 1), &ga);
                want.insert(want.end(), wa.begin(), wa.end());
                got.insert(got.end(), ga.begin(), ga.end());
            }
            ASSERT_EQ(want.size(), got.size());
            EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * sizeof(float)), 0);
        }
        // A budget that holds every expert leaves none in place.
        kiln::LoadOptions all;
        all.expert_memory_budget = uint64_t{1} << 40;
        const auto whole = kiln::Model::load(path, all);
        for (const std::string& n : whole->load_notes()) EXPECT_FALSE(n.starts_with("experts read in place")) << n;
    }
}

// A decode step runs each selected expert's gate / up -> activation -> down as one
// task (matmul_expert_chains): the logits are those of the two-region path, bit
// for bit, for every expert family with quantized experts (routing with shared
// experts, biases, scales, ungated ReLU² / GELU experts, sigmoid routers).
TEST(ExpertChains, DecodeBitsEqualTheTwoRegionPath) {
    for (const char* family : {"qwen3moe", "gpt-oss", "gpt-oss@mxfp4", "qwen2moe", "olmoe", "phimoe@long", "granitemoe@shared", "llama@mixtral",
                               "deepseek2@q4_k", "dots1@q4_k", "ernie4_5-moe@q4_k", "bailingmoe2@q4_k", "glm4moe@q8_0",
                               "hunyuan-moe@q8_0", "minimax-m2@q8_0", "gemma4@moe_q8_0", "nemotron_h_moe", "qwen35moe"}) {
        SCOPED_TRACE(family);
        const std::string path = kiln::test::temp_dir() + "/chains-tiny-" + family + ".gguf";
        kiln::test::write_tiny_model(family, kiln::test::smollm2_path(), path);
        auto model = kiln::Model::load(path);
        const auto t = tokens_for(5, 12, model->n_vocab());
        auto run = [&](bool chains) {
            kiln::set_expert_chains(chains);
            kiln::Context c(model, {.n_ctx = 32, .n_threads = 2});
            std::vector<float> all;
            c.decode(std::span<const int32_t>(t.data(), 8), &all);  // prefill: never chained
            for (size_t i = 8; i < t.size(); ++i) {
                std::vector<float> step;
                c.decode(std::span<const int32_t>(&t[i], 1), &step);
                all.insert(all.end(), step.begin(), step.end());
            }
            return all;
        };
        const auto two_regions = run(false);
        const uint64_t before = kiln::expert_chain_layers();
        const auto chained = run(true);
        kiln::set_expert_chains(true);
        EXPECT_GT(kiln::expert_chain_layers(), before) << "no decode step ran its experts as chains";
        ASSERT_EQ(two_regions.size(), chained.size());
        EXPECT_EQ(std::memcmp(two_regions.data(), chained.data(), chained.size() * sizeof(float)), 0);
    }
}

}  // namespace
