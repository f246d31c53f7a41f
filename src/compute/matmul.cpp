#include "compute/matmul.h"

#include <cstring>

#include "compute/activation_quant.h"
#include "kiln/error.h"
#include "kiln/quant.h"

namespace kiln {

bool matmul_supports(GgmlType type) { return quant::can_vec_dot(type); }

void matrix_row_f32(const Matrix& w, int64_t r, float* out) { quant::dequantize_row(w.type, w.row(r), out, w.n_in); }

namespace {

// Activation rows converted to the weight's dot-product format, once per call.
const uint8_t* convert_activations(const quant::QuantTraits& t, const float* x, int64_t n_in, int64_t n_tokens,
                                   ThreadPool& pool, MatmulScratch& scratch, uint64_t& act_row_bytes) {
    if (t.vec_dot_type == GgmlType::F32) {
        act_row_bytes = static_cast<uint64_t>(n_in) * sizeof(float);
        return reinterpret_cast<const uint8_t*>(x);
    }
    act_row_bytes = ggml_row_bytes(t.vec_dot_type, static_cast<uint64_t>(n_in));
    scratch.activations.resize(static_cast<size_t>(act_row_bytes * static_cast<uint64_t>(n_tokens)));
    uint8_t* out = scratch.activations.data();
    const GgmlType at = t.vec_dot_type;
    pool.parallel_for(n_tokens, 1, [&](int64_t b, int64_t e, int) {
        for (int64_t r = b; r < e; ++r) quantize_activations(at, x + r * n_in, out + static_cast<uint64_t>(r) * act_row_bytes, n_in);
    });
    return out;
}

}  // namespace

// Reference path: every output element is vec_dot_ref(weight row, activation
// row). Rows are split across threads in chunks; the dot products do not depend
// on the split or on n_tokens, so results are batch invariant.
void matmul(const Matrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool, MatmulScratch& scratch) {
    const quant::QuantTraits* t = quant::find_quant_traits(w.type);
    if (!t || !t->vec_dot_ref) throw Error("matmul: no dot product for " + std::string(ggml_type_name(w.type)));
    uint64_t act_row_bytes = 0;
    const uint8_t* act = convert_activations(*t, x, w.n_in, n_tokens, pool, scratch, act_row_bytes);
    const int64_t n_out = w.n_out;
    const quant::VecDotFn dot = t->vec_dot_ref;
    pool.parallel_for(n_out, 16, [&](int64_t b, int64_t e, int) {
        for (int64_t tkn = 0; tkn < n_tokens; ++tkn) {
            const uint8_t* a = act + static_cast<uint64_t>(tkn) * act_row_bytes;
            float* yt = y + tkn * n_out;
            for (int64_t o = b; o < e; ++o) yt[o] = dot(w.n_in, w.row(o), a);
        }
    });
}

}  // namespace kiln
