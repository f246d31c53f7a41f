// Scalar reference dot products: against the double-precision dot of the dequantized
// rows (with a bound derived from the accumulation order), against ggml's vec_dot on
// the same bytes (tests/golden/quant/vec_dot), and against their own stated order.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "kiln/quant.h"
#include "quant_fixtures.h"

namespace kiln::test {
namespace {

constexpr double k_u = 0x1p-24;  // unit roundoff of f32

// Byte offset of the f16 min scale in a block of each format with an additive min.
const std::map<GgmlType, size_t> k_min_field = {
    {GgmlType::Q4_1, 2}, {GgmlType::Q5_1, 2}, {GgmlType::Q2_K, 82}, {GgmlType::Q4_K, 2}, {GgmlType::Q5_K, 2}};

std::vector<float> dequantize(GgmlType t, const uint8_t* p, int64_t n) {
    std::vector<float> v(static_cast<size_t>(n));
    quant::dequantize_row(t, p, v.data(), n);
    return v;
}

struct Reference {
    double exact = 0;      // sum of dequantized w * dequantized a, in double
    double tolerance = 0;  // bound on |kiln - exact|
    double any_order = 0;  // bound on |x - exact| for a sum of the same products in any order
};

// The bound. Every f32 operation rounds with relative error <= u = 2^-24. With
// S = sum |a_i| (|scale part of w_i| + |min part of w_i|), kiln's per-block terms
// carry <= 4 roundings (d_w * d_a, the int -> float of isum, the product, the min
// subtraction) and the block-order sum adds one per block; the double reference's
// inputs carry <= 2 (dequantizing w and a). So |kiln - exact| <= (n_blocks + 6) u S,
// and (n_blocks + 8) u S is used. Float formats: 16 lanes of n / 16 additions plus 4
// fold steps, (n / 16 + 8) u S. Q4_1 / Q5_1 use the f16 s = d * sum(q) of their Q8_1
// activations, as ggml does: add sum over blocks |m_w| |s - d * sum(q)|.
Reference reference(GgmlType wt, GgmlType at, int64_t n, const uint8_t* w, const uint8_t* a) {
    const std::vector<float> wv = dequantize(wt, w, n), av = dequantize(at, a, n);
    std::vector<double> mag(wv.size());
    for (size_t i = 0; i < wv.size(); ++i) mag[i] = std::fabs(double(wv[i]));
    const GgmlTypeInfo& info = ggml_type_info(wt);
    if (auto it = k_min_field.find(wt); it != k_min_field.end()) {
        std::vector<uint8_t> no_min(w, w + ggml_row_bytes(wt, n));
        for (size_t b = 0; b < no_min.size() / info.block_bytes; ++b) {
            no_min[b * info.block_bytes + it->second] = 0;
            no_min[b * info.block_bytes + it->second + 1] = 0;
        }
        const std::vector<float> sp = dequantize(wt, no_min.data(), n);
        for (size_t i = 0; i < wv.size(); ++i) mag[i] = std::fabs(double(sp[i])) + std::fabs(double(wv[i]) - double(sp[i]));
    }
    Reference r;
    double s = 0;
    for (size_t i = 0; i < wv.size(); ++i) {
        r.exact += double(wv[i]) * double(av[i]);
        s += mag[i] * std::fabs(double(av[i]));
    }
    const double steps = info.quantized ? double(n / info.block_size) : double(n);
    r.tolerance = (steps + 8) * k_u * s;
    // Recursive summation of n terms in any order errs by at most (n - 1) u sum |terms|.
    r.any_order = (double(n) + 8) * k_u * s;
    if (at == GgmlType::Q8_1) {
        for (int64_t b = 0; b < n / 32; ++b) {
            const uint8_t* ab = a + 36 * b;
            uint16_t d, sum_h, m;
            std::memcpy(&d, ab, 2);
            std::memcpy(&sum_h, ab + 2, 2);
            std::memcpy(&m, w + info.block_bytes * b + 2, 2);
            int sum = 0;
            for (int k = 0; k < 32; ++k) sum += static_cast<int8_t>(ab[4 + k]);
            const double s_error = std::fabs(double(quant::fp16_to_fp32(m))) *
                                   std::fabs(double(quant::fp16_to_fp32(sum_h)) - double(quant::fp16_to_fp32(d)) * sum);
            r.tolerance += s_error;
            r.any_order += s_error;
        }
    }
    return r;
}

std::vector<GgmlType> dot_types() {
    std::vector<GgmlType> out;
    for (const auto& t : quant::quant_traits())
        if (t.vec_dot_ref) out.push_back(t.type);
    return out;
}

class VecDot : public ::testing::TestWithParam<GgmlType> {};

TEST_P(VecDot, AgainstDoubleAndGgml) {
    const GgmlType wt = GetParam();
    const quant::QuantTraits& tr = *quant::find_quant_traits(wt);
    const auto& all = quant_manifest().at("vec_dot");
    ASSERT_TRUE(all.contains(type_name(wt))) << "no vec_dot fixture for " << type_name(wt)
                                             << ": add it to tools/quant_fixtures.py and rerun it";
    const auto& e = all.at(type_name(wt));
    ASSERT_EQ(e.at("activation_type").get<std::string>(), type_name(tr.vec_dot_type));
    const int64_t n = e.at("n").get<int64_t>();
    const int rows = e.at("rows").get<int>();
    const std::vector<uint8_t> w = quant_fixture_bytes(e.at("weights").get<std::string>());
    const std::vector<uint8_t> a = quant_fixture_bytes(e.at("activations").get<std::string>());
    const uint64_t wrow = ggml_row_bytes(wt, n), arow = ggml_row_bytes(tr.vec_dot_type, n);
    ASSERT_EQ(w.size(), wrow * rows);
    ASSERT_EQ(a.size(), arow * rows);
    const bool has_generic = !e.at("ggml_vec_dot_generic").is_null();
    int exact_ggml = 0, exact_generic = 0;
    double worst = 0;
    for (int r = 0; r < rows; ++r) {
        const float got = quant::vec_dot(wt, n, w.data() + r * wrow, a.data() + r * arow);
        const Reference ref = reference(wt, tr.vec_dot_type, n, w.data() + r * wrow, a.data() + r * arow);
        EXPECT_LE(std::fabs(double(got) - ref.exact), ref.tolerance)
            << type_name(wt) << " row " << r << ": kiln " << got << ", exact " << ref.exact;
        worst = std::max(worst, std::fabs(double(got) - ref.exact) / ref.tolerance);
        // ggml sums in another order (SIMD lanes, per-sub-block floats, fused multiply-adds),
        // so it is held to the any-order bound.
        const float ggml = e.at("ggml_vec_dot")[r].get<float>();
        EXPECT_LE(std::fabs(double(got) - double(ggml)), ref.tolerance + ref.any_order)
            << type_name(wt) << " row " << r << ": kiln " << got << ", ggml " << ggml;
        exact_ggml += bits_of(got) == bits_of(ggml);
        if (has_generic) exact_generic += bits_of(got) == bits_of(e.at("ggml_vec_dot_generic")[r].get<float>());
    }
    std::printf("[ %-8s] %d/%d rows bit-identical to ggml_vec_dot, %s generic; worst |kiln - exact| = %.3f of the bound\n",
                type_name(wt).c_str(), exact_ggml, rows,
                has_generic ? (std::to_string(exact_generic) + "/" + std::to_string(rows)).c_str() : "no", worst);
}

// "Block order": the dot product of a row is the f32 sum, block after block, of the
// dot products of its single blocks (for one block the sum is just its term).
// Float formats: lanes i % 16, folded pairwise.
TEST_P(VecDot, FollowsItsStatedOrder) {
    const GgmlType wt = GetParam();
    const quant::QuantTraits& tr = *quant::find_quant_traits(wt);
    // Weights: kiln's quantizer on a random row where there is one, else ggml's (the fixture).
    int64_t n = 4096;
    std::vector<uint8_t> w, a;
    if (quant::can_quantize(wt)) {
        std::mt19937 rng(1234 + static_cast<int>(wt));
        std::normal_distribution<float> normal;
        std::vector<float> wf(n), af(n);
        for (auto& v : wf) v = normal(rng) * 0.1f + 0.02f;
        for (auto& v : af) v = normal(rng);
        w.resize(ggml_row_bytes(wt, n));
        a.resize(ggml_row_bytes(tr.vec_dot_type, n));
        quant::quantize_row(wt, wf.data(), w.data(), n);
        quant::quantize_row(tr.vec_dot_type, af.data(), a.data(), n);
    } else {
        const auto& e = quant_manifest().at("vec_dot").at(type_name(wt));
        n = e.at("n").get<int64_t>();
        w = quant_fixture_bytes(e.at("weights").get<std::string>());
        a = quant_fixture_bytes(e.at("activations").get<std::string>());
        w.resize(ggml_row_bytes(wt, n));  // the first row
        a.resize(ggml_row_bytes(tr.vec_dot_type, n));
    }
    const float got = tr.vec_dot_ref(n, w.data(), a.data());

    const GgmlTypeInfo& wi = ggml_type_info(wt);
    const GgmlTypeInfo& ai = ggml_type_info(tr.vec_dot_type);
    if (wi.quantized) {
        const int64_t bs = wi.block_size;
        float acc = 0.0f;
        for (int64_t b = 0; b < n / bs; ++b)
            acc += tr.vec_dot_ref(bs, w.data() + b * wi.block_bytes, a.data() + b * (bs / ai.block_size) * ai.block_bytes);
        EXPECT_EQ(bits_of(got), bits_of(acc)) << type_name(wt) << ": " << got << " vs " << acc;
    } else {
        const std::vector<float> wv = dequantize(wt, w.data(), n), av = dequantize(tr.vec_dot_type, a.data(), n);
        float sum = 0.0f;
        if (wt == GgmlType::BF16) {  // pairs, the odd element first (the values here are far from f32's subnormals)
            for (int64_t i = 0; i < n; i += 2) {
                if (i + 1 < n) sum = std::fma(wv[i + 1], av[i + 1], sum);
                sum = std::fma(wv[i], av[i], sum);
            }
        } else {
            for (int64_t i = 0; i < n; ++i) sum = std::fma(wv[i], av[i], sum);
        }
        EXPECT_EQ(bits_of(got), bits_of(sum)) << type_name(wt) << ": " << got << " vs " << sum;
    }

    const Reference ref = reference(wt, tr.vec_dot_type, n, w.data(), a.data());
    EXPECT_LE(std::fabs(double(got) - ref.exact), ref.tolerance) << type_name(wt);

    // The result depends on the bytes only, not on where they are.
    std::vector<uint8_t> w2(w.size() + 3), a2(a.size() + 5);
    std::copy(w.begin(), w.end(), w2.begin() + 3);
    std::copy(a.begin(), a.end(), a2.begin() + 5);
    EXPECT_EQ(bits_of(tr.vec_dot_ref(n, w2.data() + 3, a2.data() + 5)), bits_of(got));
}

INSTANTIATE_TEST_SUITE_P(AllDotProducts, VecDot, ::testing::ValuesIn(dot_types()),
                         [](const auto& info) { return type_name(info.param); });

}  // namespace
}  // namespace kiln::test
