#include "compute/cpu_features.h"

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace kiln {

namespace {

#if defined(__x86_64__) || defined(__i386__)
// Linux hands the AMX tile data state (8 KB per thread) only to a process that
// asks for it (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA, 18);
// without it the first tile instruction faults.
bool amx_permitted() {
#if defined(__linux__) && defined(__x86_64__)
    constexpr long k_req_xcomp_perm = 0x1023, k_xfeature_xtiledata = 18;
    return syscall(SYS_arch_prctl, k_req_xcomp_perm, k_xfeature_xtiledata) == 0;
#else
    return false;
#endif
}

// CPUID and XGETBV directly (compilers disagree on which names
// __builtin_cpu_supports knows). A feature counts only if the OS also saves the
// registers it uses (XCR0).
CpuFeatures detect() {
    CpuFeatures f;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = (c >> 27) & 1, avx = (c >> 28) & 1;
    const bool fma = (c >> 12) & 1, f16c = (c >> 29) & 1;
    uint64_t xcr0 = 0;
    if (osxsave) {
        unsigned lo = 0, hi = 0;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = (static_cast<uint64_t>(hi) << 32) | lo;
    }
    const bool ymm = avx && (xcr0 & 0x6) == 0x6;      // SSE + AVX state
    const bool zmm = ymm && (xcr0 & 0xE0) == 0xE0;    // opmask + upper ZMM state
    unsigned b7 = 0, c7 = 0, d7 = 0, a71 = 0;
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        b7 = b;
        c7 = c;
        d7 = d;
        if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) a71 = a;
    }
    f.fma = ymm && fma;
    f.f16c = ymm && f16c;
    f.avx2 = ymm && ((b7 >> 5) & 1);
    f.bmi2 = (b7 >> 8) & 1;
    f.avx_vnni = ymm && ((a71 >> 4) & 1);
#if defined(KILN_EMULATE_AVX_VNNI)
    f.avx_vnni = f.avx2;  // a test build: vpdpbusd emulated (avx2_common.h)
#endif
    f.avx512f = zmm && ((b7 >> 16) & 1);
    f.avx512dq = zmm && ((b7 >> 17) & 1);
    f.avx512bw = zmm && ((b7 >> 30) & 1);
    f.avx512vl = zmm && ((b7 >> 31) & 1);
    f.avx512vbmi = zmm && ((c7 >> 1) & 1);
    f.avx512vnni = zmm && ((c7 >> 11) & 1);
    f.avx512bf16 = zmm && ((a71 >> 5) & 1);
    const bool tiles = (xcr0 & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA state
    f.amx_int8 = zmm && tiles && ((d7 >> 24) & 1) && ((d7 >> 25) & 1) && amx_permitted();
    return f;
}
#else
CpuFeatures detect() { return {}; }
#endif

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
