// The IQ3 grid quantizers (ggml's quantize_row_iq3_xxs_impl with its 256-point
// grid, and quantize_row_iq3_s_impl), operation for operation so the bytes agree
// with llama-quantize's. Each block of 32 values is made non-negative with signs
// (IQ3_XXS: an even number of flips per 8, the least important value absorbing
// the parity), then 31 candidate scales are tried: the values are rounded to the
// lattice of levels 2 l + 1, points off the grid replaced by their best neighbour
// (iq_grid_maps.h), and the weighted least-squares fit kept.
#include <cmath>
#include <cstring>

#include "kiln/error.h"
#include "quant/blocks.h"
#include "quant/iq_grid_maps.h"
#include "quant/kernels.h"
#include "quant/quant_math.h"

namespace kiln::quant {

namespace {

constexpr float k_group_max_eps_iq3_xxs = 1e-8f;

// best_neighbour, which throws where no distance compares (a value not finite).
int neighbour(const GridMap& g, int u, const float* xval, const float* weight, float scale, int8_t* L) {
    const int index = best_neighbour(g, u, xval, weight, scale, L);
    if (index < 0) throw Error("IQ3 quantizer: a value is not finite");
    return index;
}

// The lattice index of 4 levels, each clamp(round((id x - 1) / 2), 0, 7).
int lattice_index(const float* xval, float id, int8_t* L) {
    int u = 0;
    for (int i = 0; i < 4; ++i) {
        const int l = clamp_int(nearest_int(0.5f * (id * xval[i] - 1)), 0, 7);
        L[i] = static_cast<int8_t>(l);
        u |= l << (3 * i);
    }
    return u;
}

void quantize_superblock_iq3_xxs(const float* xbl, BlockIQ3_XXS& y, const float* qw) {
    const GridMap& g = iq3_grid_map(GgmlType::IQ3_XXS);
    constexpr int k_max_q = 8;
    float scales[k_qk_k / 32];
    float weight[32], xval[32], waux[32];
    int8_t L[32], Laux[32];
    bool is_on_grid[8], is_on_grid_aux[8];
    uint8_t block_signs[4];
    uint8_t q3[k_qk_k / 4] = {};
    uint32_t scales_and_signs[k_qk_k / 32] = {};
    store_f16(y.d, 0.f);
    float max_scale = 0;
    float sumx2 = 0;
    for (int i = 0; i < k_qk_k; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = 2 * sumx2 / k_qk_k;
    for (int ib = 0; ib < k_qk_k / 32; ++ib) {
        const float* xb = xbl + 32 * ib;
        if (qw)
            for (int i = 0; i < 32; ++i) weight[i] = qw[32 * ib + i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        else
            for (int i = 0; i < 32; ++i) weight[i] = xb[i] * xb[i];
        for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
        for (int k = 0; k < 4; ++k) {
            int nflip = 0;
            uint8_t s = 0;
            for (int i = 0; i < 8; ++i) {
                if (xb[8 * k + i] >= 0) {
                    xval[8 * k + i] = xb[8 * k + i];
                } else {
                    xval[8 * k + i] = -xb[8 * k + i];
                    ++nflip;
                    s |= static_cast<uint8_t>(1 << i);
                }
            }
            if (nflip % 2) {  // odd: flip back the value that matters least
                int imin = 0;
                float min = weight[8 * k] * xb[8 * k] * xb[8 * k];
                for (int i = 1; i < 8; ++i) {
                    const float ax = weight[8 * k + i] * xb[8 * k + i] * xb[8 * k + i];
                    if (ax < min) {
                        min = ax;
                        imin = i;
                    }
                }
                xval[8 * k + imin] = -xval[8 * k + imin];
                s ^= static_cast<uint8_t>(1 << imin);
            }
            block_signs[k] = s & 127;
        }
        float max = xval[0];
        for (int i = 1; i < 32; ++i) max = max > xval[i] ? max : xval[i];
        std::memset(L, 0, sizeof L);
        if (max < k_group_max_eps_iq3_xxs) {
            scales[ib] = 0;
            continue;
        }
        float best = 0;
        float scale = max / (2 * k_max_q - 1);
        for (bool& b : is_on_grid) b = true;
        for (int is = -15; is <= 15; ++is) {
            const float id = (2 * k_max_q - 1 + static_cast<float>(is) * 0.2f) / max;
            const float this_scale = 1 / id;
            for (int k = 0; k < 8; ++k) {
                const int u = lattice_index(xval + 4 * k, id, Laux + 4 * k);
                is_on_grid_aux[k] = g.map[u] >= 0;
                if (!is_on_grid_aux[k]) neighbour(g, u, xval + 4 * k, waux + 4 * k, this_scale, Laux + 4 * k);
            }
            float sumqx = 0, sumq2 = 0;
            for (int i = 0; i < 32; ++i) {
                const float w = weight[i];
                const float q = static_cast<float>(2 * Laux[i] + 1);
                sumqx += w * xval[i] * q;
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                std::memcpy(L, Laux, sizeof L);
                std::memcpy(is_on_grid, is_on_grid_aux, sizeof is_on_grid);
            }
        }
        int n_not_on_grid = 0;
        for (bool b : is_on_grid) n_not_on_grid += !b;
        if (n_not_on_grid > 0 && scale > 0) {  // the points that were off the grid, again for the final scale
            const float id = 1 / scale;
            for (int k = 0; k < 8; ++k) {
                if (is_on_grid[k]) continue;
                int8_t l4[4];
                const int u = lattice_index(xval + 4 * k, id, l4);
                int index = g.map[u];
                if (index < 0) index = neighbour(g, u, xval + 4 * k, waux + 4 * k, scale, L + 4 * k);
                const int8_t* p = g.point(index);
                for (int i = 0; i < 4; ++i) L[4 * k + i] = static_cast<int8_t>((p[i] - 1) / 2);
            }
            float sumqx = 0, sumq2 = 0;
            for (int i = 0; i < 32; ++i) {
                const float w = weight[i];
                const float q = static_cast<float>(2 * L[i] + 1);
                sumqx += w * xval[i] * q;
                sumq2 += w * q * q;
            }
            if (sumq2 > 0) scale = sumqx / sumq2;
        }
        if (scale < 0) {  // ggml: "should never happen"; the scale is stored unsigned
            scale = -scale;
            for (uint8_t& s : block_signs) s = static_cast<uint8_t>(~s & 127);
        }
        for (int k = 0; k < 8; ++k) {
            int u = 0;
            for (int i = 0; i < 4; ++i) u |= L[4 * k + i] << (3 * i);
            if (g.map[u] < 0) throw Error("IQ3_XXS quantizer: a point off the grid (a value is not finite)");
            q3[8 * ib + k] = static_cast<uint8_t>(g.map[u]);
        }
        scales_and_signs[ib] = block_signs[0] | (block_signs[1] << 7) | (block_signs[2] << 14) | (block_signs[3] << 21);
        scales[ib] = scale;
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) {
        std::memset(y.qs, 0, sizeof y.qs);
        std::memset(y.scales_signs, 0, sizeof y.scales_signs);
        return;
    }
    const float d = max_scale / 31;
    store_f16(y.d, d * 1.0125f);  // ggml's fudge factor
    const float id = 1 / d;
    for (int ib = 0; ib < k_qk_k / 32; ++ib) {
        const int l = clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
        scales_and_signs[ib] |= static_cast<uint32_t>(l) << 28;
    }
    std::memcpy(y.qs, q3, sizeof y.qs);
    for (int ib = 0; ib < k_qk_k / 32; ++ib) store_u32(y.scales_signs + 4 * ib, scales_and_signs[ib]);
}

// IQ3_S (quantize_row_iq3_s_impl, blocks of 32): the 512-point grid, a full sign
// byte per 8 values, 19 candidate scales, every point rounded again for the final
// scale. ggml advances its qs and signs cursors only past blocks that are not all
// zero, so after such a block the later blocks' indices and signs sit earlier in the
// super-block (qh is indexed by block); kept, so that the bytes agree.
void quantize_superblock_iq3_s(const float* xbl, BlockIQ3_S& y, const float* qw) {
    const GridMap& g = iq3_grid_map(GgmlType::IQ3_S);
    constexpr int k_max_q = 8;
    float scales[k_qk_k / 32];
    float weight[32], xval[32], waux[32];
    int8_t L[32], Laux[32];
    bool is_on_grid[8], is_on_grid_aux[8];
    uint8_t block_signs[4];
    std::memset(&y, 0, sizeof y);
    uint8_t* qs = y.qs;
    uint8_t* signs = y.signs;
    float max_scale = 0;
    float sumx2 = 0;
    for (int i = 0; i < k_qk_k; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = 2 * sumx2 / k_qk_k;
    for (int ib = 0; ib < k_qk_k / 32; ++ib) {
        const float* xb = xbl + 32 * ib;
        if (qw)
            for (int i = 0; i < 32; ++i) weight[i] = qw[32 * ib + i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        else
            for (int i = 0; i < 32; ++i) weight[i] = xb[i] * xb[i];
        for (int i = 0; i < 32; ++i) waux[i] = std::sqrt(weight[i]);
        for (int k = 0; k < 4; ++k) {
            uint8_t s = 0;
            for (int i = 0; i < 8; ++i) {
                if (xb[8 * k + i] >= 0) {
                    xval[8 * k + i] = xb[8 * k + i];
                } else {
                    xval[8 * k + i] = -xb[8 * k + i];
                    s |= static_cast<uint8_t>(1 << i);
                }
            }
            block_signs[k] = s;
        }
        float max = xval[0];
        for (int i = 1; i < 32; ++i) max = max > xval[i] ? max : xval[i];
        std::memset(L, 0, sizeof L);
        if (!max) {
            scales[ib] = 0;
            continue;
        }
        float best = 0;
        float scale = max / (2 * k_max_q - 1);
        for (bool& b : is_on_grid) b = false;
        for (int is = -9; is <= 9; ++is) {
            const float id = (2 * k_max_q - 1 + static_cast<float>(is) * 0.2f) / max;
            const float this_scale = 1 / id;
            for (int k = 0; k < 8; ++k) {
                const int u = lattice_index(xval + 4 * k, id, Laux + 4 * k);
                is_on_grid_aux[k] = g.map[u] >= 0;
                if (!is_on_grid_aux[k]) neighbour(g, u, xval + 4 * k, waux + 4 * k, this_scale, Laux + 4 * k);
            }
            float sumqx = 0, sumq2 = 0;
            for (int i = 0; i < 32; ++i) {
                const float w = weight[i];
                const float q = static_cast<float>(2 * Laux[i] + 1);
                sumqx += w * xval[i] * q;
                sumq2 += w * q * q;
            }
            if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                scale = sumqx / sumq2;
                best = scale * sumqx;
                std::memcpy(L, Laux, sizeof L);
                std::memcpy(is_on_grid, is_on_grid_aux, sizeof is_on_grid);
            }
        }
        int n_not_on_grid = 0;
        for (bool b : is_on_grid) n_not_on_grid += !b;
        if (n_not_on_grid > 0 && scale > 0) {  // every point again for the final scale
            const float id = 1 / scale;
            for (int k = 0; k < 8; ++k) {
                int8_t l4[4];
                const int u = lattice_index(xval + 4 * k, id, l4);
                int index = g.map[u];
                if (index < 0) index = neighbour(g, u, xval + 4 * k, waux + 4 * k, scale, L + 4 * k);
                const int8_t* p = g.point(index);
                for (int i = 0; i < 4; ++i) L[4 * k + i] = static_cast<int8_t>((p[i] - 1) / 2);
            }
            float sumqx = 0, sumq2 = 0;
            for (int i = 0; i < 32; ++i) {
                const float w = weight[i];
                const float q = static_cast<float>(2 * L[i] + 1);
                sumqx += w * xval[i] * q;
                sumq2 += w * q * q;
            }
            if (sumq2 > 0) scale = sumqx / sumq2;
        }
        if (scale < 0) {
            scale = -scale;
            for (uint8_t& s : block_signs) s = static_cast<uint8_t>(~s);
        }
        for (int k = 0; k < 8; ++k) {
            int u = 0;
            for (int i = 0; i < 4; ++i) u |= L[4 * k + i] << (3 * i);
            const int index = g.map[u];
            if (index < 0) throw Error("IQ3_S quantizer: a point off the grid (a value is not finite)");
            qs[k] = static_cast<uint8_t>(index & 255);
            y.qh[(ib * 8 + k) / 8] |= static_cast<uint8_t>((index >> 8) << ((ib * 8 + k) % 8));
        }
        qs += 8;
        for (int k = 0; k < 4; ++k) signs[k] = block_signs[k];
        signs += 4;
        scales[ib] = scale;
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) return;
    const float d = max_scale / 31;
    store_f16(y.d, d * 1.033f);
    const float id = 1 / d;
    for (int ib = 0; ib < k_qk_k / 32; ib += 2) {
        const int l1 = clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 15);
        const int l2 = clamp_int(nearest_int(0.5f * (id * scales[ib + 1] - 1)), 0, 15);
        y.scales[ib / 2] = static_cast<uint8_t>(l1 | (l2 << 4));
    }
}

}  // namespace

void quantize_row_iq3_s(const float* src, void* dst, int64_t n) { quantize_row_iq3_s_weighted(src, dst, n, nullptr); }

void quantize_row_iq3_s_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    auto* y = blocks_of<BlockIQ3_S>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i) quantize_superblock_iq3_s(src + i * k_qk_k, y[i], qw ? qw + i * k_qk_k : nullptr);
}

void quantize_row_iq3_xxs(const float* src, void* dst, int64_t n) { quantize_row_iq3_xxs_weighted(src, dst, n, nullptr); }

void quantize_row_iq3_xxs_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    auto* y = blocks_of<BlockIQ3_XXS>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i) quantize_superblock_iq3_xxs(src + i * k_qk_k, y[i], qw ? qw + i * k_qk_k : nullptr);
}

}  // namespace kiln::quant
