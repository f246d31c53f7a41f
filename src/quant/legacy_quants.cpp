// The legacy 32-element formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1) and Q1_0:
// dequantization, ggml's reference quantizers, and the dot products with Q8_0 / Q8_1.
//
// Element order inside a 32-block: byte j of qs holds element j in its low nibble
// and element j + 16 in its high nibble.
#include <cfloat>
#include <cmath>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/quant_math.h"
#include "quant/scale_search.h"

namespace kiln::quant {

namespace {

// The value with the largest magnitude (the first one on ties), as ggml's Q4_0 / Q5_0 pick it.
float signed_absmax(const float* x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; ++j) {
        if (amax < std::fabs(x[j])) {
            amax = std::fabs(x[j]);
            max = x[j];
        }
    }
    return max;
}

void min_max(const float* x, int n, float& min, float& max) {
    min = FLT_MAX;
    max = -FLT_MAX;
    for (int j = 0; j < n; ++j) {
        if (x[j] < min) min = x[j];
        if (x[j] > max) max = x[j];
    }
}

float absmax(const float* x, int n) {
    float amax = 0.0f;
    for (int j = 0; j < n; ++j) {
        const float a = std::fabs(x[j]);
        amax = amax > a ? amax : a;
    }
    return amax;
}

uint32_t fifth_bits(const uint8_t qh[4]) { return load_u32(qh); }

}  // namespace

// ---- dequantization ---------------------------------------------------------------

void dequantize_row_q4_0(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ4_0>(src);
    for (int64_t i = 0; i < n / k_qk; ++i, dst += k_qk) {
        const float d = load_f16(x[i].d);
        for (int j = 0; j < k_qk / 2; ++j) {
            dst[j] = static_cast<float>((x[i].qs[j] & 0x0F) - 8) * d;
            dst[j + k_qk / 2] = static_cast<float>((x[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void dequantize_row_q4_1(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ4_1>(src);
    for (int64_t i = 0; i < n / k_qk; ++i, dst += k_qk) {
        const float d = load_f16(x[i].d);
        const float m = load_f16(x[i].m);
        for (int j = 0; j < k_qk / 2; ++j) {
            dst[j] = static_cast<float>(x[i].qs[j] & 0x0F) * d + m;
            dst[j + k_qk / 2] = static_cast<float>(x[i].qs[j] >> 4) * d + m;
        }
    }
}

void dequantize_row_q5_0(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ5_0>(src);
    for (int64_t i = 0; i < n / k_qk; ++i, dst += k_qk) {
        const float d = load_f16(x[i].d);
        const uint32_t qh = fifth_bits(x[i].qh);
        for (int j = 0; j < k_qk / 2; ++j) {
            const int lo = (x[i].qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
            const int hi = (x[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
            dst[j] = static_cast<float>(lo - 16) * d;
            dst[j + k_qk / 2] = static_cast<float>(hi - 16) * d;
        }
    }
}

void dequantize_row_q5_1(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ5_1>(src);
    for (int64_t i = 0; i < n / k_qk; ++i, dst += k_qk) {
        const float d = load_f16(x[i].d);
        const float m = load_f16(x[i].m);
        const uint32_t qh = fifth_bits(x[i].qh);
        for (int j = 0; j < k_qk / 2; ++j) {
            const int lo = (x[i].qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
            const int hi = (x[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
            dst[j] = static_cast<float>(lo) * d + m;
            dst[j + k_qk / 2] = static_cast<float>(hi) * d + m;
        }
    }
}

void dequantize_row_q8_0(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ8_0>(src);
    for (int64_t i = 0; i < n / k_qk; ++i, dst += k_qk) {
        const float d = load_f16(x[i].d);
        for (int j = 0; j < k_qk; ++j) dst[j] = static_cast<float>(x[i].qs[j]) * d;
    }
}

void dequantize_row_q8_1(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ8_1>(src);
    for (int64_t i = 0; i < n / k_qk; ++i, dst += k_qk) {
        const float d = load_f16(x[i].d);
        for (int j = 0; j < k_qk; ++j) dst[j] = static_cast<float>(x[i].qs[j]) * d;
    }
}

void dequantize_row_q1_0(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ1_0>(src);
    for (int64_t i = 0; i < n / k_qk1_0; ++i, dst += k_qk1_0) {
        const float d = load_f16(x[i].d);
        for (int j = 0; j < k_qk1_0; ++j) dst[j] = ((x[i].qs[j / 8] >> (j % 8)) & 1) ? d : -d;
    }
}

// ---- reference quantizers (ggml's quantize_row_*_ref, step for step) --------------

// Q4_0: d = the signed absmax / -8, so the extreme value maps to level 0 exactly.
void quantize_row_q4_0(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockQ4_0>(dst);
    for (int64_t i = 0; i < n / k_qk; ++i, src += k_qk) {
        const float d = signed_absmax(src, k_qk) / -8;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(y[i].d, d);
        for (int j = 0; j < k_qk / 2; ++j) {
            const int lo = clamp_int(trunc_to_int(src[j] * id + 8.5f), 0, 15);
            const int hi = clamp_int(trunc_to_int(src[j + k_qk / 2] * id + 8.5f), 0, 15);
            y[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
        }
    }
}

void quantize_row_q4_1(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockQ4_1>(dst);
    for (int64_t i = 0; i < n / k_qk; ++i, src += k_qk) {
        float min, max;
        min_max(src, k_qk, min, max);
        const float d = (max - min) / 15;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(y[i].d, d);
        store_f16(y[i].m, min);
        for (int j = 0; j < k_qk / 2; ++j) {
            const int lo = clamp_int(trunc_to_int((src[j] - min) * id + 0.5f), 0, 15);
            const int hi = clamp_int(trunc_to_int((src[j + k_qk / 2] - min) * id + 0.5f), 0, 15);
            y[i].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
        }
    }
}

void quantize_row_q5_0(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockQ5_0>(dst);
    for (int64_t i = 0; i < n / k_qk; ++i, src += k_qk) {
        const float d = signed_absmax(src, k_qk) / -16;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(y[i].d, d);
        uint32_t qh = 0;
        for (int j = 0; j < k_qk / 2; ++j) {
            const int lo = clamp_int(trunc_to_int(src[j] * id + 16.5f), 0, 31);
            const int hi = clamp_int(trunc_to_int(src[j + k_qk / 2] * id + 16.5f), 0, 31);
            y[i].qs[j] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
            qh |= static_cast<uint32_t>(lo >> 4) << j;
            qh |= static_cast<uint32_t>(hi >> 4) << (j + k_qk / 2);
        }
        store_u32(y[i].qh, qh);
    }
}

void quantize_row_q5_1(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockQ5_1>(dst);
    for (int64_t i = 0; i < n / k_qk; ++i, src += k_qk) {
        float min, max;
        min_max(src, k_qk, min, max);
        const float d = (max - min) / 31;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(y[i].d, d);
        store_f16(y[i].m, min);
        uint32_t qh = 0;
        for (int j = 0; j < k_qk / 2; ++j) {
            const int lo = clamp_int(trunc_to_int((src[j] - min) * id + 0.5f), 0, 31);
            const int hi = clamp_int(trunc_to_int((src[j + k_qk / 2] - min) * id + 0.5f), 0, 31);
            y[i].qs[j] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
            qh |= static_cast<uint32_t>(lo >> 4) << j;
            qh |= static_cast<uint32_t>(hi >> 4) << (j + k_qk / 2);
        }
        store_u32(y[i].qh, qh);
    }
}

// ---- with an importance matrix ----------------------------------------------------
// ggml's quantize_row_q{4,5}_{0,1}_impl: n is one whole row (sigma2 is the row's
// mean square) and qw its n importances. Each value is weighted by
// qw * sqrt(sigma2 + x^2); the symmetric formats search their scale with
// make_qx_quants, the ones with a min with make_qkx3_quants.

namespace {

float row_sigma2(const float* x, int64_t n) {
    float sum_x2 = 0;
    for (int64_t j = 0; j < n; ++j) sum_x2 += x[j] * x[j];
    return sum_x2 / static_cast<float>(n);
}

void block_weights(const float* xb, const float* qw, float sigma2, float* weight) {
    for (int j = 0; j < k_qk; ++j) weight[j] = qw[j] * std::sqrt(sigma2 + xb[j] * xb[j]);
}

// The 32 5-bit levels L: low nibbles in qs, fifth bits in qh.
void pack_5bit(const uint8_t* L, uint8_t* qs, uint8_t* qh_bytes) {
    uint32_t qh = 0;
    for (int j = 0; j < k_qk / 2; ++j) {
        const uint8_t lo = L[j], hi = L[j + k_qk / 2];
        qs[j] = static_cast<uint8_t>((lo & 0x0F) | ((hi & 0x0F) << 4));
        qh |= static_cast<uint32_t>((lo & 0x10u) >> 4) << j;
        qh |= static_cast<uint32_t>((hi & 0x10u) >> 4) << (j + k_qk / 2);
    }
    store_u32(qh_bytes, qh);
}

// One block's search: symmetric (d only, levels in L as level + nmax) or with a
// min (d and m), its scale(s) stored in the block.
template <int nmax, class Block>
void weighted_block(const float* xb, const float* qw, float sigma2, Block& y, uint8_t* L) {
    float weight[k_qk];
    block_weights(xb, qw, sigma2, weight);
    if constexpr (requires { y.m; }) {
        float min;
        uint8_t Laux[k_qk];
        store_f16(y.d, make_qkx3_quants(k_qk, nmax, xb, weight, L, &min, Laux, -0.9f, 0.05f, 36, false));
        store_f16(y.m, -min);
    } else {
        store_f16(y.d, make_qx_quants(k_qk, nmax, xb, reinterpret_cast<int8_t*>(L), weight));
    }
}

template <int nmax, class Block>
void weighted_row(const float* src, void* dst, int64_t n, const float* qw) {
    auto* y = blocks_of<Block>(dst);
    const float sigma2 = row_sigma2(src, n);
    for (int64_t ib = 0; ib < n / k_qk; ++ib) {
        uint8_t L[k_qk];
        weighted_block<nmax>(src + k_qk * ib, qw + k_qk * ib, sigma2, y[ib], L);
        if constexpr (requires { y[ib].qh; })
            pack_5bit(L, y[ib].qs, y[ib].qh);
        else
            for (int j = 0; j < k_qk / 2; ++j) y[ib].qs[j] = static_cast<uint8_t>(L[j] | (L[j + k_qk / 2] << 4));
    }
}

}  // namespace

void quantize_row_q4_0_weighted(const float* src, void* dst, int64_t n, const float* qw) { weighted_row<8, BlockQ4_0>(src, dst, n, qw); }
void quantize_row_q4_1_weighted(const float* src, void* dst, int64_t n, const float* qw) { weighted_row<15, BlockQ4_1>(src, dst, n, qw); }
void quantize_row_q5_0_weighted(const float* src, void* dst, int64_t n, const float* qw) { weighted_row<16, BlockQ5_0>(src, dst, n, qw); }
void quantize_row_q5_1_weighted(const float* src, void* dst, int64_t n, const float* qw) { weighted_row<31, BlockQ5_1>(src, dst, n, qw); }

// Q8_0 / Q8_1: d = absmax / 127, levels rounded half away from zero (roundf).
void quantize_row_q8_0(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockQ8_0>(dst);
    for (int64_t i = 0; i < n / k_qk; ++i, src += k_qk) {
        const float d = absmax(src, k_qk) / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(y[i].d, d);
        for (int j = 0; j < k_qk; ++j) y[i].qs[j] = static_cast<int8_t>(clamp_int(round_away_to_int(src[j] * id), -128, 127));
    }
}

void quantize_row_q8_1(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockQ8_1>(dst);
    for (int64_t i = 0; i < n / k_qk; ++i, src += k_qk) {
        const float d = absmax(src, k_qk) / 127;
        const float id = d != 0.0f ? 1.0f / d : 0.0f;
        store_f16(y[i].d, d);
        int sum = 0;
        for (int j = 0; j < k_qk; ++j) {
            y[i].qs[j] = static_cast<int8_t>(clamp_int(round_away_to_int(src[j] * id), -128, 127));
            sum += y[i].qs[j];
        }
        store_f16(y[i].s, static_cast<float>(sum) * d);
    }
}

// ---- dot products -------------------------------------------------------------------
//
// Per block: isum = sum over the 32 elements of weight level x activation level
// (exact in int32); term = (d_w * d_a) * isum, where d_w * d_a is exact (two f16
// significands fit in f32) so the term is rounded once; the min formats add
// m_w * s_a (also exact) to the term. acc += term, in block order.

float vec_dot_q4_0_q8_0(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockQ4_0>(w);
    const auto* y = blocks_of<BlockQ8_0>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk; ++i) {
        int32_t isum = 0;
        for (int j = 0; j < k_qk / 2; ++j) {
            isum += ((x[i].qs[j] & 0x0F) - 8) * y[i].qs[j];
            isum += ((x[i].qs[j] >> 4) - 8) * y[i].qs[j + k_qk / 2];
        }
        const float d = load_f16(x[i].d) * load_f16(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return acc;
}

float vec_dot_q4_1_q8_1(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockQ4_1>(w);
    const auto* y = blocks_of<BlockQ8_1>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk; ++i) {
        int32_t isum = 0;
        for (int j = 0; j < k_qk / 2; ++j) {
            isum += (x[i].qs[j] & 0x0F) * y[i].qs[j];
            isum += (x[i].qs[j] >> 4) * y[i].qs[j + k_qk / 2];
        }
        const float d = load_f16(x[i].d) * load_f16(y[i].d);
        const float scaled = d * static_cast<float>(isum);
        const float min_term = load_f16(x[i].m) * load_f16(y[i].s);
        const float term = scaled + min_term;
        acc += term;
    }
    return acc;
}

float vec_dot_q5_0_q8_0(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockQ5_0>(w);
    const auto* y = blocks_of<BlockQ8_0>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk; ++i) {
        const uint32_t qh = fifth_bits(x[i].qh);
        int32_t isum = 0;
        for (int j = 0; j < k_qk / 2; ++j) {
            const int lo = (x[i].qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
            const int hi = (x[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
            isum += (lo - 16) * y[i].qs[j];
            isum += (hi - 16) * y[i].qs[j + k_qk / 2];
        }
        const float d = load_f16(x[i].d) * load_f16(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return acc;
}

float vec_dot_q5_1_q8_1(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockQ5_1>(w);
    const auto* y = blocks_of<BlockQ8_1>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk; ++i) {
        const uint32_t qh = fifth_bits(x[i].qh);
        int32_t isum = 0;
        for (int j = 0; j < k_qk / 2; ++j) {
            const int lo = (x[i].qs[j] & 0x0F) | static_cast<int>(((qh >> j) & 1) << 4);
            const int hi = (x[i].qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
            isum += lo * y[i].qs[j];
            isum += hi * y[i].qs[j + k_qk / 2];
        }
        const float d = load_f16(x[i].d) * load_f16(y[i].d);
        const float scaled = d * static_cast<float>(isum);
        const float min_term = load_f16(x[i].m) * load_f16(y[i].s);
        const float term = scaled + min_term;
        acc += term;
    }
    return acc;
}

float vec_dot_q8_0_q8_0(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockQ8_0>(w);
    const auto* y = blocks_of<BlockQ8_0>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk; ++i) {
        int32_t isum = 0;
        for (int j = 0; j < k_qk; ++j) isum += x[i].qs[j] * y[i].qs[j];
        const float d = load_f16(x[i].d) * load_f16(y[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return acc;
}

}  // namespace kiln::quant
