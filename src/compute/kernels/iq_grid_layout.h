// Panel layouts of the grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S,
// IQ1_S, IQ1_M), shared by the packer and the kernels (layout.h has the others).
//
// A panel block is 16 rows of one 256-element block: d[16] f16 first (IQ1_M: the
// f16 its scale words' top nibbles spell), then the file's own fields with each
// one's 16 rows side by side (row i at byte i of a u8 field, bytes 2i / 4i of u16 /
// u32 ones), grouped per sub-block of 32 so one sub-block's fields share lines.
// Nothing is decoded ahead: the packed block is the file's 16 blocks' size (IQ1_M
// + 2 bytes per row for the separate d), which is what keeps the low-bit files
// small in memory. Offsets in bytes from the block's start; ib is the sub-block
// (0..7), l a group of 8 elements (0..3), k a grid row of 4 (IQ3: 0..7).
#pragma once

#include <cstdint>

#include "kiln/gguf/ggml_type.h"

namespace kiln {

struct IqGridLayout {
    // IQ2_XXS: per ib 4 index bytes [4][16], the u32 of signs and scale [16].
    static constexpr int iq2xxs_idx(int ib, int l) { return 32 + 128 * ib + 16 * l; }
    static constexpr int iq2xxs_aux(int ib) { return 32 + 128 * ib + 64; }
    // IQ2_XS: per ib the u16 index + sign words [4][16]; the scale bytes [8][16] after.
    static constexpr int iq2xs_q(int ib, int l) { return 32 + 128 * ib + 32 * l; }
    static constexpr int iq2xs_scales(int ib) { return 1056 + 16 * ib; }
    // IQ2_S: per ib index low bytes [4][16], sign bytes [4][16], qh [16]; scales after.
    static constexpr int iq2s_qs(int ib, int l) { return 32 + 144 * ib + 16 * l; }
    static constexpr int iq2s_signs(int ib, int l) { return 32 + 144 * ib + 64 + 16 * l; }
    static constexpr int iq2s_qh(int ib) { return 32 + 144 * ib + 128; }
    static constexpr int iq2s_scales(int ib) { return 1184 + 16 * ib; }
    // IQ3_XXS: per ib index bytes [8][16], the u32 of signs and scale [16].
    static constexpr int iq3xxs_qs(int ib, int k) { return 32 + 192 * ib + 16 * k; }
    static constexpr int iq3xxs_aux(int ib) { return 32 + 192 * ib + 128; }
    // IQ3_S: per ib index low bytes [8][16], qh [16], sign bytes [4][16]; the scale
    // bytes (two sub-blocks each) [4][16] after.
    static constexpr int iq3s_qs(int ib, int k) { return 32 + 208 * ib + 16 * k; }
    static constexpr int iq3s_qh(int ib) { return 32 + 208 * ib + 128; }
    static constexpr int iq3s_signs(int ib, int l) { return 32 + 208 * ib + 144 + 16 * l; }
    static constexpr int iq3s_scales(int j) { return 1696 + 16 * j; }
    // IQ1_S: per ib index low bytes [4][16], the u16 qh [16].
    static constexpr int iq1s_qs(int ib, int l) { return 32 + 96 * ib + 16 * l; }
    static constexpr int iq1s_qh(int ib) { return 32 + 96 * ib + 64; }
    // IQ1_M: per ib index low bytes [4][16], qh bytes [2][16]; the u16 scale words [4][16] after.
    static constexpr int iq1m_qs(int ib, int l) { return 32 + 96 * ib + 16 * l; }
    static constexpr int iq1m_qh(int ib, int j) { return 32 + 96 * ib + 64 + 16 * j; }
    static constexpr int iq1m_scales(int j) { return 800 + 32 * j; }
};

// Prefill's decoded form of one panel block: what a kernel makes of it once, in a
// per-thread scratch, before every token group of the batch reads it (the grid
// lookups are the costly part of these kernels, and a panel meets every group of
// a prefill). Never stored in a panel, so the weights stay in their size.
//   levels  u8 chunks [8 ib][4 l][2][16 rows][4]: chunk (ib, l, j) lane i = the
//           levels plus the format's offset of elements 32 ib + 8 l + 4 j .. + 3 of
//           row i (the operand of vpdpbusd / vpmaddubsw; AVX2 takes rows 8h.. at
//           byte 32h of each chunk)
//   scales  i32 [8 ib][parts][16]: each row's integer scale of sub-block ib (parts
//           2: of its halves of 16 elements, IQ2_XS, IQ2_S, IQ1_M)
//   d       f16 [16], as in the panel (and 32 bytes of padding)
// (AVX2 stores the scales as (s, s) int16 pairs and appends the offset terms:
// decode_block in avx2_iq_grid.cpp.)
struct IqDecoded {
    static constexpr int levels(int ib, int l) { return 128 * (4 * ib + l); }
    static constexpr int scales(int ib, int part, int parts) { return 4096 + 64 * (parts * ib + part); }
    static constexpr int d(int parts) { return 4096 + 512 * parts; }
    static constexpr int bytes(int parts) { return 4096 + 512 * parts + 64; }
    // Blocks decoded at a time (37-41 KB, a per-thread stack buffer): they stay in
    // L1 / L2 while every token group of the batch reads them; 4 and 16 measured
    // slower (docs/perf.md).
    static constexpr int k_blocks = 8;
};

// Packed block bytes (16 rows).
constexpr uint64_t iq_grid_block_bytes(GgmlType t) {
    switch (t) {
        case GgmlType::IQ2_XXS: return 1056;
        case GgmlType::IQ2_XS: return 1184;
        case GgmlType::IQ2_S: return 1312;
        case GgmlType::IQ3_XXS: return 1568;
        case GgmlType::IQ3_S: return 1760;
        case GgmlType::IQ1_S: return 800;
        case GgmlType::IQ1_M: return 928;
        default: return 0;
    }
}

// The power of two the row's sum of block terms is multiplied by (as the scalar
// reference, quant/iq_quants.cpp).
constexpr float iq_grid_factor(GgmlType t) {
    switch (t) {
        case GgmlType::IQ3_XXS: return 0.25f;
        case GgmlType::IQ3_S: return 1.0f;
        default: return 0.125f;
    }
}

}  // namespace kiln
