// The i-quants: IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S (grid formats:
// an index selects 4 or 8 magnitudes from a fixed table), IQ4_NL and IQ4_XS (16
// non-linear levels). Dequantization for all, ggml's quantizers for IQ4_NL (its
// reference one and llama-quantize's scale search) and IQ4_XS (quantize_iq4_xs), and
// the IQ4_NL / IQ4_XS dot products. The grid formats' quantizers are in
// iq3_quants.cpp, iq2_quants.cpp and iq1_quants.cpp.
//
// Dequantized values are computed in the same operation order as ggml and the gguf
// package (e.g. (db * grid) * sign), which is what makes them bit-identical.
#include <cmath>

#include "quant/blocks.h"
#include "quant/quant_math.h"
#include "quant/kernels.h"
#include "quant/quant_tables.h"

namespace kiln::quant {

namespace {

constexpr float k_group_max_eps = 1e-15f;  // a block whose absmax is below this is all zero

inline float sign_of(uint8_t signs, int j) { return (signs >> j) & 1 ? -1.f : 1.f; }

// IQ2 / IQ3_XXS sub-block scale: d * (0.5 + s) * factor.
inline float half_step_scale(float d, uint32_t s, float factor) { return d * (0.5f + static_cast<float>(s)) * factor; }

}  // namespace

// ---- IQ2: 8-element grid rows of {8, 25, 43} ------------------------------------------

// Per 32 elements: two u32, the first four grid indices (one byte each), the second
// four 7-bit sign indices and a 4-bit scale in the top bits.
void dequantize_row_iq2_xxs(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockIQ2_XXS>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* q = x[i].qs + 8 * ib;
            const uint32_t aux = load_u32(q + 4);
            const float db = half_step_scale(d, aux >> 28, 0.25f);
            for (int l = 0; l < 4; ++l) {
                const uint8_t* grid = k_iq2xxs_grid[q[l]];
                const uint8_t signs = k_iq2_signs[(aux >> (7 * l)) & 127];
                for (int j = 0; j < 8; ++j) *dst++ = db * static_cast<float>(grid[j]) * sign_of(signs, j);
            }
        }
    }
}

// Per 8 elements: a u16, 9-bit grid index and 7-bit sign index; a 4-bit scale per 16.
void dequantize_row_iq2_xs(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockIQ2_XS>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        for (int ib = 0; ib < 8; ++ib) {
            const float db[2] = {half_step_scale(d, x[i].scales[ib] & 0xF, 0.25f),
                                 half_step_scale(d, x[i].scales[ib] >> 4, 0.25f)};
            for (int l = 0; l < 4; ++l) {
                const uint16_t q = load_u16(x[i].qs + 2 * (4 * ib + l));
                const uint8_t* grid = k_iq2xs_grid[q & 511];
                const uint8_t signs = k_iq2_signs[q >> 9];
                for (int j = 0; j < 8; ++j) *dst++ = db[l / 2] * static_cast<float>(grid[j]) * sign_of(signs, j);
            }
        }
    }
}

// Per 8 elements: a 10-bit grid index (qs byte + 2 bits of qh) and a full sign byte.
void dequantize_row_iq2_s(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockIQ2_S>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        for (int ib = 0; ib < 8; ++ib) {
            const float db[2] = {half_step_scale(d, x[i].scales[ib] & 0xF, 0.25f),
                                 half_step_scale(d, x[i].scales[ib] >> 4, 0.25f)};
            for (int l = 0; l < 4; ++l) {
                const int index = x[i].qs[4 * ib + l] | (((x[i].qh[ib] >> (2 * l)) & 3) << 8);
                const uint8_t* grid = k_iq2s_grid[index];
                const uint8_t signs = x[i].signs[4 * ib + l];
                for (int j = 0; j < 8; ++j) *dst++ = db[l / 2] * static_cast<float>(grid[j]) * sign_of(signs, j);
            }
        }
    }
}

// ---- IQ3: 4-element grid rows ----------------------------------------------------------

// Per 32 elements: 8 grid indices (bytes) and a u32 of four 7-bit sign indices + scale.
void dequantize_row_iq3_xxs(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockIQ3_XXS>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* q = x[i].qs + 8 * ib;
            const uint32_t aux = load_u32(x[i].scales_signs + 4 * ib);
            const float db = half_step_scale(d, aux >> 28, 0.5f);
            for (int l = 0; l < 4; ++l) {
                const uint8_t signs = k_iq2_signs[(aux >> (7 * l)) & 127];
                const uint8_t* grid1 = k_iq3xxs_grid[q[2 * l]];
                const uint8_t* grid2 = k_iq3xxs_grid[q[2 * l + 1]];
                for (int j = 0; j < 4; ++j) dst[j] = db * static_cast<float>(grid1[j]) * sign_of(signs, j);
                for (int j = 0; j < 4; ++j) dst[j + 4] = db * static_cast<float>(grid2[j]) * sign_of(signs, j + 4);
                dst += 8;
            }
        }
    }
}

// Per 4 elements: a 9-bit grid index (qs byte + one bit of qh); a sign byte per 8
// elements; a 4-bit odd scale (1 + 2 s) per 32.
void dequantize_row_iq3_s(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockIQ3_S>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        for (int ib = 0; ib < 8; ++ib) {
            const int s = (x[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xF;
            const float db = d * static_cast<float>(1 + 2 * s);
            for (int k = 0; k < 8; ++k) {  // 8 grid rows of 4 elements
                const int g = 8 * ib + k;
                const int index = x[i].qs[g] | (((x[i].qh[g / 8] >> (g % 8)) & 1) << 8);
                const uint8_t* grid = k_iq3s_grid[index];
                const uint8_t signs = x[i].signs[4 * ib + k / 2];
                for (int j = 0; j < 4; ++j) *dst++ = db * static_cast<float>(grid[j]) * sign_of(signs, 4 * (k % 2) + j);
            }
        }
    }
}

// ---- IQ1: 8-element grid rows of {-1, 0, 1}, shifted by +-1/8 -----------------------------

constexpr float k_iq1_delta = 0.125f;

// Per 32 elements: a u16 of qh holding the high 3 bits of four 11-bit grid indices,
// a 3-bit odd scale and the sign of the shift.
void dequantize_row_iq1_s(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockIQ1_S>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        for (int ib = 0; ib < 8; ++ib) {
            const uint16_t qh = load_u16(x[i].qh + 2 * ib);
            const float dl = d * static_cast<float>(2 * ((qh >> 12) & 7) + 1);
            const float delta = qh & 0x8000 ? -k_iq1_delta : k_iq1_delta;
            for (int l = 0; l < 4; ++l) {
                const int8_t* grid = k_iq1s_grid[x[i].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
                for (int j = 0; j < 8; ++j) *dst++ = dl * (static_cast<float>(grid[j]) + delta);
            }
        }
    }
}

// IQ1_M has no f16 field: the super-scale's 16 bits are the top nibbles of the four
// u16 scale words, whose low 12 bits hold 3-bit scales (one per 16 elements). Per 8
// elements a nibble of qh: 3 high index bits and the shift sign.
void dequantize_row_iq1_m(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockIQ1_M>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        uint16_t sc[4];
        for (int k = 0; k < 4; ++k) sc[k] = load_u16(x[i].scales + 2 * k);
        const uint16_t d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                                      (sc[3] & 0xF000));
        const float d = fp16_to_fp32(d_bits);
        for (int ib = 0; ib < 8; ++ib) {
            for (int l = 0; l < 4; ++l) {  // 4 grid rows of 8; rows 0-1 and 2-3 share a scale
                const int s = (sc[ib / 2] >> (6 * (ib % 2) + 3 * (l / 2))) & 7;
                const float dl = d * static_cast<float>(2 * s + 1);
                const int nibble = (x[i].qh[2 * ib + l / 2] >> (4 * (l % 2))) & 0xF;
                const float delta = nibble & 0x8 ? -k_iq1_delta : k_iq1_delta;
                const int8_t* grid = k_iq1s_grid[x[i].qs[4 * ib + l] | ((nibble & 7) << 8)];
                for (int j = 0; j < 8; ++j) *dst++ = dl * (static_cast<float>(grid[j]) + delta);
            }
        }
    }
}

// ---- IQ4: 16 non-linear levels ------------------------------------------------------------

void dequantize_row_iq4_nl(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockIQ4_NL>(src);
    for (int64_t i = 0; i < n / k_qk4_nl; ++i, dst += k_qk4_nl) {
        const float d = load_f16(x[i].d);
        for (int j = 0; j < k_qk4_nl / 2; ++j) {
            dst[j] = d * static_cast<float>(k_values_iq4nl[x[i].qs[j] & 0xF]);
            dst[j + k_qk4_nl / 2] = d * static_cast<float>(k_values_iq4nl[x[i].qs[j] >> 4]);
        }
    }
}

// IQ4_XS: 8 sub-blocks of 32 with 6-bit scales (low 4 bits in scales_l, high 2 in the u16 scales_h), offset by -32.
static int iq4_xs_scale(const BlockIQ4_XS& b, int ib) {
    const int low = (b.scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF;
    const int high = (load_u16(b.scales_h) >> (2 * ib)) & 3;
    return (low | (high << 4)) - 32;
}

void dequantize_row_iq4_xs(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockIQ4_XS>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        for (int ib = 0; ib < 8; ++ib, dst += 32) {
            const float dl = d * static_cast<float>(iq4_xs_scale(x[i], ib));
            const uint8_t* qs = x[i].qs + 16 * ib;
            for (int j = 0; j < 16; ++j) {
                dst[j] = dl * static_cast<float>(k_values_iq4nl[qs[j] & 0xF]);
                dst[j + 16] = dl * static_cast<float>(k_values_iq4nl[qs[j] >> 4]);
            }
        }
    }
}

// The level nearest to v among the 16 sorted values: level i is picked once v
// reaches the midpoint of values[i - 1] and values[i] (compared at double scale, so
// exactly), as ggml's best_index_int8 does.
static int nearest_iq4nl_level(float v) {
    const float v2 = v + v;
    int index = 0;
    for (int step = 8; step > 0; step /= 2) {
        const int j = index + step;
        if (v2 >= static_cast<float>(k_values_iq4nl[j - 1] + k_values_iq4nl[j])) index = j;
    }
    return index;
}

// ggml's quantize_row_iq4_nl_impl, for one block of 32 values: the scale of the
// best weighted fit and, in Lb, the levels of the first (d0) fit. ntry < 0 is
// quantize_row_iq4_nl_ref: d0 = signed absmax / -127 picks the levels and the scale
// is the weighted least-squares fit for them. ntry > 0 is what llama-quantize does
// (quantize_iq4_nl / quantize_iq4_xs): the fit starts from the other sign, then the
// scales (values[0] + t) / max for t in [-ntry, ntry] are tried and the best fit
// kept. A block whose absmax is below 1e-15 has scale 0 (Lb untouched).
static float iq4_block_scale(const float* xb, const float* weight, uint8_t* Lb, int ntry) {
    float amax = 0, max = 0;
    for (int j = 0; j < 32; ++j) {
        const float ax = std::fabs(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (amax < k_group_max_eps) return 0.0f;
    const auto v0 = static_cast<float>(k_values_iq4nl[0]);
    const float d0 = ntry > 0 ? -max / v0 : max / v0;
    float id = 1 / d0;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; ++j) {
        const int l = nearest_iq4nl_level(id * xb[j]);
        Lb[j] = static_cast<uint8_t>(l);
        const float q = static_cast<float>(k_values_iq4nl[l]);
        const float w = weight[j];
        sumqx += w * q * xb[j];
        sumq2 += w * q * q;
    }
    float d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -ntry; itry <= ntry; ++itry) {
        id = static_cast<float>(itry + k_values_iq4nl[0]) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
            const float q = static_cast<float>(k_values_iq4nl[nearest_iq4nl_level(id * xb[j])]);
            const float w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

// The weights of a block of 32 values inside a super-block of n: qw * sqrt(sigma2 +
// x^2), sigma2 twice the super-block's mean square, with importances qw (quantize
// --imatrix); else x^2.
static float iq4_sigma2(const float* x, int n) {
    float sigma2 = 0;
    for (int j = 0; j < n; ++j) sigma2 += x[j] * x[j];
    return sigma2 * (2.f / static_cast<float>(n));
}

static void iq4_weights(const float* xb, const float* qw, float sigma2, float* weight) {
    if (qw)
        for (int j = 0; j < 32; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
    else
        for (int j = 0; j < 32; ++j) weight[j] = xb[j] * xb[j];
}

// One IQ4_NL block (a super-block of one block): the scale is stored as it is; with
// ntry > 0 the levels are picked again for it (a zero block: the level nearest 0).
static void quantize_block_iq4_nl(const float* x, BlockIQ4_NL& y, int ntry, const float* qw = nullptr) {
    uint8_t L[k_qk4_nl] = {};
    float weight[k_qk4_nl];
    iq4_weights(x, qw, qw ? iq4_sigma2(x, k_qk4_nl) : 0.f, weight);
    const float d = iq4_block_scale(x, weight, L, ntry);
    store_f16(y.d, d);
    if (ntry > 0) {
        const float id = d != 0 ? 1 / d : 0.f;
        for (int j = 0; j < k_qk4_nl; ++j) L[j] = static_cast<uint8_t>(nearest_iq4nl_level(id * x[j]));
    }
    for (int j = 0; j < k_qk4_nl / 2; ++j) y.qs[j] = static_cast<uint8_t>(L[j] | (L[j + 16] << 4));
}

// One IQ4_XS super-block of 256 (ggml's quantize_iq4_xs, ntry 7): each block of 32
// gets its best scale as IQ4_NL's do; the super-scale is d = -(the scale of largest
// magnitude) / 32 (so -0 for an all-zero super-block, as ggml stores it), each
// block's scale becomes the 6-bit l = round(scale / d) clamped to [-32, 31], and the
// levels are picked again for d * l.
static void quantize_superblock_iq4_xs(const float* x, BlockIQ4_XS& y, const float* qw) {
    uint8_t L[k_qk_k] = {};
    float weight[32], scales[k_qk_k / 32];
    const float sigma2 = qw ? iq4_sigma2(x, k_qk_k) : 0.f;
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < k_qk_k / 32; ++ib) {
        iq4_weights(x + 32 * ib, qw ? qw + 32 * ib : nullptr, sigma2, weight);
        scales[ib] = iq4_block_scale(x + 32 * ib, weight, L + 32 * ib, 7);
        if (std::fabs(scales[ib]) > amax_scale) {
            amax_scale = std::fabs(scales[ib]);
            max_scale = scales[ib];
        }
    }
    const float d = -max_scale / 32;
    store_f16(y.d, d);
    const float id = d != 0 ? 1 / d : 0.f;
    uint16_t scales_h = 0;
    for (int ib = 0; ib < k_qk_k / 32; ++ib) {
        int l = clamp_int(nearest_int(id * scales[ib]), -32, 31);
        const float dl = d * static_cast<float>(l);
        const float idl = dl != 0 ? 1 / dl : 0.f;
        for (int j = 0; j < 32; ++j) L[32 * ib + j] = static_cast<uint8_t>(nearest_iq4nl_level(idl * x[32 * ib + j]));
        l += 32;
        if (ib % 2 == 0) y.scales_l[ib / 2] = static_cast<uint8_t>(l & 0xF);
        else y.scales_l[ib / 2] |= static_cast<uint8_t>((l & 0xF) << 4);
        scales_h |= static_cast<uint16_t>((l >> 4) << (2 * ib));
    }
    y.scales_h[0] = static_cast<uint8_t>(scales_h & 0xFF);
    y.scales_h[1] = static_cast<uint8_t>(scales_h >> 8);
    for (int i = 0; i < k_qk_k / 32; ++i)
        for (int j = 0; j < 16; ++j) y.qs[16 * i + j] = static_cast<uint8_t>(L[32 * i + j] | (L[32 * i + 16 + j] << 4));
}

void quantize_row_iq4_nl(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockIQ4_NL>(dst);
    for (int64_t i = 0; i < n / k_qk4_nl; ++i) quantize_block_iq4_nl(src + i * k_qk4_nl, y[i], -1);
}

void quantize_row_iq4_nl_search(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockIQ4_NL>(dst);
    for (int64_t i = 0; i < n / k_qk4_nl; ++i) quantize_block_iq4_nl(src + i * k_qk4_nl, y[i], 7);
}

void quantize_row_iq4_nl_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    auto* y = blocks_of<BlockIQ4_NL>(dst);
    for (int64_t i = 0; i < n / k_qk4_nl; ++i) quantize_block_iq4_nl(src + i * k_qk4_nl, y[i], 7, qw + i * k_qk4_nl);
}

void quantize_row_iq4_xs(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockIQ4_XS>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i) quantize_superblock_iq4_xs(src + i * k_qk_k, y[i], nullptr);
}

void quantize_row_iq4_xs_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    auto* y = blocks_of<BlockIQ4_XS>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i) quantize_superblock_iq4_xs(src + i * k_qk_k, y[i], qw + i * k_qk_k);
}

// Dot products. IQ4_NL x Q8_0, per 32-block: isum = sum of level value x activation
// level; term = (d_w * d_a) * isum (d_w * d_a exact). IQ4_XS x Q8_K, per super-block:
// isum = sum over sub-blocks of (scale - 32) x (sum of level value x activation level);
// term = (d_a * d_w) * isum. acc += term in block order.

float vec_dot_iq4_nl_q8_0(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockIQ4_NL>(w);
    const auto* y = blocks_of<BlockQ8_0>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk4_nl; ++i) {
        int32_t isum = 0;
        for (int j = 0; j < k_qk4_nl / 2; ++j) {
            isum += k_values_iq4nl[x[i].qs[j] & 0xF] * y[i].qs[j];
            isum += k_values_iq4nl[x[i].qs[j] >> 4] * y[i].qs[j + 16];
        }
        const float d = load_f16(x[i].d) * load_f16(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return acc;
}

float vec_dot_iq4_xs_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockIQ4_XS>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0;
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* qs = x[i].qs + 16 * ib;
            const int8_t* q8 = y[i].qs + 32 * ib;
            int32_t dot = 0;
            for (int j = 0; j < 16; ++j) {
                dot += k_values_iq4nl[qs[j] & 0xF] * q8[j];
                dot += k_values_iq4nl[qs[j] >> 4] * q8[j + 16];
            }
            isum += iq4_xs_scale(x[i], ib) * dot;
        }
        const float d = load_f32(y[i].d) * load_f16(x[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return acc;
}

// ---- grid formats x Q8_K ----------------------------------------------------------------
//
// Per super-block an exact integer isum = sum over sub-blocks of the integer scale
// ls (2 s + 1) x sum of signed grid level x activation level; one f32 term
// (d_w * d_a) * isum per block, added in block order; the row's result is that sum
// times the format's power of two (IQ2: 1/8, IQ3_XXS: 1/4, IQ3_S: 1, IQ1: 1/8 with
// levels 8 grid +- 1), ggml's factors. Scaling by a power of two is exact, so the
// row still equals the sum of its blocks' results.

namespace {

// v negated where bit `bit` of the sign byte is set.
inline int with_sign(int v, uint8_t signs, int bit) { return (signs >> bit) & 1 ? -v : v; }

// sum over j < 8 of signed grid level x q8[j].
inline int32_t dot8(const uint8_t* grid, uint8_t signs, const int8_t* q8) {
    int32_t s = 0;
    for (int j = 0; j < 8; ++j) s += with_sign(grid[j], signs, j) * q8[j];
    return s;
}

}  // namespace

float vec_dot_iq2_xxs_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockIQ2_XXS>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0;
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* q = x[i].qs + 8 * ib;
            const uint32_t aux = load_u32(q + 4);
            int32_t sum = 0;
            for (int l = 0; l < 4; ++l) sum += dot8(k_iq2xxs_grid[q[l]], k_iq2_signs[(aux >> (7 * l)) & 127], y[i].qs + 32 * ib + 8 * l);
            isum += static_cast<int32_t>(2 * (aux >> 28) + 1) * sum;
        }
        const float d = load_f16(x[i].d) * load_f32(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return 0.125f * acc;
}

float vec_dot_iq2_xs_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockIQ2_XS>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0;
        for (int ib = 0; ib < 8; ++ib)
            for (int h = 0; h < 2; ++h) {  // two sub-blocks of 16, each with its own scale
                int32_t sum = 0;
                for (int l = 2 * h; l < 2 * h + 2; ++l) {
                    const uint16_t q = load_u16(x[i].qs + 2 * (4 * ib + l));
                    sum += dot8(k_iq2xs_grid[q & 511], k_iq2_signs[q >> 9], y[i].qs + 32 * ib + 8 * l);
                }
                isum += (2 * ((x[i].scales[ib] >> (4 * h)) & 0xF) + 1) * sum;
            }
        const float d = load_f16(x[i].d) * load_f32(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return 0.125f * acc;
}

float vec_dot_iq2_s_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockIQ2_S>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0;
        for (int ib = 0; ib < 8; ++ib)
            for (int h = 0; h < 2; ++h) {
                int32_t sum = 0;
                for (int l = 2 * h; l < 2 * h + 2; ++l) {
                    const int index = x[i].qs[4 * ib + l] | (((x[i].qh[ib] >> (2 * l)) & 3) << 8);
                    sum += dot8(k_iq2s_grid[index], x[i].signs[4 * ib + l], y[i].qs + 32 * ib + 8 * l);
                }
                isum += (2 * ((x[i].scales[ib] >> (4 * h)) & 0xF) + 1) * sum;
            }
        const float d = load_f16(x[i].d) * load_f32(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return 0.125f * acc;
}

float vec_dot_iq3_xxs_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockIQ3_XXS>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0;
        for (int ib = 0; ib < 8; ++ib) {
            const uint8_t* q = x[i].qs + 8 * ib;
            const uint32_t aux = load_u32(x[i].scales_signs + 4 * ib);
            int32_t sum = 0;
            for (int l = 0; l < 4; ++l) {
                const uint8_t signs = k_iq2_signs[(aux >> (7 * l)) & 127];
                const int8_t* q8 = y[i].qs + 32 * ib + 8 * l;
                for (int j = 0; j < 4; ++j) {
                    sum += with_sign(k_iq3xxs_grid[q[2 * l]][j], signs, j) * q8[j];
                    sum += with_sign(k_iq3xxs_grid[q[2 * l + 1]][j], signs, j + 4) * q8[j + 4];
                }
            }
            isum += static_cast<int32_t>(2 * (aux >> 28) + 1) * sum;
        }
        const float d = load_f16(x[i].d) * load_f32(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return 0.25f * acc;
}

float vec_dot_iq3_s_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockIQ3_S>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0;
        for (int ib = 0; ib < 8; ++ib) {
            int32_t sum = 0;
            for (int k = 0; k < 8; ++k) {  // 8 grid rows of 4
                const int g = 8 * ib + k;
                const int index = x[i].qs[g] | (((x[i].qh[g / 8] >> (g % 8)) & 1) << 8);
                const uint8_t signs = x[i].signs[4 * ib + k / 2];
                const int8_t* q8 = y[i].qs + 4 * g;
                for (int j = 0; j < 4; ++j) sum += with_sign(k_iq3s_grid[index][j], signs, 4 * (k % 2) + j) * q8[j];
            }
            isum += (2 * ((x[i].scales[ib / 2] >> (4 * (ib % 2))) & 0xF) + 1) * sum;
        }
        const float d = load_f16(x[i].d) * load_f32(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return acc;
}

float vec_dot_iq1_s_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockIQ1_S>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0;
        for (int ib = 0; ib < 8; ++ib) {
            const uint16_t qh = load_u16(x[i].qh + 2 * ib);
            const int delta = qh & 0x8000 ? -1 : 1;
            int32_t sum = 0;
            for (int l = 0; l < 4; ++l) {
                const int8_t* grid = k_iq1s_grid[x[i].qs[4 * ib + l] | (((qh >> (3 * l)) & 7) << 8)];
                const int8_t* q8 = y[i].qs + 32 * ib + 8 * l;
                for (int j = 0; j < 8; ++j) sum += (8 * grid[j] + delta) * q8[j];
            }
            isum += (2 * ((qh >> 12) & 7) + 1) * sum;
        }
        const float d = load_f16(x[i].d) * load_f32(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return 0.125f * acc;
}

float vec_dot_iq1_m_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockIQ1_M>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        uint16_t sc[4];
        for (int k = 0; k < 4; ++k) sc[k] = load_u16(x[i].scales + 2 * k);
        const uint16_t d_bits = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) |
                                                      (sc[3] & 0xF000));
        int32_t isum = 0;
        for (int ib = 0; ib < 8; ++ib)
            for (int h = 0; h < 2; ++h) {  // sub-blocks of 16: grid rows 2h, 2h + 1
                int32_t sum = 0;
                for (int l = 2 * h; l < 2 * h + 2; ++l) {
                    const int nibble = (x[i].qh[2 * ib + l / 2] >> (4 * (l % 2))) & 0xF;
                    const int delta = nibble & 0x8 ? -1 : 1;
                    const int8_t* grid = k_iq1s_grid[x[i].qs[4 * ib + l] | ((nibble & 7) << 8)];
                    const int8_t* q8 = y[i].qs + 32 * ib + 8 * l;
                    for (int j = 0; j < 8; ++j) sum += (8 * grid[j] + delta) * q8[j];
                }
                isum += (2 * ((sc[ib / 2] >> (6 * (ib % 2) + 3 * h)) & 7) + 1) * sum;
            }
        const float d = fp16_to_fp32(d_bits) * load_f32(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return 0.125f * acc;
}

}  // namespace kiln::quant
