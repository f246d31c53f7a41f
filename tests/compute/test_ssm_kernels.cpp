// The state-space recurrences (compute/ssm.h): the scalar references against
// the formulas they implement written out plainly (in double, within a float
// rounding bound), and every compiled SIMD level of the Mamba-2 scan bit-identical
// to the reference over state sizes with and without partial vectors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <new>
#include <random>
#include <vector>

#include "compute/huge_pages.h"
#include "compute/kernels/kernels.h"
#include "compute/ssm.h"

namespace {

using namespace kiln;

// 64-byte aligned floats (allocate_huge's alignment at the least): the SIMD levels
// stream a state so aligned (ssm_delta's `stream`).
using AlignedFloats = HugeFloats;

std::vector<float> random_floats(std::mt19937& rng, size_t n, float lo, float hi) {
    std::uniform_real_distribution<float> d(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = d(rng);
    return v;
}

TEST(SsmKernels, ConvolutionIsTheCausalWindowSumAndShiftsTheState) {
    std::mt19937 rng(1);
    const int d_conv = 4, nc = 5, steps = 7;
    auto w = random_floats(rng, d_conv * nc, -1, 1), b = random_floats(rng, nc, -1, 1);
    std::vector<float> state((d_conv - 1) * nc, 0.0f), y(nc);
    std::vector<std::vector<float>> xs;
    for (int t = 0; t < steps; ++t) {
        xs.push_back(random_floats(rng, nc, -2, 2));
        ssm::conv_step(state.data(), xs.back().data(), w.data(), b.data(), y.data(), d_conv, 0, nc);
        for (int c = 0; c < nc; ++c) {
            double want = b[c];
            for (int j = 0; j < d_conv; ++j) {
                const int src = t - (d_conv - 1) + j;  // inputs before the first are zero
                if (src >= 0) want += static_cast<double>(xs[src][c]) * w[c * d_conv + j];
            }
            EXPECT_NEAR(y[c], want, 1e-5) << "step " << t << " channel " << c;
        }
    }
}

TEST(SsmKernels, Mamba2ScanFollowsItsRecurrence) {
    std::mt19937 rng(2);
    const int ds = 19, hd = 3, nh = 4, ng = 2;
    std::vector<float> state(ds * hd * nh, 0.0f);
    std::vector<double> ref(state.size(), 0.0);
    auto A = random_floats(rng, nh, -3, -0.1f);
    std::vector<float> y(hd * nh);
    for (int t = 0; t < 5; ++t) {
        auto x = random_floats(rng, hd * nh, -1, 1), dt = random_floats(rng, nh, -3, 1);
        auto B = random_floats(rng, ds * ng, -1, 1), C = random_floats(rng, ds * ng, -1, 1);
        ssm::scan2_step(state.data(), x.data(), dt.data(), A.data(), B.data(), C.data(), y.data(), ds, hd, nh, ng, 0, nh);
        for (int h = 0; h < nh; ++h) {
            const double sp = std::log1p(std::exp(static_cast<double>(dt[h])));
            const double dA = std::exp(sp * A[h]);
            const int g = h / (nh / ng);
            for (int d = 0; d < hd; ++d) {
                double sum = 0;
                for (int i = 0; i < ds; ++i) {
                    double& s = ref[(h * hd + d) * ds + i];
                    s = s * dA + B[g * ds + i] * (x[h * hd + d] * sp);
                    sum += s * C[g * ds + i];
                }
                EXPECT_NEAR(y[h * hd + d], sum, 1e-4 * (1 + std::fabs(sum))) << "step " << t << " head " << h;
            }
        }
    }
}

TEST(SsmKernels, Mamba1ScanFollowsItsRecurrence) {
    std::mt19937 rng(3);
    const int ds = 16, di = 6;
    std::vector<float> state(ds * di, 0.0f);
    std::vector<double> ref(state.size(), 0.0);
    auto A = random_floats(rng, ds * di, -3, -0.1f);
    std::vector<float> y(di);
    for (int t = 0; t < 5; ++t) {
        auto x = random_floats(rng, di, -1, 1), dt = random_floats(rng, di, -3, 1);
        auto B = random_floats(rng, ds, -1, 1), C = random_floats(rng, ds, -1, 1);
        ssm::scan1_step(state.data(), x.data(), dt.data(), A.data(), B.data(), C.data(), y.data(), ds, 0, di);
        for (int c = 0; c < di; ++c) {
            const double sp = std::log1p(std::exp(static_cast<double>(dt[c])));
            double sum = 0;
            for (int i = 0; i < ds; ++i) {
                double& s = ref[c * ds + i];
                s = s * std::exp(sp * A[c * ds + i]) + B[i] * (x[c] * sp);
                sum += s * C[i];
            }
            EXPECT_NEAR(y[c], sum, 1e-4 * (1 + std::fabs(sum))) << "step " << t << " channel " << c;
        }
    }
}

TEST(SsmKernels, Mamba2ScanSimdLevelsAreBitIdenticalToTheReference) {
    std::vector<const KernelTable*> tables;
    for (Isa isa : {Isa::Avx2, Isa::Avx512})
        if (const KernelTable* t = kernel_table(isa)) tables.push_back(t);
    if (tables.empty()) GTEST_SKIP() << "no SIMD level on this CPU";
    std::mt19937 rng(4);
    for (int ds : {1, 7, 8, 15, 16, 17, 24, 64, 128, 131}) {
        const int hd = 3, nh = 6, ng = 3;
        auto A = random_floats(rng, nh, -3, -0.1f);
        std::vector<float> s_ref(ds * hd * nh, 0.0f);
        std::vector<std::vector<float>> s_simd(tables.size(), s_ref);
        for (int t = 0; t < 6; ++t) {
            auto x = random_floats(rng, hd * nh, -1, 1), dt = random_floats(rng, nh, -3, 25);
            auto B = random_floats(rng, ds * ng, -1, 1), C = random_floats(rng, ds * ng, -1, 1);
            std::vector<float> y_ref(hd * nh);
            ssm::scan2_step(s_ref.data(), x.data(), dt.data(), A.data(), B.data(), C.data(), y_ref.data(), ds, hd, nh, ng, 0, nh);
            for (size_t k = 0; k < tables.size(); ++k) {
                std::vector<float> y(hd * nh, -1.0f);
                // In two head ranges, as threads split them.
                tables[k]->ssm_scan2(s_simd[k].data(), x.data(), dt.data(), A.data(), B.data(), C.data(), y.data(), ds, hd, nh, ng, 0, 2);
                tables[k]->ssm_scan2(s_simd[k].data(), x.data(), dt.data(), A.data(), B.data(), C.data(), y.data(), ds, hd, nh, ng, 2, nh);
                EXPECT_EQ(std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)), 0)
                    << isa_name(tables[k]->isa) << " d_state " << ds << " step " << t;
                EXPECT_EQ(std::memcmp(s_simd[k].data(), s_ref.data(), s_ref.size() * sizeof(float)), 0)
                    << isa_name(tables[k]->isa) << " d_state " << ds << " step " << t;
            }
        }
    }
}

TEST(SsmKernels, DeltaRuleFollowsItsRecurrence) {
    std::mt19937 rng(5);
    const int d = 12, nk = 2, nv = 4;
    std::vector<float> state(d * d * nv, 0.0f);
    std::vector<double> S(state.size(), 0.0);  // S[h][i][j]
    std::vector<float> y(d * nv);
    for (int t = 0; t < 5; ++t) {
        auto q = random_floats(rng, d * nk, -0.3f, 0.3f), k = random_floats(rng, d * nk, -0.3f, 0.3f);
        auto v = random_floats(rng, d * nv, -1, 1), g = random_floats(rng, nv, -2, 0), beta = random_floats(rng, nv, 0, 1);
        ssm::delta_step(state.data(), q.data(), k.data(), v.data(), g.data(), beta.data(), y.data(), d, nk, 0, nv, nullptr, nullptr, nullptr,
                        false);
        for (int h = 0; h < nv; ++h) {
            const float* kh = k.data() + (h % nk) * d;
            const float* qh = q.data() + (h % nk) * d;
            double* s = S.data() + h * d * d;
            for (int x = 0; x < d * d; ++x) s[x] *= std::exp(static_cast<double>(g[h]));
            for (int j = 0; j < d; ++j) {
                double sk = 0;
                for (int i = 0; i < d; ++i) sk += s[i * d + j] * kh[i];
                const double delta = (v[h * d + j] - sk) * beta[h];
                for (int i = 0; i < d; ++i) s[i * d + j] += kh[i] * delta;
            }
            for (int j = 0; j < d; ++j) {
                double o = 0;
                for (int i = 0; i < d; ++i) o += s[i * d + j] * qh[i];
                o /= std::sqrt(static_cast<double>(d));
                EXPECT_NEAR(y[h * d + j], o, 1e-5 * (1 + std::fabs(o))) << "step " << t << " head " << h << " j " << j;
            }
        }
    }
}

TEST(SsmKernels, DeltaRuleSimdLevelsAreBitIdenticalToTheReference) {
    std::vector<const KernelTable*> tables;
    for (Isa isa : {Isa::Avx2, Isa::Avx512})
        if (const KernelTable* t = kernel_table(isa)) tables.push_back(t);
    if (tables.empty()) GTEST_SKIP() << "no SIMD level on this CPU";
    tables.insert(tables.begin(), &scalar_kernels());  // the reference's own `from` path too
    std::mt19937 rng(6);
    for (int d : {1, 5, 8, 13, 16, 23, 32, 64, 128, 256, 272}) {
        const int nk = 2, nv = 4;
        std::vector<float> s_ref(d * d * nv, 0.0f);
        // Per table, a state written plainly and one streamed (aligned, so the
        // levels' non-temporal stores run where d allows them).
        std::vector<AlignedFloats> s_simd(2 * tables.size(), AlignedFloats(s_ref.begin(), s_ref.end()));
        for (int t = 0; t < 4; ++t) {
            auto q = random_floats(rng, d * nk, -0.5f, 0.5f), k = random_floats(rng, d * nk, -0.5f, 0.5f);
            auto v = random_floats(rng, d * nv, -1, 1), g = random_floats(rng, nv, -2, 0), beta = random_floats(rng, nv, 0, 1);
            std::vector<float> y_ref(d * nv), deltas_ref(d * nv);
            ssm::delta_step(s_ref.data(), q.data(), k.data(), v.data(), g.data(), beta.data(), y_ref.data(), d, nk, 0, nv,
                            deltas_ref.data(), nullptr, nullptr, false);
            for (size_t i = 0; i < s_simd.size(); ++i) {
                const KernelTable* table = tables[i / 2];
                const bool stream = i % 2 == 1;
                const std::string what = std::string(isa_name(table->isa)) + " d " + std::to_string(d) + (stream ? " streamed" : "");
                std::vector<float> y(d * nv, -1.0f), deltas(d * nv, -1.0f);
                // Odd steps from another buffer (`from`), the state's old contents overwritten unread.
                std::vector<float> before;
                if (t % 2) {
                    before.assign(s_simd[i].begin(), s_simd[i].end());
                    std::fill(s_simd[i].begin(), s_simd[i].end(), -7.0f);
                }
                float* from = t % 2 ? before.data() : nullptr;
                table->ssm_delta(s_simd[i].data(), q.data(), k.data(), v.data(), g.data(), beta.data(), y.data(), d, nk, 0, 1,
                                 deltas.data(), from, nullptr, stream);
                table->ssm_delta(s_simd[i].data(), q.data(), k.data(), v.data(), g.data(), beta.data(), y.data(), d, nk, 1, nv,
                                 deltas.data(), from, nullptr, stream);
                EXPECT_EQ(std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)), 0) << what;
                EXPECT_EQ(std::memcmp(deltas.data(), deltas_ref.data(), deltas.size() * sizeof(float)), 0) << what;
                EXPECT_EQ(std::memcmp(s_simd[i].data(), s_ref.data(), s_ref.size() * sizeof(float)), 0) << what;
            }
        }
    }
}

// The deferred rollback (src/model/ssm_deferred.cpp) redoes positions' state
// updates from the δ delta_step recorded: delta_apply of n positions on the state
// before them must give the state n delta_step calls leave, bit for bit, at
// every level (head sizes on and off the vector widths, a head range split in
// two calls, 1 to 20 positions: more than one block of 16), the positions'
// records laid out one after another as the mixer keeps them.
TEST(SsmKernels, DeltaApplyRedoesTheStepsFromTheirRecordedDeltas) {
    std::vector<const KernelTable*> tables = {&scalar_kernels()};
    for (Isa isa : {Isa::Avx2, Isa::Avx512})
        if (const KernelTable* t = kernel_table(isa)) tables.push_back(t);
    std::mt19937 rng(12);
    for (int d : {1, 5, 8, 13, 16, 23, 32, 64, 128}) {
        for (int n_rows : {1, 3, 20}) {
            const int nk = 2, nv = 4;
            // A record per position: k [d, nk] | g [nv] | δ [d, nv].
            const int64_t stride = d * nk + nv + d * nv;
            std::vector<float> recs(static_cast<size_t>(stride * n_rows));
            const auto s0 = random_floats(rng, static_cast<size_t>(d * d * nv), -1, 1);
            std::vector<float> s_step = s0;
            for (int t = 0; t < n_rows; ++t) {
                auto q = random_floats(rng, d * nk, -0.5f, 0.5f), k = random_floats(rng, d * nk, -0.5f, 0.5f);
                auto v = random_floats(rng, d * nv, -1, 1), g = random_floats(rng, nv, -2, 0), beta = random_floats(rng, nv, 0, 1);
                float* r = recs.data() + t * stride;
                std::copy(k.begin(), k.end(), r);
                std::copy(g.begin(), g.end(), r + d * nk);
                std::vector<float> y(d * nv);
                ssm::delta_step(s_step.data(), q.data(), k.data(), v.data(), g.data(), beta.data(), y.data(), d, nk, 0, nv,
                                r + d * nk + nv, nullptr, nullptr, false);
            }
            for (const KernelTable* t : tables) {
                std::vector<float> s = s0;
                const float* r = recs.data();
                t->ssm_delta_apply(s.data(), r, r + d * nk, r + d * nk + nv, stride, n_rows, d, nk, 0, 1);
                t->ssm_delta_apply(s.data(), r, r + d * nk, r + d * nk + nv, stride, n_rows, d, nk, 1, nv);
                EXPECT_EQ(std::memcmp(s.data(), s_step.data(), s.size() * sizeof(float)), 0)
                    << isa_name(t->isa) << " d " << d << " rows " << n_rows;
            }
        }
    }
}

// The next step's fused apply (src/model/ssm_deferred.cpp): ssm_delta with
// pending positions must leave what delta_apply of them then a plain step leaves,
// bit for bit, at every level — in place, and from another buffer (`from`, which
// then holds the state brought up to date, the step's result going to `state`) —
// for head sizes on and off the vector widths, a head range split in two calls,
// 1 to 20 pending positions (past 16: applied in a pass of their own).
TEST(SsmKernels, DeltaStepAppliesPendingRowsFirst) {
    std::vector<const KernelTable*> tables = {&scalar_kernels()};
    for (Isa isa : {Isa::Avx2, Isa::Avx512})
        if (const KernelTable* t = kernel_table(isa)) tables.push_back(t);
    std::mt19937 rng(21);
    for (int d : {1, 5, 8, 13, 16, 23, 32, 64, 128, 136}) {
        for (int n_pend : {1, 3, 16, 20}) {
            const int nk = 2, nv = 4;
            const int64_t stride = d * nk + nv + d * nv;  // k | g | δ, as the mixer's records
            std::vector<float> recs(static_cast<size_t>(stride * n_pend));
            for (float& x : recs) x = std::uniform_real_distribution<float>(-0.5f, 0.5f)(rng);
            for (int p = 0; p < n_pend; ++p)
                for (int h = 0; h < nv; ++h) recs[static_cast<size_t>(p * stride + d * nk + h)] = -0.1f * static_cast<float>(h + 1);
            const ssm::DeltaRows pending{recs.data(), recs.data() + d * nk, recs.data() + d * nk + nv, stride, n_pend};
            const auto s0 = random_floats(rng, static_cast<size_t>(d * d * nv), -1, 1);
            auto q = random_floats(rng, d * nk, -0.5f, 0.5f), k = random_floats(rng, d * nk, -0.5f, 0.5f);
            auto v = random_floats(rng, d * nv, -1, 1), g = random_floats(rng, nv, -2, 0), beta = random_floats(rng, nv, 0, 1);
            // The reference: the positions applied, then the step.
            std::vector<float> applied = s0, want = s0, y_ref(d * nv), deltas_ref(d * nv);
            ssm::delta_apply(applied.data(), pending.k, pending.g, pending.deltas, stride, n_pend, d, nk, 0, nv);
            want = applied;
            ssm::delta_step(want.data(), q.data(), k.data(), v.data(), g.data(), beta.data(), y_ref.data(), d, nk, 0, nv,
                            deltas_ref.data(), nullptr, nullptr, false);
            for (const KernelTable* t : tables) {
                for (int variant = 0; variant < 4; ++variant) {
                    const bool from_other = variant % 2 == 1, stream = variant >= 2;
                    const std::string what = std::string(isa_name(t->isa)) + " d " + std::to_string(d) + " pending " +
                                             std::to_string(n_pend) + (from_other ? " from another buffer" : " in place") +
                                             (stream ? ", streamed" : "");
                    AlignedFloats s(s0.size(), -7.0f);
                    if (!from_other) s.assign(s0.begin(), s0.end());
                    std::vector<float> src = s0;
                    std::vector<float> y(d * nv, -1.0f), deltas(d * nv, -1.0f);
                    float* from = from_other ? src.data() : nullptr;
                    t->ssm_delta(s.data(), q.data(), k.data(), v.data(), g.data(), beta.data(), y.data(), d, nk, 0, 1, deltas.data(), from,
                                 &pending, stream);
                    t->ssm_delta(s.data(), q.data(), k.data(), v.data(), g.data(), beta.data(), y.data(), d, nk, 1, nv, deltas.data(), from,
                                 &pending, stream);
                    EXPECT_EQ(std::memcmp(s.data(), want.data(), s.size() * sizeof(float)), 0) << what << ": the state";
                    if (from_other) EXPECT_EQ(std::memcmp(src.data(), applied.data(), src.size() * sizeof(float)), 0) << what << ": from";
                    EXPECT_EQ(std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)), 0) << what << ": y";
                    EXPECT_EQ(std::memcmp(deltas.data(), deltas_ref.data(), deltas.size() * sizeof(float)), 0) << what << ": δ";
                }
            }
        }
    }
}

// RWKV-6's and RWKV-7's WKV and the gated linear attention: every SIMD level gives the
// reference's bits, state and output, for head sizes on and off the vector
// widths, a head range split in two calls, over several steps.
TEST(SsmKernels, RwkvSimdLevelsAreBitIdenticalToTheReference) {
    std::vector<const KernelTable*> tables;
    for (Isa isa : {Isa::Avx2, Isa::Avx512})
        if (const KernelTable* t = kernel_table(isa)) tables.push_back(t);
    if (tables.empty()) GTEST_SKIP() << "no SIMD level on this CPU";
    std::mt19937 rng(9);
    for (int kind : {6, 0, 7}) {  // wkv6, the gated linear attention, wkv7
        const bool gla = kind == 0;
        for (int d : {1, 5, 8, 13, 16, 23, 32, 40, 47, 64}) {
            const int nh = 3;
            const float scale = 1.0f / std::sqrt(static_cast<float>(d));
            std::vector<float> s_ref(d * d * nh, 0.0f);
            std::vector<std::vector<float>> s_simd(tables.size(), s_ref);
            const auto u = random_floats(rng, d * nh, -0.5f, 0.5f);
            for (int t = 0; t < 4; ++t) {
                auto k = random_floats(rng, d * nh, -1, 1), v = random_floats(rng, d * nh, -1, 1);
                auto r = random_floats(rng, d * nh, -1, 1), w = random_floats(rng, d * nh, 0.3f, 0.95f);
                auto a = random_floats(rng, d * nh, -0.5f, 0.5f), b = random_floats(rng, d * nh, -0.5f, 0.5f);
                std::vector<float> y_ref(d * nh);
                if (kind == 7)
                    ssm::wkv7_step(s_ref.data(), r.data(), w.data(), k.data(), v.data(), a.data(), b.data(), y_ref.data(), d, 0, nh);
                else if (gla)
                    ssm::gla_step(s_ref.data(), k.data(), v.data(), r.data(), w.data(), y_ref.data(), d, scale, 0, nh);
                else
                    ssm::wkv6_step(s_ref.data(), k.data(), v.data(), r.data(), u.data(), w.data(), y_ref.data(), d, 0, nh);
                for (size_t i = 0; i < tables.size(); ++i) {
                    std::vector<float> y(d * nh, -1.0f);
                    for (auto [h0, h1] : {std::pair{0, 1}, std::pair{1, nh}}) {
                        if (kind == 7)
                            tables[i]->rwkv_wkv7(s_simd[i].data(), r.data(), w.data(), k.data(), v.data(), a.data(), b.data(), y.data(), d,
                                                 h0, h1);
                        else if (gla)
                            tables[i]->rwkv_gla(s_simd[i].data(), k.data(), v.data(), r.data(), w.data(), y.data(), d, scale, h0, h1);
                        else
                            tables[i]->rwkv_wkv6(s_simd[i].data(), k.data(), v.data(), r.data(), u.data(), w.data(), y.data(), d, h0, h1);
                    }
                    const std::string what = std::string(isa_name(tables[i]->isa)) + (kind == 7 ? " wkv7" : gla ? " gla" : " wkv6") +
                                             " d " + std::to_string(d);
                    EXPECT_EQ(std::memcmp(y.data(), y_ref.data(), y.size() * sizeof(float)), 0) << what;
                    EXPECT_EQ(std::memcmp(s_simd[i].data(), s_ref.data(), s_ref.size() * sizeof(float)), 0) << what;
                }
            }
        }
    }
}

}  // namespace

// RWKV-6's WKV (the reference of KernelTable::rwkv_wkv6): y = r · (u ⊙ kv + S), then
// S = w ⊙ S + kv, per head, against the formula in double over several steps;
// heads outside [h0, h1) are left alone.
TEST(SsmKernels, Wkv6FollowsItsRecurrence) {
    std::mt19937 rng(11);
    const int d = 8, nh = 3;
    std::vector<float> state(d * d * nh, 0.0f);
    std::vector<double> S(state.size(), 0.0);  // S[h][i][j]
    std::vector<float> y(d * nh, -7.0f);
    const auto u = random_floats(rng, d * nh, -0.5f, 0.5f);
    for (int t = 0; t < 6; ++t) {
        auto k = random_floats(rng, d * nh, -1, 1), v = random_floats(rng, d * nh, -1, 1);
        auto r = random_floats(rng, d * nh, -1, 1), w = random_floats(rng, d * nh, 0.3f, 0.95f);
        ssm::wkv6_step(state.data(), k.data(), v.data(), r.data(), u.data(), w.data(), y.data(), d, 0, 2);
        for (int h = 0; h < nh; ++h) {
            double* s = S.data() + h * d * d;
            for (int j = 0; j < d; ++j) {
                if (h == 2) {
                    EXPECT_EQ(y[h * d + j], -7.0f) << "head outside the range written";
                    continue;
                }
                double o = 0;
                for (int i = 0; i < d; ++i) o += r[h * d + i] * (u[h * d + i] * k[h * d + i] * v[h * d + j] + s[i * d + j]);
                EXPECT_NEAR(y[h * d + j], o, 1e-5 * (1 + std::fabs(o))) << "step " << t << " head " << h << " j " << j;
            }
            if (h == 2) continue;
            for (int i = 0; i < d; ++i)
                for (int j = 0; j < d; ++j) s[i * d + j] = w[h * d + i] * s[i * d + j] + k[h * d + i] * v[h * d + j];
        }
    }
    for (int x = 2 * d * d; x < 3 * d * d; ++x) EXPECT_EQ(state[x], 0.0f);
}

// RWKV-7's WKV (scalar only): per value index i, sa = a · S[i], S[i] = S[i] ⊙ w +
// v[i] k + sa b, y[i] = S[i] · r, against the formula in double over several steps.
TEST(SsmKernels, Wkv7FollowsItsRecurrence) {
    std::mt19937 rng(13);
    const int d = 8, nh = 2;
    std::vector<float> state(d * d * nh, 0.0f);
    std::vector<double> S(state.size(), 0.0);  // S[h][i][j]
    std::vector<float> y(d * nh);
    for (int t = 0; t < 6; ++t) {
        auto r = random_floats(rng, d * nh, -1, 1), w = random_floats(rng, d * nh, 0.3f, 0.95f);
        auto k = random_floats(rng, d * nh, -1, 1), v = random_floats(rng, d * nh, -1, 1);
        auto a = random_floats(rng, d * nh, -0.3f, 0.3f), b = random_floats(rng, d * nh, -0.3f, 0.3f);
        ssm::wkv7_step(state.data(), r.data(), w.data(), k.data(), v.data(), a.data(), b.data(), y.data(), d, 0, nh);
        for (int h = 0; h < nh; ++h) {
            double* s = S.data() + h * d * d;
            const int o = h * d;
            for (int i = 0; i < d; ++i) {
                double sa = 0;
                for (int j = 0; j < d; ++j) sa += a[o + j] * s[i * d + j];
                double out = 0;
                for (int j = 0; j < d; ++j) {
                    s[i * d + j] = s[i * d + j] * w[o + j] + static_cast<double>(v[o + i]) * k[o + j] + sa * b[o + j];
                    out += s[i * d + j] * r[o + j];
                }
                EXPECT_NEAR(y[o + i], out, 1e-5 * (1 + std::fabs(out))) << "step " << t << " head " << h << " i " << i;
            }
        }
    }
}

// Gated linear attention (RWKV6Qwen2; scalar only): S = g ⊙ S + k vᵀ, then
// y = (q · scale)ᵀ S, per head, against the formula in double over several steps.
TEST(SsmKernels, GatedLinearAttentionFollowsItsRecurrence) {
    std::mt19937 rng(17);
    const int d = 8, nh = 2;
    const float scale = 0.35f;
    std::vector<float> state(d * d * nh, 0.0f);
    std::vector<double> S(state.size(), 0.0);  // S[h][i][j]
    std::vector<float> y(d * nh);
    for (int t = 0; t < 6; ++t) {
        auto k = random_floats(rng, d * nh, -1, 1), v = random_floats(rng, d * nh, -1, 1);
        auto q = random_floats(rng, d * nh, -1, 1), g = random_floats(rng, d * nh, 0.3f, 0.95f);
        ssm::gla_step(state.data(), k.data(), v.data(), q.data(), g.data(), y.data(), d, scale, 0, nh);
        for (int h = 0; h < nh; ++h) {
            double* s = S.data() + h * d * d;
            const int o = h * d;
            for (int i = 0; i < d; ++i)
                for (int j = 0; j < d; ++j) s[i * d + j] = s[i * d + j] * g[o + i] + static_cast<double>(k[o + i]) * v[o + j];
            for (int j = 0; j < d; ++j) {
                double out = 0;
                for (int i = 0; i < d; ++i) out += s[i * d + j] * (q[o + i] * scale);
                EXPECT_NEAR(y[o + j], out, 1e-5 * (1 + std::fabs(out))) << "step " << t << " head " << h << " j " << j;
            }
        }
    }
}
