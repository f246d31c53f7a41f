// Many independent matrix products in one parallel region: an expert layer's
// products, each selected expert's matrix times the rows of the tokens routed to
// it (model/moe.cpp). One call converts every distinct input once and spreads
// all the products' panels over the threads, so a decode step over k experts
// waits on the pool twice per layer (gate / up, then down), not 3 k times.
//
// Each output element is computed exactly as matmul computes it (the kernels'
// accumulation order does not depend on the tokens that share a call), so the
// results are bit-identical to one matmul per job.
#pragma once

#include <cstdint>
#include <span>

#include "compute/matmul.h"

namespace kiln {

struct MatmulJob {
    const Matrix* w = nullptr;
    const float* x = nullptr;  // f32 [w->n_in, n_tokens]; jobs may share it (gate and up of one expert)
    int64_t n_tokens = 0;
    float* y = nullptr;        // f32 [w->n_out, n_tokens]
};

void matmul_batch(std::span<const MatmulJob> jobs, const ThreadPool& pool, MatmulScratch& scratch);
// The same with a given kernel table (tests).
void matmul_batch_with(const KernelTable& k, std::span<const MatmulJob> jobs, const ThreadPool& pool, MatmulScratch& scratch);

}  // namespace kiln
