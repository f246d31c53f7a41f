// The ternary formats TQ1_0 and TQ2_0 (levels -1, 0, +1 times an f16 scale):
// dequantization and the dot products with Q8_K activations (ggml's pairing).
#include <cmath>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/quant_math.h"

namespace kiln::quant {

// TQ1_0 packs five base-3 digits per byte as a fixed-point fraction: byte = ceil(v * 256 / 243)
// for the 5-digit number v, so digit k is recovered as ((byte * 3^k mod 256) * 3) >> 8.
// Element order: the 32 bytes of qs[0..32) give digit 0 of each byte, then digit 1, ...
// (160 elements); qs[32..48) likewise (80); then the 4 bytes of qh, 4 digits each (16).
static int tq1_digit(uint8_t byte, int digit) {
    static constexpr uint8_t k_pow3[5] = {1, 3, 9, 27, 81};
    const uint8_t q = static_cast<uint8_t>(byte * k_pow3[digit]);
    return (q * 3) >> 8;
}

static float tq1_level(uint8_t byte, int digit) { return static_cast<float>(tq1_digit(byte, digit) - 1); }

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

// ggml's reference quantizers: d = absmax, levels round(x / d) (half away from
// zero) + 1 in {0, 1, 2}.
static float absmax_256(const float* x) {
    float amax = 0.0f;
    for (int j = 0; j < k_qk_k; ++j) amax = amax > std::fabs(x[j]) ? amax : std::fabs(x[j]);  // ggml's MAX
    return amax;
}

static int ternary_digit(float v, float id) { return round_away_to_int(v * id) + 1; }

// TQ1_0: five digits per byte, the first the most significant, stored as the
// ceiling of the 5-digit number x 256 / 243 (so the decoder's fixed-point product
// recovers each digit); qh's bytes hold four digits and a zero fifth.
void quantize_row_tq1_0(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockTQ1_0>(dst);
    auto pack = [](int q) { return static_cast<uint8_t>((q * 256 + 242) / 243); };
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = absmax_256(src);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(y[i].d, d);
        for (int m = 0; m < 32; ++m) {
            int q = 0;
            for (int k = 0; k < 5; ++k) q = q * 3 + ternary_digit(src[m + 32 * k], id);
            y[i].qs[m] = pack(q);
        }
        src += 160;
        for (int m = 0; m < 16; ++m) {
            int q = 0;
            for (int k = 0; k < 5; ++k) q = q * 3 + ternary_digit(src[m + 16 * k], id);
            y[i].qs[32 + m] = pack(q);
        }
        src += 80;
        for (int j = 0; j < 4; ++j) {
            int q = 0;
            for (int k = 0; k < 4; ++k) q = q * 3 + ternary_digit(src[j + 4 * k], id);
            y[i].qh[j] = pack(q * 3);
        }
        src += 16;
    }
}

void quantize_row_tq2_0(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockTQ2_0>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i, src += k_qk_k) {
        const float d = absmax_256(src);
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(y[i].d, d);
        for (int e = 0; e < k_qk_k; ++e) {
            uint8_t& byte = y[i].qs[(e / 128) * 32 + e % 32];
            if (e % 128 < 32) byte = 0;
            byte = static_cast<uint8_t>(byte | ((ternary_digit(src[e], id) & 3) << (2 * ((e % 128) / 32))));
        }
    }
}

// Dot products: per 256-element block isum = sum (digit - 1) x activation level,
// exact in int32; one f32 term (d_w * d_a) * isum per block, added in block order.
float vec_dot_tq1_0_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockTQ1_0>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0;
        int e = 0;
        for (int digit = 0; digit < 5; ++digit)
            for (int m = 0; m < 32; ++m) isum += (tq1_digit(x[i].qs[m], digit) - 1) * y[i].qs[e++];
        for (int digit = 0; digit < 5; ++digit)
            for (int m = 32; m < 48; ++m) isum += (tq1_digit(x[i].qs[m], digit) - 1) * y[i].qs[e++];
        for (int digit = 0; digit < 4; ++digit)
            for (int m = 0; m < 4; ++m) isum += (tq1_digit(x[i].qh[m], digit) - 1) * y[i].qs[e++];
        const float d = load_f16(x[i].d) * load_f32(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return acc;
}

float vec_dot_tq2_0_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockTQ2_0>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0;
        for (int e = 0; e < k_qk_k; ++e) {
            const int q = (x[i].qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            isum += (q - 1) * y[i].qs[e];
        }
        const float d = load_f16(x[i].d) * load_f32(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return acc;
}

}  // namespace kiln::quant
