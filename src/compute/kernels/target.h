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
#else
#define KILN_HAVE_X86_KERNELS 0
#endif
