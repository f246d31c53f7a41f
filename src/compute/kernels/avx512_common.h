// Helpers shared by the AVX-512 quantized-product files (all inline, all
// AVX-512-targeted), as avx2_common.h is for AVX2.
#pragma once

#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include "compute/kernels/avx512_intrinsics.h"

#include <cstdint>
#include <cstring>

namespace kiln::avx512 {

KILN_TARGET_AVX512 inline __m512i bcast_i32(const uint8_t* p) {
    int32_t v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

KILN_TARGET_AVX512 inline __m512 bcast_f32(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, 4);
    return _mm512_set1_ps(v);
}

KILN_TARGET_AVX512 inline __m512 load_f16x16(const uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

KILN_TARGET_AVX512 inline __mmask64 load_mask64(const uint8_t* p) {
    uint64_t m;
    std::memcpy(&m, p, 8);
    return _cvtu64_mask64(m);
}

// load_mask64 through a general register, for the decode of the 32-element
// formats with fifth bits (Q5_0, Q5_1): there the mask register loaded straight
// from memory (kmovq k, m64, what the compiler makes of load_mask64) ran two
// threads at half of one thread's speed (bench_matmul 8192 x 16384, Zen 5: 20-25
// against 34-42 GB/s; through a register 57-81). The assembly keeps the compiler
// from folding the two instructions back into one. Prefill, and the Q5_K decode,
// which showed no such loss, keep load_mask64 (prefill ~5% faster with it).
KILN_TARGET_AVX512 inline __mmask64 load_mask64_via_gpr(const uint8_t* p) {
    uint64_t m;
    __asm__("movq %1, %0" : "=r"(m) : "m"(*reinterpret_cast<const uint64_t*>(p)));
    return _cvtu64_mask64(m);
}

}  // namespace kiln::avx512

#endif  // KILN_HAVE_X86_KERNELS
