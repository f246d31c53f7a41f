// AMX tiles for the AVX-512 prefill kernels on CPUs with AMX-INT8 (Sapphire
// Rapids and later): eight tile registers of up to 16 rows x 64 bytes, shaped by a
// tile configuration, and a matrix-multiply unit that adds int8 x int8 dot products
// of 4 bytes into int32 cells (tdpbssd). A panel block's chunks (layout.h:
// chunk c, lane i = elements 4c .. 4c + 3 of row i) are exactly the B operand of a
// tile product, so C = A (tokens x elements) x B (elements x 16 rows) gives, row t
// of C, the 16 integer sums the vpdpbusd kernels build in one register for token t:
// the same integers, after which the float steps are the VNNI kernels' own.
//
// The tile instructions are written as inline assembly: GCC's intrinsics take the
// tile number as a macro argument, and their loads declare no memory operand, so
// the compiler could move the stores of a decoded block past the load that reads it.
// (Assembly needs no target attribute: the functions that use these are the
// AVX-512 kernels', run only where cpu_features().amx_int8 says so.)
#pragma once

#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <cstdint>

#include "compute/kernels/layout.h"

namespace kiln::amx_tiles {

// The 64-byte operand of ldtilecfg (palette 1: 8 tiles of at most 16 rows x 64 bytes).
struct TileConfig {
    uint8_t palette = 1;
    uint8_t start_row = 0;
    uint8_t reserved[14] = {};
    uint16_t colsb[16] = {};  // bytes per row of tile i
    uint8_t rows[16] = {};

    constexpr TileConfig& tile(int i, int n_rows, int row_bytes) {
        rows[i] = static_cast<uint8_t>(n_rows);
        colsb[i] = static_cast<uint16_t>(row_bytes);
        return *this;
    }
};
static_assert(sizeof(TileConfig) == 64);

// Shapes every tile until release(); per thread.
inline void configure(const TileConfig& c) { __asm__ volatile("ldtilecfg %0" ::"m"(c)); }
// Gives the tile state back (the OS then saves none of it on a context switch).
inline void release() { __asm__ volatile("tilerelease" ::: "memory"); }

template <int Tile>
inline void load(const void* p, int64_t stride) {
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm%c2" ::"r"(p), "r"(stride), "i"(Tile) : "memory");
}
template <int Tile>
inline void store(void* p, int64_t stride) {
    __asm__ volatile("tilestored %%tmm%c2, (%0,%1,1)" ::"r"(p), "r"(stride), "i"(Tile) : "memory");
}
template <int Tile>
inline void zero() {
    __asm__ volatile("tilezero %%tmm%c0" ::"i"(Tile));
}
// C += A x B, the bytes of both signed (tdpbssd).
template <int C, int A, int B>
inline void dot_signed() {
    __asm__ volatile("tdpbssd %%tmm%c2, %%tmm%c1, %%tmm%c0" ::"i"(C), "i"(A), "i"(B));
}

// This thread's scratch of at least n bytes, 64-byte aligned (a panel's decoded
// blocks); kept for the thread's next products.
inline uint8_t* scratch(uint64_t n) {
    thread_local AlignedBytes buf;
    thread_local uint64_t size = 0;
    if (n > size) {
        buf = aligned_bytes(n);
        size = n;
    }
    return buf.get();
}

}  // namespace kiln::amx_tiles

#endif  // KILN_HAVE_X86_KERNELS
