// Measures this machine's ceilings, so benchmarks can say how far from the
// physical limit a figure is: main-memory read bandwidth (several streams per
// thread over a buffer far larger than the caches), int8 multiply-add throughput
// (the best dot-product instruction the CPU has, from registers), f32 fused
// multiply-add throughput and, where the kernels use it, the BF16 dot product's.
#pragma once

#include <cstdint>

namespace kiln {

class Model;

struct MachineProbe {
    double read_bandwidth = 0;  // bytes / s
    double int8_ops = 0;        // multiply-adds counted as 2 operations / s
    const char* int8_kind = "";
    double f32_flops = 0;       // fused multiply-adds counted as 2 operations / s
    double bf16_flops = 0;      // BF16 dot-product multiply-adds, 2 operations each / s (0: not used)
};

MachineProbe probe_machine(int n_threads);

// Bytes of weights a decode step reads (every matrix once; the embedding lookup
// reads one row, so it counts only when it is also the output head).
uint64_t model_weight_bytes(const Model& model);
// Weights that take part in a prompt token's matrix products (the layers; the
// output head runs for the last prompt row only).
uint64_t model_layer_params(const Model& model);
// Whether the layers' matrices are float (F32 / F16 / BF16: prefill is bound by
// f32 multiply-adds) rather than quantized (bound by int8 dot products).
bool model_float_weights(const Model& model);
// Whether they are BF16 (bound by the BF16 dot product where the kernels run it).
bool model_bf16_weights(const Model& model);

}  // namespace kiln
