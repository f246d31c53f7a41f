// Matrix x vector / matrix x matrix with weights in any supported block format,
// used in place from the file mapping.
//
//   y[t][o] = sum_i W[o][i] * x[t][i]      W: [n_in, n_out] (GGUF order), x: f32 [n_in, n_tokens]
//
// Activations are converted once per call to the format the weight's dot
// product expects (Q8_0 / Q8_1 / Q8_K / F16 / ...; see the quant traits), and
// every output element is one dot product of a weight row with an activation
// row, computed the same way whatever n_tokens is: results are bit-identical
// between a prefill of many rows and a decode of one (batch invariance).
#pragma once

#include <cstdint>
#include <vector>

#include "compute/thread_pool.h"
#include "kiln/gguf/ggml_type.h"

namespace kiln {

struct Matrix {
    GgmlType type = GgmlType::F32;
    const uint8_t* data = nullptr;
    int64_t n_in = 0;   // ne0: elements per row
    int64_t n_out = 0;  // ne1: rows
    uint64_t row_bytes = 0;

    bool empty() const { return data == nullptr; }
    const uint8_t* row(int64_t r) const { return data + static_cast<uint64_t>(r) * row_bytes; }
};

// Reusable buffers so the forward pass does not allocate per operation.
struct MatmulScratch {
    std::vector<uint8_t> activations;
};

// Whether matmul supports `type` directly (others are converted at load).
bool matmul_supports(GgmlType type);

void matmul(const Matrix& w, const float* x, int64_t n_tokens, float* y, ThreadPool& pool, MatmulScratch& scratch);

// Row r of w as f32 (embedding lookup).
void matrix_row_f32(const Matrix& w, int64_t r, float* out);

}  // namespace kiln
