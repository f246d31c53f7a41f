// Rounding helpers shared by the reference quantizers. They reproduce ggml's
// conversions exactly for every value those produce on finite input, and stay
// defined (no C++ undefined behaviour) for the rest: inf, NaN, huge values.
#pragma once

#include <climits>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace kiln::quant {

// Round to nearest, ties to even, for |v| < 2^22 (ggml's nearest_int: adding
// 1.5 * 2^23 leaves the rounded integer in the low mantissa bits). Outside that
// range the result is meaningless but deterministic, as in ggml.
inline int nearest_int(float v) {
    float shifted = v + 12582912.f;
    int32_t bits;
    std::memcpy(&bits, &shifted, 4);
    return (bits & 0x007fffff) - 0x00400000;
}

// C's float -> int conversion (toward zero), saturating where C's is undefined.
inline int trunc_to_int(float v) {
    if (v != v) return 0;
    if (v <= -2147483648.0f) return INT_MIN;
    if (v >= 2147483648.0f) return INT_MAX;
    return static_cast<int>(v);
}

// roundf (half away from zero) as an int, saturating.
inline int round_away_to_int(float v) { return trunc_to_int(std::round(v)); }

inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : (v > hi ? hi : v); }

}  // namespace kiln::quant
