// What the AVX2 and AVX-512 attention kernels share about cached key / value
// rows: the formats a row can be in, a row's bytes, and a q8_0 block's scale.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kiln/quant.h"

namespace kiln::kv_rows {

// The formats attention reads cached rows in.
enum class Fmt { F32, F16, Q8 };

// Bytes of the first n elements of a row (n a multiple of 32 for Q8).
template <Fmt F>
constexpr uint64_t row_bytes_of(uint64_t n) {
    return F == Fmt::Q8 ? n / 32 * 34 : F == Fmt::F16 ? 2 * n : 4 * n;
}

// A q8_0 block's f16 scale as f32, the bits of quant::fp16_to_fp32: F16C is exact
// for every finite value; inf and NaN (whose signalling payloads F16C would
// quiet) take the scalar call, which costs more than the rest of a block's work.
// F16C only, so both levels' kernels inline it.
__attribute__((target("f16c"))) inline float q8_scale(const uint8_t* block) {
    uint16_t d16;
    std::memcpy(&d16, block, 2);
    if ((d16 & 0x7C00u) == 0x7C00u) [[unlikely]]
        return quant::fp16_to_fp32(d16);
    return _cvtsh_ss(d16);
}

}  // namespace kiln::kv_rows
