// What the CPU can run, read once, and the instruction-set levels kiln has
// kernels for. The dispatch table (compute/kernels/kernels.h) is chosen from
// these at start-up; the binary itself is built for baseline x86-64.
#pragma once

#include <string_view>

namespace kiln {

struct CpuFeatures {
    bool avx2 = false, fma = false, f16c = false, bmi2 = false;
    bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
    bool avx512vnni = false, avx512bf16 = false, avx512vbmi = false, avx_vnni = false;
    // AMX tiles with the int8 dot products, saved by the OS (XCR0) and granted to this
    // process (Linux asks each process to request the tile data state first).
    bool amx_int8 = false;
};

const CpuFeatures& cpu_features();

// Kernel levels, lowest first. Avx2 needs AVX2 + FMA + F16C; Avx512 needs
// AVX-512 F / BW / VL / DQ / VNNI as well.
enum class Isa { Scalar, Avx2, Avx512 };

std::string_view isa_name(Isa isa);
// The best level this CPU supports.
Isa best_isa();
// Whether the CPU can run kernels of this level.
bool isa_supported(Isa isa);

}  // namespace kiln
