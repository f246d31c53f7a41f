// <immintrin.h> for the files that use AVX-512 intrinsics. GCC 12's AVX-512
// headers trip -Wuninitialized and -Wmaybe-uninitialized on their own placeholder
// values, reported in the including file (where the intrinsics are expanded), so
// both warnings are off from this include to the end of that file.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
