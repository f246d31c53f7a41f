// The 4-bit float formats MXFP4 (OCP microscaling: E2M1 elements, one E8M0 exponent
// per 32) and NVFP4 (E2M1 elements, one unsigned E4M3 scale per 16, 64 per block):
// dequantization. Element values are the E2M1 values doubled (k_values_e2m1x2) and
// both scale decoders return half the scale, as ggml does. MXFP4 has a dot product
// with Q8_0 activations (ggml's pairing).
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/quant_tables.h"
#include "quant/quant_math.h"

namespace kiln::quant {

namespace {

// 2^(e - 127) / 2; e = 0 and 1 give the subnormals 2^-128 and 2^-127.
float e8m0_to_fp32_half(uint8_t e) {
    const uint32_t bits = e < 2 ? (0x00200000u << e) : (static_cast<uint32_t>(e - 1) << 23);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
}

// Unsigned E4M3 (bias 7, bit 7 ignored) / 2; 0x7F, the NaN code, reads as 0.
float ue4m3_to_fp32_half(uint8_t x) {
    if (x == 0 || x == 0x7F) return 0.0f;
    const int exp = (x >> 3) & 0xF;
    const int man = x & 0x7;
    const float raw = exp == 0 ? std::ldexp(static_cast<float>(man), -9)
                               : std::ldexp(1.0f + static_cast<float>(man) / 8.0f, exp - 7);
    return raw * 0.5f;
}

}  // namespace

void dequantize_row_mxfp4(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockMXFP4>(src);
    for (int64_t i = 0; i < n / k_qk_mxfp4; ++i, dst += k_qk_mxfp4) {
        const float d = e8m0_to_fp32_half(x[i].e);
        for (int j = 0; j < k_qk_mxfp4 / 2; ++j) {
            dst[j] = static_cast<float>(k_values_e2m1x2[x[i].qs[j] & 0xF]) * d;
            dst[j + k_qk_mxfp4 / 2] = static_cast<float>(k_values_e2m1x2[x[i].qs[j] >> 4]) * d;
        }
    }
}

void dequantize_row_nvfp4(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockNVFP4>(src);
    constexpr int half = k_qk_nvfp4_sub / 2;
    for (int64_t i = 0; i < n / k_qk_nvfp4; ++i) {
        for (int s = 0; s < k_qk_nvfp4 / k_qk_nvfp4_sub; ++s, dst += k_qk_nvfp4_sub) {
            const float d = ue4m3_to_fp32_half(x[i].d[s]);
            for (int j = 0; j < half; ++j) {
                dst[j] = static_cast<float>(k_values_e2m1x2[x[i].qs[s * half + j] & 0xF]) * d;
                dst[j + half] = static_cast<float>(k_values_e2m1x2[x[i].qs[s * half + j] >> 4]) * d;
            }
        }
    }
}

// ggml's quantize_row_mxfp4_ref: e = floor(log2(absmax)) - 2 + 127 (0 for an
// all-zero block; ggml converts the float to uint8_t, which on x86 keeps the low 8
// bits of the int32 conversion: blocks below 2^-126 wrap, as there), then each
// element the first of the 16 levels nearest to it.
void quantize_row_mxfp4(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockMXFP4>(dst);
    for (int64_t i = 0; i < n / k_qk_mxfp4; ++i, src += k_qk_mxfp4) {
        float amax = 0.0f;
        for (int j = 0; j < k_qk_mxfp4; ++j)
            if (amax < std::fabs(src[j])) amax = std::fabs(src[j]);
        const uint8_t e = amax > 0.0f ? static_cast<uint8_t>(trunc_to_int(std::floor(std::log2(amax)) - 2 + 127) & 0xFF) : 0;
        const float d = e8m0_to_fp32_half(e);
        auto best = [d](float v) {
            int index = 0;
            float err = std::fabs(static_cast<float>(k_values_e2m1x2[0]) * d - v);
            for (int l = 1; l < 16; ++l) {
                const float e_l = std::fabs(static_cast<float>(k_values_e2m1x2[l]) * d - v);
                if (e_l < err) {
                    index = l;
                    err = e_l;
                }
            }
            return index;
        };
        y[i].e = e;
        for (int j = 0; j < k_qk_mxfp4 / 2; ++j)
            y[i].qs[j] = static_cast<uint8_t>(best(src[j]) | (best(src[j + k_qk_mxfp4 / 2]) << 4));
    }
}

// Per 32-element block isum = sum e2m1x2 level x activation level, exact in int32;
// one f32 term (d_w * d_a) * isum with d_w the halved E8M0 scale (the doubled
// levels make the product exact: d_w * d_a is a power of two times an f16).
float vec_dot_mxfp4_q8_0(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockMXFP4>(w);
    const auto* y = blocks_of<BlockQ8_0>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_mxfp4; ++i) {
        int32_t isum = 0;
        for (int j = 0; j < k_qk_mxfp4 / 2; ++j) {
            isum += k_values_e2m1x2[x[i].qs[j] & 0xF] * y[i].qs[j];
            isum += k_values_e2m1x2[x[i].qs[j] >> 4] * y[i].qs[j + 16];
        }
        const float d = e8m0_to_fp32_half(x[i].e) * load_f16(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return acc;
}

}  // namespace kiln::quant
