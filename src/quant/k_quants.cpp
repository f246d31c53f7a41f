// The k-quants (Q2_K, Q3_K, Q4_K, Q5_K, Q6_K) and Q8_K: dequantization, ggml's
// reference quantizers, and the dot products with Q8_K activations.
//
// All work on 256-element super-blocks split into 16 sub-blocks of 16 (Q2_K, Q3_K,
// Q6_K) or 8 of 32 (Q4_K, Q5_K), each with a small integer scale (and min) that
// multiplies the super-block's f16 d (and dmin).
//
// The quantizers are ggml's quantize_row_*_ref searches, operation for operation:
// the output must be bit-identical, so the order of every float operation matters
// and the file is compiled without floating-point contraction.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "quant/blocks.h"
#include "quant/kernels.h"
#include "quant/quant_math.h"
#include "quant/scale_search.h"

namespace kiln::quant {

namespace {

constexpr float k_group_max_eps = 1e-15f;  // a group whose absmax is below this is all zero

// ---- the 6-bit scales and mins of Q4_K / Q5_K ---------------------------------------
// Bytes 0-3: scales 0-3 (low 6 bits); bytes 4-7: mins 0-3 (low 6 bits); bytes 8-11:
// the low nibbles of scales 4-7 and, in the high nibbles, of mins 4-7; the top two bits
// of bytes 0-3 / 4-7 are the high bits of scales 4-7 / mins 4-7.
void scale_min_k4(int j, const uint8_t* q, uint8_t& scale, uint8_t& min) {
    if (j < 4) {
        scale = q[j] & 63;
        min = q[j + 4] & 63;
    } else {
        scale = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        min = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

void pack_scale_min_k4(int j, uint8_t ls, uint8_t lm, uint8_t* q) {
    if (j < 4) {
        q[j] = ls;
        q[j + 4] = lm;
    } else {
        q[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
        q[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
        q[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
}

// The 16 signed 6-bit scales of Q3_K: low nibbles in bytes 0-7 (sub-blocks 0-7 in the
// low nibble, 8-15 in the high one), the two high bits in bytes 8-11.
int scale_q3_k(const uint8_t* scales, int j) {
    const int low = j < 8 ? (scales[j] & 0xF) : (scales[j - 8] >> 4);
    const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (low | (high << 4)) - 32;
}

// ---- ggml's scale searches ------------------------------------------------------------

}  // namespace

// Symmetric levels in [-nmax, nmax) for n values (ggml's make_qx_quants with
// rmse_type 1): tries 19 scales around nmax / absmax and keeps the best weighted
// least-squares fit, each value weighted by qw[i] (an importance matrix) or, without
// one, by x^2. L gets level + nmax.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, const float* qw) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < k_group_max_eps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l + nmax);
        const float w = qw ? qw[i] : x[i] * x[i];
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) continue;
        iscale = -(static_cast<float>(nmax) + 0.1f * static_cast<float>(is)) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
            const float w = qw ? qw[i] : x[i] * x[i];
            sumlx += w * x[i] * static_cast<float>(l);
            suml2 += w * static_cast<float>(l) * static_cast<float>(l);
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(nmax + clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights ? weights[0] : x[0] * x[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights ? weights[i] : x[i] * x[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max <= min) {
        std::memset(L, 0, static_cast<size_t>(n));
        *the_min = -min;
        return 0.f;
    }
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_mad = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = static_cast<uint8_t>(clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax));
        float diff = scale * static_cast<float>(L[i]) + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        const float w = weights ? weights[i] : x[i] * x[i];
        best_mad += w * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = static_cast<uint8_t>(l);
            const float w = weights ? weights[i] : x[i] * x[i];
            const float fl = static_cast<float>(l);
            sum_l += w * fl;
            sum_l2 += w * fl * fl;
            sum_xl += w * fl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float mad = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
                diff = use_mad ? std::fabs(diff) : diff * diff;
                const float w = weights ? weights[i] : x[i] * x[i];
                mad += w * diff;
            }
            if (mad < best_mad) {
                std::memcpy(L, Laux, static_cast<size_t>(n));
                best_mad = mad;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights) {
    float max = 0;
    for (int i = 0; i < n; ++i) max = std::max(max, x[i]);
    if (max < k_group_max_eps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    float iscale = static_cast<float>(nmax) / max;
    for (int i = 0; i < n; ++i) L[i] = static_cast<uint8_t>(nearest_int(iscale * x[i]));
    const float scale = 1 / iscale;
    float best_mse = 0;
    for (int i = 0; i < n; ++i) {
        const float diff = x[i] - scale * static_cast<float>(L[i]);
        best_mse += quant_weights[i] * diff * diff;
    }
    for (int is = -4; is <= 4; ++is) {
        if (is == 0) continue;
        const float iscale_is = (0.1f * static_cast<float>(is) + static_cast<float>(nmax)) / max;
        const float scale_is = 1 / iscale_is;
        float mse = 0;
        for (int i = 0; i < n; ++i) {
            const int l = std::min(nmax, nearest_int(iscale_is * x[i]));
            const float diff = x[i] - scale_is * static_cast<float>(l);
            mse += quant_weights[i] * diff * diff;
        }
        if (mse < best_mse) {
            best_mse = mse;
            iscale = iscale_is;
        }
    }
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = std::min(nmax, nearest_int(iscale * x[i]));
        L[i] = static_cast<uint8_t>(l);
        const float w = quant_weights[i];
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    // Up to five passes moving single levels where that improves the fit.
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = quant_weights[i];
            const float li = static_cast<float>(L[i]);
            float slx = sumlx - w * x[i] * li;
            float sl2 = suml2 - w * li * li;
            if (slx > 0 && sl2 > 0) {
                const int new_l = std::min(nmax, nearest_int(x[i] * sl2 / slx));
                if (new_l != L[i]) {
                    slx += w * x[i] * static_cast<float>(new_l);
                    sl2 += w * static_cast<float>(new_l) * static_cast<float>(new_l);
                    if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = static_cast<uint8_t>(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

namespace {

// Q3_K's search (ggml's make_q3_quants with do_rmse): start from nmax / absmax, then
// up to five passes that move single levels when that improves the x^2-weighted fit.
// L gets level + nmax (or 0 for an all-zero group).
float make_q3_quants(int n, int nmax, const float* x, int8_t* L) {
    float max = 0, amax = 0;
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < k_group_max_eps) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        return 0.f;
    }
    const float iscale = static_cast<float>(-nmax) / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_int(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i] = static_cast<int8_t>(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * static_cast<float>(l);
        suml2 += w * static_cast<float>(l) * static_cast<float>(l);
    }
    for (int itry = 0; itry < 5; ++itry) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w = x[i] * x[i];
            const float li = static_cast<float>(L[i]);
            float slx = sumlx - w * x[i] * li;
            if (slx > 0) {
                float sl2 = suml2 - w * li * li;
                const int new_l = clamp_int(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    const float nl = static_cast<float>(new_l);
                    slx += w * x[i] * nl;
                    sl2 += w * nl * nl;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = static_cast<int8_t>(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (!n_changed) break;
    }
    for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// Asymmetric levels in [0, nmax] with a min (ggml's make_qkx2_quants): the
// weighted least-squares scale and min for nstep + 1 trial scales around
// nmax / (max - min), keeping the lowest weighted error (absolute if use_mad,
// else squared). Returns the scale; *the_min gets -min (>= 0).
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                       uint8_t* Laux, float rmin, float rdelta, int nstep, bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        for (int i = 0; i < n; ++i) L[i] = 0;
        *the_min = -min;
        return 0.f;
    }
    float iscale = static_cast<float>(nmax) / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; ++i) {
        L[i] = static_cast<uint8_t>(clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax));
        float diff = scale * static_cast<float>(L[i]) + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        best_error += weights[i] * diff;
    }
    if (nstep < 1) {
        *the_min = -min;
        return scale;
    }
    for (int is = 0; is <= nstep; ++is) {
        iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_int(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i] = static_cast<uint8_t>(l);
            const float w = weights[i];
            const float fl = static_cast<float>(l);
            sum_l += w * fl;
            sum_l2 += w * fl * fl;
            sum_xl += w * fl * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; ++i) {
                float diff = this_scale * static_cast<float>(Laux[i]) + this_min - x[i];
                diff = use_mad ? std::fabs(diff) : diff * diff;
                cur_error += weights[i] * diff;
            }
            if (cur_error < best_error) {
                std::memcpy(L, Laux, static_cast<size_t>(n));
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

// Packs 2-bit levels: byte l of each 32-byte group holds elements l, l+32, l+64, l+96
// of its 128-element half, from the low bits up.
void pack_2bit(const uint8_t* L, uint8_t* qs) {
    for (int j = 0; j < k_qk_k; j += 128)
        for (int l = 0; l < 32; ++l)
            qs[j / 4 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

}  // namespace

// ---- dequantization ---------------------------------------------------------------------

void dequantize_row_q2_K(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ2_K>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        const float dmin = load_f16(x[i].dmin);
        for (int e = 0; e < k_qk_k; ++e) {
            const int q = (x[i].qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
            const uint8_t sc = x[i].scales[e / 16];
            const float dl = d * static_cast<float>(sc & 0xF);
            const float ml = dmin * static_cast<float>(sc >> 4);
            *dst++ = dl * static_cast<float>(q) - ml;
        }
    }
}

void dequantize_row_q3_K(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ3_K>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        for (int e = 0; e < k_qk_k; ++e) {
            const int half = e / 128, j = (e % 128) / 32, l = e % 32;
            const int q2 = (x[i].qs[half * 32 + l] >> (2 * j)) & 3;
            const bool high = (x[i].hmask[l] >> (4 * half + j)) & 1;
            const float dl = d * static_cast<float>(scale_q3_k(x[i].scales, e / 16));
            *dst++ = dl * static_cast<float>(q2 - (high ? 0 : 4));
        }
    }
}

void dequantize_row_q4_K(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ4_K>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        const float dmin = load_f16(x[i].dmin);
        for (int sb = 0; sb < 8; ++sb) {
            uint8_t sc, m;
            scale_min_k4(sb, x[i].scales, sc, m);
            const float dl = d * static_cast<float>(sc);
            const float ml = dmin * static_cast<float>(m);
            const uint8_t* q = x[i].qs + 32 * (sb / 2);
            const int shift = 4 * (sb % 2);
            for (int l = 0; l < 32; ++l) *dst++ = dl * static_cast<float>((q[l] >> shift) & 0xF) - ml;
        }
    }
}

void dequantize_row_q5_K(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ5_K>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        const float dmin = load_f16(x[i].dmin);
        for (int sb = 0; sb < 8; ++sb) {
            uint8_t sc, m;
            scale_min_k4(sb, x[i].scales, sc, m);
            const float dl = d * static_cast<float>(sc);
            const float ml = dmin * static_cast<float>(m);
            const uint8_t* q = x[i].qs + 32 * (sb / 2);
            const int shift = 4 * (sb % 2);
            for (int l = 0; l < 32; ++l) {
                const int v = ((q[l] >> shift) & 0xF) + (((x[i].qh[l] >> sb) & 1) << 4);
                *dst++ = dl * static_cast<float>(v) - ml;
            }
        }
    }
}

// Element e = 128 h + 32 k + l: low 4 bits from ql[64 h + l + 32 (k % 2)] (low nibble
// for k < 2, high nibble otherwise), high 2 bits from qh[32 h + l] >> 2k.
static int q6_k_level(const BlockQ6_K& b, int e) {
    const int h = e / 128, k = (e % 128) / 32, l = e % 32;
    const int low = (b.ql[64 * h + l + 32 * (k % 2)] >> (4 * (k / 2))) & 0xF;
    const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
    return (low | (high << 4)) - 32;
}

void dequantize_row_q6_K(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ6_K>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f16(x[i].d);
        for (int e = 0; e < k_qk_k; ++e) {
            const float dl = d * static_cast<float>(x[i].scales[e / 16]);
            *dst++ = dl * static_cast<float>(q6_k_level(x[i], e));
        }
    }
}

void dequantize_row_q8_K(const void* src, float* dst, int64_t n) {
    const auto* x = blocks_of<BlockQ8_K>(src);
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        const float d = load_f32(x[i].d);
        for (int j = 0; j < k_qk_k; ++j) *dst++ = d * static_cast<float>(x[i].qs[j]);
    }
}

// ---- reference quantizers -----------------------------------------------------------------

void quantize_row_q2_K(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockQ2_K>(dst);
    constexpr float q4scale = 15.f;
    for (int64_t i = 0; i < n / k_qk_k; ++i, src += k_qk_k) {
        uint8_t L[k_qk_k], Laux[16];
        float weights[16], mins[16], scales[16];
        float max_scale = 0, max_min = 0;  // scales and mins are >= 0 after removing the min
        for (int j = 0; j < 16; ++j) {
            for (int l = 0; l < 16; ++l) weights[l] = std::fabs(src[16 * j + l]);
            scales[j] = make_qkx2_quants(16, 3, src + 16 * j, weights, L + 16 * j, &mins[j], Laux, -0.5f, 0.1f, 15, true);
            if (scales[j] > max_scale) max_scale = scales[j];
            if (mins[j] > max_min) max_min = mins[j];
        }
        if (max_scale > 0) {
            const float iscale = q4scale / max_scale;
            for (int j = 0; j < 16; ++j) y[i].scales[j] = static_cast<uint8_t>(nearest_int(iscale * scales[j]));
            store_f16(y[i].d, max_scale / q4scale);
        } else {
            for (int j = 0; j < 16; ++j) y[i].scales[j] = 0;
            store_f16(y[i].d, 0.f);
        }
        if (max_min > 0) {
            const float iscale = q4scale / max_min;
            for (int j = 0; j < 16; ++j) y[i].scales[j] |= static_cast<uint8_t>(nearest_int(iscale * mins[j]) << 4);
            store_f16(y[i].dmin, max_min / q4scale);
        } else {
            store_f16(y[i].dmin, 0.f);
        }
        // Requantize against the scales as stored.
        for (int j = 0; j < 16; ++j) {
            const float d = load_f16(y[i].d) * static_cast<float>(y[i].scales[j] & 0xF);
            if (d == 0.0f) continue;
            const float dm = load_f16(y[i].dmin) * static_cast<float>(y[i].scales[j] >> 4);
            for (int ii = 0; ii < 16; ++ii)
                L[16 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((src[16 * j + ii] + dm) / d), 0, 3));
        }
        pack_2bit(L, y[i].qs);
    }
}

void quantize_row_q3_K(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockQ3_K>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i, src += k_qk_k) {
        int8_t L[k_qk_k];
        float scales[16];
        float max_scale = 0, amax = 0;
        for (int j = 0; j < 16; ++j) {
            scales[j] = make_q3_quants(16, 4, src + 16 * j, L + 16 * j);
            const float scale = std::fabs(scales[j]);
            if (scale > amax) {
                amax = scale;
                max_scale = scales[j];
            }
        }
        std::memset(y[i].scales, 0, sizeof y[i].scales);
        if (max_scale != 0.0f) {
            const float iscale = -32.f / max_scale;
            for (int j = 0; j < 16; ++j) {
                int l = clamp_int(static_cast<int8_t>(nearest_int(iscale * scales[j])), -32, 31) + 32;
                if (j < 8) y[i].scales[j] = static_cast<uint8_t>(l & 0xF);
                else y[i].scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
                l >>= 4;
                y[i].scales[j % 4 + 8] |= static_cast<uint8_t>(l << (2 * (j / 4)));
            }
            store_f16(y[i].d, 1 / iscale);
        } else {
            store_f16(y[i].d, 0.f);
        }
        for (int j = 0; j < 16; ++j) {
            const float d = load_f16(y[i].d) * static_cast<float>(scale_q3_k(y[i].scales, j));
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ++ii)
                L[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(src[16 * j + ii] / d), -4, 3) + 4);
        }
        // The high bit of level e goes to bit e / 32 of hmask[e % 32].
        std::memset(y[i].hmask, 0, sizeof y[i].hmask);
        uint8_t low[k_qk_k];
        for (int e = 0; e < k_qk_k; ++e) {
            int l = L[e];
            if (l > 3) {
                y[i].hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
                l -= 4;
            }
            low[e] = static_cast<uint8_t>(l);
        }
        pack_2bit(low, y[i].qs);
    }
}

// Q2_K with an importance matrix (ggml's quantize_row_q2_K_impl): each value
// weighted by qw * sqrt(sigma2 + x^2) (sigma2 the super-block's mean square), the
// levels and min of each 16 by make_qkx3_quants, the 4-bit scales and mins by
// make_qp_quants weighted by each sub-block's total weight, then requantized.
void quantize_row_q2_K_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    auto* y = blocks_of<BlockQ2_K>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i, src += k_qk_k) {
        uint8_t L[k_qk_k], Laux[16], Ls[16], Lm[16];
        float mins[16], scales[16], sw[16] = {}, weight[16];
        float sumx2 = 0;
        for (int j = 0; j < k_qk_k; ++j) sumx2 += src[j] * src[j];
        const float sigma2 = sumx2 / k_qk_k;
        for (int j = 0; j < 16; ++j) {
            const float* w = qw + k_qk_k * i + 16 * j;
            for (int l = 0; l < 16; ++l) weight[l] = w[l] * std::sqrt(sigma2 + src[16 * j + l] * src[16 * j + l]);
            for (int l = 0; l < 16; ++l) sw[j] += weight[l];
            scales[j] = make_qkx3_quants(16, 3, src + 16 * j, weight, L + 16 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
        }
        store_f16(y[i].d, make_qp_quants(16, 15, scales, Ls, sw));
        store_f16(y[i].dmin, make_qp_quants(16, 15, mins, Lm, sw));
        const float dm = load_f16(y[i].d), mm = load_f16(y[i].dmin);
        for (int j = 0; j < 16; ++j) y[i].scales[j] = static_cast<uint8_t>(Ls[j] | (Lm[j] << 4));
        for (int j = 0; j < 16; ++j) {
            const float d = dm * static_cast<float>(y[i].scales[j] & 0xF);
            if (d == 0.0f) continue;
            const float m = mm * static_cast<float>(y[i].scales[j] >> 4);
            for (int ii = 0; ii < 16; ++ii)
                L[16 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((src[16 * j + ii] + m) / d), 0, 3));
        }
        pack_2bit(L, y[i].qs);
    }
}

// Q3_K with an importance matrix (ggml's quantize_row_q3_K_impl): each sub-block's
// levels by make_qx_quants weighted by qw * sqrt(sigma2 + x^2) (sigma2 twice the
// super-block's mean square), the 6-bit scales by make_qx_quants weighted by each
// sub-block's total weight, then requantized.
void quantize_row_q3_K_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    auto* y = blocks_of<BlockQ3_K>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i, src += k_qk_k) {
        int8_t L[k_qk_k], Ls[16];
        float scales[16], weight[16], sw[16];
        float sumx2 = 0;
        for (int j = 0; j < k_qk_k; ++j) sumx2 += src[j] * src[j];
        const float sigma2 = 2 * sumx2 / k_qk_k;
        for (int j = 0; j < 16; ++j) {
            const float* w = qw + k_qk_k * i + 16 * j;
            for (int l = 0; l < 16; ++l) weight[l] = w[l] * std::sqrt(sigma2 + src[16 * j + l] * src[16 * j + l]);
            float sumw = 0;
            for (int l = 0; l < 16; ++l) sumw += weight[l];
            sw[j] = sumw;
            scales[j] = make_qx_quants(16, 4, src + 16 * j, L + 16 * j, weight);
        }
        std::memset(y[i].scales, 0, sizeof y[i].scales);
        const float d_block = make_qx_quants(16, 32, scales, Ls, sw);
        for (int j = 0; j < 16; ++j) {
            int l = Ls[j];
            if (j < 8) y[i].scales[j] = static_cast<uint8_t>(l & 0xF);
            else y[i].scales[j - 8] |= static_cast<uint8_t>((l & 0xF) << 4);
            l >>= 4;
            y[i].scales[j % 4 + 8] |= static_cast<uint8_t>(l << (2 * (j / 4)));
        }
        store_f16(y[i].d, d_block);
        for (int j = 0; j < 16; ++j) {
            const float d = load_f16(y[i].d) * static_cast<float>(scale_q3_k(y[i].scales, j));
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ++ii)
                L[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(src[16 * j + ii] / d), -4, 3) + 4);
        }
        std::memset(y[i].hmask, 0, sizeof y[i].hmask);
        uint8_t low[k_qk_k];
        for (int e = 0; e < k_qk_k; ++e) {
            int l = L[e];
            if (l > 3) {
                y[i].hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
                l -= 4;
            }
            low[e] = static_cast<uint8_t>(l);
        }
        pack_2bit(low, y[i].qs);
    }
}

// Q4_K and Q5_K share the scale / min search and the packing of the 6-bit scales.
template <int nmax>
static void quantize_k4_scales(const float* x, uint8_t* L, uint8_t* packed_scales, uint8_t* d_out, uint8_t* dmin_out,
                               float rmin, float rdelta, int nstep) {
    float weights[32], mins[8], scales[8];
    uint8_t Laux[32];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
        float sum_x2 = 0;
        for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
        const float av_x = std::sqrt(sum_x2 / 32);
        for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
        scales[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin, rdelta, nstep, false);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    for (int j = 0; j < 8; ++j) {
        uint8_t ls = static_cast<uint8_t>(nearest_int(inv_scale * scales[j]));
        uint8_t lm = static_cast<uint8_t>(nearest_int(inv_min * mins[j]));
        ls = ls < 63 ? ls : 63;
        lm = lm < 63 ? lm : 63;
        pack_scale_min_k4(j, ls, lm, packed_scales);
    }
    store_f16(d_out, max_scale / 63.f);
    store_f16(dmin_out, max_min / 63.f);
    // Requantize against the scales as stored.
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        scale_min_k4(j, packed_scales, sc, m);
        const float d = load_f16(d_out) * static_cast<float>(sc);
        if (d == 0.0f) continue;
        const float dm = load_f16(dmin_out) * static_cast<float>(m);
        for (int ii = 0; ii < 32; ++ii)
            L[32 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
    }
}

void quantize_row_q4_K(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockQ4_K>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i, src += k_qk_k) {
        uint8_t L[k_qk_k];
        quantize_k4_scales<15>(src, L, y[i].scales, y[i].d, y[i].dmin, -1.f, 0.1f, 20);
        // Byte l of each 32-byte group: element l of a 64-element pair in the low nibble, l + 32 high.
        for (int j = 0; j < k_qk_k; j += 64)
            for (int l = 0; l < 32; ++l) y[i].qs[j / 2 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    }
}

void quantize_row_q5_K(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockQ5_K>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i, src += k_qk_k) {
        uint8_t L[k_qk_k];
        quantize_k4_scales<31>(src, L, y[i].scales, y[i].d, y[i].dmin, -0.5f, 0.1f, 15);
        // As Q4_K for the low 4 bits; the fifth bit of sub-block sb goes to bit sb of qh[l].
        std::memset(y[i].qh, 0, sizeof y[i].qh);
        for (int j = 0; j < k_qk_k; j += 64) {
            for (int l = 0; l < 32; ++l) {
                const int l1 = L[j + l], l2 = L[j + l + 32];
                y[i].qh[l] |= static_cast<uint8_t>(((l1 >> 4) << (j / 32)) | ((l2 >> 4) << (j / 32 + 1)));
                y[i].qs[j / 2 + l] = static_cast<uint8_t>((l1 & 0xF) | ((l2 & 0xF) << 4));
            }
        }
    }
}

// Q6_K's reference and importance-weighted quantizers differ only in the weights
// of the sub-block search (ggml's quantize_row_q6_K_ref / _impl).
static void quantize_q6_K_blocks(const float* src, void* dst, int64_t n, const float* qw) {
    auto* y = blocks_of<BlockQ6_K>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i, src += k_qk_k) {
        int8_t L[k_qk_k];
        float scales[16];
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < 16; ++ib) {
            scales[ib] = make_qx_quants(16, 32, src + 16 * ib, L + 16 * ib, qw ? qw + k_qk_k * i + 16 * ib : nullptr);
            const float abs_scale = std::fabs(scales[ib]);
            if (abs_scale > max_abs_scale) {
                max_abs_scale = abs_scale;
                max_scale = scales[ib];
            }
        }
        if (max_abs_scale < k_group_max_eps) {
            std::memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -128.f / max_scale;
        store_f16(y[i].d, 1 / iscale);
        for (int ib = 0; ib < 16; ++ib) {
            const int l = nearest_int(iscale * scales[ib]);
            y[i].scales[ib] = static_cast<int8_t>(l < 127 ? l : 127);
        }
        for (int j = 0; j < 16; ++j) {
            const float d = load_f16(y[i].d) * static_cast<float>(y[i].scales[j]);
            if (d == 0.0f) continue;
            for (int ii = 0; ii < 16; ++ii)
                L[16 * j + ii] = static_cast<int8_t>(clamp_int(nearest_int(src[16 * j + ii] / d), -32, 31) + 32);
        }
        // Inverse of q6_k_level().
        for (int h = 0; h < 2; ++h) {
            for (int l = 0; l < 32; ++l) {
                const int q1 = L[128 * h + l], q2 = L[128 * h + l + 32], q3 = L[128 * h + l + 64], q4 = L[128 * h + l + 96];
                y[i].ql[64 * h + l] = static_cast<uint8_t>((q1 & 0xF) | ((q3 & 0xF) << 4));
                y[i].ql[64 * h + l + 32] = static_cast<uint8_t>((q2 & 0xF) | ((q4 & 0xF) << 4));
                y[i].qh[32 * h + l] = static_cast<uint8_t>((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
            }
        }
    }
}

void quantize_row_q6_K(const float* src, void* dst, int64_t n) { quantize_q6_K_blocks(src, dst, n, nullptr); }

void quantize_row_q6_K_weighted(const float* src, void* dst, int64_t n, const float* qw) { quantize_q6_K_blocks(src, dst, n, qw); }

// Q4_K / Q5_K with an importance matrix (ggml's quantize_row_q4_K_impl / q5_K_impl):
// each value weighted by qw * sqrt(sigma2 + x^2), the sub-block levels found by
// make_qkx3_quants and the 6-bit scales and mins by make_qp_quants weighted by
// each sub-block's total weight.
template <int nmax>
static void quantize_k4_weighted(const float* x, const float* qw, uint8_t* L, uint8_t* packed_scales, uint8_t* d_out,
                                 uint8_t* dmin_out) {
    float sum_x2 = 0;
    for (int l = 0; l < k_qk_k; ++l) sum_x2 += x[l] * x[l];
    const float sigma2 = 2 * sum_x2 / k_qk_k;
    float weights[32], sw[8], mins[8], scales[8];
    uint8_t Laux[32], Ls[8], Lm[8];
    for (int j = 0; j < 8; ++j) {
        for (int l = 0; l < 32; ++l) weights[l] = qw[32 * j + l] * std::sqrt(sigma2 + x[32 * j + l] * x[32 * j + l]);
        float sumw = 0;
        for (int l = 0; l < 32; ++l) sumw += weights[l];
        sw[j] = sumw;
        scales[j] = make_qkx3_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, -0.9f, 0.05f, 36, false);
    }
    const float d_block = make_qp_quants(8, 63, scales, Ls, sw);
    const float m_block = make_qp_quants(8, 63, mins, Lm, sw);
    for (int j = 0; j < 8; ++j) {
        // ggml caps at 63 for Q5_K only; make_qp_quants never exceeds it.
        pack_scale_min_k4(j, Ls[j] < 63 ? Ls[j] : 63, Lm[j] < 63 ? Lm[j] : 63, packed_scales);
    }
    store_f16(d_out, d_block);
    store_f16(dmin_out, m_block);
    for (int j = 0; j < 8; ++j) {
        uint8_t sc, m;
        scale_min_k4(j, packed_scales, sc, m);
        const float d = load_f16(d_out) * static_cast<float>(sc);
        if (d == 0.0f) continue;
        const float dm = load_f16(dmin_out) * static_cast<float>(m);
        for (int ii = 0; ii < 32; ++ii)
            L[32 * j + ii] = static_cast<uint8_t>(clamp_int(nearest_int((x[32 * j + ii] + dm) / d), 0, nmax));
    }
}

void quantize_row_q4_K_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    auto* y = blocks_of<BlockQ4_K>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i, src += k_qk_k) {
        uint8_t L[k_qk_k];
        quantize_k4_weighted<15>(src, qw + k_qk_k * i, L, y[i].scales, y[i].d, y[i].dmin);
        for (int j = 0; j < k_qk_k; j += 64)
            for (int l = 0; l < 32; ++l) y[i].qs[j / 2 + l] = static_cast<uint8_t>(L[j + l] | (L[j + l + 32] << 4));
    }
}

void quantize_row_q5_K_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    auto* y = blocks_of<BlockQ5_K>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i, src += k_qk_k) {
        uint8_t L[k_qk_k];
        quantize_k4_weighted<31>(src, qw + k_qk_k * i, L, y[i].scales, y[i].d, y[i].dmin);
        std::memset(y[i].qh, 0, sizeof y[i].qh);
        for (int j = 0; j < k_qk_k; j += 64) {
            for (int l = 0; l < 32; ++l) {
                const int l1 = L[j + l], l2 = L[j + l + 32];
                y[i].qh[l] |= static_cast<uint8_t>(((l1 >> 4) << (j / 32)) | ((l2 >> 4) << (j / 32 + 1)));
                y[i].qs[j / 2 + l] = static_cast<uint8_t>((l1 & 0xF) | ((l2 & 0xF) << 4));
            }
        }
    }
}

// Q8_K: iscale = -127 / (the signed absmax), levels rounded to nearest even and capped
// at 127; bsums hold the sum of each 16 levels.
void quantize_row_q8_K(const float* src, void* dst, int64_t n) {
    auto* y = blocks_of<BlockQ8_K>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i, src += k_qk_k) {
        float max = 0, amax = 0;
        for (int j = 0; j < k_qk_k; ++j) {
            const float ax = std::fabs(src[j]);
            if (ax > amax) {
                amax = ax;
                max = src[j];
            }
        }
        if (amax == 0.0f) {
            std::memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        const float iscale = -127.f / max;
        for (int j = 0; j < k_qk_k; ++j) {
            const int v = nearest_int(iscale * src[j]);
            y[i].qs[j] = static_cast<int8_t>(clamp_int(v, -128, 127));
        }
        for (int j = 0; j < k_qk_k / 16; ++j) {
            int sum = 0;
            for (int ii = 0; ii < 16; ++ii) sum += y[i].qs[16 * j + ii];
            store_u16(y[i].bsums + 2 * j, static_cast<uint16_t>(static_cast<int16_t>(sum)));
        }
        store_f32(y[i].d, 1 / iscale);
    }
}

// ---- dot products with Q8_K ---------------------------------------------------------------
//
// Per super-block: isum = sum over sub-blocks of scale x (sum of weight level x
// activation level), and for the min formats msum = sum over sub-blocks of min x (sum
// of activation levels) - all exact int32 (|isum| < 2^28). The activation sums are
// taken from qs, not from bsums (equal for any block quantize_row_q8_K wrote).
// term = (d_a * d_w) * isum [- (d_a * dmin_w) * msum], each product rounded once;
// acc += term in super-block order.

float vec_dot_q2_K_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockQ2_K>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0, msum = 0;
        for (int sb = 0; sb < 16; ++sb) {
            int32_t dot = 0, asum = 0;
            for (int e = 16 * sb; e < 16 * sb + 16; ++e) {
                const int q = (x[i].qs[(e / 128) * 32 + e % 32] >> (2 * ((e % 128) / 32))) & 3;
                dot += q * y[i].qs[e];
                asum += y[i].qs[e];
            }
            isum += (x[i].scales[sb] & 0xF) * dot;
            msum += (x[i].scales[sb] >> 4) * asum;
        }
        const float da = load_f32(y[i].d);
        const float dall = da * load_f16(x[i].d);
        const float dmin = da * load_f16(x[i].dmin);
        const float scaled = dall * static_cast<float>(isum);
        const float mins = dmin * static_cast<float>(msum);
        const float term = scaled - mins;
        acc += term;
    }
    return acc;
}

float vec_dot_q3_K_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockQ3_K>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0;
        for (int sb = 0; sb < 16; ++sb) {
            int32_t dot = 0;
            for (int e = 16 * sb; e < 16 * sb + 16; ++e) {
                const int half = e / 128, j = (e % 128) / 32, l = e % 32;
                const int q2 = (x[i].qs[half * 32 + l] >> (2 * j)) & 3;
                const bool high = (x[i].hmask[l] >> (4 * half + j)) & 1;
                dot += (q2 - (high ? 0 : 4)) * y[i].qs[e];
            }
            isum += scale_q3_k(x[i].scales, sb) * dot;
        }
        const float d = load_f32(y[i].d) * load_f16(x[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return acc;
}

template <bool fifth_bit, typename Block>
static float vec_dot_k4(int64_t n, const Block* x, const BlockQ8_K* y) {
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0, msum = 0;
        for (int sb = 0; sb < 8; ++sb) {
            uint8_t sc, m;
            scale_min_k4(sb, x[i].scales, sc, m);
            const uint8_t* q = x[i].qs + 32 * (sb / 2);
            const int shift = 4 * (sb % 2);
            int32_t dot = 0, asum = 0;
            for (int l = 0; l < 32; ++l) {
                int v = (q[l] >> shift) & 0xF;
                if constexpr (fifth_bit) v += ((x[i].qh[l] >> sb) & 1) << 4;
                dot += v * y[i].qs[32 * sb + l];
                asum += y[i].qs[32 * sb + l];
            }
            isum += sc * dot;
            msum += m * asum;
        }
        const float da = load_f32(y[i].d);
        const float dall = da * load_f16(x[i].d);
        const float dmin = da * load_f16(x[i].dmin);
        const float scaled = dall * static_cast<float>(isum);
        const float mins = dmin * static_cast<float>(msum);
        const float term = scaled - mins;
        acc += term;
    }
    return acc;
}

float vec_dot_q4_K_q8_K(int64_t n, const void* w, const void* a) {
    return vec_dot_k4<false>(n, blocks_of<BlockQ4_K>(w), blocks_of<BlockQ8_K>(a));
}

float vec_dot_q5_K_q8_K(int64_t n, const void* w, const void* a) {
    return vec_dot_k4<true>(n, blocks_of<BlockQ5_K>(w), blocks_of<BlockQ8_K>(a));
}

float vec_dot_q6_K_q8_K(int64_t n, const void* w, const void* a) {
    const auto* x = blocks_of<BlockQ6_K>(w);
    const auto* y = blocks_of<BlockQ8_K>(a);
    float acc = 0.0f;
    for (int64_t i = 0; i < n / k_qk_k; ++i) {
        int32_t isum = 0;
        for (int sb = 0; sb < 16; ++sb) {
            int32_t dot = 0;
            for (int e = 16 * sb; e < 16 * sb + 16; ++e) dot += q6_k_level(x[i], e) * y[i].qs[e];
            isum += x[i].scales[sb] * dot;
        }
        const float d = load_f32(y[i].d) * load_f16(x[i].d);
        const float term = d * static_cast<float>(isum);
        acc += term;
    }
    return acc;
}

}  // namespace kiln::quant
