// Reference quantizers: bit for bit against the oracle (the gguf package where it
// quantizes, else ggml's quantize_row_*_ref) on 24 chunks of 256 values in different
// regimes (tests/golden/quant/quantize), plus a round-trip error bound per type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

#include "kiln/quant.h"
#include "quant_fixtures.h"

namespace kiln::test {
namespace {

std::vector<GgmlType> quantizable_types() {
    std::vector<GgmlType> out;
    for (const auto& t : quant::quant_traits())
        if (t.quantize_row_ref) out.push_back(t.type);
    return out;
}

// The one known difference from the oracle. For a block whose absmax is below 1e-15,
// ggml's IQ4_NL reference (as shipped with llama-cpp-python 0.3.36) stores d = 0 and
// leaves the levels to whatever its scratch array held - the previous block's levels,
// or uninitialized memory for a row's first block; current ggml writes level 0, as
// kiln does. With d = 0 every value is zero either way.
bool iq4_nl_unused_levels(const uint8_t* got, const uint8_t* expect) {
    const bool zero_d = (got[0] | (got[1] & 0x7F)) == 0 && (expect[0] | (expect[1] & 0x7F)) == 0;
    bool got_level0 = true;
    for (int j = 2; j < 18; ++j) got_level0 = got_level0 && got[j] == 0;
    return zero_d && got_level0;
}

class Quantize : public ::testing::TestWithParam<GgmlType> {
protected:
    static const std::vector<float>& input() {
        static const std::vector<float> x = quant_fixture_f32(quant_manifest().at("quantize").at("input").get<std::string>());
        return x;
    }
    std::vector<uint8_t> quantize(GgmlType type, const std::vector<float>& x) {
        std::vector<uint8_t> out(ggml_row_bytes(type, x.size()), 0xAB);
        quant::quantize_row(type, x.data(), out.data(), static_cast<int64_t>(x.size()));
        return out;
    }
};

TEST_P(Quantize, BitExactAgainstOracle) {
    const GgmlType type = GetParam();
    const auto& types = quant_manifest().at("quantize").at("types");
    ASSERT_TRUE(types.contains(type_name(type))) << "no quantize fixture for " << type_name(type)
                                                 << ": add it to tools/quant_fixtures.py and rerun it";
    const auto& entry = types.at(type_name(type));
    const std::vector<uint8_t> expect = quant_fixture_bytes(entry.at("bytes").get<std::string>());
    const std::vector<uint8_t> got = quantize(type, input());
    ASSERT_EQ(got.size(), expect.size());
    const GgmlTypeInfo& info = ggml_type_info(type);
    int bad_blocks = 0, unused_levels = 0;
    for (size_t b = 0; b < got.size() / info.block_bytes; ++b) {
        const size_t off = b * info.block_bytes;
        if (std::memcmp(got.data() + off, expect.data() + off, info.block_bytes) == 0) continue;
        if (type == GgmlType::IQ4_NL && iq4_nl_unused_levels(got.data() + off, expect.data() + off)) {
            ++unused_levels;
            continue;
        }
        size_t k = 0;
        while (got[off + k] == expect[off + k]) ++k;
        if (++bad_blocks <= 5)
            ADD_FAILURE() << type_name(type) << " block " << b << " (input chunk " << b * info.block_size / 256
                          << ") differs first at byte " << k << ": got " << int(got[off + k]) << ", expected "
                          << int(expect[off + k]);
    }
    EXPECT_EQ(bad_blocks, 0) << "oracle: " << entry.at("oracle").get<std::string>();
    if (unused_levels)
        std::printf("[ %-8s] %d all-zero blocks differ from the oracle in their unused levels only\n",
                    type_name(type).c_str(), unused_levels);
}

// Round trip: |x - dequantize(quantize(x))| <= c * (absmax of the block) + 2^-17 for
// every block of the fixture input. The absolute slack covers the chunks whose f16
// scales go subnormal or underflow to zero. c, per type:
//  * plain formats: the rounding of one value (F16 2^-11, BF16 2^-8);
//  * Q8_0 / Q8_1 / Q8_K: half a step of absmax / 127, plus the f16 rounding of the
//    scale (2^-11 relative, times up to 127 steps) - none for Q8_K's f32 scale;
//  * Q4_0 / Q5_0: one step (d = absmax / 8 or / 16): the value of the opposite sign
//    to the absmax can need level +8 / +16, clipped to +7 / +15;
//  * Q4_1 / Q5_1: half a step of range / 15 or / 31 (range <= 2 absmax), plus the f16
//    roundings of d and of the min;
//  * TQ1_0 / TQ2_0, MXFP4: see their rows;
//  * the k-quants and IQ4_NL: loose sanity bounds (their search-based scales have no
//    simple worst case; bit-exactness above is the real check), about half a step of
//    the coarsest grid the format allows.
const std::map<GgmlType, double> k_round_trip = {
    {GgmlType::F32, 0.0},
    {GgmlType::F16, 0x1p-11},
    {GgmlType::BF16, 0x1p-8},
    {GgmlType::Q8_0, 0.5 / 127 + 0x1p-10},
    {GgmlType::Q8_1, 0.5 / 127 + 0x1p-10},
    {GgmlType::Q8_K, 0.5 / 127 + 0x1p-20},
    {GgmlType::Q4_0, 1.0 / 8 + 0x1p-10},
    {GgmlType::Q5_0, 1.0 / 16 + 0x1p-10},
    {GgmlType::Q4_1, 1.0 / 15 + 0x1p-9},
    {GgmlType::Q5_1, 1.0 / 31 + 0x1p-9},
    {GgmlType::Q2_K, 0.6},
    {GgmlType::Q3_K, 0.4},
    {GgmlType::Q4_K, 0.2},
    {GgmlType::Q5_K, 0.1},
    {GgmlType::Q6_K, 0.05},
    {GgmlType::IQ4_NL, 0.2},
    // ternary: d = absmax, so anything below half of it rounds to 0 (plus d's f16 rounding)
    {GgmlType::TQ1_0, 0.5 + 0x1p-10},
    {GgmlType::TQ2_0, 0.5 + 0x1p-10},
    // MXFP4: levels 2^(floor(log2 absmax) - 2) x {0 .. 6}: half the widest step (4 -> 6)
    // or the clip above 6, both at most absmax / 4
    {GgmlType::MXFP4, 0.25 + 0x1p-20},
};

TEST_P(Quantize, RoundTripErrorBound) {
    const GgmlType type = GetParam();
    const auto it = k_round_trip.find(type);
    ASSERT_NE(it, k_round_trip.end()) << "no round-trip bound for " << type_name(type);
    const std::vector<float>& x = input();
    const std::vector<uint8_t> q = quantize(type, x);
    std::vector<float> y(x.size());
    quant::dequantize_row(type, q.data(), y.data(), static_cast<int64_t>(x.size()));
    const size_t group = std::max<size_t>(ggml_type_info(type).block_size, 32);
    for (size_t b = 0; b < x.size(); b += group) {
        double amax = 0, worst = 0;
        for (size_t i = b; i < b + group; ++i) {
            amax = std::max(amax, std::fabs(double(x[i])));
            worst = std::max(worst, std::fabs(double(x[i]) - double(y[i])));
        }
        EXPECT_LE(worst, it->second * amax + 0x1p-17)
            << type_name(type) << " block at " << b << " (chunk " << b / 256 << "), absmax " << amax;
    }
}

INSTANTIATE_TEST_SUITE_P(AllQuantizers, Quantize, ::testing::ValuesIn(quantizable_types()),
                         [](const auto& info) { return type_name(info.param); });

TEST(QuantizeActivations, PublicEntryPointsAreTheReferenceQuantizers) {
    std::vector<float> x(512);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i)) * (1.0f + float(i % 7));
    for (GgmlType t : {GgmlType::Q8_0, GgmlType::Q8_1, GgmlType::Q8_K}) {
        std::vector<uint8_t> a(ggml_row_bytes(t, x.size())), b(a.size());
        quant::quantize_row(t, x.data(), a.data(), 512);
        if (t == GgmlType::Q8_0) quant::quantize_row_q8_0(x.data(), b.data(), 512);
        if (t == GgmlType::Q8_1) quant::quantize_row_q8_1(x.data(), b.data(), 512);
        if (t == GgmlType::Q8_K) quant::quantize_row_q8_K(x.data(), b.data(), 512);
        EXPECT_EQ(a, b) << type_name(t);
    }
}

TEST(QuantizeActivations, Q8KBlockSumsAndQ8_1Sums) {
    std::vector<float> x(1024);
    for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.11f * float(i * i % 97)) * 3.0f;
    x[300] = 0;
    std::fill(x.begin() + 512, x.begin() + 768, 0.0f);  // an all-zero super-block
    std::vector<uint8_t> q(ggml_row_bytes(GgmlType::Q8_K, x.size()));
    quant::quantize_row_q8_K(x.data(), q.data(), 1024);
    for (int b = 0; b < 4; ++b) {
        const uint8_t* blk = q.data() + 292 * b;
        for (int j = 0; j < 16; ++j) {
            int sum = 0;
            for (int k = 0; k < 16; ++k) sum += static_cast<int8_t>(blk[4 + 16 * j + k]);
            int16_t bsum;
            std::memcpy(&bsum, blk + 4 + 256 + 2 * j, 2);
            EXPECT_EQ(bsum, sum) << "block " << b << " group " << j;
        }
    }
    std::vector<uint8_t> q1(ggml_row_bytes(GgmlType::Q8_1, x.size()));
    quant::quantize_row_q8_1(x.data(), q1.data(), 1024);
    for (int b = 0; b < 32; ++b) {
        const uint8_t* blk = q1.data() + 36 * b;
        uint16_t d, s;
        std::memcpy(&d, blk, 2);
        std::memcpy(&s, blk + 2, 2);
        int sum = 0;
        for (int k = 0; k < 32; ++k) sum += static_cast<int8_t>(blk[4 + k]);
        // s is d * sum(q) with d before its f16 rounding: equal within the two f16 roundings.
        const double expect = double(quant::fp16_to_fp32(d)) * sum;
        EXPECT_NEAR(quant::fp16_to_fp32(s), expect, std::fabs(expect) * 0x1p-10 + 1e-6) << "block " << b;
    }
}

}  // namespace
}  // namespace kiln::test
