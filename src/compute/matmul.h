// Matrix x vector / matrix x matrix with weights in any supported block format.
//
//   y[t][o] = sum_i W[o][i] * x[t][i]      W: [n_in, n_out] (GGUF order), x: f32 [n_in, n_tokens]
//
// Activations are converted once per call to the format the weight's dot
// product expects (Q8_0 / Q8_1 / Q8_K / F16 / ...; see the quant traits), and
// every output element is computed exactly as the scalar reference dot product of
// its weight row and activation row (kiln/quant.h states the order), whichever
// kernel runs: results are bit-identical between a prefill of many rows and a
// decode of one (batch invariance), for any thread count, on any CPU level.
//
// Fast paths (compute/kernels): weights repacked at load into panels of 16 rows
// (quantized) or 32 rows (float) by prepare_matrices, multiplied by SIMD kernels
// that tile rows x tokens. A quantized matrix left unpacked (read in place from
// the file: experts beyond the memory budget, model/weights.h) runs the same
// kernels on panels each task repacks as it goes, so its results are the packed
// path's and only the rows it multiplies are read.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "compute/kernels/kernels.h"
#include "compute/kernels/layout.h"
#include "compute/thread_pool.h"
#include "kiln/gguf/ggml_type.h"

namespace kiln {

struct Matrix {
    GgmlType type = GgmlType::F32;
    const uint8_t* data = nullptr;  // the file's rows (always kept: embedding lookups, reference path)
    int64_t n_in = 0;   // ne0: elements per row
    int64_t n_out = 0;  // ne1: rows
    uint64_t row_bytes = 0;
    std::shared_ptr<const PackedMatrix> packed;  // the same rows repacked for the SIMD kernels, if any
    // A lookup table's rows (the token embedding) are read with pread from this
    // descriptor at this offset, not through the mapping: a page fault would map
    // the kernel's fault-around window (or a whole large folio) of the table, and
    // those pages would stay resident. -1: rows are read from data.
    int rows_fd = -1;
    uint64_t rows_fd_offset = 0;

    bool empty() const { return data == nullptr; }
    const uint8_t* row(int64_t r) const { return data + static_cast<uint64_t>(r) * row_bytes; }
};

// Reusable buffers so the forward pass does not allocate per operation.
struct MatmulScratch {
    struct Task {
        int m;
        int64_t p0, p1, g0, g1;
    };
    std::vector<uint8_t> activations;
    std::vector<float> rounded;  // one row per thread: an activation row rounded to f16 / bf16
    std::vector<Task> tasks;
    // matmul_batch (compute/matmul_batch.h): each distinct input's packed activations
    // and the first flat group index of each.
    std::vector<ActPack> packs;
    std::vector<int64_t> pack_group0;
    std::vector<int> job_pack;
    // If set, called with each product's matrix and input rows before matmul,
    // matmul_many and matmul_batch compute it (the imatrix's activation sums).
    std::function<void(const Matrix& w, const float* x, int64_t n_tokens)> observe;
    // Per thread: the panels a task repacks from a matrix read in place (one not
    // repacked at load) as a matrix of their rows, and its buffer's capacity.
    struct PanelBuffer {
        PackedMatrix panels;
        uint64_t capacity = 0;
    };
    std::vector<PanelBuffer> in_place;
};

// Whether matmul supports `type` directly (others are converted at load).
bool matmul_supports(GgmlType type);

// Repacks the matrices whose type the active kernels take in packed form (in
// parallel; once per model at load). Returns the bytes of repacked weights.
//
// With release_file_pages, the pages of each repacked matrix's original bytes are
// dropped from the process's resident set, so resident memory stays about the
// file size. Only for bytes in a read-only file mapping (they come back from the
// page cache if read again); anonymous memory would be zeroed.
uint64_t prepare_matrices(std::span<Matrix* const> matrices, bool release_file_pages = false);

// What prepare_matrices would repack, without doing it (the memory plan): the
// packed bytes it allocates, and the source bytes of each distinct matrix.
struct PackPlan {
    uint64_t packed_bytes = 0;
    uint64_t source_bytes = 0;      // summed over the distinct matrices repacked
    uint64_t largest_source = 0;    // the most source bytes of one matrix
    std::vector<const uint8_t*> sources;  // each repacked matrix's bytes (identity)
};
PackPlan plan_prepare_matrices(std::span<Matrix* const> matrices);


void matmul(const Matrix& w, const float* x, int64_t n_tokens, float* y, const ThreadPool& pool, MatmulScratch& scratch);
// The same with a given kernel table (tests, benchmarks).
void matmul_with(const KernelTable& k, const Matrix& w, const float* x, int64_t n_tokens, float* y, const ThreadPool& pool,
                 MatmulScratch& scratch);

// Several matrices that read the same input (q / k / v, gate / up): ys[i] = ws[i] x.
// Bit-identical to separate matmul calls; when they share a packed type, the
// input is converted once and all run in one parallel region (fewer waits).
void matmul_many(std::span<const Matrix* const> ws, const float* x, int64_t n_tokens, std::span<float* const> ys, const ThreadPool& pool,
                 MatmulScratch& scratch);

// Row r of w as f32 (embedding lookup); from w.rows_fd where set. A failed read
// is an error naming the row.
void matrix_row_f32(const Matrix& w, int64_t r, float* out);

}  // namespace kiln
