#include "compute/cpu_features.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <cstdint>

namespace kiln {

namespace {

// CPUID leaf 7 / leaf 1 bits, read directly: compilers disagree on the feature
// names __builtin_cpu_supports accepts (clang 14 knows neither "f16c" nor "avxvnni").
// XGETBV confirms that the OS saves the YMM / ZMM state before wide kernels are used.
CpuFeatures detect() {
    CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = c & (1u << 27);
    const bool has_fma = c & (1u << 12), has_f16c = c & (1u << 29), has_avx = c & (1u << 28);
    uint64_t xcr0 = 0;
    if (osxsave) {
        uint32_t lo = 0, hi = 0;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
    }
    const bool ymm_state = (xcr0 & 0x6) == 0x6;     // SSE and AVX state
    const bool zmm_state = (xcr0 & 0xE6) == 0xE6;   // plus opmask and ZMM state
    unsigned b7 = 0, c7 = 0, d7 = 0, a7 = 0, a71 = 0, b71 = 0, c71 = 0, d71 = 0;
    __get_cpuid_count(7, 0, &a7, &b7, &c7, &d7);
    __get_cpuid_count(7, 1, &a71, &b71, &c71, &d71);
    const bool avx_ok = has_avx && ymm_state;
    f.avx2 = avx_ok && (b7 & (1u << 5));
    f.fma = avx_ok && has_fma;
    f.f16c = avx_ok && has_f16c;
    f.bmi2 = b7 & (1u << 8);
    const bool z = avx_ok && zmm_state;
    f.avx512f = z && (b7 & (1u << 16));
    f.avx512dq = z && (b7 & (1u << 17));
    f.avx512bw = z && (b7 & (1u << 30));
    f.avx512vl = z && (b7 & (1u << 31));
    f.avx512vbmi = z && (c7 & (1u << 1));
    f.avx512vnni = z && (c7 & (1u << 11));
    f.avx512bf16 = z && (a71 & (1u << 5));
    f.avx_vnni = avx_ok && (a71 & (1u << 4));
#endif
    return f;
}

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = detect();
    return f;
}

std::string_view isa_name(Isa isa) {
    switch (isa) {
        case Isa::Scalar: return "scalar";
        case Isa::Avx2: return "avx2";
        case Isa::Avx512: return "avx512";
    }
    return "?";
}

bool isa_supported(Isa isa) {
    const CpuFeatures& f = cpu_features();
    const bool avx2 = f.avx2 && f.fma && f.f16c;
    switch (isa) {
        case Isa::Scalar: return true;
        case Isa::Avx2: return avx2;
        case Isa::Avx512: return avx2 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq && f.avx512vnni;
    }
    return false;
}

Isa best_isa() {
    if (isa_supported(Isa::Avx512)) return Isa::Avx512;
    if (isa_supported(Isa::Avx2)) return Isa::Avx2;
    return Isa::Scalar;
}

}  // namespace kiln
