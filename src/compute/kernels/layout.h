// Kernel-friendly layouts of weights (repacked once at load) and of activations
// (quantized once per matrix product), shared by the packer and every SIMD
// kernel family.
//
// Weights: 16 rows form a panel; a panel stores its rows' blocks interleaved, block
// by block, so that one 64-byte load gives "lane i = 4 consecutive elements of row
// i" (a *chunk*). A VNNI dot-product instruction then accumulates 16 rows at once
// against one broadcast group of 4 activation bytes, and every row's integer sum
// and float accumulator stays in its own lane: no horizontal reduction, and each
// output element goes through exactly the operations of the scalar reference
// (kiln/quant.h), whatever the number of tokens or threads.
//
// Panel block layouts (16 rows; all multi-byte fields little-endian; sizes are 16x
// the GGUF block except where noted):
//
//   Q4_0, IQ4_NL (32 elements)  d[16] f16 | 4 chunks of nibbles                 288
//        chunk c, lane i = bytes 4c..4c+3 of row i's qs: low nibbles are elements
//        4c..4c+3, high nibbles elements 16+4c..16+4c+3
//   Q4_1   d[16] f16 | m[16] f16 | 4 nibble chunks                              320
//   Q5_0   d[16] | 8 fifth-bit masks u64 | 4 nibble chunks                      352
//        mask 2c (low nibbles of chunk c) and 2c+1 (high): bit 4i+j = fifth bit of
//        that element of row i
//   Q5_1   d[16] | m[16] | 8 masks | 4 nibble chunks                            384
//   Q8_0   d[16] | 8 chunks of int8 (chunk c = elements 4c..4c+3)               544
//   Q4_K (256 elements)  d[16] f16 | dmin[16] f16 | sc[8][16] u8 | m[4][16][2] u8
//        | 4 pairs x 8 nibble chunks: pair p chunk c lane i = bytes 32p+4c.. of row
//        i's qs (low nibbles: sub-block 2p elements 4c..; high: sub-block 2p+1)  2368
//        (m is stored as pairs of sub-blocks so that a zero-extension to 16 bits
//        gives the int16 pairs of a 16-bit dot product)
//   Q5_K   as Q4_K, with 8x8 fifth-bit masks u64 (sub-block s, chunk c) before the
//        nibble chunks                                                        2880
//        (mask 8s + c, bit 4i + j = fifth bit of element 4c + j of sub-block s
//        of row i). The AVX-512 kernels read the masks as mask registers.
//   Q5_K, PanelLayout::BitPlanes (the AVX2 kernels): the same but the masks'
//        512 bytes hold bit planes, 4 pairs x 4 planes of 32 bytes: pair p plane
//        2e + h byte 4i + j, bit c = fifth bit of element 4c + j of sub-block
//        2p + e of row 8h + i, so that the byte of a plane is the byte of each
//        nibble chunk (half h) whose level it completes, and chunk c takes its
//        fifth bits with one shift and one AND                                2880
//   Q6_K   d[16] f16 | sc[8][16][2] s8 (pairs of sub-blocks) | 8 pairs of sub-blocks,
//        each N[4] nibble chunks then H[2] high-bit chunks                   3360
//        pair s, chunk k lane i byte j: N low nibble = element 32s+4k+j, high
//        nibble = element 32s+16+4k+j; H0 bits 2k..2k+1 = the two high bits of
//        element 32s+4k+j, H1 those of element 32s+16+4k+j
//
// Float weights (F32, F16, BF16): 32 rows form a panel, and the panel stores
// element k of its 32 rows together, element after element ([n_in][32] values in
// the file's encoding: 64 bytes per element for F16, 128 for F32). One 16-lane load
// is "lane i = element k of row i"; multiplied by one broadcast activation it
// advances 16 outputs' sums (kiln/quant.h: one sum per output, in element order)
// with no horizontal reduction. A panel's "block" is one element. BF16 panels store
// element pairs instead ([ceil(n_in / 2)][32] pairs of 4 bytes: element 2j in the
// low half, 2j + 1 in the high half, a missing last element zero), the operand of
// the BF16 dot-product instruction; their block is one pair.
//
// Activations: tokens in groups of 8; per group, block after block:
//   32-element blocks  qs[8][32] s8 | d[8] f32 | aux[8] (i32 bias or f32 s)     320
//   Q8_K blocks        qs[8][256] s8 | d[8] f32 | aux                            2080 + aux
// d is the activation block's scale as the scalar dot product reads it (the f16
// value for Q8_0 / Q8_1). The bias folds the offset of unsigned weight levels
// into the integer sum (e.g. Q4_0: sum (q - 8) a = sum q a - 8 sum a): the
// kernel starts its sum at -offset x sum(a).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "compute/huge_pages.h"
#include "kiln/gguf/ggml_type.h"

namespace kiln {

constexpr int k_panel_rows = 16;
constexpr int k_chunk_bytes = 64;
constexpr int k_act_group = 8;
constexpr int k_float_panel_rows = 32;
constexpr int k_float_block_tokens = 12;

// TQ1_0 panel blocks (packing.cpp): d[16] f16, then 13 chunks of the file's bytes
// (lane i = bytes 4c .. 4c + 3 of row i). Base-3 digit n of a byte is
// ((3^n byte mod 256) x 3) >> 8 (ggml's); chunk c's digit n holds elements
// tq1_element(c, n) .. + 3 of each lane's row.
constexpr int k_tq1_chunks = 13;
constexpr int tq1_digits(int c) { return c < 12 ? 5 : 4; }
constexpr int tq1_element(int c, int n) { return c < 8 ? 32 * n + 4 * c : c < 12 ? 160 + 16 * n + 4 * (c - 8) : 240 + 4 * n; }

// Which variant of a type's panel layout a kernel reads (KernelTable::panel_layout)
// and pack_matrix makes. Every type has the Standard one; Q5_K also BitPlanes
// (above), which its AVX2 kernels read: expanding u64 masks into bytes costs them
// about 4 more operations per 32 levels (docs/perf.md).
enum class PanelLayout : uint8_t { Standard, BitPlanes };
const char* panel_layout_name(PanelLayout layout);

using AlignedBytes = std::unique_ptr<uint8_t[], FreeDeleter>;
// 64-byte aligned, uninitialised; throws kiln::Error when out of memory.
AlignedBytes aligned_bytes(uint64_t n);

struct PackedMatrix {
    GgmlType type = GgmlType::F32;
    PanelLayout layout = PanelLayout::Standard;
    int64_t n_in = 0, n_out = 0;
    int64_t n_panels = 0;       // ceil(n_out / rows per panel: 16, float types 32); rows past n_out are zero
    int64_t n_blocks = 0;       // blocks per row (float types: n_in)
    uint64_t block_bytes = 0;   // one block of a panel's rows
    uint64_t panel_bytes = 0;   // n_blocks * block_bytes
    AlignedBytes data;

    const uint8_t* panel(int64_t p) const { return data.get() + static_cast<uint64_t>(p) * panel_bytes; }
    uint64_t bytes() const { return panel_bytes * static_cast<uint64_t>(n_panels); }
};

// How activations are laid out for a weight type's kernel.
enum class ActAux {
    Bias32,   // 32-element blocks, aux = -offset * sum(a) as i32
    Sum32,    // 32-element blocks (Q8_1), aux = s = f16(d * sum(a)) as f32
    KPairs,   // Q8_K, aux = sums of each 32-element sub-block as int16 [8 tokens][8]
    KSums16,  // Q8_K, aux = sums of each 16-element sub-block as int16 [8 tokens][16]
};

struct ActFormat {
    GgmlType act_type = GgmlType::Q8_0;  // the scalar dot product's activation type
    ActAux aux = ActAux::Bias32;
    int offset = 0;                      // weight level offset folded into the bias
    int block = 32;                      // elements per activation block
    uint64_t block_stride = 0;           // bytes per block of one group of 8 tokens
};

// The activation format of a packed weight type (block_stride filled in).
ActFormat act_format(GgmlType weight_type);

struct ActPack {
    ActFormat format;
    int64_t n_tokens = 0, n_blocks = 0;
    uint64_t group_bytes = 0;
    uint8_t* data = nullptr;

    uint8_t* group(int64_t g) { return data + static_cast<uint64_t>(g) * group_bytes; }
    const uint8_t* group(int64_t g) const { return data + static_cast<uint64_t>(g) * group_bytes; }
    int64_t n_groups() const { return (n_tokens + k_act_group - 1) / k_act_group; }
};

// Activations of float weights: rounded to the weight type (as the reference's
// conversion to its activation type), tokens in blocks of 12, `width` values per
// token (the weights' blocks per row: elements, BF16 element pairs) of
// `value_floats` floats each. Block b holds its n_b = min(12, n_tokens - 12 b)
// tokens value-major ([width][n_b] values: value k of every token together, the
// operand a tile broadcasts) from float 12 b width value_floats on. One token is
// its row as it is. A BF16 value is either one float whose bits are the pair's two
// bfloat16s (element 2j low, 2j + 1 high, as in the panels: the operand of the BF16
// dot-product instruction) or, for kernels that emulate that instruction, two
// floats: element 2j + 1 and element 2j as f32.
struct FloatActs {
    const float* data = nullptr;
    int64_t width = 0, n_tokens = 0;
    int value_floats = 1;

    int64_t n_blocks() const { return (n_tokens + k_float_block_tokens - 1) / k_float_block_tokens; }
    int block_tokens(int64_t b) const {
        return static_cast<int>(std::min<int64_t>(k_float_block_tokens, n_tokens - b * k_float_block_tokens));
    }
    const float* block(int64_t b) const { return data + b * k_float_block_tokens * width * value_floats; }
};

// Offsets inside one activation block of a group.
constexpr uint64_t act_qs_offset(int token, int block) { return static_cast<uint64_t>(token) * static_cast<uint64_t>(block); }
constexpr uint64_t act_d_offset(int block) { return static_cast<uint64_t>(k_act_group) * static_cast<uint64_t>(block); }
constexpr uint64_t act_aux_offset(int block) { return act_d_offset(block) + 4 * k_act_group; }

}  // namespace kiln
