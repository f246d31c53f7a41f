// The ternary formats TQ1_0 and TQ2_0 (levels -1, 0, +1 times an f16 scale): dequantization.
#include "quant/blocks.h"
#include "quant/kernels.h"

namespace kiln::quant {

// TQ1_0 packs five base-3 digits per byte as a fixed-point fraction: byte = ceil(v * 256 / 243)
// for the 5-digit number v, so digit k is recovered as ((byte * 3^k mod 256) * 3) >> 8.
// Element order: the 32 bytes of qs[0..32) give digit 0 of each byte, then digit 1, ...
// (160 elements); qs[32..48) likewise (80); then the 4 bytes of qh, 4 digits each (16).
static float tq1_level(uint8_t byte, int digit) {
    static constexpr uint8_t k_pow3[5] = {1, 3, 9, 27, 81};
    const uint8_t q = static_cast<uint8_t>(byte * k_pow3[digit]);
    return static_cast<float>(((q * 3) >> 8) - 1);
}

void dequantize_row_tq1_0(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockTQ1_0>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        for (int digit = 0; digit < 5; ++digit)
            for (int m = 0; m < 32; ++m) *dst++ = tq1_level(x[i].qs[m], digit) * d;
        for (int digit = 0; digit < 5; ++digit)
            for (int m = 32; m < 48; ++m) *dst++ = tq1_level(x[i].qs[m], digit) * d;
        for (int digit = 0; digit < 4; ++digit)
            for (int m = 0; m < 4; ++m) *dst++ = tq1_level(x[i].qh[m], digit) * d;
    }
}

// TQ2_0: 2 bits per element; byte m of each 32-byte group holds elements m, m+32, m+64, m+96.
void dequantize_row_tq2_0(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockTQ2_0>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        for (int j = 0; j < 64; j += 32)
            for (int l = 0; l < 4; ++l)
                for (int m = 0; m < 32; ++m) *dst++ = static_cast<float>(((x[i].qs[j + m] >> (2 * l)) & 3) - 1) * d;
    }
}

}  // namespace kiln::quant
