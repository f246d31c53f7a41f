// Repacking of weight matrices into the panel layouts of layout.h, done once at
// load. Plain byte shuffling, no arithmetic: the packed bytes hold exactly the
// values of the file's blocks, only in another order.
#include "compute/kernels/packing.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "compute/kernels/iq_grid_layout.h"
#include "kiln/error.h"
#include "quant/blocks.h"

namespace kiln {

namespace {

using quant::load_u32;

// Writes the packed block of 16 rows for block index b; `rows[i]` is row i's
// source block (nullptr for a padding row, which packs as zeros).
using PackBlockFn = void (*)(const uint8_t* const* rows, uint8_t* dst);

void put_f16_lanes(const uint8_t* const* rows, int field, uint8_t* dst) {
    for (int i = 0; i < k_panel_rows; ++i)
        if (rows[i]) std::memcpy(dst + 2 * i, rows[i] + field, 2);
}

// chunk c, lane i = bytes [4c, 4c+4) of row i's `qs` field.
void put_chunks(const uint8_t* const* rows, int field, int n_chunks, uint8_t* dst) {
    for (int c = 0; c < n_chunks; ++c)
        for (int i = 0; i < k_panel_rows; ++i)
            if (rows[i]) std::memcpy(dst + k_chunk_bytes * c + 4 * i, rows[i] + field + 4 * c, 4);
}

// The 8 fifth-bit masks of a legacy 5-bit block (qh at `field`).
void put_legacy_masks(const uint8_t* const* rows, int field, uint8_t* dst) {
    for (int c = 0; c < 4; ++c)
        for (int h = 0; h < 2; ++h) {
            uint64_t mask = 0;
            for (int i = 0; i < k_panel_rows; ++i) {
                if (!rows[i]) continue;
                const uint32_t qh = load_u32(rows[i] + field);
                for (int j = 0; j < 4; ++j) mask |= static_cast<uint64_t>((qh >> (4 * c + j + 16 * h)) & 1) << (4 * i + j);
            }
            std::memcpy(dst + 8 * (2 * c + h), &mask, 8);
        }
}

void pack_q4_0(const uint8_t* const* rows, uint8_t* dst) {
    put_f16_lanes(rows, 0, dst);
    put_chunks(rows, 2, 4, dst + 32);
}

void pack_q4_1(const uint8_t* const* rows, uint8_t* dst) {
    put_f16_lanes(rows, 0, dst);
    put_f16_lanes(rows, 2, dst + 32);
    put_chunks(rows, 4, 4, dst + 64);
}

void pack_q5_0(const uint8_t* const* rows, uint8_t* dst) {
    put_f16_lanes(rows, 0, dst);
    put_legacy_masks(rows, 2, dst + 32);
    put_chunks(rows, 6, 4, dst + 96);
}

void pack_q5_1(const uint8_t* const* rows, uint8_t* dst) {
    put_f16_lanes(rows, 0, dst);
    put_f16_lanes(rows, 2, dst + 32);
    put_legacy_masks(rows, 4, dst + 64);
    put_chunks(rows, 8, 4, dst + 128);
}

void pack_q8_0(const uint8_t* const* rows, uint8_t* dst) {
    put_f16_lanes(rows, 0, dst);
    put_chunks(rows, 2, 8, dst + 32);
}

// Scale and min of sub-block j of a Q4_K / Q5_K block (12 packed bytes).
void k4_scale_min(const uint8_t* q, int j, uint8_t& sc, uint8_t& m) {
    if (j < 4) {
        sc = q[j] & 63;
        m = q[j + 4] & 63;
    } else {
        sc = static_cast<uint8_t>((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        m = static_cast<uint8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

// d, dmin, sc[8][16], m[4][16][2] of Q4_K / Q5_K (block fields at 0, 2, 4).
void put_k4_header(const uint8_t* const* rows, uint8_t* dst) {
    put_f16_lanes(rows, 0, dst);
    put_f16_lanes(rows, 2, dst + 32);
    for (int i = 0; i < k_panel_rows; ++i) {
        if (!rows[i]) continue;
        for (int sb = 0; sb < 8; ++sb) {
            uint8_t sc, m;
            k4_scale_min(rows[i] + 4, sb, sc, m);
            dst[64 + 16 * sb + i] = sc;
            dst[192 + 32 * (sb / 2) + 2 * i + (sb % 2)] = m;
        }
    }
}

// 4 pairs x 8 nibble chunks of a 128-byte qs field.
void put_k4_chunks(const uint8_t* const* rows, int field, uint8_t* dst) {
    for (int p = 0; p < 4; ++p) put_chunks(rows, field + 32 * p, 8, dst + 512 * p);
}

void pack_q4_K(const uint8_t* const* rows, uint8_t* dst) {
    put_k4_header(rows, dst);
    put_k4_chunks(rows, 16, dst + 320);
}

// Q5_K's fifth bits as bit planes (PanelLayout::BitPlanes): pair p, plane 2e + h,
// byte 4i + j bit c = bit 2p + e of qh[4c + j] of row 8h + i.
void pack_q5_K_planes(const uint8_t* const* rows, uint8_t* dst) {
    put_k4_header(rows, dst);
    for (int i = 0; i < k_panel_rows; ++i) {
        if (!rows[i]) continue;
        const uint8_t* qh = rows[i] + 16;
        for (int sb = 0; sb < 8; ++sb) {
            uint8_t* plane = dst + 320 + 128 * (sb / 2) + 32 * (2 * (sb % 2) + i / 8) + 4 * (i % 8);
            for (int j = 0; j < 4; ++j) {
                uint8_t bits = 0;
                for (int c = 0; c < 8; ++c) bits = static_cast<uint8_t>(bits | (((qh[4 * c + j] >> sb) & 1) << c));
                plane[j] = bits;
            }
        }
    }
    put_k4_chunks(rows, 48, dst + 832);
}

void pack_q5_K(const uint8_t* const* rows, uint8_t* dst) {
    put_k4_header(rows, dst);
    for (int sb = 0; sb < 8; ++sb)
        for (int c = 0; c < 8; ++c) {
            uint64_t mask = 0;
            for (int i = 0; i < k_panel_rows; ++i) {
                if (!rows[i]) continue;
                const uint8_t* qh = rows[i] + 16;
                for (int j = 0; j < 4; ++j) mask |= static_cast<uint64_t>((qh[4 * c + j] >> sb) & 1) << (4 * i + j);
            }
            std::memcpy(dst + 320 + 8 * (8 * sb + c), &mask, 8);
        }
    put_k4_chunks(rows, 48, dst + 832);
}

// Q6_K (file: ql 0, qh 128, scales 192, d 208). Element e's 6-bit level is the
// nibble 4 (k / 2) of ql byte 64 h + 32 (k % 2) + l and bits 2k of qh byte 128 +
// 32 h + l (h = e / 128, k = (e % 128) / 32, l = e % 32). Per pair s of
// sub-blocks (elements 32 s ..), lane i byte j: chunk k's low nibbles (element
// 32 s + 4k + j) and high ones (+16) at 288 + 384 s + 64 k, the fifth and sixth
// bits at + 256 (low) and + 320 (high), bits 2k. A lane's four bytes at once:
// l runs over 4k + j, so a u32 load gives j = 0..3.
void pack_q6_K(const uint8_t* const* rows, uint8_t* dst) {
    put_f16_lanes(rows, 208, dst);
    for (int i = 0; i < k_panel_rows; ++i) {
        if (!rows[i]) continue;
        const uint8_t* b = rows[i];
        for (int sb = 0; sb < 16; ++sb) dst[32 + 32 * (sb / 2) + 2 * i + (sb % 2)] = b[192 + sb];
        for (int s = 0; s < 8; ++s) {
            const int h = s / 4, k = s % 4;
            const uint8_t* ql = b + 64 * h + 32 * (k % 2);
            const uint8_t* qh = b + 128 + 32 * h;
            uint8_t* pair = dst + 288 + 384 * s;
            uint32_t top_lo = 0, top_hi = 0;
            for (int c = 0; c < 4; ++c) {
                const uint32_t lo = (load_u32(ql + 4 * c) >> (4 * (k / 2))) & 0x0F0F0F0Fu;
                const uint32_t hi = (load_u32(ql + 16 + 4 * c) >> (4 * (k / 2))) & 0x0F0F0F0Fu;
                const uint32_t nibbles = lo | (hi << 4);
                std::memcpy(pair + 64 * c + 4 * i, &nibbles, 4);
                top_lo |= ((load_u32(qh + 4 * c) >> (2 * k)) & 0x03030303u) << (2 * c);
                top_hi |= ((load_u32(qh + 16 + 4 * c) >> (2 * k)) & 0x03030303u) << (2 * c);
            }
            std::memcpy(pair + 256 + 4 * i, &top_lo, 4);
            std::memcpy(pair + 320 + 4 * i, &top_hi, 4);
        }
    }
}

// 256-element blocks whose 64 qs bytes pack elements l, l+32, l+64, l+96 of each
// 128-element half in byte l, 2 bits each (Q2_K, Q3_K, TQ2_0): sub-block sb's 16
// elements are qs bytes 32 (sb / 8) + 16 (sb % 2) + 0..15, bits 2 ((sb % 8) / 2).
constexpr int k2_qs_byte(int sb) { return 32 * (sb / 8) + 16 * (sb % 2); }
constexpr int k2_qs_shift(int sb) { return 2 * ((sb % 8) / 2); }

// 16 sub-block chunks of 2-bit levels from the qs at byte qs_offset of each row:
// sub-block sb at dst + 64 sb, lane i byte j bits 2k..2k+1 = the level of element
// 16 sb + 4k + j; a lane's four bytes at once (u32 shifts: the mask keeps each
// byte's own bits).
void put_k2_chunks(const uint8_t* const* rows, int qs_offset, uint8_t* dst) {
    for (int i = 0; i < k_panel_rows; ++i) {
        if (!rows[i]) continue;
        const uint8_t* qs = rows[i] + qs_offset;
        for (int sb = 0; sb < 16; ++sb) {
            uint32_t lane = 0;
            for (int k = 0; k < 4; ++k) lane |= ((load_u32(qs + k2_qs_byte(sb) + 4 * k) >> k2_qs_shift(sb)) & 0x03030303u) << (2 * k);
            std::memcpy(dst + 64 * sb + 4 * i, &lane, 4);
        }
    }
}

// Q2_K (file: scales 0, qs 16, d 80, dmin 82).
void pack_q2_K(const uint8_t* const* rows, uint8_t* dst) {
    put_f16_lanes(rows, 80, dst);
    put_f16_lanes(rows, 82, dst + 32);
    for (int i = 0; i < k_panel_rows; ++i)
        if (rows[i])
            for (int sb = 0; sb < 16; ++sb) dst[64 + 32 * (sb / 2) + 2 * i + (sb % 2)] = rows[i][sb];
    put_k2_chunks(rows, 16, dst + 320);
}

// Q3_K's signed 6-bit scale of sub-block j (12 packed bytes), as the reference reads it.
int q3_scale(const uint8_t* scales, int j) {
    const int low = j < 8 ? (scales[j] & 0xF) : (scales[j - 8] >> 4);
    const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    return (low | (high << 4)) - 32;
}

// Q3_K (file: hmask 0, qs 32, scales 96, d 108): the low 2 bits of the unsigned
// 3-bit levels (q2 + 4 high = value + 4) as put_k2_chunks, the high bits of
// sub-blocks 2s, 2s + 1 at 1312 + 64 s, lane i byte j bit k + 4 (sb % 2) = that of
// element 16 sb + 4k + j: hmask byte e % 32, bit 4 (e / 128) + (e % 128) / 32.
void pack_q3_K(const uint8_t* const* rows, uint8_t* dst) {
    put_f16_lanes(rows, 108, dst);
    for (int i = 0; i < k_panel_rows; ++i) {
        if (!rows[i]) continue;
        for (int sb = 0; sb < 16; ++sb)
            dst[32 + 32 * (sb / 2) + 2 * i + (sb % 2)] = static_cast<uint8_t>(static_cast<int8_t>(q3_scale(rows[i] + 96, sb)));
        for (int s = 0; s < 8; ++s) {
            // Both sub-blocks of the pair take the same hmask bit (sb / 8 = s / 4,
            // (sb % 8) / 2 = s % 4); the odd one reads the bytes 16 on.
            const int shift = 4 * (s / 4) + s % 4;
            uint32_t lane = 0;
            for (int odd = 0; odd < 2; ++odd) {
                for (int k = 0; k < 4; ++k)
                    lane |= ((load_u32(rows[i] + 16 * odd + 4 * k) >> shift) & 0x01010101u) << (k + 4 * odd);
            }
            std::memcpy(dst + 1312 + 64 * s + 4 * i, &lane, 4);
        }
    }
    put_k2_chunks(rows, 32, dst + 288);
}

// TQ2_0 (file: qs 0, d 64).
void pack_tq2_0(const uint8_t* const* rows, uint8_t* dst) {
    put_f16_lanes(rows, 64, dst);
    put_k2_chunks(rows, 0, dst + 32);
}

// TQ1_0 (file: qs 0..47, qh 48..51, d 52): d[16] | 13 chunks (lane i = bytes
// 4c .. 4c + 3 of row i's qs + qh), the file's size. Each byte holds 5 (qh: 4)
// base-3 digits, the elements 32n + j (qs 0..31), 160 + 16n + j (qs 32..47),
// 240 + 4n + j (qh) of dequantize_row_tq1_0; the kernels take them apart.
void pack_tq1_0(const uint8_t* const* rows, uint8_t* dst) {
    put_f16_lanes(rows, 52, dst);
    put_chunks(rows, 0, 13, dst + 32);
}

// IQ4_XS (file: d 0, scales_h 2, scales_l 4, qs 8): d[16] | signed scale pairs
// [4][16][2] | per sub-block of 32, 4 nibble chunks as IQ4_NL's.
void pack_iq4_xs(const uint8_t* const* rows, uint8_t* dst) {
    put_f16_lanes(rows, 0, dst);
    for (int i = 0; i < k_panel_rows; ++i) {
        if (!rows[i]) continue;
        const int scales_h = rows[i][2] | (rows[i][3] << 8);
        for (int sb = 0; sb < 8; ++sb) {
            const int low = (rows[i][4 + sb / 2] >> (4 * (sb % 2))) & 0xF;
            const int high = (scales_h >> (2 * sb)) & 3;
            dst[32 + 32 * (sb / 2) + 2 * i + (sb % 2)] = static_cast<uint8_t>(static_cast<int8_t>((low | (high << 4)) - 32));
        }
    }
    for (int sb = 0; sb < 8; ++sb) put_chunks(rows, 8 + 16 * sb, 4, dst + 160 + 256 * sb);
}

// MXFP4 (file: e 0, qs 1): e[16] | 4 nibble chunks, as Q4_0's.
void pack_mxfp4(const uint8_t* const* rows, uint8_t* dst) {
    for (int i = 0; i < k_panel_rows; ++i)
        if (rows[i]) dst[i] = rows[i][0];
    put_chunks(rows, 1, 4, dst + 16);
}

// ---- grid i-quants (iq_grid_layout.h): the file's fields, rows side by side ----

// Row i's `n` bytes at `field` to dst + n i.
void put_lanes(const uint8_t* const* rows, int field, int n, uint8_t* dst) {
    for (int i = 0; i < k_panel_rows; ++i)
        if (rows[i]) std::memcpy(dst + n * i, rows[i] + field, static_cast<size_t>(n));
}

using G = IqGridLayout;

void pack_iq2_xxs(const uint8_t* const* rows, uint8_t* dst) {  // file: d 0, per ib 4 index bytes + u32 at 2 + 8 ib
    put_lanes(rows, 0, 2, dst);
    for (int ib = 0; ib < 8; ++ib) {
        for (int l = 0; l < 4; ++l) put_lanes(rows, 2 + 8 * ib + l, 1, dst + G::iq2xxs_idx(ib, l));
        put_lanes(rows, 2 + 8 * ib + 4, 4, dst + G::iq2xxs_aux(ib));
    }
}

void pack_iq2_xs(const uint8_t* const* rows, uint8_t* dst) {  // file: d 0, u16 qs at 2, scales at 66
    put_lanes(rows, 0, 2, dst);
    for (int ib = 0; ib < 8; ++ib) {
        for (int l = 0; l < 4; ++l) put_lanes(rows, 2 + 2 * (4 * ib + l), 2, dst + G::iq2xs_q(ib, l));
        put_lanes(rows, 66 + ib, 1, dst + G::iq2xs_scales(ib));
    }
}

void pack_iq2_s(const uint8_t* const* rows, uint8_t* dst) {  // file: d 0, qs 2, signs 34, qh 66, scales 74
    put_lanes(rows, 0, 2, dst);
    for (int ib = 0; ib < 8; ++ib) {
        for (int l = 0; l < 4; ++l) {
            put_lanes(rows, 2 + 4 * ib + l, 1, dst + G::iq2s_qs(ib, l));
            put_lanes(rows, 34 + 4 * ib + l, 1, dst + G::iq2s_signs(ib, l));
        }
        put_lanes(rows, 66 + ib, 1, dst + G::iq2s_qh(ib));
        put_lanes(rows, 74 + ib, 1, dst + G::iq2s_scales(ib));
    }
}

void pack_iq3_xxs(const uint8_t* const* rows, uint8_t* dst) {  // file: d 0, qs 2, scales_signs 66
    put_lanes(rows, 0, 2, dst);
    for (int ib = 0; ib < 8; ++ib) {
        for (int k = 0; k < 8; ++k) put_lanes(rows, 2 + 8 * ib + k, 1, dst + G::iq3xxs_qs(ib, k));
        put_lanes(rows, 66 + 4 * ib, 4, dst + G::iq3xxs_aux(ib));
    }
}

void pack_iq3_s(const uint8_t* const* rows, uint8_t* dst) {  // file: d 0, qs 2, qh 66, signs 74, scales 106
    put_lanes(rows, 0, 2, dst);
    for (int ib = 0; ib < 8; ++ib) {
        for (int k = 0; k < 8; ++k) put_lanes(rows, 2 + 8 * ib + k, 1, dst + G::iq3s_qs(ib, k));
        put_lanes(rows, 66 + ib, 1, dst + G::iq3s_qh(ib));
        for (int l = 0; l < 4; ++l) put_lanes(rows, 74 + 4 * ib + l, 1, dst + G::iq3s_signs(ib, l));
    }
    for (int j = 0; j < 4; ++j) put_lanes(rows, 106 + j, 1, dst + G::iq3s_scales(j));
}

void pack_iq1_s(const uint8_t* const* rows, uint8_t* dst) {  // file: d 0, qs 2, u16 qh 34
    put_lanes(rows, 0, 2, dst);
    for (int ib = 0; ib < 8; ++ib) {
        for (int l = 0; l < 4; ++l) put_lanes(rows, 2 + 4 * ib + l, 1, dst + G::iq1s_qs(ib, l));
        put_lanes(rows, 34 + 2 * ib, 2, dst + G::iq1s_qh(ib));
    }
}

void pack_iq1_m(const uint8_t* const* rows, uint8_t* dst) {  // file: qs 0, qh 32, u16 scales 48
    for (int i = 0; i < k_panel_rows; ++i) {
        if (!rows[i]) continue;
        uint16_t sc[4];
        std::memcpy(sc, rows[i] + 48, 8);
        const uint16_t d = static_cast<uint16_t>((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
        std::memcpy(dst + 2 * i, &d, 2);
    }
    for (int ib = 0; ib < 8; ++ib) {
        for (int l = 0; l < 4; ++l) put_lanes(rows, 4 * ib + l, 1, dst + G::iq1m_qs(ib, l));
        for (int j = 0; j < 2; ++j) put_lanes(rows, 32 + 2 * ib + j, 1, dst + G::iq1m_qh(ib, j));
    }
    for (int j = 0; j < 4; ++j) put_lanes(rows, 48 + 2 * j, 2, dst + G::iq1m_scales(j));
}

struct PackRow {
    GgmlType type;
    uint64_t block_bytes;  // packed, 16 rows
    PackBlockFn pack;
    PanelLayout variant = PanelLayout::Standard;
};

const PackRow k_pack_rows[] = {
    {GgmlType::Q4_0, 288, pack_q4_0},  {GgmlType::IQ4_NL, 288, pack_q4_0}, {GgmlType::Q4_1, 320, pack_q4_1},
    {GgmlType::Q5_0, 352, pack_q5_0},  {GgmlType::Q5_1, 384, pack_q5_1},   {GgmlType::Q8_0, 544, pack_q8_0},
    {GgmlType::Q4_K, 2368, pack_q4_K}, {GgmlType::Q5_K, 2880, pack_q5_K},  {GgmlType::Q6_K, 3360, pack_q6_K},
    {GgmlType::Q5_K, 2880, pack_q5_K_planes, PanelLayout::BitPlanes},
    {GgmlType::Q2_K, 1344, pack_q2_K}, {GgmlType::Q3_K, 1824, pack_q3_K},  {GgmlType::TQ2_0, 1056, pack_tq2_0},
    {GgmlType::TQ1_0, 864, pack_tq1_0}, {GgmlType::IQ4_XS, 2208, pack_iq4_xs}, {GgmlType::MXFP4, 272, pack_mxfp4},
    {GgmlType::IQ2_XXS, iq_grid_block_bytes(GgmlType::IQ2_XXS), pack_iq2_xxs},
    {GgmlType::IQ2_XS, iq_grid_block_bytes(GgmlType::IQ2_XS), pack_iq2_xs},
    {GgmlType::IQ2_S, iq_grid_block_bytes(GgmlType::IQ2_S), pack_iq2_s},
    {GgmlType::IQ3_XXS, iq_grid_block_bytes(GgmlType::IQ3_XXS), pack_iq3_xxs},
    {GgmlType::IQ3_S, iq_grid_block_bytes(GgmlType::IQ3_S), pack_iq3_s},
    {GgmlType::IQ1_S, iq_grid_block_bytes(GgmlType::IQ1_S), pack_iq1_s},
    {GgmlType::IQ1_M, iq_grid_block_bytes(GgmlType::IQ1_M), pack_iq1_m},
};

const PackRow* find_pack_row(GgmlType type, PanelLayout variant = PanelLayout::Standard) {
    for (const PackRow& r : k_pack_rows)
        if (r.type == type && r.variant == variant) return &r;
    return nullptr;
}

// Panel p of a float matrix: value k of row 32 p + i at value k * 32 + i, for the
// n_in values (elements; BF16: whole element pairs as uint32) of each row.
// Written 32 values at a time (a 2-4 KiB piece of the panel, in L1, filled from 32
// short runs of the rows) rather than row by row across the whole panel.
template <typename Value>
void pack_float_panel(const uint8_t* data, uint64_t row_bytes, int64_t n_in, int64_t n_out, int64_t p, uint8_t* dst) {
    constexpr int64_t piece = 32;
    const int rows = static_cast<int>(std::min<int64_t>(k_float_panel_rows, n_out - p * k_float_panel_rows));
    const uint8_t* src = data + static_cast<uint64_t>(p * k_float_panel_rows) * row_bytes;
    Value* out = reinterpret_cast<Value*>(dst);
    for (int64_t k0 = 0; k0 < n_in; k0 += piece) {
        const int64_t k1 = std::min(n_in, k0 + piece);
        for (int i = 0; i < rows; ++i) {
            const uint8_t* row = src + static_cast<uint64_t>(i) * row_bytes;
            for (int64_t k = k0; k < k1; ++k) std::memcpy(out + k * k_float_panel_rows + i, row + k * sizeof(Value), sizeof(Value));
        }
        if (rows < k_float_panel_rows)  // padding rows are zeros
            for (int64_t k = k0; k < k1; ++k) std::memset(out + k * k_float_panel_rows + rows, 0, (k_float_panel_rows - rows) * sizeof(Value));
    }
}

// A BF16 panel's last pair when rows have an odd number of elements: the last
// element in the low half, zero in the high half.
void pack_bf16_odd_tail(const uint8_t* data, uint64_t row_bytes, int64_t n_in, int64_t n_out, int64_t p, uint8_t* dst) {
    uint32_t* out = reinterpret_cast<uint32_t*>(dst) + (n_in / 2) * k_float_panel_rows;
    for (int i = 0; i < k_float_panel_rows; ++i) {
        const int64_t r = p * k_float_panel_rows + i;
        uint16_t last = 0;
        if (r < n_out) std::memcpy(&last, data + static_cast<uint64_t>(r) * row_bytes + 2 * static_cast<uint64_t>(n_in - 1), 2);
        out[i] = last;
    }
}

}  // namespace

const char* panel_layout_name(PanelLayout layout) {
    switch (layout) {
        case PanelLayout::Standard: return "standard";
        case PanelLayout::BitPlanes: return "bit planes";
    }
    return "?";
}

bool is_float_weight(GgmlType type) { return type == GgmlType::F32 || type == GgmlType::F16 || type == GgmlType::BF16; }

AlignedBytes aligned_bytes(uint64_t n) {
    const uint64_t rounded = packed_allocation_bytes(n);
    void* p = std::aligned_alloc(64, static_cast<size_t>(rounded));
    if (!p) throw Error("out of memory allocating " + std::to_string(rounded) + " bytes for repacked weights",
                        ErrorKind::ResourceExhausted);
    return AlignedBytes(static_cast<uint8_t*>(p));
}

bool has_packed_layout(GgmlType type) { return find_pack_row(type) != nullptr || is_float_weight(type); }

ActFormat act_format(GgmlType weight_type) {
    ActFormat f;
    switch (weight_type) {
        case GgmlType::Q4_0: f = {GgmlType::Q8_0, ActAux::Bias32, 8, 32, 0}; break;
        case GgmlType::Q5_0: f = {GgmlType::Q8_0, ActAux::Bias32, 16, 32, 0}; break;
        case GgmlType::Q8_0:
        case GgmlType::IQ4_NL: f = {GgmlType::Q8_0, ActAux::Bias32, 128, 32, 0}; break;
        case GgmlType::Q4_1:
        case GgmlType::Q5_1: f = {GgmlType::Q8_1, ActAux::Sum32, 0, 32, 0}; break;
        case GgmlType::Q4_K:
        case GgmlType::Q5_K: f = {GgmlType::Q8_K, ActAux::KPairs, 0, 256, 0}; break;
        case GgmlType::Q6_K: f = {GgmlType::Q8_K, ActAux::KSums16, 32, 256, 0}; break;
        case GgmlType::Q2_K: f = {GgmlType::Q8_K, ActAux::KSums16, 0, 256, 0}; break;
        case GgmlType::Q3_K: f = {GgmlType::Q8_K, ActAux::KSums16, 4, 256, 0}; break;
        case GgmlType::TQ1_0:
        case GgmlType::TQ2_0: f = {GgmlType::Q8_K, ActAux::KSums16, 1, 256, 0}; break;
        case GgmlType::IQ4_XS: f = {GgmlType::Q8_K, ActAux::KPairs, 128, 256, 0}; break;
        case GgmlType::MXFP4: f = {GgmlType::Q8_0, ActAux::Bias32, 128, 32, 0}; break;
        // grid i-quants: the offset is added to the levels in the kernel (iq_grid_layout.h)
        case GgmlType::IQ2_XXS:
        case GgmlType::IQ3_XXS:
        case GgmlType::IQ3_S: f = {GgmlType::Q8_K, ActAux::KPairs, 64, 256, 0}; break;
        case GgmlType::IQ1_S: f = {GgmlType::Q8_K, ActAux::KPairs, 16, 256, 0}; break;
        case GgmlType::IQ2_XS:
        case GgmlType::IQ2_S: f = {GgmlType::Q8_K, ActAux::KSums16, 64, 256, 0}; break;
        case GgmlType::IQ1_M: f = {GgmlType::Q8_K, ActAux::KSums16, 16, 256, 0}; break;
        default: throw Error("no packed activation format for " + std::string(ggml_type_name(weight_type)));
    }
    uint64_t aux = 4 * k_act_group;
    if (f.aux == ActAux::KPairs) aux = 2 * 8 * k_act_group;
    if (f.aux == ActAux::KSums16) aux = 2 * 16 * k_act_group;
    f.block_stride = act_aux_offset(f.block) + aux;
    return f;
}

bool packed_layout(GgmlType type, PanelLayout variant, int64_t n_in, int64_t n_out, PackedMatrix& m) {
    const bool is_float = is_float_weight(type);
    if (!find_pack_row(type) && !is_float) return false;
    const PackRow* row = find_pack_row(type, variant);
    const GgmlTypeInfo& info = ggml_type_info(type);
    if (!row && (!is_float || variant != PanelLayout::Standard))
        throw Error("no " + std::string(panel_layout_name(variant)) + " panel layout for " + std::string(info.name), ErrorKind::Internal);
    if (n_in <= 0 || n_out <= 0 || n_in % info.block_size != 0)
        throw Error("cannot repack a " + std::string(info.name) + " matrix of " + std::to_string(n_in) + " x " +
                    std::to_string(n_out));
    m.type = type;
    m.layout = variant;
    m.n_in = n_in;
    m.n_out = n_out;
    const int panel_rows = is_float ? k_float_panel_rows : k_panel_rows;
    m.n_panels = (n_out + panel_rows - 1) / panel_rows;
    const bool bf16_pairs = type == GgmlType::BF16;  // blocks of element pairs (layout.h)
    m.n_blocks = bf16_pairs ? (n_in + 1) / 2 : n_in / info.block_size;
    m.block_bytes = is_float ? k_float_panel_rows * info.block_bytes * (bf16_pairs ? 2 : 1) : row->block_bytes;
    m.panel_bytes = m.block_bytes * static_cast<uint64_t>(m.n_blocks);
    return true;
}

uint64_t packed_allocation_bytes(uint64_t n) { return std::max<uint64_t>(64, (n + 63) / 64 * 64); }

void advise_pages(const uint8_t* p, uint64_t n, int advice) {
    if (n == 0) return;
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t begin = reinterpret_cast<uint64_t>(p) / page * page;
    const uint64_t end = (reinterpret_cast<uint64_t>(p) + n + page - 1) / page * page;
    madvise(reinterpret_cast<void*>(begin), end - begin, advice);
}

void release_pages(const uint8_t* p, uint64_t n) {
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t begin = (reinterpret_cast<uint64_t>(p) + page - 1) / page * page;
    const uint64_t end = (reinterpret_cast<uint64_t>(p) + n) / page * page;
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

namespace {

// One panel (16 rows) of a quantized matrix into dst (m.panel_bytes): padding rows
// and the fields packers OR into start at zero.
void pack_quant_panel(const PackRow& row, const GgmlTypeInfo& info, const PackedMatrix& m, const uint8_t* data, uint64_t row_bytes,
                      int64_t p, uint8_t* dst, const uint8_t** rows) {
    std::memset(dst, 0, m.panel_bytes);
    for (int64_t b = 0; b < m.n_blocks; ++b) {
        for (int i = 0; i < k_panel_rows; ++i) {
            const int64_t r = p * k_panel_rows + i;
            rows[i] = r < m.n_out ? data + static_cast<uint64_t>(r) * row_bytes + static_cast<uint64_t>(b) * info.block_bytes : nullptr;
        }
        row.pack(rows, dst + static_cast<uint64_t>(b) * m.block_bytes);
    }
}

}  // namespace

void pack_panels(const PackedMatrix& layout, const uint8_t* data, uint64_t row_bytes, int64_t p0, int64_t p1, uint8_t* dst) {
    const PackRow* row = find_pack_row(layout.type, layout.layout);
    if (!row || is_float_weight(layout.type)) throw Error("pack_panels: no quantized panel layout for " + std::string(ggml_type_name(layout.type)));
    const GgmlTypeInfo& info = ggml_type_info(layout.type);
    const uint8_t* rows[k_panel_rows];
    for (int64_t p = p0; p < p1; ++p) pack_quant_panel(*row, info, layout, data, row_bytes, p, dst + static_cast<uint64_t>(p - p0) * layout.panel_bytes, rows);
}

std::unique_ptr<PackedMatrix> pack_matrix(GgmlType type, PanelLayout variant, const uint8_t* data, uint64_t row_bytes, int64_t n_in,
                                          int64_t n_out, bool release_source) {
    auto m = std::make_unique<PackedMatrix>();
    if (!packed_layout(type, variant, n_in, n_out, *m)) return nullptr;
    const PackRow* row = find_pack_row(type, variant);
    const bool is_float = is_float_weight(type);
    const GgmlTypeInfo& info = ggml_type_info(type);
    const bool bf16_pairs = type == GgmlType::BF16;
    m->data = aligned_bytes(m->bytes());

    // With release_source, the source rows a thread has packed leave the resident
    // set every k_release_panels panels, so packing a large matrix (a tied output
    // head) never holds its whole source and its packed copy at once.
    constexpr int64_t k_release_panels = 64;
    const int64_t rows_per_panel = is_float ? k_float_panel_rows : k_panel_rows;
    auto release_rows = [&](int64_t pa, int64_t pb) {
        const int64_t r0 = pa * rows_per_panel, r1 = std::min(n_out, pb * rows_per_panel);
        if (release_source && r1 > r0)
            release_pages(data + static_cast<uint64_t>(r0) * row_bytes, static_cast<uint64_t>(r1 - r0) * row_bytes);
    };
    auto pack_panels = [&](int64_t p0, int64_t p1) {
        const uint8_t* rows[k_panel_rows];
        for (int64_t p = p0; p < p1; ++p) {
            if (p > p0 && (p - p0) % k_release_panels == 0) release_rows(p - k_release_panels, p);
            uint8_t* dst = m->data.get() + static_cast<uint64_t>(p) * m->panel_bytes;
            if (is_float) {  // the float packers write every byte
                if (bf16_pairs) {
                    pack_float_panel<uint32_t>(data, row_bytes, n_in / 2, n_out, p, dst);
                    if (n_in % 2) pack_bf16_odd_tail(data, row_bytes, n_in, n_out, p, dst);
                } else if (info.block_bytes == 4) {
                    pack_float_panel<uint32_t>(data, row_bytes, n_in, n_out, p, dst);
                } else {
                    pack_float_panel<uint16_t>(data, row_bytes, n_in, n_out, p, dst);
                }
                continue;
            }
            // Per panel, so that each thread zeroes its own pages and the panel is
            // in cache when it is filled.
            pack_quant_panel(*row, info, *m, data, row_bytes, p, dst, rows);
        }
    };
    // Large matrices are packed by several threads (load time); small ones inline.
    const int n_threads = m->bytes() < (uint64_t{8} << 20) ? 1 : std::max(1u, std::min(8u, std::thread::hardware_concurrency()));
    if (n_threads == 1) {
        pack_panels(0, m->n_panels);
    } else {
        std::vector<std::thread> threads;
        const int64_t per = (m->n_panels + n_threads - 1) / n_threads;
        for (int t = 0; t < n_threads; ++t) {
            const int64_t p0 = std::min<int64_t>(m->n_panels, t * per), p1 = std::min<int64_t>(m->n_panels, p0 + per);
            if (p0 < p1) threads.emplace_back(pack_panels, p0, p1);
        }
        for (auto& t : threads) t.join();
    }
    return m;
}

}  // namespace kiln
