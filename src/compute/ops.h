// Element-wise and row operations of the forward pass (scalar references).
//
// Shapes follow the GGUF convention (docs/ARCHITECTURE.md): `// f32 [n, rows]`
// means rows of n contiguous floats. Reductions accumulate in double where ggml
// does, so results track llama.cpp closely; every row is computed the same way
// whatever the batch size (batch invariance).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::ops {

// y = x / sqrt(mean(x^2) + eps) * w   (w may be null)       f32 [n]
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
// y = (x - mean) / sqrt(var + eps) * w + b   (w, b may be null)
void layer_norm(const float* x, const float* w, const float* b, float* y, int64_t n, float eps);

// In place: x = x * scale
void scale(float* x, int64_t n, float s);
// y += x
void add(float* y, const float* x, int64_t n);
// y = a + b
void add_to(float* y, const float* a, const float* b, int64_t n);
// In place: x = cap * tanh(x / cap)
void softcap(float* x, int64_t n, float cap);

// Gated FFN activations, in place on gate: gate = act(gate) * up.
void silu_mul(float* gate, const float* up, int64_t n);
void gelu_mul(float* gate, const float* up, int64_t n);  // tanh approximation, as ggml_gelu
float silu(float x);
float sigmoid(float x);     // 1 / (1 + exp(-x)), as ggml_sigmoid
float gelu(float x);        // exact tanh form
float gelu_table(float x);  // through the f16 table ggml uses (what gelu_mul applies)
// That table: GELU of every f16 bit pattern, as f16 (65536 entries + 1 padding).
const uint16_t* gelu_f16_table();

// In place softmax over n values; returns nothing. Max-subtracted, sum in double.
void softmax(float* x, int64_t n);
// The same over n values and a sink logit whose share is dropped (no value):
// max over both, the sum includes exp(sink - max).
void softmax_with_sink(float* x, int64_t n, float sink);

// RoPE --------------------------------------------------------------------
enum class RopeLayout { Norm, Neox };  // adjacent pairs / the two halves of a head

struct RopeParams {
    RopeLayout layout = RopeLayout::Norm;
    int n_dims = 0;             // rotated dimensions of a head (<= head size; the rest pass through)
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;    // 1 / linear scaling factor
    // YaRN (ext_factor 0 disables it)
    float ext_factor = 0.0f;
    float attn_factor = 1.0f;
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    int n_ctx_orig = 0;
    const float* freq_factors = nullptr;  // optional per-pair divisors (Llama 3 rope_freqs), n_dims/2
};

// Precomputes cos/sin for one position: cache holds n_dims values (cos, sin interleaved per pair).
void rope_cache(const RopeParams& p, int64_t pos, float* cache);
// Rotates n_heads heads of size head_dim in place using a cache from rope_cache.
void rope_apply(const RopeParams& p, const float* cache, float* x, int64_t n_heads, int64_t head_dim);

}  // namespace kiln::ops
