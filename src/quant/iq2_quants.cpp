// The IQ2 grid quantizers (ggml's quantize_row_iq2_xxs_impl, _iq2_xs_impl and
// _iq2_s_impl), operation for operation so the bytes agree with llama-quantize's.
// Each group of 8 values is made non-negative with signs (IQ2_XXS / IQ2_XS store
// 7 of them: an even number of flips, the least important value absorbing the
// parity), then candidate scales are tried: the values are rounded to the lattice
// of levels 2 l + 1 (l in 0..2), points off the grid replaced by their best
// neighbour (iq_grid_maps.h), and the weighted least-squares fit kept. IQ2_XXS and
// IQ2_XS need an importance matrix (ggml asserts one); IQ2_S weights by
// sigma2 / 4 + x^2 without one.
#include <cmath>
#include <cstring>

#include "kiln/error.h"
#include "quant/blocks.h"
#include "quant/iq_grid_maps.h"
#include "quant/kernels.h"
#include "quant/quant_math.h"
#include "quant/scale_search.h"

namespace kiln::quant {

namespace {

constexpr float k_group_max_eps = 1e-15f;
constexpr float k_group_max_eps_iq2_s = 1e-8f;
constexpr int k_max_q = 3;

int neighbour(const GridMap& g, int u, const float* xval, const float* weight, float scale, int8_t* L) {
    const int index = best_neighbour(g, u, xval, weight, scale, L);
    if (index < 0) throw Error("IQ2 quantizer: a value is not finite");
    return index;
}

// The lattice index of 8 levels, each clamp(round((id x - 1) / 2), 0, 2), into L.
int lattice_index(const float* xval, float id, int8_t* L) {
    int u = 0;
    for (int i = 0; i < 8; ++i) {
        const int l = clamp_int(nearest_int(0.5f * (id * xval[i] - 1)), 0, k_max_q - 1);
        L[i] = static_cast<int8_t>(l);
        u |= l << (2 * i);
    }
    return u;
}

int grid_index_of(const GridMap& g, const int8_t* L) {
    int u = 0;
    for (int i = 0; i < 8; ++i) u |= L[i] << (2 * i);
    if (g.map[u] < 0) throw Error("IQ2 quantizer: a point off the grid (a value is not finite)");
    return g.map[u];
}

// |x| of 8 values into xval and their sign bits; with `even`, an odd number of
// negatives is made even by flipping back the one of least weight x x^2.
uint8_t signs_of_8(const float* xb, const float* weight, float* xval, bool even) {
    int nflip = 0;
    uint8_t s = 0;
    for (int i = 0; i < 8; ++i) {
        if (xb[i] >= 0) {
            xval[i] = xb[i];
        } else {
            xval[i] = -xb[i];
            ++nflip;
            s |= static_cast<uint8_t>(1 << i);
        }
    }
    if (even && nflip % 2) {
        int imin = 0;
        float min = weight[0] * xb[0] * xb[0];
        for (int i = 1; i < 8; ++i) {
            const float ax = weight[i] * xb[i] * xb[i];
            if (ax < min) {
                min = ax;
                imin = i;
            }
        }
        xval[imin] = -xval[imin];
        s ^= static_cast<uint8_t>(1 << imin);
    }
    return even ? static_cast<uint8_t>(s & 127) : s;
}

float weighted_fit(const float* weight, const float* xval, const int8_t* L, int n, float& sumq2) {
    float sumqx = 0;
    sumq2 = 0;
    for (int i = 0; i < n; ++i) {
        const float w = weight[i];
        const float q = static_cast<float>(2 * L[i] + 1);
        sumqx += w * xval[i] * q;
        sumq2 += w * q * q;
    }
    return sumqx;
}

void quantize_superblock_iq2_xxs(const float* xbl, BlockIQ2_XXS& y, const float* qw) {
    const GridMap& g = iq2_grid_map(GgmlType::IQ2_XXS);
    float scales[k_qk_k / 32], weight[32], xval[32], waux[32];
    int8_t L[32], Laux[32];
    uint8_t block_signs[4];
    uint32_t q2[2 * (k_qk_k / 32)] = {};
    store_f16(y.d, 0.f);
    float max_scale = 0;
    float sumx2 = 0;
    for (int i = 0; i < k_qk_k; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = sumx2 / k_qk_k;
    for (int ib = 0; ib < k_qk_k / 32; ++ib) {
        const float* xb = xbl + 32 * ib;
        for (int i = 0; i < 32; ++i) weight[i] = qw[32 * ib + i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
        for (int k = 0; k < 4; ++k) block_signs[k] = signs_of_8(xb + 8 * k, weight + 8 * k, xval + 8 * k, true);
        float max = xval[0];
        for (int i = 1; i < 32; ++i) max = max > xval[i] ? max : xval[i];
        if (max < k_group_max_eps) {
            scales[ib] = 0;
            std::memset(L, 0, sizeof L);
            continue;
        }
        float scale = make_qp_quants(32, k_max_q + 1, xval, reinterpret_cast<uint8_t*>(L), weight);
        const float eff_max = scale * k_max_q;
        if (eff_max <= 0) {
            scales[ib] = 0;
            std::memset(L, 0, sizeof L);
            continue;
        }
        float best = 0;
        for (int is = -6; is <= 6; ++is) {
            const float id = (2 * k_max_q - 1 + static_cast<float>(is) * 0.1f) / eff_max;
            const float this_scale = 1 / id;
            for (int k = 0; k < 4; ++k) {
                const int u = lattice_index(xval + 8 * k, id, Laux + 8 * k);
                if (g.map[u] < 0) neighbour(g, u, xval + 8 * k, waux + 8 * k, this_scale, Laux + 8 * k);
            }
            float sumq2;
            const float sumqx = weighted_fit(weight, xval, Laux, 32, sumq2);
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                std::memcpy(L, Laux, sizeof L);
            }
        }
        if (scale > 0) {  // every point again for the final scale
            const float id = 1 / scale;
            for (int k = 0; k < 4; ++k) {
                int8_t l8[8];
                const int u = lattice_index(xval + 8 * k, id, l8);
                int index = g.map[u];
                if (index < 0) index = neighbour(g, u, xval + 8 * k, waux + 8 * k, scale, L + 8 * k);
                const int8_t* p = g.point(index);
                for (int i = 0; i < 8; ++i) L[8 * k + i] = static_cast<int8_t>((p[i] - 1) / 2);
            }
            float sumq2;
            const float sumqx = weighted_fit(weight, xval, L, 32, sumq2);
            if (sumq2 > 0) scale = sumqx / sumq2;
        }
        if (scale < 0) {
            scale = -scale;
            for (uint8_t& s : block_signs) s = static_cast<uint8_t>(~s & 127);
        }
        for (int k = 0; k < 4; ++k) {
            q2[2 * ib] |= static_cast<uint32_t>(grid_index_of(g, L + 8 * k)) << (8 * k);
            q2[2 * ib + 1] |= static_cast<uint32_t>(block_signs[k]) << (7 * k);
        }
        scales[ib] = scale;
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) {
        std::memset(y.qs, 0, sizeof y.qs);
        return;
    }
    const float d = max_scale / 31;
    store_f16(y.d, d);
    const float id = 1 / d;
    for (int ib = 0; ib < k_qk_k / 32; ++ib) {
        const int l = clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
        q2[2 * ib + 1] |= static_cast<uint32_t>(l) << 28;
    }
    for (int i = 0; i < 2 * (k_qk_k / 32); ++i) store_u32(y.qs + 4 * i, q2[i]);
}

// The search IQ2_XS and IQ2_S share, per block of 16 (two grid points): 19 scales
// max / (5 + 0.1 t), the best fit kept, the points that were off the grid rounded
// again for it. Returns false for a block whose values are all below eps (scale 0,
// nothing stored); else the scale, the levels in L and the grid indices in index[2];
// block_signs may be flipped (a negative fit).
bool search_block_16(const GridMap& g, const float* weight, const float* xval, float eps, int8_t* L, int index[2],
                     uint8_t block_signs[2], uint8_t sign_mask, float& scale_out) {
    float waux[16];
    int8_t Laux[16];
    bool is_on_grid[2], is_on_grid_aux[2];
    for (int i = 0; i < 16; ++i) waux[i] = std::sqrt(weight[i]);
    float max = xval[0];
    for (int i = 1; i < 16; ++i) max = max > xval[i] ? max : xval[i];
    std::memset(L, 0, 16);
    scale_out = 0;
    if (max < eps) return false;
    float best = 0;
    float scale = max / (2 * k_max_q - 1);
    is_on_grid[0] = is_on_grid[1] = true;
    for (int is = -9; is <= 9; ++is) {
        const float id = (2 * k_max_q - 1 + static_cast<float>(is) * 0.1f) / max;
        const float this_scale = 1 / id;
        for (int k = 0; k < 2; ++k) {
            const int u = lattice_index(xval + 8 * k, id, Laux + 8 * k);
            is_on_grid_aux[k] = g.map[u] >= 0;
            if (!is_on_grid_aux[k]) neighbour(g, u, xval + 8 * k, waux + 8 * k, this_scale, Laux + 8 * k);
        }
        float sumq2;
        const float sumqx = weighted_fit(weight, xval, Laux, 16, sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            scale = sumqx / sumq2;
            best = scale * sumqx;
            std::memcpy(L, Laux, 16);
            std::memcpy(is_on_grid, is_on_grid_aux, sizeof is_on_grid);
        }
    }
    if ((!is_on_grid[0] || !is_on_grid[1]) && scale > 0) {
        const float id = 1 / scale;
        for (int k = 0; k < 2; ++k) {
            if (is_on_grid[k]) continue;
            const int u = lattice_index(xval + 8 * k, id, L + 8 * k);
            if (g.map[u] < 0) neighbour(g, u, xval + 8 * k, waux + 8 * k, scale, L + 8 * k);
        }
        float sumq2;
        const float sumqx = weighted_fit(weight, xval, L, 16, sumq2);
        if (sumq2 > 0) scale = sumqx / sumq2;
    }
    if (scale < 0) {
        scale = -scale;
        for (int k = 0; k < 2; ++k) block_signs[k] = static_cast<uint8_t>(~block_signs[k] & sign_mask);
    }
    for (int k = 0; k < 2; ++k) index[k] = grid_index_of(g, L + 8 * k);
    scale_out = scale;
    return true;
}

// 16 4-bit scales l = clamp(round((s / d - 1) / 2), 0, 15), two per byte.
void pack_scales_16(const float* scales, float d, uint8_t* out) {
    const float id = 1 / d;
    for (int ib = 0; ib < k_qk_k / 16; ++ib) {
        const int l = clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
        if (ib % 2 == 0) out[ib / 2] = static_cast<uint8_t>(l);
        else out[ib / 2] |= static_cast<uint8_t>(l << 4);
    }
}

void quantize_superblock_iq2_xs(const float* xbl, BlockIQ2_XS& y, const float* qw) {
    const GridMap& g = iq2_grid_map(GgmlType::IQ2_XS);
    float scales[k_qk_k / 16], weight[16], xval[16];
    int8_t L[16];
    uint8_t block_signs[2];
    uint16_t q2[2 * (k_qk_k / 16)] = {};
    store_f16(y.d, 0.f);
    std::memset(y.scales, 0, sizeof y.scales);
    float max_scale = 0;
    float sumx2 = 0;
    for (int i = 0; i < k_qk_k; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = sumx2 / k_qk_k;
    for (int ib = 0; ib < k_qk_k / 16; ++ib) {
        const float* xb = xbl + 16 * ib;
        for (int i = 0; i < 16; ++i) weight[i] = qw[16 * ib + i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        for (int k = 0; k < 2; ++k) block_signs[k] = signs_of_8(xb + 8 * k, weight + 8 * k, xval + 8 * k, true);
        int index[2];
        float scale;
        const bool stored = search_block_16(g, weight, xval, k_group_max_eps, L, index, block_signs, 127, scale);
        scales[ib] = scale;
        if (!stored) continue;
        for (int k = 0; k < 2; ++k) q2[2 * ib + k] = static_cast<uint16_t>(index[k] | (block_signs[k] << 9));
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) {
        std::memset(y.qs, 0, sizeof y.qs);
        return;
    }
    const float d = max_scale / 31;
    store_f16(y.d, d);
    pack_scales_16(scales, d, y.scales);
    for (int i = 0; i < 2 * (k_qk_k / 16); ++i) store_u16(y.qs + 2 * i, q2[i]);
}

void quantize_superblock_iq2_s(const float* xbl, BlockIQ2_S& y, const float* qw) {
    const GridMap& g = iq2_grid_map(GgmlType::IQ2_S);
    float scales[k_qk_k / 16], weight[16], xval[16];
    int8_t L[16];
    uint8_t block_signs[2];
    std::memset(&y, 0, sizeof y);
    float max_scale = 0;
    float sumx2 = 0;
    for (int i = 0; i < k_qk_k; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = 2 * sumx2 / k_qk_k;
    for (int ib = 0; ib < k_qk_k / 16; ++ib) {
        const float* xb = xbl + 16 * ib;
        if (qw)
            for (int i = 0; i < 16; ++i) weight[i] = qw[16 * ib + i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        else
            for (int i = 0; i < 16; ++i) weight[i] = 0.25f * sigma2 + xb[i] * xb[i];
        for (int k = 0; k < 2; ++k) block_signs[k] = signs_of_8(xb + 8 * k, weight + 8 * k, xval + 8 * k, false);
        int index[2];
        float scale;
        const bool stored = search_block_16(g, weight, xval, k_group_max_eps_iq2_s, L, index, block_signs, 255, scale);
        scales[ib] = scale;
        if (!stored) continue;
        for (int k = 0; k < 2; ++k) {
            const int i8 = 2 * ib + k;
            y.qs[i8] = static_cast<uint8_t>(index[k] & 255);
            y.qh[i8 / 4] |= static_cast<uint8_t>((index[k] >> 8) << (2 * (i8 % 4)));
            y.signs[i8] = block_signs[k];
        }
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) return;
    const float d = max_scale / 31;
    store_f16(y.d, d * 0.9875f);
    pack_scales_16(scales, d, y.scales);
}

}  // namespace

void quantize_row_iq2_xxs_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    if (!qw) throw Error("quantize: IQ2_XXS needs an importance matrix", ErrorKind::Unsupported);
    auto* y = blocks_of<BlockIQ2_XXS>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i) quantize_superblock_iq2_xxs(src + i * k_qk_k, y[i], qw + i * k_qk_k);
}

void quantize_row_iq2_xs_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    if (!qw) throw Error("quantize: IQ2_XS needs an importance matrix", ErrorKind::Unsupported);
    auto* y = blocks_of<BlockIQ2_XS>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i) quantize_superblock_iq2_xs(src + i * k_qk_k, y[i], qw + i * k_qk_k);
}

void quantize_row_iq2_s(const float* src, void* dst, int64_t n) { quantize_row_iq2_s_weighted(src, dst, n, nullptr); }

void quantize_row_iq2_s_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    auto* y = blocks_of<BlockIQ2_S>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i) quantize_superblock_iq2_s(src + i * k_qk_k, y[i], qw ? qw + i * k_qk_k : nullptr);
}

}  // namespace kiln::quant
