// The IQ1 grid quantizers (ggml's quantize_row_iq1_s_impl and _iq1_m_impl),
// operation for operation so the bytes agree with llama-quantize's. The levels are
// -1, 0, 1 shifted by +-1/8: with three levels the weighted least-squares split of a
// block's sorted values into three groups is searched exhaustively (prefix sums of
// w x and w), then each group of 8 levels that is not a grid point is replaced by
// its nearest grid neighbour (iq_grid_maps.h) and the scale refitted. IQ1_S needs an
// importance matrix (ggml asserts one); IQ1_M weights by x^2 without one.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

#include "kiln/error.h"
#include "quant/blocks.h"
#include "quant/iq_grid_maps.h"
#include "quant/kernels.h"
#include "quant/quant_math.h"

namespace kiln::quant {

namespace {

constexpr float k_group_max_eps_iq1_s = 1e-12f;
constexpr float k_group_max_eps_iq1_m = 1e-7f;
constexpr float k_delta = 0.125f;
constexpr float k_x_p[3] = {-1 + k_delta, k_delta, 1 + k_delta};
constexpr float k_x_m[3] = {-1 - k_delta, -k_delta, 1 - k_delta};

// ggml's iq1_find_best_neighbour2: the neighbour of least weighted squared distance
// between scale * xx[level] and xval; its levels go to L.
int best_neighbour_iq1(const GridMap& g, int u, const float* xval, const float* weight, float scale, const float* xx, int8_t* L) {
    const uint16_t* neighbours = g.neighbours_of(u);
    float best = FLT_MAX;
    int index = -1;
    for (int j = 1; j <= neighbours[0]; ++j) {
        const int8_t* p = g.point(neighbours[j]);
        float d2 = 0;
        for (int i = 0; i < 8; ++i) {
            const float q = xx[(p[i] - 1) / 2];
            const float w = weight[i];
            const float diff = scale * q - xval[i];
            d2 += w * diff * diff;
        }
        if (d2 < best) {
            best = d2;
            index = neighbours[j];
        }
    }
    if (index < 0) throw Error("IQ1 quantizer: a value is not finite");
    const int8_t* p = g.point(index);
    for (int i = 0; i < 8; ++i) L[i] = static_cast<int8_t>((p[i] - 1) / 2);
    return index;
}

// The block's values sorted ascending (stably, as glibc's merge-sorting qsort orders
// ggml's pairs): their indices.
template <int N>
void sorted_order(const float* xb, int* idx) {
    for (int j = 0; j < N; ++j) idx[j] = j;
    std::stable_sort(idx, idx + N, [xb](int a, int b) { return xb[a] < xb[b]; });
}

int lattice_of(const int8_t* L) {
    int u = 0;
    for (int j = 0; j < 8; ++j) u |= L[j] << (2 * j);
    return u;
}

void quantize_superblock_iq1_s(const float* xbl, BlockIQ1_S& y, const float* qw) {
    const GridMap& g = iq2_grid_map(GgmlType::IQ1_S);
    constexpr int bs = 32;
    float scales[k_qk_k / bs], weight[bs], sumx[bs + 1], sumw[bs + 1];
    int8_t L[bs], shifts[k_qk_k / bs];
    int idx[bs];
    uint16_t index[bs / 8];
    uint16_t qh[k_qk_k / bs] = {};
    store_f16(y.d, 0.f);
    std::memset(y.qs, 0, sizeof y.qs);
    float max_scale = 0;
    float sumx2 = 0;
    for (int i = 0; i < k_qk_k; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = 2 * sumx2 / k_qk_k;
    for (int ib = 0; ib < k_qk_k / bs; ++ib) {
        const float* xb = xbl + bs * ib;
        for (int i = 0; i < bs; ++i) weight[i] = qw[bs * ib + i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        float max = std::fabs(xb[0]);
        for (int i = 1; i < bs; ++i) max = max > std::fabs(xb[i]) ? max : std::fabs(xb[i]);
        if (max < k_group_max_eps_iq1_s) {
            scales[ib] = 0;
            shifts[ib] = 1;
            continue;
        }
        sorted_order<bs>(xb, idx);
        sumx[0] = sumw[0] = 0;
        for (int j = 0; j < bs; ++j) {
            const int i = idx[j];
            sumx[j + 1] = sumx[j] + weight[i] * xb[i];
            sumw[j + 1] = sumw[j] + weight[i];
        }
        float best_score = -FLT_MAX, scale = max;
        int besti1 = -1, besti2 = -1, best_shift = 0;
        for (int i1 = 0; i1 <= bs; ++i1) {
            for (int i2 = i1; i2 <= bs; ++i2) {
                for (int sh = 1; sh >= -1; sh -= 2) {
                    const float* v = sh == 1 ? k_x_p : k_x_m;
                    const float sumqx = (sumx[i1] - sumx[0]) * v[0] + (sumx[i2] - sumx[i1]) * v[1] + (sumx[bs] - sumx[i2]) * v[2];
                    const float sumq2 = (sumw[i1] - sumw[0]) * v[0] * v[0] + (sumw[i2] - sumw[i1]) * v[1] * v[1] +
                                        (sumw[bs] - sumw[i2]) * v[2] * v[2];
                    if (sumq2 > 0 && sumqx * sumqx > best_score * sumq2) {
                        scale = sumqx / sumq2;
                        best_score = scale * sumqx;
                        besti1 = i1;
                        besti2 = i2;
                        best_shift = sh;
                    }
                }
            }
        }
        if (besti1 < 0 || besti2 < 0 || best_shift == 0) {
            scales[ib] = 0;
            shifts[ib] = 1;
            continue;
        }
        for (int j = 0; j < besti1; ++j) L[idx[j]] = 0;
        for (int j = besti1; j < besti2; ++j) L[idx[j]] = 1;
        for (int j = besti2; j < bs; ++j) L[idx[j]] = 2;
        if (scale < 0) {
            for (int8_t& l : L) l = static_cast<int8_t>(2 - l);
            scale = -scale;
            best_shift = -best_shift;
        }
        bool all_on_grid = true;
        const float* xx = best_shift == 1 ? k_x_p : k_x_m;
        for (int k = 0; k < bs / 8; ++k) {
            const int u = lattice_of(L + 8 * k);
            int gi = g.map[u];
            if (gi < 0) {
                all_on_grid = false;
                gi = best_neighbour_iq1(g, u, xb + 8 * k, weight + 8 * k, scale, xx, L + 8 * k);
            }
            index[k] = static_cast<uint16_t>(gi);
        }
        if (!all_on_grid) {
            float sumqx = 0, sumq2 = 0;
            for (int k = 0; k < bs / 8; ++k) {
                const int8_t* p = g.point(index[k]);
                for (int j = 0; j < 8; ++j) {
                    const float w = weight[8 * k + j];
                    const float q = xx[(p[j] - 1) / 2];
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            }
            if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
        }
        uint16_t h = 0;
        for (int k = 0; k < bs / 8; ++k) {
            y.qs[(bs / 8) * ib + k] = static_cast<uint8_t>(index[k] & 255);
            h = static_cast<uint16_t>(h | ((index[k] >> 8) << (3 * k)));
        }
        qh[ib] = h;
        scales[ib] = scale;
        shifts[ib] = static_cast<int8_t>(best_shift);
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (max_scale) {
        const float d = max_scale / 15;
        store_f16(y.d, d * 1.125f);  // ggml's fudge factor
        const float id = 1 / d;
        for (int ib = 0; ib < k_qk_k / bs; ++ib) {
            int l = clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 7);
            if (shifts[ib] == -1) l |= 8;
            qh[ib] = static_cast<uint16_t>(qh[ib] | (l << 12));
        }
    }
    for (int ib = 0; ib < k_qk_k / bs; ++ib) store_u16(y.qh + 2 * ib, qh[ib]);
}

// IQ1_M: blocks of 16, each half (8 values) with its own shift sign: best_k's two
// bits (0: +, +; 1: +, -; 2: -, +; 3: -, -). No f16 field: the super-scale, refitted
// over the whole super-block, goes to the top nibbles of the four scale words.
void quantize_superblock_iq1_m(const float* xbl, BlockIQ1_M& y, const float* qw) {
    const GridMap& g = iq2_grid_map(GgmlType::IQ1_M);
    constexpr int bs = 16;
    constexpr uint8_t masks[4] = {0x00, 0x80, 0x08, 0x88};
    float scales[k_qk_k / bs], weight[bs];
    int8_t L[bs], shifts[k_qk_k / bs];
    int idx[bs];
    uint16_t index[bs / 8];
    uint16_t sc[4] = {};
    std::memset(&y, 0, sizeof y);
    float max_scale = 0;
    float sumx2 = 0;
    for (int i = 0; i < k_qk_k; ++i) sumx2 += xbl[i] * xbl[i];
    const float sigma2 = 2 * sumx2 / k_qk_k;
    auto weights_of = [&](int ib) {
        const float* xb = xbl + bs * ib;
        if (qw)
            for (int i = 0; i < bs; ++i) weight[i] = qw[bs * ib + i] * std::sqrt(sigma2 + xb[i] * xb[i]);
        else
            for (int i = 0; i < bs; ++i) weight[i] = xb[i] * xb[i];
    };
    // The shift values of half k under best_k.
    auto half_values = [](int best_k, int k) { return (k == 0 ? best_k < 2 : best_k % 2 == 0) ? k_x_p : k_x_m; };
    for (int ib = 0; ib < k_qk_k / bs; ++ib) {
        const float* xb = xbl + bs * ib;
        weights_of(ib);
        float max = std::fabs(xb[0]);
        for (int i = 1; i < bs; ++i) max = max > std::fabs(xb[i]) ? max : std::fabs(xb[i]);
        if (max < k_group_max_eps_iq1_m) {
            scales[ib] = 0;
            shifts[ib] = 0;
            continue;
        }
        sorted_order<bs>(xb, idx);
        float best_score = -FLT_MAX, scale = max;
        int besti1 = -1, besti2 = -1, best_k = -1;
        {
            // Prefix sums per half (each half may take the other shift). With v0 - v1 =
            // v1 - v2 = -1 a split's sum of w x q is T v2 - px[i1] - px[i2].
            float px[2][bs + 1], pw[2][bs + 1];
            px[0][0] = px[1][0] = 0;
            pw[0][0] = pw[1][0] = 0;
            for (int j = 0; j < bs; ++j) {
                const int i = idx[j];
                const int h = i < bs / 2 ? 0 : 1;
                px[h][j + 1] = px[h][j] + weight[i] * xb[i];
                px[1 - h][j + 1] = px[1 - h][j];
                pw[h][j + 1] = pw[h][j] + weight[i];
                pw[1 - h][j + 1] = pw[1 - h][j];
            }
            const float txs[2] = {px[0][bs], px[1][bs]};
            const float tws[2] = {pw[0][bs], pw[1][bs]};
            const float p2 = k_x_p[2], m2 = k_x_m[2];
            const float cp1 = k_x_p[0] * k_x_p[0] - k_x_p[1] * k_x_p[1];
            const float cp2 = k_x_p[1] * k_x_p[1] - k_x_p[2] * k_x_p[2];
            const float cm1 = k_x_m[0] * k_x_m[0] - k_x_m[1] * k_x_m[1];
            const float cm2 = k_x_m[1] * k_x_m[1] - k_x_m[2] * k_x_m[2];
            float sumqx[4], sumq2[4];
            for (int i1 = 0; i1 <= bs; ++i1) {
                for (int i2 = i1; i2 <= bs; ++i2) {
                    float qx_p[2], qx_m[2], q2_p[2], q2_m[2];
                    for (int h = 0; h < 2; ++h) {
                        const float sx = px[h][i1] + px[h][i2];
                        qx_p[h] = txs[h] * p2 - sx;
                        qx_m[h] = txs[h] * m2 - sx;
                        q2_p[h] = tws[h] * p2 * p2 + pw[h][i1] * cp1 + pw[h][i2] * cp2;
                        q2_m[h] = tws[h] * m2 * m2 + pw[h][i1] * cm1 + pw[h][i2] * cm2;
                    }
                    sumqx[0] = qx_p[0] + qx_p[1];
                    sumqx[1] = qx_p[0] + qx_m[1];
                    sumqx[2] = qx_m[0] + qx_p[1];
                    sumqx[3] = qx_m[0] + qx_m[1];
                    sumq2[0] = q2_p[0] + q2_p[1];
                    sumq2[1] = q2_p[0] + q2_m[1];
                    sumq2[2] = q2_m[0] + q2_p[1];
                    sumq2[3] = q2_m[0] + q2_m[1];
                    for (int k = 0; k < 4; ++k) {
                        if (sumq2[k] > 0 && sumqx[k] * sumqx[k] > best_score * sumq2[k]) {
                            scale = sumqx[k] / sumq2[k];
                            best_score = scale * sumqx[k];
                            besti1 = i1;
                            besti2 = i2;
                            best_k = k;
                        }
                    }
                }
            }
        }
        if (besti1 < 0 || besti2 < 0 || best_k < 0) {
            scales[ib] = 0;
            shifts[ib] = 0;
            continue;
        }
        for (int j = 0; j < besti1; ++j) L[idx[j]] = 0;
        for (int j = besti1; j < besti2; ++j) L[idx[j]] = 1;
        for (int j = besti2; j < bs; ++j) L[idx[j]] = 2;
        if (scale < 0) {
            for (int8_t& l : L) l = static_cast<int8_t>(2 - l);
            scale = -scale;
            best_k = 3 - best_k;
        }
        bool all_on_grid = true;
        for (int k = 0; k < bs / 8; ++k) {
            const int u = lattice_of(L + 8 * k);
            int gi = g.map[u];
            if (gi < 0) {
                all_on_grid = false;
                gi = best_neighbour_iq1(g, u, xb + 8 * k, weight + 8 * k, scale, half_values(best_k, k), L + 8 * k);
            }
            index[k] = static_cast<uint16_t>(gi);
        }
        if (!all_on_grid) {
            float sumqx = 0, sumq2 = 0;
            for (int k = 0; k < bs / 8; ++k) {
                const float* xx = half_values(best_k, k);
                const int8_t* p = g.point(index[k]);
                for (int j = 0; j < 8; ++j) {
                    const float w = weight[8 * k + j];
                    const float q = xx[(p[j] - 1) / 2];
                    sumqx += w * q * xb[8 * k + j];
                    sumq2 += w * q * q;
                }
            }
            if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
        }
        y.qs[2 * ib] = static_cast<uint8_t>(index[0] & 255);
        y.qs[2 * ib + 1] = static_cast<uint8_t>(index[1] & 255);
        y.qh[ib] = static_cast<uint8_t>((index[0] >> 8) | ((index[1] >> 8) << 4));
        scales[ib] = scale;
        shifts[ib] = static_cast<int8_t>(best_k);
        max_scale = max_scale > scale ? max_scale : scale;
    }
    if (!max_scale) return;
    // The 3-bit scales, then the super-scale refitted to every block's stored levels.
    float d = max_scale / 15;
    const float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int ib = 0; ib < k_qk_k / bs; ++ib) {
        const int l = clamp_int(nearest_int(0.5f * (id * scales[ib] - 1)), 0, 7);
        sc[ib / 4] = static_cast<uint16_t>(sc[ib / 4] | (l << (3 * (ib % 4))));
        y.qh[ib] |= masks[shifts[ib]];
        const float* xb = xbl + bs * ib;
        weights_of(ib);
        for (int k = 0; k < bs / 8; ++k) {
            const float* xx = half_values(shifts[ib], k);
            const int8_t* p = g.point(y.qs[2 * ib + k] + ((y.qh[ib] << (8 - 4 * k)) & 0x700));
            for (int j = 0; j < 8; ++j) {
                const float w = weight[8 * k + j];
                const float q = xx[(p[j] - 1) / 2] * static_cast<float>(2 * l + 1);
                sumqx += w * q * xb[8 * k + j];
                sumq2 += w * q * q;
            }
        }
    }
    if (sumq2 > 0) d = sumqx / sumq2;
    const uint16_t s = fp32_to_fp16(d * 1.1125f);  // ggml's fudge factor
    sc[0] = static_cast<uint16_t>(sc[0] | ((s & 0x000f) << 12));
    sc[1] = static_cast<uint16_t>(sc[1] | ((s & 0x00f0) << 8));
    sc[2] = static_cast<uint16_t>(sc[2] | ((s & 0x0f00) << 4));
    sc[3] = static_cast<uint16_t>(sc[3] | (s & 0xf000));
    for (int k = 0; k < 4; ++k) store_u16(y.scales + 2 * k, sc[k]);
}

}  // namespace

void quantize_row_iq1_s_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    if (!qw) throw Error("quantize: IQ1_S needs an importance matrix", ErrorKind::Unsupported);
    auto* y = blocks_of<BlockIQ1_S>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i) quantize_superblock_iq1_s(src + i * k_qk_k, y[i], qw + i * k_qk_k);
}

void quantize_row_iq1_m(const float* src, void* dst, int64_t n) { quantize_row_iq1_m_weighted(src, dst, n, nullptr); }

void quantize_row_iq1_m_weighted(const float* src, void* dst, int64_t n, const float* qw) {
    auto* y = blocks_of<BlockIQ1_M>(dst);
    for (int64_t i = 0; i < n / k_qk_k; ++i) quantize_superblock_iq1_m(src + i * k_qk_k, y[i], qw ? qw + i * k_qk_k : nullptr);
}

}  // namespace kiln::quant
