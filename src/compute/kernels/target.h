// Function-level instruction-set targets for the SIMD kernels. Each kernel file
// marks its functions with one of these instead of compiling the whole file with
// -m flags: inline functions of shared headers (the standard library's templates)
// then stay baseline code, so the linker can never pick an AVX-512 copy of one
// for code that runs on any x86-64.
#pragma once

#if defined(__x86_64__)
#define KILN_HAVE_X86_KERNELS 1
#define KILN_TARGET_AVX2 __attribute__((target("avx2,fma,f16c,bmi,bmi2,popcnt")))
#define KILN_TARGET_AVX512 \
    __attribute__((target("avx2,fma,f16c,bmi,bmi2,popcnt,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")))
// AVX-512 with AVX512_VBMI's byte permutes (vpermb, vpermi2b, vpmultishiftqb).
#define KILN_TARGET_AVX512VBMI \
    __attribute__((target("avx2,fma,f16c,bmi,bmi2,popcnt,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx512vbmi")))
#else
#define KILN_HAVE_X86_KERNELS 0
#endif

#if KILN_HAVE_X86_KERNELS
#include <xmmintrin.h>

#include <cstdint>

namespace kiln {

// Asks for the cache line at p into L1. A prefetch never faults, so p may lie past
// the end of the data (the block after a matrix's last one).
inline void prefetch_l1(const uint8_t* p) { _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0); }

// Asks for every line of the n bytes at p.
inline void prefetch_block(const uint8_t* p, uint64_t n) {
    for (uint64_t off = 0; off < n; off += 64) prefetch_l1(p + off);
}

}  // namespace kiln
#endif
