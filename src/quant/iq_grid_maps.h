// The grid i-quants' search tables, as ggml's iq2xs_init_impl / iq3xs_init_impl
// build them: each grid point as 2 l + 1 per coordinate (l the level index), a map
// from every point of the full lattice (l in [0, 2^bits) per coordinate) to its grid
// index or, off the grid, to its list of nearest grid points (all those at the
// `nwant` smallest distinct squared distances, in order of distance then index).
// Built once, on first use, thread-safely; derived from the dequantization grids.
#pragma once

#include <cfloat>
#include <cstdint>
#include <vector>

#include "kiln/gguf/ggml_type.h"

namespace kiln::quant {

struct GridMap {
    int dims = 0;  // 8 (IQ2, IQ1) or 4 (IQ3) values per grid point
    int bits = 0;  // per coordinate of a lattice index: 2 (IQ2, IQ1) or 3 (IQ3)
    std::vector<int8_t> points;         // grid_size x dims, each 2 l + 1
    std::vector<int32_t> map;           // lattice index -> grid index (>= 0) or -(offset + 1)
    std::vector<uint16_t> neighbours;   // at offset: count, then that many grid indices

    const int8_t* point(int g) const { return points.data() + static_cast<size_t>(g) * dims; }
    // For a lattice index with map[u] < 0.
    const uint16_t* neighbours_of(int u) const { return neighbours.data() + (-map[u] - 1); }
};

// ggml's iq2_find_best_neighbour / iq3_find_best_neighbour, for a lattice index u
// off the grid: among u's neighbours, the grid point whose values times scale are
// nearest xval in weighted squared distance (the first of equals); its levels go to
// L. Returns its grid index, or -1 when no distance compares (a value not finite).
inline int best_neighbour(const GridMap& g, int u, const float* xval, const float* weight, float scale, int8_t* L) {
    const uint16_t* neighbours = g.neighbours_of(u);
    const int n = neighbours[0];
    float best_d2 = FLT_MAX;
    int index = -1;
    for (int j = 1; j <= n; ++j) {
        const int8_t* p = g.point(neighbours[j]);
        float d2 = 0;
        for (int i = 0; i < g.dims; ++i) {
            const float q = p[i];
            const float diff = scale * q - xval[i];
            d2 += weight[i] * diff * diff;
        }
        if (d2 < best_d2) {
            best_d2 = d2;
            index = neighbours[j];
        }
    }
    if (index < 0) return -1;
    const int8_t* p = g.point(index);
    for (int i = 0; i < g.dims; ++i) L[i] = static_cast<int8_t>((p[i] - 1) / 2);
    return index;
}

// IQ2_XXS (256 points), IQ2_XS (512), IQ2_S (1024), IQ1_S and IQ1_M (2048) ...
const GridMap& iq2_grid_map(GgmlType type);
// ... and IQ3_XXS (256), IQ3_S (512).
const GridMap& iq3_grid_map(GgmlType type);

}  // namespace kiln::quant
