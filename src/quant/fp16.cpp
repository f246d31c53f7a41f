// IEEE half and bfloat16 conversions, exact in both directions for every value
// that fits; f32 -> f16 / bf16 round to nearest, ties to even, as ggml does.
#include <cstring>

#include "kiln/quant.h"

namespace kiln::quant {

namespace {
uint32_t bits_of(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}
float float_of(uint32_t u) {
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}
}  // namespace

float fp16_to_fp32(uint16_t h) {
    uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t mant = h & 0x3FFu;
    if (exp == 0x1F) return float_of(sign | 0x7F800000u | (mant << 13));  // inf / nan
    if (exp == 0) {
        if (mant == 0) return float_of(sign);
        // Subnormal: value = mant * 2^-24, exact in f32.
        float v = static_cast<float>(mant) * (1.0f / 16777216.0f);
        return (sign ? -v : v);
    }
    return float_of(sign | ((exp + 112) << 23) | (mant << 13));
}

uint16_t fp32_to_fp16(float f) {
    uint32_t x = bits_of(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t abs = x & 0x7FFFFFFFu;
    if (abs > 0x7F800000u) return static_cast<uint16_t>(sign | 0x7E00u);  // nan
    if (abs >= 0x477FF000u) return static_cast<uint16_t>(sign | 0x7C00u);  // overflow (rounds to inf) / inf
    if (abs < 0x38800000u) {
        // Result is subnormal or zero: round abs * 2^24 to nearest even integer.
        if (abs < 0x33000000u) return static_cast<uint16_t>(sign);  // below half the smallest subnormal
        uint32_t exp = abs >> 23;
        uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
        uint32_t shift = 126 - exp;  // 113 <= exp <= 112 + ... ; shift in [14, 24]
        uint32_t q = mant >> shift;
        uint32_t rem = mant & ((1u << shift) - 1);
        uint32_t half = 1u << (shift - 1);
        if (rem > half || (rem == half && (q & 1))) ++q;
        return static_cast<uint16_t>(sign | q);
    }
    // Normal: rebias and round the 13 dropped mantissa bits to nearest even.
    uint32_t r = abs - 0x38000000u;  // exponent 127 -> 15
    uint32_t q = r >> 13;
    uint32_t rem = r & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (q & 1))) ++q;
    return static_cast<uint16_t>(sign | q);
}

float bf16_to_fp32(uint16_t h) { return float_of(static_cast<uint32_t>(h) << 16); }

uint16_t fp32_to_bf16(float f) {
    uint32_t x = bits_of(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 64);  // quiet nan
    return static_cast<uint16_t>((x + (0x7FFFu + ((x >> 16) & 1))) >> 16);
}

}  // namespace kiln::quant
