// The grid i-quants' search tables (iq_grid_maps.h). The grid points come from the
// dequantization grids (quant_tables.cpp): each stored magnitude is one level l, in
// the same order as ggml's compressed kgrid tables (IQ2: 8, 25, 43 -> 0, 1, 2; IQ1:
// -1, 0, 1 -> 0, 1, 2; IQ3_XXS: 4, 12, ..., 52, 62 -> 0 .. 7; IQ3_S: 1, 3, .., 15 -> 0 .. 7).
#include "quant/iq_grid_maps.h"

#include <algorithm>
#include <climits>

#include "kiln/error.h"
#include "quant/quant_tables.h"

namespace kiln::quant {

namespace {

int iq2_level(int v) { return v == 8 ? 0 : v == 25 ? 1 : v == 43 ? 2 : -1; }
int iq1_level(int v) { return v + 1; }
int iq3xxs_level(int v) { return v == 62 ? 7 : (v - 4) / 8; }
int iq3s_level(int v) { return (v - 1) / 2; }

// points: grid_size x dims levels l. nwant: how many distinct distances the
// neighbour lists span (ggml: 3 for IQ1, 1 for IQ2_S, else 2).
GridMap build(int grid_size, int dims, int bits, int map_size, int nwant, const std::vector<int>& levels) {
    GridMap g;
    g.dims = dims;
    g.bits = bits;
    g.points.resize(static_cast<size_t>(grid_size) * dims);
    for (size_t i = 0; i < g.points.size(); ++i) g.points[i] = static_cast<int8_t>(2 * levels[i] + 1);
    g.map.assign(static_cast<size_t>(map_size), -1);
    for (int k = 0; k < grid_size; ++k) {
        int index = 0;
        for (int i = 0; i < dims; ++i) index |= levels[static_cast<size_t>(k) * dims + i] << (bits * i);
        g.map[static_cast<size_t>(index)] = k;
    }
    const int mask = (1 << bits) - 1;
    std::vector<int> d2(static_cast<size_t>(grid_size));
    std::vector<std::pair<int, int>> near;
    for (int u = 0; u < map_size; ++u) {
        if (g.map[static_cast<size_t>(u)] >= 0) continue;
        int8_t pos[8];
        for (int i = 0; i < dims; ++i) pos[i] = static_cast<int8_t>(2 * ((u >> (bits * i)) & mask) + 1);
        for (int j = 0; j < grid_size; ++j) {
            const int8_t* p = g.point(j);
            int s = 0;
            for (int i = 0; i < dims; ++i) s += (p[i] - pos[i]) * (p[i] - pos[i]);
            d2[static_cast<size_t>(j)] = s;
        }
        // The nwant smallest distinct distances; the neighbours are every point within the largest.
        int limit = INT_MIN, below = INT_MIN;
        for (int n = 0; n < nwant; ++n) {
            int next = INT_MAX;
            for (int s : d2)
                if (s > below && s < next) next = s;
            if (next == INT_MAX) break;
            limit = below = next;
        }
        near.clear();
        for (int j = 0; j < grid_size; ++j)
            if (d2[static_cast<size_t>(j)] <= limit) near.emplace_back(d2[static_cast<size_t>(j)], j);
        std::sort(near.begin(), near.end());  // by distance, then index: ggml's qsort order
        g.map[static_cast<size_t>(u)] = -static_cast<int32_t>(g.neighbours.size()) - 1;
        g.neighbours.push_back(static_cast<uint16_t>(near.size()));
        for (const auto& [s, j] : near) g.neighbours.push_back(static_cast<uint16_t>(j));
    }
    return g;
}

template <size_t N, size_t D, typename V>
std::vector<int> levels_of(const V (&grid)[N][D], int (*level)(int)) {
    std::vector<int> out;
    out.reserve(N * D);
    for (size_t k = 0; k < N; ++k)
        for (size_t i = 0; i < D; ++i) out.push_back(level(grid[k][i]));
    return out;
}

}  // namespace

const GridMap& iq2_grid_map(GgmlType type) {
    constexpr int k_map = 43692;  // 8 coordinates of 2 bits: every index up to 0xAAAA (all levels 2)
    switch (type) {
        case GgmlType::IQ2_XXS: {
            static const GridMap m = build(256, 8, 2, k_map, 2, levels_of(k_iq2xxs_grid, iq2_level));
            return m;
        }
        case GgmlType::IQ2_XS: {
            static const GridMap m = build(512, 8, 2, k_map, 2, levels_of(k_iq2xs_grid, iq2_level));
            return m;
        }
        case GgmlType::IQ2_S: {
            static const GridMap m = build(1024, 8, 2, k_map, 1, levels_of(k_iq2s_grid, iq2_level));
            return m;
        }
        case GgmlType::IQ1_S:
        case GgmlType::IQ1_M: {
            static const GridMap m = build(2048, 8, 2, k_map, 3, levels_of(k_iq1s_grid, iq1_level));
            return m;
        }
        default: throw Error("iq2_grid_map: not an IQ2 / IQ1 type");
    }
}

const GridMap& iq3_grid_map(GgmlType type) {
    constexpr int k_map = 4096;  // 4 coordinates of 3 bits
    switch (type) {
        case GgmlType::IQ3_XXS: {
            static const GridMap m = build(256, 4, 3, k_map, 2, levels_of(k_iq3xxs_grid, iq3xxs_level));
            return m;
        }
        case GgmlType::IQ3_S: {
            static const GridMap m = build(512, 4, 3, k_map, 3, levels_of(k_iq3s_grid, iq3s_level));
            return m;
        }
        default: throw Error("iq3_grid_map: not an IQ3 type");
    }
}

}  // namespace kiln::quant
