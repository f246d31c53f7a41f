// What this machine can do: the kernel level the CPU runs and its measured
// ceilings, so benchmarks can say how far from the physical limit a figure is.
#pragma once

#include <string>

namespace kiln {

// The kernel table in use ("avx512-vnni", "avx2", "scalar", ...; KILN_ISA lowers it).
std::string kernel_level();

struct MachineProbe {
    double read_bandwidth = 0;  // main-memory read, bytes / s (several streams per thread)
    double int8_ops = 0;        // int8 multiply-adds counted as 2 operations / s
    const char* int8_kind = "";
    double f32_flops = 0;       // fused multiply-adds counted as 2 operations / s
    double bf16_flops = 0;      // BF16 dot-product multiply-adds, 2 operations each / s (0: not used)
};

// Measures the ceilings over n_threads threads (about a second).
MachineProbe probe_machine(int n_threads);

}  // namespace kiln
