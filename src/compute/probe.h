// Measures this machine's ceilings, so benchmarks can say how far from the
// physical limit a figure is: main-memory read bandwidth (several streams per
// thread over a buffer far larger than the caches) and int8 multiply-add
// throughput (the best dot-product instruction the CPU has, from registers).
#pragma once

#include <cstdint>

namespace kiln {

class Model;

struct MachineProbe {
    double read_bandwidth = 0;  // bytes / s
    double int8_ops = 0;        // multiply-adds counted as 2 operations / s
    const char* int8_kind = "";
};

MachineProbe probe_machine(int n_threads);

// Bytes of weights a decode step reads (every matrix once; the embedding lookup
// reads one row, so it counts only when it is also the output head).
uint64_t model_weight_bytes(const Model& model);
// Weights that take part in a token's matrix products.
uint64_t model_params(const Model& model);

}  // namespace kiln
