// ggml's scale searches that more than one quantizer family uses (defined in
// k_quants.cpp and weighted_quants.cpp). Each is its ggml counterpart operation
// for operation: the quantizers built on them must give the same bytes.
#pragma once

#include <cstdint>

namespace kiln::quant {

// Symmetric levels: L[i] = level + nmax, level in [-nmax, nmax). Each value is
// weighted by qw[i] (importance) or, with qw null, by x^2. Returns the scale.
float make_qx_quants(int n, int nmax, const float* x, int8_t* L, const float* qw = nullptr);

// Asymmetric levels L[i] in [0, nmax] with a min, weighted by `weights` (ggml's
// make_qkx3_quants: the importance-matrix search). *the_min gets -min (>= 0).
float make_qkx3_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min, uint8_t* Laux,
                       float rmin, float rdelta, int nstep, bool use_mad);

// Non-negative levels L[i] in [0, nmax] for non-negative x (sub-block scales or
// mins), weighted by quant_weights (ggml's make_qp_quants). Returns the scale.
float make_qp_quants(int n, int nmax, const float* x, uint8_t* L, const float* quant_weights);

}  // namespace kiln::quant
