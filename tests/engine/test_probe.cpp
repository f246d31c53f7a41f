// kiln::Probe on the real models: its candidates are the Context's logits, its
// layer statistics are those of l_out, and its attention weights — recomputed
// from the Q and K rows the hook gives — reproduce the forward pass's own
// attention output (kqv_out = sum of weight x V over the positions) for every
// layer and head, up to the f16 rounding of the KV cache.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>

#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/probe.h"
#include "support/test_support.h"

namespace {

using kiln::TokenId;

struct Captured {
    std::vector<std::vector<float>> v;         // per layer: Vcur rows of every position [nv, n_pos]
    std::vector<std::vector<float>> kqv_last;  // per layer: kqv_out of the last row
    std::vector<std::vector<float>> l_out_last;
};

// A plain Context over the same tokens, its hook keeping V, kqv_out and l_out.
Captured capture(std::shared_ptr<const kiln::Model> model, const std::vector<TokenId>& tokens, std::vector<float>& logits) {
    Captured c;
    const size_t n_layer = static_cast<size_t>(model->n_layer());
    c.v.resize(n_layer);
    c.kqv_last.resize(n_layer);
    c.l_out_last.resize(n_layer);
    kiln::ContextOptions co;
    co.n_ctx = 256;
    kiln::Context ctx(model, co);
    ctx.set_tensor_hook([&](const char* name, int il, const float* data, int64_t per_row, int64_t rows) {
        if (il < 0) return;
        const size_t l = static_cast<size_t>(il);
        if (std::strcmp(name, "Vcur") == 0) c.v[l].insert(c.v[l].end(), data, data + per_row * rows);
        if (std::strcmp(name, "kqv_out") == 0) c.kqv_last[l].assign(data + (rows - 1) * per_row, data + rows * per_row);
        if (std::strcmp(name, "l_out") == 0) c.l_out_last[l].assign(data + (rows - 1) * per_row, data + rows * per_row);
    });
    ctx.decode(tokens);
    logits.assign(ctx.last_logits().begin(), ctx.last_logits().end());
    return c;
}

void check_model(const std::string& path) {
    auto model = kiln::Model::load(path);
    const std::vector<TokenId> prompt = model->tokenizer().encode("The capital of France is Paris, and the capital of Italy is");
    kiln::ProbeOptions po;
    po.n_ctx = 256;
    po.top_k = 5;
    po.layer_stats = true;
    po.attention_stats = true;
    po.attention_top = 1000;  // every position: the weights can be summed
    kiln::Probe probe(model, po);
    const kiln::ProbeStep step = probe.feed(prompt);
    std::vector<float> logits;
    const Captured c = capture(model, prompt, logits);

    // Candidates: the Context's logits, bit for bit, best first.
    ASSERT_EQ(step.candidates.size(), 5u);
    const TokenId argmax = static_cast<TokenId>(std::max_element(logits.begin(), logits.end()) - logits.begin());
    EXPECT_EQ(step.candidates[0].id, argmax);
    for (const auto& cand : step.candidates) EXPECT_EQ(cand.logit, logits[static_cast<size_t>(cand.id)]);
    EXPECT_EQ(step.n_past, static_cast<int64_t>(prompt.size()));

    const int64_t n_pos = step.n_past;
    ASSERT_EQ(step.layers.size(), static_cast<size_t>(model->n_layer()));
    ASSERT_EQ(step.heads.size(), static_cast<size_t>(model->n_layer()));
    double worst = 0;
    for (size_t l = 0; l < step.heads.size(); ++l) {
        // Layer statistics: those of l_out's last row.
        const std::vector<float>& x = c.l_out_last[l];
        double sq = 0;
        for (float v : x) sq += static_cast<double>(v) * v;
        EXPECT_NEAR(step.layers[l].norm, std::sqrt(sq), 1e-9 * std::sqrt(sq)) << "layer " << l;
        EXPECT_EQ(step.layers[l].max, *std::max_element(x.begin(), x.end()));
        EXPECT_EQ(step.layers[l].min, *std::min_element(x.begin(), x.end()));

        const size_t n_head = step.heads[l].size();
        const size_t nv = c.v[l].size() / static_cast<size_t>(n_pos);
        const size_t dv = c.kqv_last[l].size() / n_head;
        const size_t n_head_kv = nv / dv;
        const size_t group = n_head / n_head_kv;
        float vmax = 0;
        for (float v : c.v[l]) vmax = std::max(vmax, std::fabs(v));
        for (size_t h = 0; h < n_head; ++h) {
            const kiln::HeadStats& hs = step.heads[l][h];
            ASSERT_EQ(static_cast<int64_t>(hs.top.size()), step.kv_visible[l]);
            double wsum = 0, entropy = 0;
            std::vector<double> out(dv);
            for (const auto& [pos, w] : hs.top) {
                ASSERT_GE(pos, 0);
                ASSERT_LT(pos, n_pos);
                wsum += w;
                if (w > 0) entropy -= w * std::log2(w);
                const float* v = c.v[l].data() + static_cast<size_t>(pos) * nv + (h / group) * dv;
                for (size_t d = 0; d < dv; ++d) out[d] += w * v[d];
            }
            EXPECT_NEAR(wsum, 1.0, 1e-9);
            EXPECT_NEAR(hs.entropy, entropy, 1e-9);
            for (size_t i = 1; i < hs.top.size(); ++i) EXPECT_GE(hs.top[i - 1].second, hs.top[i].second);
            for (size_t d = 0; d < dv; ++d)
                worst = std::max(worst, std::fabs(out[d] - c.kqv_last[l][h * dv + d]) / vmax);
        }
    }
    // The forward pass reads f16 keys and values from its cache: the weights
    // recomputed in double from the f32 rows give its output to well within 1%.
    EXPECT_LT(worst, 5e-3) << path;
    std::printf("%s: attention output from the probe's weights within %.2e of kqv_out (relative to max |V|)\n", path.c_str(), worst);

    // Greedy steps continue from the same state; a step past the context is refused
    // and leaves the sequence as it was.
    const TokenId one[] = {step.candidates[0].id};
    const kiln::ProbeStep next = probe.feed(one);
    EXPECT_EQ(next.n_past, n_pos + 1);
    std::vector<TokenId> too_many(static_cast<size_t>(po.n_ctx), one[0]);
    try {
        probe.feed(too_many);
        ADD_FAILURE() << "a feed past the context was accepted";
    } catch (const kiln::Error& e) {
        EXPECT_EQ(e.kind(), kiln::ErrorKind::ResourceExhausted);
    }
    EXPECT_EQ(probe.n_past(), n_pos + 1);
}

}  // namespace

TEST(Probe, SmolLM2AttentionAndLayerStatistics) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    check_model(kiln::test::smollm2_path());
}

// Gemma 3: grouped KV heads (4 query heads on 1), QK-norm, sliding layers.
TEST(Probe, Gemma3AttentionAndLayerStatistics) {
    KILN_REQUIRE_MODEL(kiln::test::gemma3_path());
    check_model(kiln::test::gemma3_path());
}

TEST(Probe, StatisticsOffGivesCandidatesOnly) {
    KILN_REQUIRE_MODEL(kiln::test::smollm2_path());
    auto model = kiln::Model::load(kiln::test::smollm2_path());
    kiln::ProbeOptions po;
    po.n_ctx = 64;
    kiln::Probe probe(model, po);
    const std::vector<TokenId> prompt = model->tokenizer().encode("Hello");
    const kiln::ProbeStep s = probe.feed(prompt);
    EXPECT_TRUE(s.layers.empty());
    EXPECT_TRUE(s.heads.empty());
    EXPECT_EQ(s.candidates.size(), 10u);
    EXPECT_EQ(s.kv_visible.size(), static_cast<size_t>(model->n_layer()));
    EXPECT_THROW(probe.feed({}), kiln::Error);
}
