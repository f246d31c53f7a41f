// Non-temporal copies: for data written once and read back much later, if at
// all (the delta net's per-row records, src/model/ssm_deferred.cpp). A plain
// store to a line that is not in cache first reads the line from memory (to own
// it); a non-temporal store of the whole line does not. x86-64 has them in its
// baseline (SSE2); elsewhere, a plain copy.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kiln {

// dst[0, n) = src[0, n): the whole 64-byte lines of dst streamed, its partial ones stored.
inline void stream_copy(float* dst, const float* src, size_t n) {
#if defined(__SSE2__)
    size_t i = 0;
    for (; i < n && reinterpret_cast<uintptr_t>(dst + i) % 64 != 0; ++i) dst[i] = src[i];
    for (; i + 16 <= n; i += 16)
        for (size_t v = 0; v < 16; v += 4) _mm_stream_ps(dst + i + v, _mm_loadu_ps(src + i + v));
    for (; i < n; ++i) dst[i] = src[i];
#else
    std::memcpy(dst, src, n * sizeof(float));
#endif
}

// Orders the streamed stores before what follows (another thread's reads after a hand-over).
inline void stream_fence() {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

}  // namespace kiln
