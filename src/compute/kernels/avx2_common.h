// Helpers shared by the AVX2 kernel files (all inline, all AVX2-targeted).
#pragma once

#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "compute/kernels/layout.h"

namespace kiln::avx2 {

KILN_TARGET_AVX2 inline uint32_t load_u32(const uint8_t* p) {
    uint32_t v;
    std::memcpy(&v, p, 4);
    return v;
}

KILN_TARGET_AVX2 inline __m256i bcast_i32(const uint8_t* p) { return _mm256_set1_epi32(static_cast<int32_t>(load_u32(p))); }

KILN_TARGET_AVX2 inline __m256 bcast_f32(const uint8_t* p) {
    float v;
    std::memcpy(&v, p, 4);
    return _mm256_set1_ps(v);
}

// AVX-VNNI's vpdpbusd (VEX-encoded): acc + the sum of each lane's 4 products of an
// unsigned byte of u8 and a signed byte of s8, exact in int32. Written as assembly
// so that only the kernels that execute it need the extension (the dispatch table
// takes them only on CPUs with AVX-VNNI), and so that GCC never turns an AVX2
// kernel's vpmaddwd + vpaddd into it.
//
// A build with KILN_EMULATE_AVX_VNNI (a test build: CMake's option of that name)
// computes the same sums with AVX2 instructions instead, the even and the odd
// bytes widened to int16 and summed by vpmaddwd (u8 x s8 fits, each pair's sum
// exact in int32), and reports every AVX2 CPU as having AVX-VNNI, so that the
// kernels' AVX-VNNI paths are tested bit for bit on CPUs without it.
KILN_TARGET_AVX2 inline __m256i dpbusd(__m256i acc, __m256i u8, __m256i s8) {
#if defined(KILN_EMULATE_AVX_VNNI)
    const __m256i u_even = _mm256_and_si256(u8, _mm256_set1_epi16(0x00FF)), u_odd = _mm256_srli_epi16(u8, 8);
    const __m256i s_even = _mm256_srai_epi16(_mm256_slli_epi16(s8, 8), 8), s_odd = _mm256_srai_epi16(s8, 8);
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(u_even, s_even));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(u_odd, s_odd));
#else
    __asm__("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u8), "x"(s8));
    return acc;
#endif
}

// Keeps GCC from regrouping a chain of int16 adds into a tree: with the tree it
// computes every product first and spills them (docs/perf.md, 2026-12-05).
KILN_TARGET_AVX2 inline __m256i pinned(__m256i v) {
    __asm__("" : "+x"(v));
    return v;
}
// A value GCC must hold in a register: a vector used by several FMAs is loaded
// once, not folded into each of them as a memory operand (a load per FMA, which
// made the loads, not the FMAs, the limit of the attention's score loop).
KILN_TARGET_AVX2 inline __m256 pinned(__m256 v) {
    __asm__("" : "+x"(v));
    return v;
}

KILN_TARGET_AVX2 inline __m256i load256(const uint8_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }

KILN_TARGET_AVX2 inline __m256 load_f16x8(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

KILN_TARGET_AVX2 inline __m256 abs_ps(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

KILN_TARGET_AVX2 inline float hmax_ps(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

KILN_TARGET_AVX2 inline int32_t hsum_epi32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

// 32 int32 (in element order a, b, c, d) -> 32 int8 in order, saturating.
KILN_TARGET_AVX2 inline __m256i pack_i32_to_i8(__m256i a, __m256i b, __m256i c, __m256i d) {
    const __m256i ab = _mm256_packs_epi32(a, b);  // a0-3 b0-3 | a4-7 b4-7
    const __m256i cd = _mm256_packs_epi32(c, d);
    const __m256i abcd = _mm256_packs_epi16(ab, cd);  // a0-3 b0-3 c0-3 d0-3 | a4-7 b4-7 c4-7 d4-7
    return _mm256_permutevar8x32_epi32(abcd, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// f32 -> f16 -> f32, round to nearest even.
KILN_TARGET_AVX2 inline float round_f16(float v) { return _cvtsh_ss(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT)); }

// 0x10 in byte b where bit b of `bits` is set (the fifth bit of 32 levels).
KILN_TARGET_AVX2 inline __m256i fifth_bits(uint32_t bits) {
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(static_cast<int32_t>(bits)),
        _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return _mm256_and_si256(set, _mm256_set1_epi8(0x10));
}

// 8 floats at p, or only the lanes of mask when not `full` (the others read as
// zero, left alone when stored): a plain load or store for a whole vector, since
// a masked one (above all a masked store) takes many times longer on AMD's cores.
KILN_TARGET_AVX2 inline __m256 load_ps_masked(const float* p, __m256i mask, bool full) {
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, mask);
}
KILN_TARGET_AVX2 inline void store_ps_masked(float* p, __m256i mask, bool full, __m256 v) {
    if (full)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, mask, v);
}

// Stores the first n (1..8) lanes.
KILN_TARGET_AVX2 inline void store_rows(float* y, __m256 v, int n) {
    if (n >= 8) {
        _mm256_storeu_ps(y, v);
        return;
    }
    alignas(32) float tmp[8];
    _mm256_store_ps(tmp, v);
    for (int i = 0; i < n; ++i) y[i] = tmp[i];
}

// The first n (1..8) lanes of y, the others zero.
KILN_TARGET_AVX2 inline __m256 load_rows(const float* y, int n) {
    if (n >= 8) return _mm256_loadu_ps(y);
    alignas(32) float tmp[8] = {};
    for (int i = 0; i < n; ++i) tmp[i] = y[i];
    return _mm256_load_ps(tmp);
}

// Prefill from decoded blocks (TQ1_0, the grid i-quants): per panel, Blocks
// blocks at a time are decoded into a stack scratch of Bytes each by
// decode(block, out), then tile(n, decoded, h, a, t0, nb, y, rows, first, last)
// runs every half, group and tile of n <= 4 tokens over them (a: the group's
// activations of the first decoded block; y: the tile's first output; first /
// last: whether these are the row's first / last blocks).
template <int Blocks, uint64_t Bytes, typename Decode, typename Tile>
KILN_TARGET_AVX2 inline void run_decoded_prefill(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy,
                                                 Decode decode, Tile tile) {
    alignas(64) uint8_t decoded[Blocks * Bytes];
    const uint64_t a_stride = a.format.block_stride;
    for (int64_t p = p0; p < p1; ++p)
        for (int64_t b0 = 0; b0 < w.n_blocks; b0 += Blocks) {
            const int64_t nb = std::min<int64_t>(Blocks, w.n_blocks - b0);
            for (int64_t b = 0; b < nb; ++b) decode(w.panel(p) + static_cast<uint64_t>(b0 + b) * w.block_bytes, decoded + b * Bytes);
            for (int h = 0; h < 2; ++h) {
                const int64_t rows = std::min<int64_t>(8, w.n_out - p * k_panel_rows - 8 * h);
                if (rows <= 0) continue;
                for (int64_t g = 0; g < a.n_groups(); ++g) {
                    const int n = static_cast<int>(std::min<int64_t>(k_act_group, a.n_tokens - g * k_act_group));
                    for (int t0 = 0; t0 < n; t0 += 4)
                        tile(std::min(4, n - t0), decoded, h, a.group(g) + static_cast<uint64_t>(b0) * a_stride, t0, nb,
                             y + (g * k_act_group + t0) * ldy + p * k_panel_rows + 8 * h, static_cast<int>(rows), b0 == 0,
                             b0 + nb == w.n_blocks);
                }
            }
        }
}

// An 8-row x T-token tile: panel p's rows 8h.., tokens t0.. of group a. With
// stream (the first pass over a panel in a batch of one group, batched decode:
// the panel comes from memory, once), each block asks for the lines of the block
// k_stream_bytes ahead while it is summed, as decode does; in prefill the panel
// stays in cache for the other passes.
using TileFn = void (*)(const uint8_t* w, int h, const uint8_t* a, int t0, int64_t nb, uint64_t w_stride, uint64_t a_stride,
                        float* y, int64_t ldy, int n_rows, bool stream);

// How far ahead a streaming tile asks for weight lines: a few KB, whole blocks.
inline uint64_t stream_ahead(uint64_t w_stride) { return (4608 / w_stride > 0 ? 4608 / w_stride : 1) * w_stride; }

// Panels [p0, p1) x every token: two 8-row halves per panel, up to 4 tokens per tile.
KILN_TARGET_AVX2 inline void run_tiles(const TileFn (&tiles)[5], const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1,
                                       float* y, int64_t ldy) {
    for (int64_t p = p0; p < p1; ++p)
        for (int h = 0; h < 2; ++h) {
            const int64_t rows = std::min<int64_t>(8, w.n_out - p * k_panel_rows - 8 * h);
            if (rows <= 0) continue;
            for (int64_t g = 0; g < a.n_groups(); ++g) {
                const int n = static_cast<int>(std::min<int64_t>(k_act_group, a.n_tokens - g * k_act_group));
                for (int t0 = 0; t0 < n; t0 += 4) {
                    const int T = std::min(4, n - t0);
                    tiles[T](w.panel(p), h, a.group(g), t0, w.n_blocks, w.block_bytes, a.format.block_stride,
                             y + (g * k_act_group + t0) * ldy + p * k_panel_rows + 8 * h, ldy, static_cast<int>(rows),
                             a.n_groups() == 1 && h == 0 && t0 == 0);
                }
            }
        }
}

// Decode (one token): each panel's two 8-row halves block by block, so each
// 64-byte line is used whole while it is in L1. Block::add(w, h, a, acc) adds one
// block's terms for rows 8h.. of the panel at w (a: the token's activation
// block), in the tiles' order; a pass per half would read every line twice.
// A Block with k_prefetch_next (the k-quants, 37-53 lines a block) has the next
// block's lines requested while this one is summed: the hardware prefetcher alone
// keeps too few in flight. Those walk the range as one sequential stream; the
// others (no prefetch) as two, its halves side by side, which keeps more requests
// in flight without the prefetch (docs/perf.md has the measurements).
// A Block with add_panel(w, next, a, acc0, acc1) sums both halves of a block at
// once (sharing the activation work) and requests lines ahead itself (`next`:
// the block's bytes). A Block's k_streams, where it has one, sets the number of
// streams.
template <typename Block, int NS>
KILN_TARGET_AVX2 inline void decode_panels(const PackedMatrix& w, const ActPack& a, const int64_t* panels, float* y) {
    const uint8_t* wb[NS];
    __m256 acc[2 * NS];
    for (int s = 0; s < NS; ++s) {
        wb[s] = w.panel(panels[s]);
        acc[2 * s] = acc[2 * s + 1] = _mm256_setzero_ps();
    }
    const uint8_t* ab = a.group(0);
    for (int64_t b = 0; b < w.n_blocks; ++b, ab += a.format.block_stride)
// Unrolled: rolled, GCC kept acc[] and wb[] in memory (docs/perf.md, "The AVX2
// decode loops GCC left rolled").
#pragma GCC unroll 4
        for (int s = 0; s < NS; ++s) {
            if constexpr (requires { Block::add_panel; }) {
                Block::add_panel(wb[s], w.block_bytes, ab, acc[2 * s], acc[2 * s + 1]);
            } else {
                if constexpr (requires { Block::k_prefetch_next; }) prefetch_block(wb[s] + w.block_bytes, w.block_bytes);
                Block::add(wb[s], 0, ab, acc[2 * s]);
                Block::add(wb[s], 1, ab, acc[2 * s + 1]);
            }
            wb[s] += w.block_bytes;
        }
    for (int s = 0; s < NS; ++s) {
        const int rows = static_cast<int>(std::min<int64_t>(k_panel_rows, w.n_out - panels[s] * k_panel_rows));
        store_rows(y + panels[s] * k_panel_rows, acc[2 * s], rows);
        if (rows > 8) store_rows(y + panels[s] * k_panel_rows + 8, acc[2 * s + 1], rows - 8);
    }
}

template <typename Block>
KILN_TARGET_AVX2 inline void run_decode(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y) {
    constexpr int streams = [] {
        if constexpr (requires { Block::k_streams; }) return Block::k_streams;
        else return requires { Block::k_prefetch_next; } || requires { Block::add_panel; } ? 1 : 2;
    }();
    const int64_t part = (p1 - p0) / streams;
    for (int64_t i = 0; i < part; ++i) {
        int64_t panels[streams];
        for (int s = 0; s < streams; ++s) panels[s] = p0 + s * part + i;
        decode_panels<Block, streams>(w, a, panels, y);
    }
    for (int64_t p = p0 + streams * part; p < p1; ++p) decode_panels<Block, 1>(w, a, &p, y);
}

}  // namespace kiln::avx2

#endif  // KILN_HAVE_X86_KERNELS
