// Block layouts of the ggml quantization formats, byte for byte as GGUF stores them.
//
// Every field is a byte array, so a block has alignment 1 and may sit at any
// address (rows of 18-, 17- or 110-byte blocks put blocks at odd or unaligned
// offsets inside a memory-mapped file). Multi-byte fields are little-endian and
// are read and written through the helpers below, never through casts.
//
// Sizes are checked against ggml's type_size (tools/quant_fixtures.py asserts
// the same numbers for the shared library it uses as an oracle). docs/quant.md
// has a table per type.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

#include "kiln/quant.h"

namespace kiln::quant {

static_assert(std::endian::native == std::endian::little, "kiln's kernels assume a little-endian host");

inline uint16_t load_u16(const uint8_t* p) {
    uint16_t v;
    std::memcpy(&v, p, 2);
    return v;
}
inline uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}
inline float load_f32(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
}
inline float load_f16(const uint8_t* p) { return fp16_to_fp32(load_u16(p)); }
inline void store_u16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }
inline void store_u32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
inline void store_f32(uint8_t* p, float v) { std::memcpy(p, &v, 4); }
inline void store_f16(uint8_t* p, float v) { store_u16(p, fp32_to_fp16(v)); }

// A row's bytes as an array of blocks (the block types have alignment 1).
template <typename Block>
const Block* blocks_of(const void* p) {
    return static_cast<const Block*>(p);
}
template <typename Block>
Block* blocks_of(void* p) {
    return static_cast<Block*>(p);
}

constexpr int k_qk = 32;    // elements per block of the legacy formats
constexpr int k_qk_k = 256; // elements per super-block of the k- and i-quants

// ---- legacy formats: 32 elements, one f16 scale (and min) -----------------

// Q4_0: x = d * (q - 8); q in the low nibbles for elements 0..15, high nibbles for 16..31.
struct BlockQ4_0 {
    uint8_t d[2];
    uint8_t qs[k_qk / 2];
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_1: x = d * q + m.
struct BlockQ4_1 {
    uint8_t d[2];
    uint8_t m[2];
    uint8_t qs[k_qk / 2];
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0: x = d * (q - 16); the fifth bit of element j is bit j of the u32 qh.
struct BlockQ5_0 {
    uint8_t d[2];
    uint8_t qh[4];
    uint8_t qs[k_qk / 2];
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1: x = d * q + m.
struct BlockQ5_1 {
    uint8_t d[2];
    uint8_t m[2];
    uint8_t qh[4];
    uint8_t qs[k_qk / 2];
};
static_assert(sizeof(BlockQ5_1) == 24);

// Q8_0: x = d * q.
struct BlockQ8_0 {
    uint8_t d[2];
    int8_t qs[k_qk];
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q8_1: x = d * q; s = d * sum(q) (as f16), used by the Q4_1 / Q5_1 dot products.
struct BlockQ8_1 {
    uint8_t d[2];
    uint8_t s[2];
    int8_t qs[k_qk];
};
static_assert(sizeof(BlockQ8_1) == 36);

// Q1_0: 128 elements, x = +d where the bit is set, -d where it is clear.
constexpr int k_qk1_0 = 128;
struct BlockQ1_0 {
    uint8_t d[2];
    uint8_t qs[k_qk1_0 / 8];
};
static_assert(sizeof(BlockQ1_0) == 18);

// ---- k-quants: 256-element super-blocks of 16 or 8 sub-blocks ---------------

// Q2_K: 16 sub-blocks of 16; x = d * (scales[j] & 15) * q - dmin * (scales[j] >> 4).
struct BlockQ2_K {
    uint8_t scales[k_qk_k / 16];
    uint8_t qs[k_qk_k / 4];
    uint8_t d[2];
    uint8_t dmin[2];
};
static_assert(sizeof(BlockQ2_K) == 84);

// Q3_K: 16 sub-blocks of 16, 6-bit signed scales (packed in 12 bytes);
// x = d * (scale - 32) * (q2 - (hmask bit ? 0 : 4)).
struct BlockQ3_K {
    uint8_t hmask[k_qk_k / 8];
    uint8_t qs[k_qk_k / 4];
    uint8_t scales[12];
    uint8_t d[2];
};
static_assert(sizeof(BlockQ3_K) == 110);

// Q4_K: 8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes;
// x = d * scale * q - dmin * min.
struct BlockQ4_K {
    uint8_t d[2];
    uint8_t dmin[2];
    uint8_t scales[12];
    uint8_t qs[k_qk_k / 2];
};
static_assert(sizeof(BlockQ4_K) == 144);

// Q5_K: as Q4_K plus a fifth bit per element in qh.
struct BlockQ5_K {
    uint8_t d[2];
    uint8_t dmin[2];
    uint8_t scales[12];
    uint8_t qh[k_qk_k / 8];
    uint8_t qs[k_qk_k / 2];
};
static_assert(sizeof(BlockQ5_K) == 176);

// Q6_K: 16 sub-blocks of 16 with int8 scales; x = d * scale * (q - 32), q 6 bits.
struct BlockQ6_K {
    uint8_t ql[k_qk_k / 2];
    uint8_t qh[k_qk_k / 4];
    int8_t scales[k_qk_k / 16];
    uint8_t d[2];
};
static_assert(sizeof(BlockQ6_K) == 210);

// Q8_K: activations of the k-quant dot products; f32 scale, bsums[j] = sum of qs[16j..16j+15].
struct BlockQ8_K {
    uint8_t d[4];
    int8_t qs[k_qk_k];
    uint8_t bsums[k_qk_k / 16 * 2];  // int16 each
};
static_assert(sizeof(BlockQ8_K) == 292);

// ---- i-quants ----------------------------------------------------------------

struct BlockIQ2_XXS {
    uint8_t d[2];
    uint8_t qs[k_qk_k / 8 * 2];  // 32 u16: per 32 elements, 4 grid indices (u8) then a u32 of signs + scale
};
static_assert(sizeof(BlockIQ2_XXS) == 66);

struct BlockIQ2_XS {
    uint8_t d[2];
    uint8_t qs[k_qk_k / 8 * 2];  // 32 u16: 9-bit grid index + 7-bit sign index
    uint8_t scales[k_qk_k / 32];
};
static_assert(sizeof(BlockIQ2_XS) == 74);

struct BlockIQ2_S {
    uint8_t d[2];
    uint8_t qs[k_qk_k / 8];      // low 8 bits of the grid indices
    uint8_t signs[k_qk_k / 8];
    uint8_t qh[k_qk_k / 32];     // 2 high bits per grid index
    uint8_t scales[k_qk_k / 32];
};
static_assert(sizeof(BlockIQ2_S) == 82);

struct BlockIQ3_XXS {
    uint8_t d[2];
    uint8_t qs[k_qk_k / 4];            // grid indices
    uint8_t scales_signs[k_qk_k / 8];  // 8 u32: 4 x 7-bit sign indices + 4-bit scale
};
static_assert(sizeof(BlockIQ3_XXS) == 98);

struct BlockIQ3_S {
    uint8_t d[2];
    uint8_t qs[k_qk_k / 4];
    uint8_t qh[k_qk_k / 32];
    uint8_t signs[k_qk_k / 8];
    uint8_t scales[k_qk_k / 64];
};
static_assert(sizeof(BlockIQ3_S) == 110);

struct BlockIQ1_S {
    uint8_t d[2];
    uint8_t qs[k_qk_k / 8];
    uint8_t qh[k_qk_k / 32 * 2];  // 8 u16: 3 high index bits x 4, 3-bit scale, delta sign
};
static_assert(sizeof(BlockIQ1_S) == 50);

struct BlockIQ1_M {
    uint8_t qs[k_qk_k / 8];
    uint8_t qh[k_qk_k / 16];
    uint8_t scales[k_qk_k / 32];  // 4 u16: 3-bit scales x 4, the f16 super-scale in the top nibbles
};
static_assert(sizeof(BlockIQ1_M) == 56);

constexpr int k_qk4_nl = 32;
struct BlockIQ4_NL {
    uint8_t d[2];
    uint8_t qs[k_qk4_nl / 2];
};
static_assert(sizeof(BlockIQ4_NL) == 18);

struct BlockIQ4_XS {
    uint8_t d[2];
    uint8_t scales_h[2];
    uint8_t scales_l[k_qk_k / 64];
    uint8_t qs[k_qk_k / 2];
};
static_assert(sizeof(BlockIQ4_XS) == 136);

// ---- ternary and 4-bit float formats ------------------------------------------

// TQ1_0: base-3 digits, 5 per byte (qs) and 4 per byte (qh); x = d * (digit - 1).
struct BlockTQ1_0 {
    uint8_t qs[(k_qk_k - 4 * k_qk_k / 64) / 5];
    uint8_t qh[k_qk_k / 64];
    uint8_t d[2];
};
static_assert(sizeof(BlockTQ1_0) == 54);

// TQ2_0: 2 bits per element; x = d * (q - 1).
struct BlockTQ2_0 {
    uint8_t qs[k_qk_k / 4];
    uint8_t d[2];
};
static_assert(sizeof(BlockTQ2_0) == 66);

// MXFP4: E8M0 shared exponent, E2M1 elements.
constexpr int k_qk_mxfp4 = 32;
struct BlockMXFP4 {
    uint8_t e;
    uint8_t qs[k_qk_mxfp4 / 2];
};
static_assert(sizeof(BlockMXFP4) == 17);

// NVFP4: 64 elements as four sub-blocks of 16, each with an unsigned E4M3 scale.
constexpr int k_qk_nvfp4 = 64;
constexpr int k_qk_nvfp4_sub = 16;
struct BlockNVFP4 {
    uint8_t d[k_qk_nvfp4 / k_qk_nvfp4_sub];
    uint8_t qs[k_qk_nvfp4 / 2];
};
static_assert(sizeof(BlockNVFP4) == 36);

}  // namespace kiln::quant
