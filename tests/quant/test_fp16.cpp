// fp16 / bf16 conversions: every half and bfloat16 to f32, and a sweep of ~1.4 M
// floats (every 4099th bit pattern plus every rounding midpoint and its neighbours)
// down to both, hashed and compared with numpy / the gguf package (the manifest).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kiln/quant.h"
#include "quant_fixtures.h"

namespace kiln::test {
namespace {

using quant::bf16_to_fp32;
using quant::fp16_to_fp32;
using quant::fp32_to_bf16;
using quant::fp32_to_fp16;

// The sweep of tools/quant_fixtures.py f32_sweep(), rebuilt here.
std::vector<uint32_t> f32_sweep() {
    std::vector<uint32_t> out;
    for (uint64_t u = 0; u < (1ull << 32); u += 4099) out.push_back(static_cast<uint32_t>(u));
    std::vector<uint32_t> mids;
    for (uint32_t h = 0; h < 0x7C00; ++h) {
        const double a = fp16_to_fp32(static_cast<uint16_t>(h));
        const double b = h + 1 == 0x7C00 ? 65536.0 : fp16_to_fp32(static_cast<uint16_t>(h + 1));
        mids.push_back(bits_of(static_cast<float>((a + b) / 2)));
    }
    std::vector<uint32_t> f16_part;
    for (int delta : {-1, 0, 1})
        for (uint32_t m : mids) f16_part.push_back(m + static_cast<uint32_t>(delta));
    const size_t n = f16_part.size();
    for (size_t i = 0; i < n; ++i) f16_part.push_back(f16_part[i] | 0x80000000u);
    out.insert(out.end(), f16_part.begin(), f16_part.end());
    for (int delta : {-1, 0, 1})
        for (uint32_t h = 0; h < 65536; ++h) out.push_back(((h << 16) | 0x8000u) + static_cast<uint32_t>(delta));
    return out;
}

const nlohmann::json& fixture() { return quant_manifest().at("fp16"); }

TEST(Fp16, EveryHalfToFloat) {
    std::vector<uint32_t> out(65536);
    for (uint32_t h = 0; h < 65536; ++h) out[h] = bits_of(fp16_to_fp32(static_cast<uint16_t>(h)));
    EXPECT_EQ(hex64(fnv1a64(out.data(), out.size() * 4)), fixture().at("f16_to_f32_fnv").get<std::string>());
    // Self-consistency for a readable failure: every non-NaN half survives the round trip.
    for (uint32_t h = 0; h < 65536; ++h) {
        if ((h & 0x7C00) == 0x7C00 && (h & 0x3FF)) continue;
        ASSERT_EQ(fp32_to_fp16(fp16_to_fp32(static_cast<uint16_t>(h))), h) << "half 0x" << std::hex << h;
    }
}

TEST(Fp16, EveryBfloat16ToFloat) {
    std::vector<uint32_t> out(65536);
    for (uint32_t h = 0; h < 65536; ++h) out[h] = bits_of(bf16_to_fp32(static_cast<uint16_t>(h)));
    EXPECT_EQ(hex64(fnv1a64(out.data(), out.size() * 4)), fixture().at("bf16_to_f32_fnv").get<std::string>());
}

TEST(Fp16, FloatSweepToHalfAndBfloat16) {
    const std::vector<uint32_t> sweep = f32_sweep();
    ASSERT_EQ(sweep.size(), fixture().at("sweep_count").get<size_t>());
    ASSERT_EQ(hex64(fnv1a64(sweep.data(), sweep.size() * 4)), fixture().at("sweep_fnv").get<std::string>())
        << "the sweep differs from the generator's";
    std::vector<uint16_t> half(sweep.size()), bf(sweep.size());
    for (size_t i = 0; i < sweep.size(); ++i) {
        half[i] = fp32_to_fp16(float_of(sweep[i]));
        bf[i] = fp32_to_bf16(float_of(sweep[i]));
    }
    EXPECT_EQ(hex64(fnv1a64(half.data(), half.size() * 2)), fixture().at("f32_to_f16_fnv").get<std::string>());
    EXPECT_EQ(hex64(fnv1a64(bf.data(), bf.size() * 2)), fixture().at("f32_to_bf16_fnv").get<std::string>());

    // An independent check of round-to-nearest-even in double, for a readable failure.
    for (size_t i = 0; i < sweep.size(); ++i) {
        const float f = float_of(sweep[i]);
        if (std::isnan(f)) {
            ASSERT_EQ(half[i], ((sweep[i] >> 16) & 0x8000u) | 0x7E00u);
            continue;
        }
        const double x = std::fabs(static_cast<double>(f));
        const uint16_t h = half[i] & 0x7FFF;
        ASSERT_EQ(half[i] & 0x8000, (sweep[i] >> 16) & 0x8000);
        if (h == 0x7C00) {
            ASSERT_GE(x, 65520.0) << "0x" << std::hex << sweep[i];
            continue;
        }
        const double v = fp16_to_fp32(h);
        const double lo = h ? fp16_to_fp32(static_cast<uint16_t>(h - 1)) : -1.0;
        const double hi = h == 0x7BFF ? 65536.0 : fp16_to_fp32(static_cast<uint16_t>(h + 1));
        ASSERT_LE(std::fabs(x - v), std::fabs(x - hi)) << "0x" << std::hex << sweep[i];
        if (h) {
            ASSERT_LE(std::fabs(x - v), std::fabs(x - lo)) << "0x" << std::hex << sweep[i];
        }
        if (std::fabs(x - v) == std::fabs(x - hi) || (h && std::fabs(x - v) == std::fabs(x - lo))) {
            ASSERT_EQ(h & 1, 0) << "tie not to even: 0x" << std::hex << sweep[i];
        }
    }
}

}  // namespace
}  // namespace kiln::test
