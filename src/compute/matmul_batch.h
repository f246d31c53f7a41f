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

// One token through several experts' gate / up -> activation -> down chains in
// one parallel region, a task per expert, so a decode step waits on the pool
// once per expert layer for them instead of twice. `activate(c)` turns chain c's
// gate_out (and up_out) into the down product's input, in gate_out. Every product
// is computed as matmul_batch computes it (the same activation conversion, the
// same kernels), so the results are bit-identical. Returns false, computing
// nothing, where the chains do not suit it (matrices not packed or not of one
// quantized type per role, too few chains to keep the threads busy, an observer
// set): the caller then runs matmul_batch for gate / up and for down.
struct ExpertChain {
    const Matrix* gate = nullptr;  // nullptr: ungated (up writes gate_out)
    const Matrix* up = nullptr;
    const Matrix* down = nullptr;
    float* gate_out = nullptr;  // [n_ff]
    float* up_out = nullptr;    // [n_ff] (gated chains)
    float* down_out = nullptr;  // [n_embd]
};
bool matmul_expert_chains(std::span<const ExpertChain> chains, const float* x, const std::function<void(size_t chain)>& activate,
                          const ThreadPool& pool, MatmulScratch& scratch);
// The same with a given kernel table (tests).
void matmul_batch_with(const KernelTable& k, std::span<const MatmulJob> jobs, const ThreadPool& pool, MatmulScratch& scratch);

}  // namespace kiln
