#include "compute/matmul.h"

#include <cstring>

#include "kiln/error.h"
#include "kiln/quant.h"

namespace kiln {

bool matmul_supports(GgmlType type) { return quant::can_dequantize(type); }

void matrix_row_f32(const Matrix& w, int64_t r, float* out) {
    quant::dequantize_row(w.type, w.row(r), out, w.n_in);
}

// Interim kernel until the quantized dot products land: each weight row is
// dequantized once per call and dotted with every activation row in f32.
void matmul(const Matrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool, MatmulScratch& scratch) {
    const int64_t n_in = w.n_in, n_out = w.n_out;
    const int n_threads = pool.size();
    scratch.activations.resize(static_cast<size_t>(n_threads) * static_cast<size_t>(n_in) * sizeof(float));
    float* rows = reinterpret_cast<float*>(scratch.activations.data());
    pool.parallel_for(n_out, 16, [&](int64_t b, int64_t e, int thread) {
        float* wrow = rows + static_cast<size_t>(thread) * static_cast<size_t>(n_in);
        for (int64_t o = b; o < e; ++o) {
            quant::dequantize_row(w.type, w.row(o), wrow, n_in);
            for (int64_t t = 0; t < n_tokens; ++t) {
                const float* xt = x + t * n_in;
                float sum = 0.0f;
                for (int64_t i = 0; i < n_in; ++i) sum += wrow[i] * xt[i];
                y[t * n_out + o] = sum;
            }
        }
    });
}

}  // namespace kiln
