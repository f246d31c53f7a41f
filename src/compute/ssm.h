// The recurrences of the state-space (Mamba) mixers, one position at a time over
// a range of channels or heads: scalar references, written operation by
// operation as ggml's CPU kernels (ggml_ssm_conv, ggml_ssm_scan) so results
// track llama.cpp's. A chunk of a sequence's rows is evaluated by calling these
// in position order inside the mixer (src/model/ssm.cpp); every position is the
// same arithmetic whether it arrives alone or in a chunk of any size, so the
// recurrence is batch-invariant by construction (no chunk-wise reordering).
//
// State layouts (per sequence and layer, f32, fastest dimension first):
//   convolution  [d_conv - 1, n_channels]   the last d_conv - 1 inputs, oldest first
//   Mamba-1 scan [d_state, d_inner]
//   Mamba-2 scan [d_state, head_dim, n_head]
#pragma once

#include <cstdint>

namespace kiln::ssm {

constexpr int k_scan_lanes = 16;

// softplus as ggml: x above 20 passes through, else log(1 + exp(x)).
float softplus(float x);

// Causal depthwise convolution of one position, channels [c0, c1): for channel
// c, y[c] = Σ_j window[j] · w[c·d_conv + j] (j in order, from 0) + bias[c], where
// window is the state's d_conv - 1 inputs followed by x[c]; then the state
// shifts x[c] in. w: f32 [d_conv, n_channels] (the GGUF ssm_conv1d layout);
// bias may be null (no bias: the sum as it is).
void conv_step(float* state, const float* x, const float* w, const float* bias, float* y, int d_conv, int64_t c0, int64_t c1);

// conv_step's state update alone (the state shifts x[c] in), channels [0, n):
// what a replay of logged rows needs (src/model/ssm_replay.cpp).
void conv_shift(float* state, const float* x, int d_conv, int64_t n);

// Mamba-2 scan of one position, heads [h0, h1). Head h (group g = h / (n_head /
// n_group)) with dt' = softplus(dt[h]) and dA = exp(dt' · A[h]):
//   s[i][d] = s[i][d] · dA + B[g][i] · (x[h][d] · dt'),   y[h][d] = Σ_i s[i][d] · C[g][i]
// x, y: f32 [head_dim, n_head]; dt, A: [n_head]; B, C: [d_state, n_group].
// The sum over i is taken in 16 lanes (lane k adds the terms i ≡ k mod 16 in
// order), the lanes then folded in halves (k + 8, then + 4, + 2, + 1): the order
// of one 512-bit or two 256-bit accumulators, so the SIMD kernels
// (KernelTable::ssm_scan2) are bit-identical to this reference.
void scan2_step(float* state, const float* x, const float* dt, const float* A, const float* B, const float* C, float* y,
                int d_state, int head_dim, int n_head, int n_group, int h0, int h1);

// Mamba-1 scan of one position, channels [c0, c1), with dt' = softplus(dt[c]):
//   s[i][c] = s[i][c] · exp(dt' · A[c][i]) + B[i] · (x[c] · dt'),   y[c] = Σ_i s[i][c] · C[i]
// x, dt, y: f32 [d_inner]; A: [d_state, d_inner]; B, C: [d_state].
void scan1_step(float* state, const float* x, const float* dt, const float* A, const float* B, const float* C, float* y,
                int d_state, int64_t c0, int64_t c1);

// The gated delta rule of one position (Qwen3.5's linear attention), value
// heads [h0, h1), value head h reading key head h % n_k_heads (llama.cpp's
// tiling of the key heads). The state of head h is M [d, d] with M[j][i] =
// S[i][j]; row j of it, with decay exp(g[h]):
//   row *= decay;  δ = (v[h][j] - row · k) · beta[h];  row += k · δ;  y[h][j] = (row · q) / sqrt(d)
// q, k: f32 [d, n_k_heads] (already L2-normed); v, y: [d, n_v_heads]; g, beta: [n_v_heads].
// Dot products are summed in the 16 lanes of scan2_step. deltas (may be null):
// where each δ goes, f32 [d, n_v_heads] (what delta_apply needs to redo the update).
// from (may be null: state itself): the state before the position, read once
// (the first pass, row · decay), the new state written to state — a step from
// one buffer into another (the deferred rows' spare head) at no extra pass.
// pending (may be null): earlier positions' recorded updates (delta_apply's
// rows) to bring each state row up to date first, the result written back where
// the row was read (from, else state; fused: one pass over the head for both).
// stream: the new state is not read again soon (the deferred rows' spare head,
// written once per pass): the SIMD levels write it with non-temporal stores
// where d fits (k_delta_stream_max) and state is aligned to their width, so its
// lines are not read from memory before being overwritten; the same bits.
struct DeltaRows;
constexpr int k_delta_stream_max = 256;
void delta_step(float* state, const float* q, const float* k, const float* v, const float* g, const float* beta, float* y, int d,
                int n_k_heads, int h0, int h1, float* deltas, float* from, const DeltaRows* pending, bool stream);

// Positions recorded by delta_step, to redo without reading the state: position
// p's k [d, n_k_heads], g [n_v_heads] and δ [d, n_v_heads] at k + p·stride,
// g + p·stride, deltas + p·stride (the deferred rows' records).
struct DeltaRows {
    const float* k = nullptr;
    const float* g = nullptr;
    const float* deltas = nullptr;
    int64_t stride = 0;
    int n_rows = 0;
};

// delta_step's state update of n_rows positions from their recorded δ, without
// reading the state for them: position p's k, g and δ at k + p·stride, g + p·stride,
// deltas + p·stride; for each element of row j of head h, for p in order,
// x = x · exp(g_p[h]) then x = x + k_p[i] · δ_p[h][j] — the same float operations
// in the same order as n_rows delta_step calls, so the state gets their bits.
// k: f32 [d, n_k_heads]; g: [n_v_heads]; deltas: [d, n_v_heads].
void delta_apply(float* state, const float* k, const float* g, const float* deltas, int64_t stride, int n_rows, int d,
                 int n_k_heads, int h0, int h1);

// RWKV-6's WKV of one position, heads [h0, h1) of head_size d (the reference
// of KernelTable::rwkv_wkv6, whose SIMD levels run it lane-wise over j). Head h's state S [d, d] (S[i][j] at
// i·d + j), with kv = v[h][j] · k[h][i]:
//   y[h][j] += r[h][i] · fma(kv, u[h][i], S[i][j]) over i in order;  S[i][j] = fma(S[i][j], w[h][i], kv)
// — fused as ggml's CPU kernel computes it with FMA (the state update and the
// output read the same old S). k, v, r, w, y: f32 [d, n_head]; u (time_first):
// [d, n_head]; y is written (not accumulated into).
void wkv6_step(float* state, const float* k, const float* v, const float* r, const float* u, const float* w, float* y, int d,
               int h0, int h1);

// Gated linear attention of one position (RWKV6Qwen2), heads [h0, h1) of size
// d (the reference of KernelTable::rwkv_gla): with kv = v[h][j] · k[h][i], S[i][j] = fma(S[i][j], g[h][i], kv)
// and y[h][j] = Σ_i S[i][j] · (q[h][i] · scale) (fma, i in order), as ggml's
// CPU kernel. k, v, q, g, y: f32 [d, n_head]; y is written.
void gla_step(float* state, const float* k, const float* v, const float* q, const float* g, float* y, int d, float scale, int h0,
              int h1);

// RWKV-7's WKV of one position, heads [h0, h1) of size d (the reference of
// KernelTable::rwkv_wkv7). Head h's state S [d, d] (i the value index, j the key
// index) is stored transposed, S[i][j] at j·d + i, so that the SIMD levels take
// 16 rows i at once, each lane summing its row over j in order as ggml's CPU
// kernel does; for each i: sa = Σ_j a[j] S[i][j] (fma, in order), then for each j
//   S[i][j] = fma(sa, b[j], fma(S[i][j], w[j], v[i] · k[j])),   y[i] = Σ_j S[i][j] r[j] (fma, in order)
// r, w, k, v, a, b, y: f32 [d, n_head].
void wkv7_step(float* state, const float* r, const float* w, const float* k, const float* v, const float* a, const float* b,
               float* y, int d, int h0, int h1);

}  // namespace kiln::ssm
