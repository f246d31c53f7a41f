// AVX-512 (F/BW/VL/DQ/VNNI): activation quantization into the grouped layout and
// the products of the legacy 32-element formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// IQ4_NL, MXFP4) over packed panels.
//
// One zmm holds one int32 or f32 per row of a 16-row panel. Per block and token:
// vpdpbusd accumulates the exact integer sum of the 16 rows against one broadcast
// activation dword, starting from the activation's bias; then, lane by lane, the
// scalar reference's float steps: d = d_w * d_a, term = d * isum [+ m_w * s_a],
// acc += term. Nothing depends on how many tokens or rows are processed together.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <algorithm>
#include <cstring>

#include "compute/kernels/avx512_amx.h"
#include "compute/kernels/avx512_common.h"
#include "compute/kernels/x86.h"
#include "quant/quant_tables.h"

namespace kiln::avx512 {

namespace {

// f32 -> f16 -> f32, round to nearest even (the value the scalar kernels read back).
KILN_TARGET_AVX512 inline float round_f16(float v) { return _cvtsh_ss(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT)); }

// ---- activation quantization --------------------------------------------------------
//
// Q8_0 / Q8_1 as ggml's x86 runtime (compute/activation_quant.cpp): d = amax / 127,
// levels = round-to-nearest-even(x * (127 / amax)). Q8_K as the reference quantizer
// (quant/k_quants.cpp): the first value of largest magnitude sets iscale = -127 / max,
// levels = nearest(iscale * x) clamped to [-128, 127], d = 1 / iscale.

KILN_TARGET_AVX512 void quantize_block32(const float* x, const ActFormat& f, uint8_t* blk, int t) {
    const __m512 v0 = _mm512_loadu_ps(x), v1 = _mm512_loadu_ps(x + 16);
    const __m512 a = _mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1));
    const float amax = _mm512_reduce_max_ps(a);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const __m512 vid = _mm512_set1_ps(id);
    const __m512i q0 = _mm512_cvtps_epi32(_mm512_mul_ps(v0, vid));
    const __m512i q1 = _mm512_cvtps_epi32(_mm512_mul_ps(v1, vid));
    int8_t* qs = reinterpret_cast<int8_t*>(blk + act_qs_offset(t, 32));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 16), _mm512_cvtepi32_epi8(q1));
    const float dr = round_f16(d);
    std::memcpy(blk + act_d_offset(32) + 4 * t, &dr, 4);
    const int32_t sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    if (f.aux == ActAux::Sum32) {
        const float s = round_f16(d * static_cast<float>(sum));
        std::memcpy(blk + act_aux_offset(32) + 4 * t, &s, 4);
    } else {
        const int32_t bias = -f.offset * sum;
        std::memcpy(blk + act_aux_offset(32) + 4 * t, &bias, 4);
    }
}

KILN_TARGET_AVX512 void quantize_block256(const float* x, const ActFormat& f, uint8_t* blk, int t) {
    __m512 v[16];
    __m512 a = _mm512_setzero_ps();
    for (int k = 0; k < 16; ++k) {
        v[k] = _mm512_loadu_ps(x + 16 * k);
        a = _mm512_max_ps(a, _mm512_abs_ps(v[k]));
    }
    const float amax = _mm512_reduce_max_ps(a);
    int8_t* qs = reinterpret_cast<int8_t*>(blk + act_qs_offset(t, 256));
    uint8_t* aux = blk + act_aux_offset(256);
    if (amax == 0.0f) {
        std::memset(qs, 0, 256);
        const float zero = 0.0f;
        std::memcpy(blk + act_d_offset(256) + 4 * t, &zero, 4);
        if (f.aux == ActAux::KPairs)
            std::memset(aux + 16 * t, 0, 16);
        else
            std::memset(aux + 32 * t, 0, 32);
        return;
    }
    // The first element whose magnitude is amax.
    float max = 0.0f;
    const __m512 va = _mm512_set1_ps(amax);
    for (int k = 0; k < 16; ++k) {
        const __mmask16 m = _mm512_cmp_ps_mask(_mm512_abs_ps(v[k]), va, _CMP_EQ_OQ);
        if (m) {
            max = x[16 * k + __builtin_ctz(m)];
            break;
        }
    }
    const float iscale = -127.0f / max;
    const __m512 vs = _mm512_set1_ps(iscale);
    int32_t sums[16];
    for (int k = 0; k < 16; ++k) {
        const __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(v[k], vs));
        const __m128i q8 = _mm512_cvtsepi32_epi8(q);  // saturates to [-128, 127], the reference's clamp
        _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 16 * k), q8);
        sums[k] = _mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(q8));
    }
    const float d = 1.0f / iscale;
    std::memcpy(blk + act_d_offset(256) + 4 * t, &d, 4);
    if (f.aux == ActAux::KPairs) {
        int16_t pairs[8];
        for (int j = 0; j < 8; ++j) pairs[j] = static_cast<int16_t>(sums[2 * j] + sums[2 * j + 1]);
        std::memcpy(aux + 16 * t, pairs, 16);
    } else {
        int16_t s16[16];
        for (int j = 0; j < 16; ++j) s16[j] = static_cast<int16_t>(sums[j]);
        std::memcpy(aux + 32 * t, s16, 32);
    }
}

// ---- legacy formats ------------------------------------------------------------------

enum class Legacy { Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4 };

struct LegacyLayout {
    bool has_min;      // m[16] f16 after d
    bool fifth_bit;    // 8 masks before the chunks
    int qs;            // offset of the chunks
};

constexpr LegacyLayout legacy_layout(Legacy f) {
    switch (f) {
        case Legacy::Q4_0: return {false, false, 32};
        case Legacy::IQ4_NL: return {false, false, 32};
        case Legacy::MXFP4: return {false, false, 16};  // e[16] E8M0 instead of d[16] f16
        case Legacy::Q4_1: return {true, false, 64};
        case Legacy::Q5_0: return {false, true, 96};
        case Legacy::Q5_1: return {true, true, 128};
        case Legacy::Q8_0: return {false, false, 32};
    }
    return {};
}

// Formats whose 4-bit codes select levels from a table (IQ4_NL, MXFP4).
constexpr bool table_levels(Legacy f) { return f == Legacy::IQ4_NL || f == Legacy::MXFP4; }

// The level table of IQ4_NL or MXFP4 (E2M1 doubled) plus 128 (unsigned for
// vpdpbusd; the bias removes 128 x sum(a)).
template <Legacy F>
KILN_TARGET_AVX512 inline __m512i level_lut() {
    if constexpr (!table_levels(F)) return _mm512_setzero_si512();
    const int8_t* levels = F == Legacy::MXFP4 ? quant::k_values_e2m1x2 : quant::k_values_iq4nl;
    alignas(16) uint8_t t[16];
    for (int i = 0; i < 16; ++i) t[i] = static_cast<uint8_t>(levels[i] + 128);
    return _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(t)));
}

// The 16 rows' weight scales: f16, or MXFP4's E8M0 bytes halved (2^(e - 128);
// e = 0 and 1 give the subnormals 0x00200000 << e), as quant's e8m0_to_fp32_half.
template <Legacy F>
KILN_TARGET_AVX512 inline __m512 load_scales(const uint8_t* w) {
    if constexpr (F == Legacy::MXFP4) {
        const __m512i e = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)));
        const __m512i normal = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
        const __m512i tiny = _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e);
        return _mm512_castsi512_ps(_mm512_mask_blend_epi32(_mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)), normal, tiny));
    } else {
        return load_f16x16(w);
    }
}

// Chunk c of the 4-bit formats' panel block at w: lo = the levels of elements
// 4c .. 4c + 3 of each row, hi = those of 16 + 4c .. (fifth bits added; table
// formats: looked up in lut). ViaGpr: the fifth-bit masks through a general
// register (load_mask64_via_gpr, the decode kernels').
template <Legacy F, bool ViaGpr = false>
KILN_TARGET_AVX512 inline void legacy_levels(const uint8_t* w, int c, __m512i lut, __m512i& lo, __m512i& hi) {
    constexpr LegacyLayout L = legacy_layout(F);
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i raw = _mm512_loadu_si512(w + L.qs + 64 * c);
    lo = _mm512_and_si512(raw, low4);
    hi = _mm512_and_si512(_mm512_srli_epi16(raw, 4), low4);
    if constexpr (L.fifth_bit) {
        const uint8_t* masks = w + (L.has_min ? 64 : 32);
        const __m512i bit = _mm512_set1_epi8(0x10);
        lo = _mm512_mask_add_epi8(lo, ViaGpr ? load_mask64_via_gpr(masks + 16 * c) : load_mask64(masks + 16 * c), lo, bit);
        hi = _mm512_mask_add_epi8(hi, ViaGpr ? load_mask64_via_gpr(masks + 16 * c + 8) : load_mask64(masks + 16 * c + 8), hi, bit);
    }
    if constexpr (table_levels(F)) {
        lo = _mm512_shuffle_epi8(lut, lo);
        hi = _mm512_shuffle_epi8(lut, hi);
    }
}

// Blocks ahead whose weight lines a streaming tile requests (k_stream_ahead).
constexpr int64_t k_stream_ahead = 16;

// One panel (16 rows) x T tokens of one group, over all blocks. With `stream`
// (a batch of one group: the panel is read once, from memory) the lines of the
// block k_stream_ahead ahead are requested while this one is summed, as the
// decode kernels do; in prefill the panel is reused from cache by the next groups.
template <Legacy F, int T>
KILN_TARGET_AVX512 void legacy_tile(const uint8_t* w, const uint8_t* a, int64_t nb, uint64_t w_stride, uint64_t a_stride,
                                    float* y, int64_t ldy, __mmask16 rows, bool stream = false) {
    constexpr LegacyLayout L = legacy_layout(F);
    constexpr bool unsigned_levels = F == Legacy::Q4_1 || F == Legacy::Q5_1;
    const __m512i lut = level_lut<F>();
    __m512 acc[T];
    for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        if (stream) prefetch_block(w + k_stream_ahead * w_stride, w_stride);
        // Two accumulators per token (even / odd chunks, or low / high nibbles):
        // 2T independent vpdpbusd chains keep both of the CPU's dot-product pipes
        // busy despite the instruction's latency. Integer sums: exact in any order.
        __m512i isum[T], isum2[T];
        for (int t = 0; t < T; ++t) {
            isum[t] = unsigned_levels ? _mm512_setzero_si512() : bcast_i32(a + act_aux_offset(32) + 4 * t);
            isum2[t] = _mm512_setzero_si512();
        }
        if constexpr (F == Legacy::Q8_0) {
            const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
            for (int c = 0; c < 8; c += 2) {
                const __m512i q0 = _mm512_xor_si512(_mm512_loadu_si512(w + L.qs + 64 * c), flip);
                const __m512i q1 = _mm512_xor_si512(_mm512_loadu_si512(w + L.qs + 64 * c + 64), flip);
                for (int t = 0; t < T; ++t) {
                    isum[t] = _mm512_dpbusd_epi32(isum[t], q0, bcast_i32(a + 32 * t + 4 * c));
                    isum2[t] = _mm512_dpbusd_epi32(isum2[t], q1, bcast_i32(a + 32 * t + 4 * c + 4));
                }
            }
        } else {
            for (int c = 0; c < 4; ++c) {
                __m512i lo, hi;
                legacy_levels<F>(w, c, lut, lo, hi);
                for (int t = 0; t < T; ++t) {
                    isum[t] = _mm512_dpbusd_epi32(isum[t], lo, bcast_i32(a + 32 * t + 4 * c));
                    isum2[t] = _mm512_dpbusd_epi32(isum2[t], hi, bcast_i32(a + 32 * t + 16 + 4 * c));
                }
            }
        }
        for (int t = 0; t < T; ++t) isum[t] = _mm512_add_epi32(isum[t], isum2[t]);
        const __m512 dw = load_scales<F>(w);
        if constexpr (L.has_min) {
            const __m512 mw = load_f16x16(w + 32);
            for (int t = 0; t < T; ++t) {
                const __m512 d = _mm512_mul_ps(dw, bcast_f32(a + act_d_offset(32) + 4 * t));
                const __m512 scaled = _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[t]));
                const __m512 min_term = _mm512_mul_ps(mw, bcast_f32(a + act_aux_offset(32) + 4 * t));
                acc[t] = _mm512_add_ps(acc[t], _mm512_add_ps(scaled, min_term));
            }
        } else {
            for (int t = 0; t < T; ++t) {
                const __m512 d = _mm512_mul_ps(dw, bcast_f32(a + act_d_offset(32) + 4 * t));
                acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum[t])));
            }
        }
    }
    for (int t = 0; t < T; ++t) _mm512_mask_storeu_ps(y + t * ldy, rows, acc[t]);
}

// How many blocks ahead one token's decode asks for each panel's weight lines:
// with only the hardware prefetcher, Q4_0 read memory at about 70% of the bound
// on an Intel Xeon (docs/perf.md, 2026-12-06), as the AVX2 kernels did before
// they asked (k_q4_0_ahead_blocks).
constexpr int64_t k_decode_ahead_blocks = 16;

// Decode: one token against P panels at once, panel p at w + p * panel_bytes and
// its outputs at y + p * y_step. Per lane the operations are legacy_tile's, in the
// same order.
template <Legacy F, int P>
KILN_TARGET_AVX512 void legacy_decode(const uint8_t* w, uint64_t panel_bytes, const uint8_t* a, int64_t nb, uint64_t w_stride,
                                      uint64_t a_stride, float* y, const __mmask16* rows, int64_t y_step = k_panel_rows) {
    constexpr LegacyLayout L = legacy_layout(F);
    constexpr bool unsigned_levels = F == Legacy::Q4_1 || F == Legacy::Q5_1;
    const __m512i lut = level_lut<F>();
    __m512 acc[P];
    for (int p = 0; p < P; ++p) acc[p] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; ++b, w += w_stride, a += a_stride) {
        const __m512i bias = unsigned_levels ? _mm512_setzero_si512() : bcast_i32(a + act_aux_offset(32));
        const __m512 da = bcast_f32(a + act_d_offset(32));
        for (int p = 0; p < P; ++p) {
            const uint8_t* wp = w + p * panel_bytes;
            prefetch_block(wp + k_decode_ahead_blocks * w_stride, w_stride);
            __m512i isum = bias;
            if constexpr (F == Legacy::Q8_0) {
                const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
                for (int c = 0; c < 8; ++c)
                    isum = _mm512_dpbusd_epi32(isum, _mm512_xor_si512(_mm512_loadu_si512(wp + L.qs + 64 * c), flip), bcast_i32(a + 4 * c));
            } else {
                for (int c = 0; c < 4; ++c) {
                    __m512i lo, hi;
                    legacy_levels<F, true>(wp, c, lut, lo, hi);
                    isum = _mm512_dpbusd_epi32(isum, lo, bcast_i32(a + 4 * c));
                    isum = _mm512_dpbusd_epi32(isum, hi, bcast_i32(a + 16 + 4 * c));
                }
            }
            const __m512 d = _mm512_mul_ps(load_scales<F>(wp), da);
            __m512 term = _mm512_mul_ps(d, _mm512_cvtepi32_ps(isum));
            if constexpr (L.has_min) term = _mm512_add_ps(term, _mm512_mul_ps(load_f16x16(wp + 32), bcast_f32(a + act_aux_offset(32))));
            acc[p] = _mm512_add_ps(acc[p], term);
        }
    }
    for (int p = 0; p < P; ++p) _mm512_mask_storeu_ps(y + p * y_step, rows[p], acc[p]);
}

template <Legacy F>
KILN_TARGET_AVX512 void legacy_gemm(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    const uint64_t a_stride = a.format.block_stride;
    if (a.n_tokens == 1) {
        auto pair = [&](int64_t q, int64_t half) KILN_TARGET_AVX512 {
            const __mmask16 rows[2] = {panel_rows(w, q), panel_rows(w, q + half)};
            legacy_decode<F, 2>(w.panel(q), half * w.panel_bytes, a.group(0), w.n_blocks, w.block_bytes, a_stride,
                                y + q * k_panel_rows, rows, half * k_panel_rows);
        };
        auto single = [&](int64_t p) KILN_TARGET_AVX512 {
            const __mmask16 rows[1] = {panel_rows(w, p)};
            legacy_decode<F, 1>(w.panel(p), w.panel_bytes, a.group(0), w.n_blocks, w.block_bytes, a_stride, y + p * k_panel_rows, rows);
        };
        return decode_halves(p0, p1, pair, single);
    }
    for (int64_t p = p0; p < p1; ++p) {
        const __mmask16 rows = panel_rows(w, p);
        const bool stream = a.n_groups() == 1;
        for (int64_t g = 0; g < a.n_groups(); ++g) {
            const int n = static_cast<int>(std::min<int64_t>(k_act_group, a.n_tokens - g * k_act_group));
            float* yt = y + g * k_act_group * ldy + p * k_panel_rows;
            const uint8_t* wp = w.panel(p);
            const uint8_t* ap = a.group(g);
            switch (n) {
                case 8: legacy_tile<F, 8>(wp, ap, w.n_blocks, w.block_bytes, a_stride, yt, ldy, rows, stream); break;
                case 7: legacy_tile<F, 7>(wp, ap, w.n_blocks, w.block_bytes, a_stride, yt, ldy, rows, stream); break;
                case 6: legacy_tile<F, 6>(wp, ap, w.n_blocks, w.block_bytes, a_stride, yt, ldy, rows, stream); break;
                case 5: legacy_tile<F, 5>(wp, ap, w.n_blocks, w.block_bytes, a_stride, yt, ldy, rows, stream); break;
                case 4: legacy_tile<F, 4>(wp, ap, w.n_blocks, w.block_bytes, a_stride, yt, ldy, rows, stream); break;
                case 3: legacy_tile<F, 3>(wp, ap, w.n_blocks, w.block_bytes, a_stride, yt, ldy, rows, stream); break;
                case 2: legacy_tile<F, 2>(wp, ap, w.n_blocks, w.block_bytes, a_stride, yt, ldy, rows, stream); break;
                default: legacy_tile<F, 1>(wp, ap, w.n_blocks, w.block_bytes, a_stride, yt, ldy, rows, stream); break;
            }
        }
    }
}


// ---- AMX prefill (CPUs with AMX-INT8) --------------------------------------------------
//
// A panel's blocks are decoded once into signed levels (q - offset, or a table's
// signed values; Q8_0's chunks are read where they are), each block the B tile of
// 8 rows x 64 bytes (row c = chunk c: elements 4c .. 4c + 3 of the 16 rows). Per
// group of 8 tokens and block, A = the tokens' 32 activation bytes, C = A x B: row
// t holds the 16 integer sums that legacy_tile's vpdpbusd chains reach from the
// activation's bias (sum a (q - offset) = sum a q - offset sum a, exactly), and
// legacy_tile's float steps follow, so the bits are the same.

// Signed levels of a table format (IQ4_NL, MXFP4), for the byte shuffle.
template <Legacy F>
KILN_TARGET_AVX512 inline __m512i signed_level_lut() {
    if constexpr (!table_levels(F)) return _mm512_setzero_si512();
    const int8_t* levels = F == Legacy::MXFP4 ? quant::k_values_e2m1x2 : quant::k_values_iq4nl;
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(levels)));
}

// The panel block at w (not Q8_0) as 8 chunks of signed levels at out (64-byte aligned).
template <Legacy F>
KILN_TARGET_AVX512 void legacy_signed_levels(const uint8_t* w, uint8_t* out) {
    constexpr int offset = F == Legacy::Q4_0 ? 8 : F == Legacy::Q5_0 ? 16 : 0;
    const __m512i lut = signed_level_lut<F>();
    for (int c = 0; c < 4; ++c) {
        __m512i lo, hi;
        legacy_levels<F>(w, c, lut, lo, hi);
        if constexpr (offset != 0) {
            lo = _mm512_sub_epi8(lo, _mm512_set1_epi8(offset));
            hi = _mm512_sub_epi8(hi, _mm512_set1_epi8(offset));
        }
        _mm512_store_si512(out + 64 * c, lo);
        _mm512_store_si512(out + 64 * (4 + c), hi);
    }
}

// One block's float steps for T tokens: isums (rows of the C tile stored at c), the
// panel block's scales at w, the activation block at a. legacy_tile's operations.
template <Legacy F, int T>
KILN_TARGET_AVX512 inline void legacy_block_terms(const int32_t* c, const uint8_t* w, const uint8_t* a, __m512* acc) {
    constexpr LegacyLayout L = legacy_layout(F);
    const __m512 dw = load_scales<F>(w);
    [[maybe_unused]] __m512 mw;
    if constexpr (L.has_min) mw = load_f16x16(w + 32);
    for (int t = 0; t < T; ++t) {
        const __m512 d = _mm512_mul_ps(dw, bcast_f32(a + act_d_offset(32) + 4 * t));
        const __m512 scaled = _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_load_si512(c + 16 * t)));
        if constexpr (L.has_min) {
            const __m512 min_term = _mm512_mul_ps(mw, bcast_f32(a + act_aux_offset(32) + 4 * t));
            acc[t] = _mm512_add_ps(acc[t], _mm512_add_ps(scaled, min_term));
        } else {
            acc[t] = _mm512_add_ps(acc[t], scaled);
        }
    }
}

// Tiles: B in 0; group g's A in 2 + g and C in 4 + g (8 tokens x 32 bytes, 8 x 16 sums).
constexpr amx_tiles::TileConfig legacy_amx_config() {
    amx_tiles::TileConfig c;
    return c.tile(0, 8, 64).tile(2, 8, 32).tile(3, 8, 32).tile(4, 8, 64).tile(5, 8, 64);
}

// Blocks whose products are issued before a block's float steps read its sums
// (from memory: the loads wait for the tile store). 2 and 3 measured no faster
// than 1 (bench_matmul 2048 x 2048 x 512, docs/perf.md).
constexpr int64_t k_amx_ahead = 1;

// One panel's decoded blocks (levels: block b at levels + b l_stride; scales of block
// b at wp + b w_stride) x G token groups (1 or 2) at ag[g], all full but the last,
// which holds T tokens; outputs of group g at y + 8 g ldy. One B load serves every
// group, and the float steps of block b run while the products of the k_amx_ahead
// blocks after it do (their sums go to other slots of c).
template <Legacy F, int G, int T>
KILN_TARGET_AVX512 void legacy_amx_groups(const uint8_t* levels, uint64_t l_stride, const uint8_t* wp, uint64_t w_stride,
                                          const uint8_t* const (&ag)[G], uint64_t a_stride, int64_t nb, float* y, int64_t ldy,
                                          __mmask16 rows) {
    static_assert(G == 1 || G == 2);
    constexpr int64_t slots = k_amx_ahead + 1;
    constexpr int n_tokens = (G - 1) * k_act_group + T;
    alignas(64) int32_t c[slots][G][8 * 16];
    __m512 acc[n_tokens];
    for (__m512& v : acc) v = _mm512_setzero_ps();
    auto issue = [&](int64_t b) KILN_TARGET_AVX512 {
        int32_t(*out)[8 * 16] = c[b % slots];
        amx_tiles::load<0>(levels + b * l_stride, 64);
        amx_tiles::load<2>(ag[0] + b * a_stride, 32);
        amx_tiles::zero<4>();
        amx_tiles::dot_signed<4, 2, 0>();
        amx_tiles::store<4>(out[0], 64);
        if constexpr (G == 2) {
            amx_tiles::load<3>(ag[1] + b * a_stride, 32);
            amx_tiles::zero<5>();
            amx_tiles::dot_signed<5, 3, 0>();
            amx_tiles::store<5>(out[1], 64);
        }
    };
    for (int64_t b = 0; b < std::min(k_amx_ahead, nb); ++b) issue(b);
    for (int64_t b = 0; b < nb; ++b) {
        if (b + k_amx_ahead < nb) issue(b + k_amx_ahead);
        if constexpr (G == 2) legacy_block_terms<F, k_act_group>(c[b % slots][0], wp + b * w_stride, ag[0] + b * a_stride, acc);
        legacy_block_terms<F, T>(c[b % slots][G - 1], wp + b * w_stride, ag[G - 1] + b * a_stride, acc + (G - 1) * k_act_group);
    }
    for (int t = 0; t < n_tokens; ++t) _mm512_mask_storeu_ps(y + t * ldy, rows, acc[t]);
}

template <Legacy F>
KILN_TARGET_AVX512 void legacy_amx_prefill(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    static constexpr amx_tiles::TileConfig config = legacy_amx_config();
    amx_tiles::configure(config);
    const uint64_t a_stride = a.format.block_stride;
    uint8_t* decoded = F == Legacy::Q8_0 ? nullptr : amx_tiles::scratch(static_cast<uint64_t>(w.n_blocks) * 512);
    for (int64_t p = p0; p < p1; ++p) {
        const uint8_t* wp = w.panel(p);
        const uint8_t* levels = wp + legacy_layout(F).qs;
        uint64_t l_stride = w.block_bytes;
        if constexpr (F != Legacy::Q8_0) {
            for (int64_t b = 0; b < w.n_blocks; ++b) legacy_signed_levels<F>(wp + b * w.block_bytes, decoded + 512 * b);
            levels = decoded;
            l_stride = 512;
        }
        const __mmask16 rows = panel_rows(w, p);
        // Full groups in pairs, then the rest one by one.
        const int64_t pairs = a.n_tokens / (2 * k_act_group);
        for (int64_t q = 0; q < pairs; ++q) {
            const uint8_t* const ag[2] = {a.group(2 * q), a.group(2 * q + 1)};
            legacy_amx_groups<F, 2, 8>(levels, l_stride, wp, w.block_bytes, ag, a_stride, w.n_blocks,
                                       y + 2 * q * k_act_group * ldy + p * k_panel_rows, ldy, rows);
        }
        for (int64_t g = 2 * pairs; g < a.n_groups(); ++g) {
            const int n = static_cast<int>(std::min<int64_t>(k_act_group, a.n_tokens - g * k_act_group));
            float* yt = y + g * k_act_group * ldy + p * k_panel_rows;
            const uint8_t* const ag[1] = {a.group(g)};
            switch (n) {
                case 8: legacy_amx_groups<F, 1, 8>(levels, l_stride, wp, w.block_bytes, ag, a_stride, w.n_blocks, yt, ldy, rows); break;
                case 7: legacy_amx_groups<F, 1, 7>(levels, l_stride, wp, w.block_bytes, ag, a_stride, w.n_blocks, yt, ldy, rows); break;
                case 6: legacy_amx_groups<F, 1, 6>(levels, l_stride, wp, w.block_bytes, ag, a_stride, w.n_blocks, yt, ldy, rows); break;
                case 5: legacy_amx_groups<F, 1, 5>(levels, l_stride, wp, w.block_bytes, ag, a_stride, w.n_blocks, yt, ldy, rows); break;
                case 4: legacy_amx_groups<F, 1, 4>(levels, l_stride, wp, w.block_bytes, ag, a_stride, w.n_blocks, yt, ldy, rows); break;
                case 3: legacy_amx_groups<F, 1, 3>(levels, l_stride, wp, w.block_bytes, ag, a_stride, w.n_blocks, yt, ldy, rows); break;
                case 2: legacy_amx_groups<F, 1, 2>(levels, l_stride, wp, w.block_bytes, ag, a_stride, w.n_blocks, yt, ldy, rows); break;
                default: legacy_amx_groups<F, 1, 1>(levels, l_stride, wp, w.block_bytes, ag, a_stride, w.n_blocks, yt, ldy, rows); break;
            }
        }
    }
    amx_tiles::release();
}

// Several token groups by AMX; one group (decode, a small batch) by legacy_gemm.
template <Legacy F>
KILN_TARGET_AVX512 void legacy_amx_gemm(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    if (a.n_groups() > 1) return legacy_amx_prefill<F>(w, a, p0, p1, y, ldy);
    legacy_gemm<F>(w, a, p0, p1, y, ldy);
}

}  // namespace

KILN_TARGET_AVX512 void prep_act(const float* x, int64_t n_in, int64_t g0, int64_t g1, ActPack& a) {
    const ActFormat& f = a.format;
    const int64_t nb = n_in / f.block;
    for (int64_t g = g0; g < g1; ++g) {
        uint8_t* grp = a.group(g);
        const int n = static_cast<int>(std::min<int64_t>(k_act_group, a.n_tokens - g * k_act_group));
        for (int t = 0; t < n; ++t) {
            const float* xt = x + (g * k_act_group + t) * n_in;
            for (int64_t b = 0; b < nb; ++b) {
                uint8_t* blk = grp + static_cast<uint64_t>(b) * f.block_stride;
                if (f.block == 32)
                    quantize_block32(xt + 32 * b, f, blk, t);
                else
                    quantize_block256(xt + 256 * b, f, blk, t);
            }
        }
    }
}

void gemm_q4_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::Q4_0>(w, a, p0, p1, y, ldy);
}
void gemm_q4_1(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::Q4_1>(w, a, p0, p1, y, ldy);
}
void gemm_q5_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::Q5_0>(w, a, p0, p1, y, ldy);
}
void gemm_q5_1(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::Q5_1>(w, a, p0, p1, y, ldy);
}
void gemm_q8_0(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::Q8_0>(w, a, p0, p1, y, ldy);
}
void gemm_iq4_nl(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::IQ4_NL>(w, a, p0, p1, y, ldy);
}
void gemm_mxfp4(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    legacy_gemm<Legacy::MXFP4>(w, a, p0, p1, y, ldy);
}

namespace amx {
const PackedGemmFn gemm_q4_0 = legacy_amx_gemm<Legacy::Q4_0>, gemm_q4_1 = legacy_amx_gemm<Legacy::Q4_1>,
                   gemm_q5_0 = legacy_amx_gemm<Legacy::Q5_0>, gemm_q5_1 = legacy_amx_gemm<Legacy::Q5_1>,
                   gemm_q8_0 = legacy_amx_gemm<Legacy::Q8_0>, gemm_iq4_nl = legacy_amx_gemm<Legacy::IQ4_NL>,
                   gemm_mxfp4 = legacy_amx_gemm<Legacy::MXFP4>;
}  // namespace amx

}  // namespace kiln::avx512

#endif  // KILN_HAVE_X86_KERNELS
