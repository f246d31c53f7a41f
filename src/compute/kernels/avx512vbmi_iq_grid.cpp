// AVX512_VBMI products of the grid i-quants (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S, IQ1_S, IQ1_M), chosen at dispatch where the CPU has VBMI
// (avx512_iq_grid.cpp's gathers otherwise). Their grids hold 3 (IQ1, IQ2) or 8
// (IQ3) distinct values, so a grid point is a code of 2 or 3 bits per element: 8 bits
// per half row of IQ2 (one byte plane per half), 12 of IQ3 (two byte planes);
// IQ1's 2048 points take a plane for elements 0-3 and a rank for 4-7 (Tables).
// A sub-block's 64 indices (16 rows x 4) are looked up in the planes by vpermi2b
// (128 bytes a step, the steps merged by the index's high bits), each operand's
// codes spread to its bytes by vpmultishiftqb, and the codes turned into levels
// plus the offset by a 64-byte vpermb table; signs as in the gather kernels
// (byte masks, offset - g where negative). The operands' bytes are the gather
// kernels' (the same tiles then run: avx512_iq_tiles.h), so the results are
// bit-identical to the scalar reference as theirs are. The indices are first
// permuted so that each 64-bit lane of a plane holds the codes its output lane
// needs: rows 2q, 2q + 1 of every group in lane q.
#include "compute/kernels/target.h"

#if KILN_HAVE_X86_KERNELS

#include <array>
#include <cstdlib>
#include <cstring>

#include "compute/kernels/avx512_common.h"
#include "compute/kernels/iq_grid_layout.h"
#include "compute/kernels/x86.h"
#include "quant/quant_tables.h"

namespace kiln::avx512::vbmi {

namespace {

using L = IqGridLayout;
using Bytes64 = std::array<uint8_t, 64>;

// ---- tables ----

// A grid's elements as codes: element value v -> its index in the grid's sorted
// distinct values (at most 1 << bits of them).
template <int N, int E>
struct GridCodes {
    uint8_t values[8] = {};
    int n_values = 0;
    int code(uint8_t v) const {
        for (int i = 0; i < n_values; ++i)
            if (values[i] == v) return i;
        std::abort();  // not a value of the grid: the tables below are wrong
    }
    explicit GridCodes(const uint8_t (&grid)[N][E], int max_values) {
        for (int i = 0; i < N; ++i)
            for (int e = 0; e < E; ++e) {
                bool seen = false;
                for (int k = 0; k < n_values; ++k) seen = seen || values[k] == grid[i][e];
                if (!seen) {
                    if (n_values == max_values) std::abort();
                    values[n_values++] = grid[i][e];
                }
            }
        for (int i = 0; i < n_values; ++i)  // sorted, for legibility only
            for (int k = i + 1; k < n_values; ++k)
                if (values[k] < values[i]) std::swap(values[i], values[k]);
    }
};

struct Tables {
    // IQ2: per grid point the 2-bit codes of elements 0-3 (lo) and 4-7 (hi), element e at bit 2 (e % 4).
    alignas(64) uint8_t iq2xxs_lo[256], iq2xxs_hi[256];
    alignas(64) uint8_t iq2xs_lo[512], iq2xs_hi[512];
    alignas(64) uint8_t iq2s_lo[1024], iq2s_hi[1024];
    // IQ3: the 12-bit code of the 4 elements (element e at bit 3e), bits 0-7 (a) and 8-11 (b).
    alignas(64) uint8_t iq3xxs_a[256], iq3xxs_b[256];
    alignas(64) uint8_t iq3s_a[512], iq3s_b[512];
    // IQ1 (g in {-1, 0, 1}: code g + 1): elements 0-3 as IQ2's lo plane. Elements
    // 4-7 need no plane: the grid is sorted by them (element 7 first, base 3) and
    // each of their 81 values holds 11-61 points, so an aligned run of 16 indices
    // holds at most two. Their rank r (base 3, 0-80) is iq1_rank[i >> 4] plus 1
    // from index i & 15 = iq1_step[i >> 4] on (16: never), and iq1_hi_codes[r]
    // their codes.
    alignas(64) uint8_t iq1_lo[2048];
    alignas(64) uint8_t iq1_rank[128], iq1_step[128], iq1_hi_codes[128];
    // vpermb tables: 64 + the value of code x & 3 (x & 7), the offset levels the gathers make.
    alignas(64) uint8_t iq2xxs_levels[64], iq2xs_levels[64], iq2s_levels[64], iq3xxs_levels[64], iq3s_levels[64];
    // IQ1: 8 (g + 2) + 1 of code x & 3, the gathers' level where the shift is +1
    // (2 less where it is -1).
    alignas(64) uint8_t iq1_levels[64];
    // The 7-bit sign index's 8 signs (ggml's ksigns_iq2xs).
    alignas(64) uint8_t ksigns[128];
};

template <int N>
void fill_iq2(const uint8_t (&grid)[N][8], uint8_t* lo, uint8_t* hi, uint8_t* levels) {
    const GridCodes<N, 8> c(grid, 4);
    for (int i = 0; i < N; ++i) {
        lo[i] = hi[i] = 0;
        for (int e = 0; e < 4; ++e) {
            lo[i] = static_cast<uint8_t>(lo[i] | c.code(grid[i][e]) << (2 * e));
            hi[i] = static_cast<uint8_t>(hi[i] | c.code(grid[i][e + 4]) << (2 * e));
        }
    }
    for (int x = 0; x < 64; ++x) levels[x] = static_cast<uint8_t>(64 + c.values[x & 3]);
}

template <int N>
void fill_iq3(const uint8_t (&grid)[N][4], uint8_t* a, uint8_t* b, uint8_t* levels) {
    const GridCodes<N, 4> c(grid, 8);
    for (int i = 0; i < N; ++i) {
        int code = 0;
        for (int e = 0; e < 4; ++e) code |= c.code(grid[i][e]) << (3 * e);
        a[i] = static_cast<uint8_t>(code & 0xFF);
        b[i] = static_cast<uint8_t>(code >> 8);
    }
    for (int x = 0; x < 64; ++x) levels[x] = static_cast<uint8_t>(64 + c.values[x & 7]);
}

void fill_iq1(Tables& t) {
    const auto& grid = quant::k_iq1s_grid;
    auto rank = [&](int i) {  // elements 4-7 in base 3, element 7 first
        int r = 0;
        for (int e = 7; e >= 4; --e) r = 3 * r + grid[i][e] + 1;
        return r;
    };
    for (int i = 0; i < 2048; ++i) {
        t.iq1_lo[i] = 0;
        for (int e = 0; e < 4; ++e) t.iq1_lo[i] = static_cast<uint8_t>(t.iq1_lo[i] | (grid[i][e] + 1) << (2 * e));
    }
    for (int r = 0; r < 128; ++r) {
        t.iq1_hi_codes[r] = 0;
        for (int e = 0, v = r; e < 4; ++e, v /= 3) t.iq1_hi_codes[r] = static_cast<uint8_t>(t.iq1_hi_codes[r] | (v % 3) << (2 * e));
    }
    for (int b = 0; b < 128; ++b) {
        t.iq1_rank[b] = static_cast<uint8_t>(rank(16 * b));
        t.iq1_step[b] = 16;
        for (int j = 1; j < 16; ++j) {
            const int r = rank(16 * b + j);
            if (r == t.iq1_rank[b] || (t.iq1_step[b] < 16 && r == t.iq1_rank[b] + 1)) continue;
            if (t.iq1_step[b] == 16 && r == t.iq1_rank[b] + 1) {
                t.iq1_step[b] = static_cast<uint8_t>(j);
                continue;
            }
            std::abort();  // not the structure the kernels rely on: the grid is wrong
        }
    }
}

Tables make_tables() {
    Tables t{};
    fill_iq2(quant::k_iq2xxs_grid, t.iq2xxs_lo, t.iq2xxs_hi, t.iq2xxs_levels);
    fill_iq2(quant::k_iq2xs_grid, t.iq2xs_lo, t.iq2xs_hi, t.iq2xs_levels);
    fill_iq2(quant::k_iq2s_grid, t.iq2s_lo, t.iq2s_hi, t.iq2s_levels);
    fill_iq3(quant::k_iq3xxs_grid, t.iq3xxs_a, t.iq3xxs_b, t.iq3xxs_levels);
    fill_iq3(quant::k_iq3s_grid, t.iq3s_a, t.iq3s_b, t.iq3s_levels);
    fill_iq1(t);
    for (int x = 0; x < 64; ++x) t.iq1_levels[x] = static_cast<uint8_t>(8 * ((x & 3) + 1) + 1);
    for (int s = 0; s < 128; ++s) t.ksigns[s] = static_cast<uint8_t>(s | (__builtin_popcount(s) & 1) << 7);
    return t;
}

// Built before main (the grids are constant-initialized), so the kernels read it
// with no guard.
const Tables k_tables = make_tables();

// ---- the permutes' constants (byte p of a vector: qword q = p / 8) ----

// IQ2: plane byte 8q + 2l + d holds row 2q + d of group l; the indices come as
// [l][16 rows] of stride bytes (16: u8 indices; 32: IQ2_XS's u16 words, plus: which byte).
constexpr Bytes64 pair_rows_perm(int stride, int plus) {
    Bytes64 b{};
    for (int q = 0; q < 8; ++q)
        for (int l = 0; l < 4; ++l)
            for (int d = 0; d < 2; ++d) b[8 * q + 2 * l + d] = static_cast<uint8_t>(stride * l + (stride / 16) * (2 * q + d) + plus);
    return b;
}
constexpr Bytes64 k_iq2_perm = pair_rows_perm(16, 0);
constexpr Bytes64 k_iq2xs_lo_perm = pair_rows_perm(32, 0), k_iq2xs_hi_perm = pair_rows_perm(32, 1);

// IQ2 operand of group l: output byte 8q + 4d + j = the 2-bit code of element j
// of row 2q + d, at bit 2j of plane byte 8q + 2l + d.
constexpr Bytes64 iq2_ctrl(int l) {
    Bytes64 b{};
    for (int q = 0; q < 8; ++q)
        for (int d = 0; d < 2; ++d)
            for (int j = 0; j < 4; ++j) b[8 * q + 4 * d + j] = static_cast<uint8_t>(8 * (2 * l + d) + 2 * j);
    return b;
}
constexpr Bytes64 k_iq2_ctrl[4] = {iq2_ctrl(0), iq2_ctrl(1), iq2_ctrl(2), iq2_ctrl(3)};

// IQ3, per chunk of 4 grid rows k' (0..3) x 16 rows: the planes' bytes are
// interleaved by vpunpck[lh]bw (within 128-bit lanes) into 16-bit codes; byte p =
// 16m + 8h + 4x + 2e + d of the permuted indices holds row 2 (2m + x) + d of k' =
// 2h + e, so word 2e + d of qword q = 2m + x of the h-th interleave is that code.
constexpr Bytes64 iq3_perm() {
    Bytes64 b{};
    for (int m = 0; m < 4; ++m)
        for (int h = 0; h < 2; ++h)
            for (int x = 0; x < 2; ++x)
                for (int e = 0; e < 2; ++e)
                    for (int d = 0; d < 2; ++d)
                        b[16 * m + 8 * h + 4 * x + 2 * e + d] = static_cast<uint8_t>(16 * (2 * h + e) + 2 * (2 * m + x) + d);
    return b;
}
constexpr Bytes64 k_iq3_perm = iq3_perm();
// The row (0..15) and k' of permuted index byte p (for IQ3_S's ninth index bits).
constexpr int iq3_row(int p) { return k_iq3_perm[p] % 16; }
constexpr int iq3_k(int p) { return k_iq3_perm[p] / 16; }

// IQ3 operand of k' = 2h + e from the h-th interleave: output byte 8q + 4d + j =
// the 3-bit code of element j of row 2q + d, at bit 3j of word 2e + d.
constexpr Bytes64 iq3_ctrl(int e) {
    Bytes64 b{};
    for (int q = 0; q < 8; ++q)
        for (int d = 0; d < 2; ++d)
            for (int j = 0; j < 4; ++j) b[8 * q + 4 * d + j] = static_cast<uint8_t>(16 * (2 * e + d) + 3 * j);
    return b;
}
constexpr Bytes64 k_iq3_ctrl[2] = {iq3_ctrl(0), iq3_ctrl(1)};

// IQ2_XXS / IQ3_XXS: the four 7-bit sign indices of a row's u32 (bits 7l ..), as
// byte l of its lane.
constexpr Bytes64 sign_fields_ctrl() {
    Bytes64 b{};
    for (int i = 0; i < 64; ++i) b[i] = static_cast<uint8_t>(32 * ((i / 4) % 2) + 7 * (i % 4));
    return b;
}
constexpr Bytes64 k_sign_fields_ctrl = sign_fields_ctrl();

// Sign bytes to each output byte of group l: vpshufb (within lanes) of signs at
// byte 4r + l of row r's lane (the XXS formats), vpermb of signs in the permuted
// order (IQ2_XS), vpermb of signs as the file's [l][16 rows] (IQ2_S, IQ3_S).
constexpr Bytes64 spread_rows(int l) {
    Bytes64 b{};
    for (int i = 0; i < 64; ++i) b[i] = static_cast<uint8_t>(4 * ((i % 16) / 4) + l);
    return b;
}
constexpr Bytes64 spread_permuted(int l) {
    Bytes64 b{};
    for (int i = 0; i < 64; ++i) b[i] = static_cast<uint8_t>(8 * (i / 8) + 2 * l + (i / 4) % 2);
    return b;
}
constexpr Bytes64 spread_file(int l) {
    Bytes64 b{};
    for (int i = 0; i < 64; ++i) b[i] = static_cast<uint8_t>(16 * l + i / 4);
    return b;
}
constexpr Bytes64 k_spread_rows[4] = {spread_rows(0), spread_rows(1), spread_rows(2), spread_rows(3)};
constexpr Bytes64 k_spread_permuted[4] = {spread_permuted(0), spread_permuted(1), spread_permuted(2), spread_permuted(3)};
constexpr Bytes64 k_spread_file[4] = {spread_file(0), spread_file(1), spread_file(2), spread_file(3)};

// The qh byte of each permuted index byte's row, and the bit(s) of its index there.
constexpr Bytes64 iq2s_qh_rows() {
    Bytes64 b{};
    for (int p = 0; p < 64; ++p) b[p] = static_cast<uint8_t>(k_iq2_perm[p] % 16);
    return b;
}
constexpr Bytes64 iq2s_qh_bit(int bit) {  // index bit 8 + bit of group l: qh bit 2l + bit
    Bytes64 b{};
    for (int p = 0; p < 64; ++p) b[p] = static_cast<uint8_t>(1 << (2 * (k_iq2_perm[p] / 16) + bit));
    return b;
}
constexpr Bytes64 k_iq2s_qh_rows = iq2s_qh_rows(), k_iq2s_bit8 = iq2s_qh_bit(0), k_iq2s_bit9 = iq2s_qh_bit(1);
constexpr Bytes64 iq3s_qh_rows() {
    Bytes64 b{};
    for (int p = 0; p < 64; ++p) b[p] = static_cast<uint8_t>(iq3_row(p));
    return b;
}
constexpr Bytes64 iq3s_qh_bit(int chunk) {  // index bit 8 of grid row k = 4 chunk + k': qh bit k
    Bytes64 b{};
    for (int p = 0; p < 64; ++p) b[p] = static_cast<uint8_t>(1 << (4 * chunk + iq3_k(p)));
    return b;
}
constexpr Bytes64 k_iq3s_qh_rows = iq3s_qh_rows();
constexpr Bytes64 k_iq3s_bit8[2] = {iq3s_qh_bit(0), iq3s_qh_bit(1)};

// IQ1: the qh bits of rows 2q, 2q + 1 gathered into qword q (bytes 0-3), so that
// vpmultishiftqb can take any row's field from it. IQ1_S: the rows' u16 words
// (file bytes 4q .. 4q + 3); IQ1_M: their bytes of both halves (16 j + 2q + d at
// byte 2j + d).
constexpr Bytes64 iq1_qh_gather(bool m) {
    Bytes64 b{};
    for (int q = 0; q < 8; ++q)
        for (int i = 0; i < 8; ++i) b[8 * q + i] = static_cast<uint8_t>(m ? 16 * ((i / 2) % 2) + 2 * q + i % 2 : 4 * q + i % 4);
    return b;
}
// The bit (of qword q after iq1_qh_gather) where row 2q + d's index bits 8-10 of
// group l start (IQ1_M: its nibble, whose bit 3 is that group's shift sign).
constexpr int iq1_field_bit(bool m, int l, int d) { return m ? 8 * (2 * (l / 2) + d) + 4 * (l % 2) : 16 * d + 3 * l; }
// Index bits 8-10 of permuted index byte 8q + 2l + d (k_iq2_perm's order).
constexpr Bytes64 iq1_high_ctrl(bool m) {
    Bytes64 b{};
    for (int q = 0; q < 8; ++q)
        for (int l = 0; l < 4; ++l)
            for (int d = 0; d < 2; ++d) b[8 * q + 2 * l + d] = static_cast<uint8_t>(iq1_field_bit(m, l, d));
    return b;
}
// The shift's sign of row 2q + d, group l, at bit 0 of output byte 8q + 4d + j.
constexpr Bytes64 iq1_minus_ctrl(bool m, int l) {
    Bytes64 b{};
    for (int q = 0; q < 8; ++q)
        for (int d = 0; d < 2; ++d)
            for (int j = 0; j < 4; ++j) b[8 * q + 4 * d + j] = static_cast<uint8_t>(m ? iq1_field_bit(m, l, d) + 3 : 16 * d + 15);
    return b;
}
constexpr Bytes64 k_iq1s_qh_gather = iq1_qh_gather(false), k_iq1m_qh_gather = iq1_qh_gather(true);
constexpr Bytes64 k_iq1s_high_ctrl = iq1_high_ctrl(false), k_iq1m_high_ctrl = iq1_high_ctrl(true);
constexpr Bytes64 k_iq1s_minus_ctrl = iq1_minus_ctrl(false, 0);
constexpr Bytes64 k_iq1m_minus_ctrl[4] = {iq1_minus_ctrl(true, 0), iq1_minus_ctrl(true, 1), iq1_minus_ctrl(true, 2),
                                          iq1_minus_ctrl(true, 3)};

// ---- vector helpers ----

KILN_TARGET_AVX512VBMI inline __m512i load64(const uint8_t* p) { return _mm512_loadu_si512(p); }
KILN_TARGET_AVX512VBMI inline __m512i vec(const Bytes64& b) { return _mm512_loadu_si512(b.data()); }
KILN_TARGET_AVX512VBMI inline __m512i bcast16(const uint8_t* p) {
    return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
KILN_TARGET_AVX512VBMI inline __m512i u8x16(const uint8_t* p) { return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))); }
KILN_TARGET_AVX512VBMI inline __m512i u16x16(const uint8_t* p) {
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// 128 bytes of table t at idx's low 7 bits.
KILN_TARGET_AVX512VBMI inline __m512i lookup128(const uint8_t* t, __m512i idx) {
    return _mm512_permutex2var_epi8(load64(t), idx, load64(t + 64));
}
// Table t of 256 << high.size() bytes at idx (bit 7: hi7) and the index bits above it (high[0]: bit 8, ...).
KILN_TARGET_AVX512VBMI inline __m512i lookup256(const uint8_t* t, __m512i idx, __mmask64 hi7) {
    return _mm512_mask_blend_epi8(hi7, lookup128(t, idx), lookup128(t + 128, idx));
}
KILN_TARGET_AVX512VBMI inline __m512i lookup512(const uint8_t* t, __m512i idx, __mmask64 hi7, __mmask64 hi8) {
    return _mm512_mask_blend_epi8(hi8, lookup256(t, idx, hi7), lookup256(t + 256, idx, hi7));
}
KILN_TARGET_AVX512VBMI inline __m512i lookup1024(const uint8_t* t, __m512i idx, __mmask64 hi7, __mmask64 hi8, __mmask64 hi9) {
    return _mm512_mask_blend_epi8(hi9, lookup512(t, idx, hi7, hi8), lookup512(t + 512, idx, hi7, hi8));
}

KILN_TARGET_AVX512VBMI inline __m512i lookup2048(const uint8_t* t, __m512i idx, __mmask64 hi7, __mmask64 hi8, __mmask64 hi9,
                                                __mmask64 hi10) {
    return _mm512_mask_blend_epi8(hi10, lookup1024(t, idx, hi7, hi8, hi9), lookup1024(t + 1024, idx, hi7, hi8, hi9));
}

// The sign byte of each output byte's row and group (spread) as byte masks of the
// low (bits 0-3) and high (4-7) operands.
KILN_TARGET_AVX512VBMI inline void sign_masks(__m512i spread, __mmask64& k_lo, __mmask64& k_hi) {
    k_lo = _mm512_test_epi8_mask(spread, _mm512_set1_epi32(0x08040201));
    k_hi = _mm512_test_epi8_mask(spread, _mm512_set1_epi32(static_cast<int>(0x80402010u)));
}

// The operand of the codes that ctrl picks from codes: level + 64, and 64 - level where negative.
KILN_TARGET_AVX512VBMI inline __m512i operand(__m512i ctrl, __m512i codes, __m512i levels, __mmask64 neg) {
    const __m512i v = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(ctrl, codes), levels);
    return _mm512_mask_sub_epi8(v, neg, _mm512_set1_epi8(static_cast<char>(128)), v);
}

// The eight IQ2 operands from the planes' codes (lo, hi; permuted order) and the
// sign bytes, spread to group l's output bytes by spread(l).
template <typename Spread>
KILN_TARGET_AVX512VBMI inline void iq2_operands(__m512i lo, __m512i hi, const uint8_t* levels, Spread&& spread, __m512i (&ops)[8]) {
    const __m512i lv = load64(levels);
    for (int l = 0; l < 4; ++l) {
        __mmask64 klo, khi;
        sign_masks(spread(l), klo, khi);
        const __m512i ctrl = vec(k_iq2_ctrl[l]);
        ops[2 * l] = operand(ctrl, lo, lv, klo);
        ops[2 * l + 1] = operand(ctrl, hi, lv, khi);
    }
}

// One chunk c (grid rows 4c .. 4c + 3) of IQ3 operands from the planes' codes
// (a, b; permuted order); groups 2c, 2c + 1.
template <typename Spread>
KILN_TARGET_AVX512VBMI inline void iq3_chunk(int c, __m512i a, __m512i b, __m512i lv, Spread&& spread, __m512i (&ops)[8]) {
    const __m512i words[2] = {_mm512_unpacklo_epi8(a, b), _mm512_unpackhi_epi8(a, b)};
    for (int h = 0; h < 2; ++h) {
        const int l = 2 * c + h;
        __mmask64 klo, khi;
        sign_masks(spread(l), klo, khi);
        ops[2 * l] = operand(vec(k_iq3_ctrl[0]), words[h], lv, klo);
        ops[2 * l + 1] = operand(vec(k_iq3_ctrl[1]), words[h], lv, khi);
    }
}

// The XXS formats' signs: byte 4r + l of row r's lane, from the u32s at aux.
KILN_TARGET_AVX512VBMI inline __m512i xxs_signs(const uint8_t* aux) {
    return lookup128(k_tables.ksigns, _mm512_multishift_epi64_epi8(vec(k_sign_fields_ctrl), load64(aux)));
}

// 2 s + 1 of each lane's 4- or 3-bit field s.
KILN_TARGET_AVX512VBMI inline __m512i odd_scale(__m512i field, int shift, int bits) {
    const __m512i s = _mm512_and_si512(_mm512_srli_epi32(field, static_cast<unsigned>(shift)), _mm512_set1_epi32((1 << bits) - 1));
    return _mm512_add_epi32(_mm512_slli_epi32(s, 1), _mm512_set1_epi32(1));
}

// ---- the formats (avx512_iq_tiles.h's interface, with operands) ----

struct Iq2xxs {
    static constexpr GgmlType k_type = GgmlType::IQ2_XXS;
    static constexpr int k_offset = 64;
    static constexpr bool k_per16 = false;
    static KILN_TARGET_AVX512VBMI __m512i scale(const uint8_t* w, int ib, int) { return odd_scale(load64(w + L::iq2xxs_aux(ib)), 28, 4); }
    static KILN_TARGET_AVX512VBMI void operands(const uint8_t* w, int ib, __m512i (&ops)[8]) {
        const __m512i idx = _mm512_permutexvar_epi8(vec(k_iq2_perm), load64(w + L::iq2xxs_idx(ib, 0)));
        const __mmask64 hi7 = _mm512_movepi8_mask(idx);
        const __m512i signs = xxs_signs(w + L::iq2xxs_aux(ib));
        iq2_operands(lookup256(k_tables.iq2xxs_lo, idx, hi7), lookup256(k_tables.iq2xxs_hi, idx, hi7), k_tables.iq2xxs_levels,
                     [&](int l) KILN_TARGET_AVX512VBMI { return _mm512_shuffle_epi8(signs, vec(k_spread_rows[l])); }, ops);
    }
};

struct Iq2xs {
    static constexpr GgmlType k_type = GgmlType::IQ2_XS;
    static constexpr int k_offset = 64;
    static constexpr bool k_per16 = true;
    static KILN_TARGET_AVX512VBMI __m512i scale(const uint8_t* w, int ib, int h) { return odd_scale(u8x16(w + L::iq2xs_scales(ib)), 4 * h, 4); }
    static KILN_TARGET_AVX512VBMI void operands(const uint8_t* w, int ib, __m512i (&ops)[8]) {
        // The u16 words: index bits 0-8, sign index 9-15.
        const __m512i q0 = load64(w + L::iq2xs_q(ib, 0)), q1 = load64(w + L::iq2xs_q(ib, 2));
        const __m512i idx = _mm512_permutex2var_epi8(q0, vec(k_iq2xs_lo_perm), q1);
        const __m512i high = _mm512_permutex2var_epi8(q0, vec(k_iq2xs_hi_perm), q1);
        const __mmask64 hi7 = _mm512_movepi8_mask(idx), hi8 = _mm512_test_epi8_mask(high, _mm512_set1_epi8(1));
        const __m512i signs = lookup128(k_tables.ksigns, _mm512_srli_epi16(high, 1));  // bit 7 of each index byte unused
        iq2_operands(lookup512(k_tables.iq2xs_lo, idx, hi7, hi8), lookup512(k_tables.iq2xs_hi, idx, hi7, hi8), k_tables.iq2xs_levels,
                     [&](int l) KILN_TARGET_AVX512VBMI { return _mm512_permutexvar_epi8(vec(k_spread_permuted[l]), signs); }, ops);
    }
};

struct Iq2s {
    static constexpr GgmlType k_type = GgmlType::IQ2_S;
    static constexpr int k_offset = 64;
    static constexpr bool k_per16 = true;
    static KILN_TARGET_AVX512VBMI __m512i scale(const uint8_t* w, int ib, int h) { return odd_scale(u8x16(w + L::iq2s_scales(ib)), 4 * h, 4); }
    static KILN_TARGET_AVX512VBMI void operands(const uint8_t* w, int ib, __m512i (&ops)[8]) {
        const __m512i idx = _mm512_permutexvar_epi8(vec(k_iq2_perm), load64(w + L::iq2s_qs(ib, 0)));
        const __m512i qh = _mm512_permutexvar_epi8(vec(k_iq2s_qh_rows), bcast16(w + L::iq2s_qh(ib)));
        const __mmask64 hi7 = _mm512_movepi8_mask(idx), hi8 = _mm512_test_epi8_mask(qh, vec(k_iq2s_bit8)),
                        hi9 = _mm512_test_epi8_mask(qh, vec(k_iq2s_bit9));
        const __m512i signs = load64(w + L::iq2s_signs(ib, 0));
        iq2_operands(lookup1024(k_tables.iq2s_lo, idx, hi7, hi8, hi9), lookup1024(k_tables.iq2s_hi, idx, hi7, hi8, hi9),
                     k_tables.iq2s_levels,
                     [&](int l) KILN_TARGET_AVX512VBMI { return _mm512_permutexvar_epi8(vec(k_spread_file[l]), signs); }, ops);
    }
};

struct Iq3xxs {
    static constexpr GgmlType k_type = GgmlType::IQ3_XXS;
    static constexpr int k_offset = 64;
    static constexpr bool k_per16 = false;
    static KILN_TARGET_AVX512VBMI __m512i scale(const uint8_t* w, int ib, int) { return odd_scale(load64(w + L::iq3xxs_aux(ib)), 28, 4); }
    static KILN_TARGET_AVX512VBMI void operands(const uint8_t* w, int ib, __m512i (&ops)[8]) {
        const __m512i signs = xxs_signs(w + L::iq3xxs_aux(ib));
        const __m512i lv = load64(k_tables.iq3xxs_levels);
        for (int c = 0; c < 2; ++c) {
            const __m512i idx = _mm512_permutexvar_epi8(vec(k_iq3_perm), load64(w + L::iq3xxs_qs(ib, 4 * c)));
            const __mmask64 hi7 = _mm512_movepi8_mask(idx);
            iq3_chunk(c, lookup256(k_tables.iq3xxs_a, idx, hi7), lookup256(k_tables.iq3xxs_b, idx, hi7), lv,
                      [&](int l) KILN_TARGET_AVX512VBMI { return _mm512_shuffle_epi8(signs, vec(k_spread_rows[l])); }, ops);
        }
    }
};

struct Iq3s {
    static constexpr GgmlType k_type = GgmlType::IQ3_S;
    static constexpr int k_offset = 64;
    static constexpr bool k_per16 = false;
    static KILN_TARGET_AVX512VBMI __m512i scale(const uint8_t* w, int ib, int) {
        return odd_scale(u8x16(w + L::iq3s_scales(ib / 2)), 4 * (ib % 2), 4);
    }
    static KILN_TARGET_AVX512VBMI void operands(const uint8_t* w, int ib, __m512i (&ops)[8]) {
        const __m512i signs = load64(w + L::iq3s_signs(ib, 0));
        const __m512i qh = _mm512_permutexvar_epi8(vec(k_iq3s_qh_rows), bcast16(w + L::iq3s_qh(ib)));
        const __m512i lv = load64(k_tables.iq3s_levels);
        for (int c = 0; c < 2; ++c) {
            const __m512i idx = _mm512_permutexvar_epi8(vec(k_iq3_perm), load64(w + L::iq3s_qs(ib, 4 * c)));
            const __mmask64 hi7 = _mm512_movepi8_mask(idx), hi8 = _mm512_test_epi8_mask(qh, vec(k_iq3s_bit8[c]));
            iq3_chunk(c, lookup512(k_tables.iq3s_a, idx, hi7, hi8), lookup512(k_tables.iq3s_b, idx, hi7, hi8), lv,
                      [&](int l) KILN_TARGET_AVX512VBMI { return _mm512_permutexvar_epi8(vec(k_spread_file[l]), signs); }, ops);
        }
    }
};

// IQ1_S / IQ1_M: the eight operands of sub-block ib from its index low bytes (the
// file's [l][16 rows] at qs) and its qh bits gathered per qword (iq1_qh_gather).
// The levels 8 (g + 2) +- 1 (the gathers', iq1_levels in avx512_iq_grid.cpp).
template <bool M>
KILN_TARGET_AVX512VBMI inline void iq1_operands(const uint8_t* qs, __m512i qh, __m512i (&ops)[8]) {
    const __m512i idx = _mm512_permutexvar_epi8(vec(k_iq2_perm), load64(qs));
    const __m512i high = _mm512_multishift_epi64_epi8(vec(M ? k_iq1m_high_ctrl : k_iq1s_high_ctrl), qh);
    const __mmask64 hi7 = _mm512_movepi8_mask(idx), hi8 = _mm512_test_epi8_mask(high, _mm512_set1_epi8(1)),
                    hi9 = _mm512_test_epi8_mask(high, _mm512_set1_epi8(2)), hi10 = _mm512_test_epi8_mask(high, _mm512_set1_epi8(4));
    const __m512i lo = lookup2048(k_tables.iq1_lo, idx, hi7, hi8, hi9, hi10);
    // Elements 4-7 by their rank (Tables::iq1_rank): index bits 4-10 pick the run of 16.
    const __m512i nibble = _mm512_set1_epi8(15);
    const __m512i run = _mm512_ternarylogic_epi32(_mm512_srli_epi16(idx, 4), nibble,
                                                  _mm512_slli_epi16(_mm512_and_si512(high, _mm512_set1_epi8(7)), 4), 0xEA);  // (a & b) | c
    const __m512i rank = lookup128(k_tables.iq1_rank, run);
    const __mmask64 past = _mm512_cmpge_epu8_mask(_mm512_and_si512(idx, nibble), lookup128(k_tables.iq1_step, run));
    const __m512i hi = lookup128(k_tables.iq1_hi_codes, _mm512_mask_add_epi8(rank, past, rank, _mm512_set1_epi8(1)));
    const __m512i lv = load64(k_tables.iq1_levels), one = _mm512_set1_epi8(1), two = _mm512_set1_epi8(2);
    __mmask64 minus = _mm512_test_epi8_mask(_mm512_multishift_epi64_epi8(vec(k_iq1s_minus_ctrl), qh), one);
    for (int l = 0; l < 4; ++l) {
        if constexpr (M) minus = _mm512_test_epi8_mask(_mm512_multishift_epi64_epi8(vec(k_iq1m_minus_ctrl[l]), qh), one);
        const __m512i ctrl = vec(k_iq2_ctrl[l]);
        const __m512i vlo = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(ctrl, lo), lv);
        const __m512i vhi = _mm512_permutexvar_epi8(_mm512_multishift_epi64_epi8(ctrl, hi), lv);
        ops[2 * l] = _mm512_mask_sub_epi8(vlo, minus, vlo, two);
        ops[2 * l + 1] = _mm512_mask_sub_epi8(vhi, minus, vhi, two);
    }
}

// The qh field of 32 bytes at p, gathered per qword (iq1_qh_gather).
KILN_TARGET_AVX512VBMI inline __m512i iq1_qh(const uint8_t* p, const Bytes64& gather) {
    return _mm512_permutexvar_epi8(vec(gather), _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p))));
}

struct Iq1s {
    static constexpr GgmlType k_type = GgmlType::IQ1_S;
    static constexpr int k_offset = 16;
    static constexpr bool k_per16 = false;
    static KILN_TARGET_AVX512VBMI __m512i scale(const uint8_t* w, int ib, int) { return odd_scale(u16x16(w + L::iq1s_qh(ib)), 12, 3); }
    static KILN_TARGET_AVX512VBMI void operands(const uint8_t* w, int ib, __m512i (&ops)[8]) {
        iq1_operands<false>(w + L::iq1s_qs(ib, 0), iq1_qh(w + L::iq1s_qh(ib), k_iq1s_qh_gather), ops);
    }
};

struct Iq1m {
    static constexpr GgmlType k_type = GgmlType::IQ1_M;
    static constexpr int k_offset = 16;
    static constexpr bool k_per16 = true;
    static KILN_TARGET_AVX512VBMI __m512i scale(const uint8_t* w, int ib, int h) {
        return odd_scale(u16x16(w + L::iq1m_scales(ib / 2)), 6 * (ib % 2) + 3 * h, 3);
    }
    static KILN_TARGET_AVX512VBMI void operands(const uint8_t* w, int ib, __m512i (&ops)[8]) {
        iq1_operands<true>(w + L::iq1m_qs(ib, 0), iq1_qh(w + L::iq1m_qh(ib, 0), k_iq1m_qh_gather), ops);
    }
};

#define KILN_IQ_TARGET KILN_TARGET_AVX512VBMI
#include "compute/kernels/avx512_iq_tiles.h"
#undef KILN_IQ_TARGET

}  // namespace

void gemm_iq2_xxs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq2xxs>(w, a, p0, p1, y, ldy);
}
void gemm_iq2_xs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq2xs>(w, a, p0, p1, y, ldy);
}
void gemm_iq2_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq2s>(w, a, p0, p1, y, ldy);
}
void gemm_iq3_xxs(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq3xxs>(w, a, p0, p1, y, ldy);
}
void gemm_iq3_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq3s>(w, a, p0, p1, y, ldy);
}
void gemm_iq1_s(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq1s>(w, a, p0, p1, y, ldy);
}
void gemm_iq1_m(const PackedMatrix& w, const ActPack& a, int64_t p0, int64_t p1, float* y, int64_t ldy) {
    iq_gemm<Iq1m>(w, a, p0, p1, y, ldy);
}

}  // namespace kiln::avx512::vbmi

#endif  // KILN_HAVE_X86_KERNELS
