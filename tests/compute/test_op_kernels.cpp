// Differential tests of the element-wise and attention kernels against their
// scalar references (compute/ops.h, compute/attention.h), for every compiled and
// supported level, with a named tolerance per kernel:
//  * GELU: exact (the same f16 table, the same f16 rounding of the input);
//  * SiLU: 4e-7 relative + 1e-30 absolute: the vector exp is within ~1 ulp of libm's,
//    then one add, one division and one multiply;
//  * RMSNorm: 1e-6 relative: the sum of squares is added in 8 or 16 double lanes
//    instead of one (the float mean then differs in its last bit at most);
//  * softmax: 1e-6 relative + 1e-30: exp's last bit and the double sum's order;
//  * attention: f32 and q8_0 keys 2e-5 x max|v|; f16 keys 2e-3 x max|v|: q.k is summed in
//    lanes instead of in order, which moves a score by a few ulps, and with an f16
//    cache the weights are rounded to f16 (as llama.cpp does), so such a nudge can
//    flip one weight by one f16 ulp (2^-11 relative); with ALiBi the same bounds
//    (the bias itself is exact: compute/alibi.h);
//  * ALiBi bias: exact (a converted integer distance, one product, one add).
// Every kernel must also give the same result for an element whatever the split
// of its row (batch invariance).
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "attention_test_ring.h"
#include "compute/alibi.h"
#include "compute/attention.h"
#include "compute/huge_pages.h"
#include "compute/kernels/kernels.h"
#include "compute/ops.h"
#include "kiln/error.h"
#include "kiln/quant.h"

namespace kiln {
namespace {

std::vector<const KernelTable*> simd_tables() {
    std::vector<const KernelTable*> out;
    for (Isa isa : {Isa::Avx2, Isa::Avx512})
        if (const KernelTable* t = kernel_table(isa)) out.push_back(t);
    return out;
}

std::vector<float> random_values(size_t n, float scale, std::mt19937& rng) {
    std::normal_distribution<float> nd(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = nd(rng);
    return v;
}

// attend_rows_block through a given table (row by row where it has no block kernel).
void attend_rows_block_with(const KernelTable& k, const AttentionShape& s, const float* q, int64_t q_stride, int64_t first,
                            const int64_t* pos, const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                            AttentionScratch& scratch) {
    if (k.attend_block) return k.attend_block(s, q, q_stride, first, pos, q_pos, n_rows, kv, out, out_stride, scratch);
    for (int r = 0; r < n_rows; ++r) {
        AttentionShape row = s;
        row.q_pos = q_pos[r];
        k.attend_row(row, q + r * q_stride, first, pos[r], kv, out + r * out_stride, scratch);
    }
}

float rel_diff(float a, float b) { return std::fabs(a - b) / std::max(std::fabs(b), 1e-30f); }

TEST(OpKernels, ActivationsAndNorms) {
    std::mt19937 rng(5);
    for (const KernelTable* k : simd_tables()) {
        SCOPED_TRACE(std::string(isa_name(k->isa)));
        for (int64_t n : {1, 7, 16, 33, 1000, 4099}) {
            std::vector<float> gate = random_values(static_cast<size_t>(n), 4.0f, rng);
            if (n > 20) {
                gate[3] = -12.0f;  // beyond the GELU table's range, both sides
                gate[4] = 11.0f;
                gate[5] = 95.0f;   // exp overflow in SiLU
                gate[6] = -95.0f;
                gate[7] = 0.0f;
            }
            const std::vector<float> up = random_values(static_cast<size_t>(n), 1.0f, rng);
            // SiLU
            std::vector<float> ref = gate, got = gate;
            ops::silu_mul(ref.data(), up.data(), n);
            k->silu_mul(got.data(), up.data(), n);
            float worst = 0;
            for (int64_t i = 0; i < n; ++i) {
                const float d = std::fabs(got[i] - ref[i]);
                EXPECT_LE(d, 4e-7f * std::fabs(ref[i]) + 1e-30f) << "silu element " << i << " of " << n << " (x " << gate[i] << ")";
                worst = std::max(worst, rel_diff(got[i], ref[i]));
            }
            if (n == 4099) std::printf("[ figures  ] %s silu: max relative difference %.3g\n", isa_name(k->isa).data(), worst);
            // GELU: exact
            ref = gate;
            got = gate;
            ops::gelu_mul(ref.data(), up.data(), n);
            k->gelu_mul(got.data(), up.data(), n);
            EXPECT_EQ(std::memcmp(ref.data(), got.data(), static_cast<size_t>(n) * 4), 0) << "gelu, n " << n;
            // RMSNorm
            const std::vector<float> w = random_values(static_cast<size_t>(n), 1.0f, rng);
            ref.assign(static_cast<size_t>(n), 0);
            got.assign(static_cast<size_t>(n), 0);
            ops::rms_norm(gate.data(), w.data(), ref.data(), n, 1e-6f);
            k->rms_norm(gate.data(), w.data(), got.data(), n, 1e-6f);
            for (int64_t i = 0; i < n; ++i) EXPECT_LE(rel_diff(got[i], ref[i]), 1e-6f) << "rms_norm element " << i;
            // softmax
            ref = gate;
            got = gate;
            ops::softmax(ref.data(), n);
            k->softmax(got.data(), n);
            for (int64_t i = 0; i < n; ++i) EXPECT_LE(std::fabs(got[i] - ref[i]), 1e-6f * ref[i] + 1e-30f) << "softmax element " << i;
        }
        // Split invariance: a row in one call or in pieces of any size.
        std::vector<float> gate = random_values(777, 3.0f, rng), up = random_values(777, 1.0f, rng);
        std::vector<float> whole = gate, pieces = gate;
        k->silu_mul(whole.data(), up.data(), 777);
        for (int64_t b = 0; b < 777; b += 37) k->silu_mul(pieces.data() + b, up.data() + b, std::min<int64_t>(37, 777 - b));
        EXPECT_EQ(std::memcmp(whole.data(), pieces.data(), whole.size() * 4), 0);
    }
}

TEST(OpKernels, F16ConversionIsExact) {
    std::mt19937 rng(3);
    std::vector<float> x = random_values(1003, 100.0f, rng);
    const float specials[] = {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, -70000.0f, 1e-8f, -3e-8f, 5.96e-8f, 2.98e-8f,
                              6.1e-5f, INFINITY, -INFINITY, NAN, -NAN, std::nanf("0x12345"), 1e-45f};
    for (size_t i = 0; i < std::size(specials); ++i) x[i * 7] = specials[i];
    for (uint32_t i = 0; i < 64; ++i) {  // every low-bit pattern around f16 rounding ties
        const uint32_t bits = 0x3F800000u + (i << 9) + (i & 1 ? 0x1000u : 0x0FFFu);
        std::memcpy(&x[500 + i], &bits, 4);
    }
    std::vector<uint16_t> ref(x.size());
    for (size_t i = 0; i < x.size(); ++i) ref[i] = quant::fp32_to_fp16(x[i]);
    for (const KernelTable* k : simd_tables()) {
        std::vector<uint16_t> got(x.size(), 0xFFFF);
        k->f32_to_f16(x.data(), got.data(), static_cast<int64_t>(x.size()));
        for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(got[i], ref[i]) << isa_name(k->isa) << " element " << i << " = " << x[i];
    }
}

TEST(OpKernels, RoundingThroughF16AndBf16IsExact) {
    std::mt19937 rng(4);
    std::vector<float> x = random_values(1003, 100.0f, rng);
    const float specials[] = {0.0f, -0.0f, 65504.0f, 65519.0f, 65520.0f, -70000.0f, 1e-8f, -3e-8f, 5.96e-8f, 2.98e-8f, 6.1e-5f,
                              INFINITY, -INFINITY, NAN, -NAN, std::nanf("0x12345"), -std::nanf("0x400001"), 1e-45f, 3.4e38f,
                              -3.4028235e38f};
    for (size_t i = 0; i < std::size(specials); ++i) x[i * 7] = specials[i];
    for (uint32_t i = 0; i < 64; ++i) {  // low-bit patterns around f16 and bf16 rounding ties
        const uint32_t f16_tie = 0x3F800000u + (i << 9) + (i & 1 ? 0x1000u : 0x0FFFu);
        const uint32_t bf16_tie = 0x3F800000u + (i << 16) + (i & 2 ? 0x8000u : 0x7FFFu);
        std::memcpy(&x[500 + i], &f16_tie, 4);
        std::memcpy(&x[600 + i], &bf16_tie, 4);
    }
    auto bits = [](float f) {
        uint32_t b;
        std::memcpy(&b, &f, 4);
        return b;
    };
    for (const KernelTable* k : simd_tables())
        for (int64_t n : {int64_t{1003}, int64_t{16}, int64_t{7}}) {  // whole vectors and tails
            std::vector<float> f16(x.size(), 1.0f), bf16(x.size(), 1.0f);
            k->round_to_f16(x.data(), f16.data(), n);
            k->round_to_bf16(x.data(), bf16.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                EXPECT_EQ(bits(f16[i]), bits(quant::fp16_to_fp32(quant::fp32_to_fp16(x[i])))) << isa_name(k->isa) << " f16 " << i;
                EXPECT_EQ(bits(bf16[i]), bits(quant::bf16_to_fp32(quant::fp32_to_bf16(x[i])))) << isa_name(k->isa) << " bf16 " << i;
            }
            EXPECT_EQ(f16[n < 1003 ? n : 0] == 1.0f, n < 1003) << "wrote past n";
        }
}

TEST(OpKernels, Q8_0RowsToF32AreExact) {
    // Rows of 37 blocks: every int8 level, and scales that are ordinary, subnormal,
    // the largest finite, zero of both signs, infinite and NaN.
    std::mt19937 rng(12);
    const uint16_t scales[] = {0x3C00, 0x2E66, 0x0001, 0x03FF, 0x7BFF, 0x0000, 0x8000, 0xB555, 0x7C00, 0xFC00, 0x7E00, 0x7D01};
    const int64_t n_blocks = 37;
    std::vector<uint8_t> row(static_cast<size_t>(34 * n_blocks));
    for (int64_t b = 0; b < n_blocks; ++b) {
        const uint16_t d = b < static_cast<int64_t>(std::size(scales)) ? scales[b] : static_cast<uint16_t>(rng() & 0x7BFF);
        std::memcpy(&row[static_cast<size_t>(34 * b)], &d, 2);
        for (int j = 0; j < 32; ++j)
            row[static_cast<size_t>(34 * b + 2 + j)] = static_cast<uint8_t>(b < 8 ? 32 * b + j : static_cast<int>(rng() & 0xFF));
    }
    std::vector<float> want(static_cast<size_t>(32 * n_blocks));
    quant::dequantize_row(GgmlType::Q8_0, row.data(), want.data(), 32 * n_blocks);
    for (const KernelTable* k : simd_tables())
        for (int64_t n : {int64_t{32}, int64_t{64}, 32 * n_blocks}) {
            std::vector<float> got(static_cast<size_t>(32 * n_blocks + 1), 7.0f);
            k->q8_0_to_f32(row.data(), got.data(), n);
            for (int64_t i = 0; i < n; ++i)
                EXPECT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i])) << isa_name(k->isa) << " " << i;
            EXPECT_EQ(got[n], 7.0f) << "wrote past n";
        }
}

TEST(OpKernels, RopeIsBitIdentical) {
    std::mt19937 rng(8);
    for (ops::RopeLayout layout : {ops::RopeLayout::Norm, ops::RopeLayout::Neox}) {
        for (int head_dim : {16, 64, 80, 128, 256}) {
            for (int n_dims : {head_dim, head_dim / 2, 20}) {
                if (n_dims > head_dim || n_dims % 2) continue;
                ops::RopeParams p;
                p.layout = layout;
                p.n_dims = n_dims;
                p.freq_base = 10000.0f;
                std::vector<float> cache(static_cast<size_t>(n_dims));
                ops::rope_cache(p, 1234, cache.data());
                const std::vector<float> x = random_values(static_cast<size_t>(5 * head_dim), 2.0f, rng);
                std::vector<float> ref = x;
                ops::rope_apply(p, cache.data(), ref.data(), 5, head_dim);
                for (const KernelTable* k : simd_tables()) {
                    std::vector<float> got = x;
                    k->rope_apply(p, cache.data(), got.data(), 5, head_dim);
                    EXPECT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * 4), 0)
                        << isa_name(k->isa) << (layout == ops::RopeLayout::Norm ? " norm" : " neox") << " head " << head_dim << " dims " << n_dims;
                }
            }
        }
    }
}

// ggml's slopes: for a power of two n, 2^(-8 (h + 1) / n); past it the odd
// powers of the half-way series (n2 = 4 for 6 heads: 2^-1, 2^-3).
TEST(OpKernels, AlibiSlopesAsGgml) {
    const std::vector<float> eight = alibi_slopes(8, 8.0f);
    for (int h = 0; h < 8; ++h) EXPECT_EQ(eight[static_cast<size_t>(h)], std::ldexp(1.0f, -(h + 1))) << h;
    const std::vector<float> six = alibi_slopes(6, 8.0f);
    const float want[] = {0.25f, 0.0625f, 0.015625f, 0.00390625f, 0.5f, 0.125f};
    for (int h = 0; h < 6; ++h) EXPECT_FLOAT_EQ(six[static_cast<size_t>(h)], want[h]) << h;
    EXPECT_THROW(alibi_slopes(4, 0.0f), Error);
}

// The bias row is bit-identical on every level: lengths around the vector
// widths, the query before, inside and after the keys, slopes of both series.
TEST(OpKernels, AlibiBiasIsBitIdentical) {
    std::mt19937 rng(27);
    const std::vector<float> slopes = alibi_slopes(12, 8.0f);
    for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 33, 300, 1100})
        for (int64_t q_off : {-5, 0, 1, 2, 1000}) {
            const int64_t first = 3, q_pos = first + (q_off == 2 ? n / 2 : q_off == 1000 ? n + 7 : q_off);
            for (float slope : {slopes[0], slopes[5], slopes[9], 1.0f}) {
                const std::vector<float> x = random_values(static_cast<size_t>(n), 2.0f, rng);
                std::vector<float> ref = x;
                alibi_bias(ref.data(), n, first, q_pos, slope);
                ASSERT_EQ(scalar_kernels().alibi_bias, &alibi_bias);
                for (const KernelTable* k : simd_tables()) {
                    std::vector<float> got = x;
                    got.push_back(1234.5f);  // past the row: never written
                    k->alibi_bias(got.data(), n, first, q_pos, slope);
                    EXPECT_EQ(got.back(), 1234.5f) << isa_name(k->isa);
                    got.pop_back();
                    EXPECT_EQ(std::memcmp(got.data(), ref.data(), ref.size() * 4), 0)
                        << isa_name(k->isa) << " n " << n << " q " << q_pos << " slope " << slope;
                }
            }
        }
}

struct AttentionCase {
    int n_head, n_head_kv, dk, dv;
    int64_t n_keys;
    GgmlType cache;
    float softcap;
    bool prescale;
    bool sinks = false;  // gpt-oss's per-head sink logits
    bool alibi = false;  // ALiBi slopes (max bias 8), the query in the middle of the keys (an encoder's view)
};

TEST(OpKernels, AttentionTracksScalarReference) {
    std::mt19937 rng(11);
    const AttentionCase cases[] = {
        {9, 3, 64, 64, 1, GgmlType::F16, 0, false},     {9, 3, 64, 64, 17, GgmlType::F16, 0, false},
        {9, 3, 64, 64, 300, GgmlType::F16, 0, false},   {4, 1, 256, 256, 129, GgmlType::F16, 0, true},
        {4, 2, 16, 16, 40, GgmlType::F16, 0, false},    {4, 2, 64, 64, 33, GgmlType::F32, 0, false},
        {4, 2, 64, 64, 50, GgmlType::F16, 50.0f, true}, {8, 1, 128, 128, 64, GgmlType::F16, 0, false},
        {2, 1, 24, 40, 23, GgmlType::F32, 0, false},    {9, 3, 64, 64, 70, GgmlType::Q8_0, 0, false},
        {4, 1, 256, 256, 33, GgmlType::Q8_0, 0, true},  {9, 3, 64, 64, 700, GgmlType::F16, 0, false},
        {4, 1, 256, 256, 1100, GgmlType::F16, 30.0f, true},
        // With sinks: one key (the sink weighs against it alone), a few, many.
        {4, 2, 16, 16, 1, GgmlType::F32, 0, false, true},   {8, 2, 64, 64, 40, GgmlType::F16, 0, false, true},
        {9, 3, 64, 64, 300, GgmlType::F16, 0, false, true}, {4, 1, 64, 64, 33, GgmlType::Q8_0, 0, false, true},
        // ALiBi (jina-bert-v2): 6 heads take both slope series; one key, a few, many.
        {6, 6, 16, 16, 1, GgmlType::F32, 0, false, false, true},  {6, 6, 16, 16, 40, GgmlType::F16, 0, false, false, true},
        {12, 12, 64, 64, 300, GgmlType::F16, 0, false, false, true}, {8, 8, 64, 64, 70, GgmlType::Q8_0, 0, false, false, true},
        // q8_0 read in place: head sizes 32 / 128 / latent attention's 576 and 512,
        // softcap, and three blocks a head (96).
        {4, 2, 32, 32, 45, GgmlType::Q8_0, 0, false}, {8, 2, 128, 128, 200, GgmlType::Q8_0, 20.0f, true},
        {4, 1, 576, 512, 37, GgmlType::Q8_0, 0, false}, {6, 2, 96, 96, 60, GgmlType::Q8_0, 0, false},
    };
    for (const AttentionCase& c : cases) {
        SCOPED_TRACE("heads " + std::to_string(c.n_head) + "/" + std::to_string(c.n_head_kv) + " dk " + std::to_string(c.dk) +
                     " keys " + std::to_string(c.n_keys) + " " + std::string(ggml_type_name(c.cache)) + (c.sinks ? " sinks" : "") +
                     (c.alibi ? " alibi" : ""));
        AttentionShape s = test_attention_shape(c.n_head, c.n_head_kv, c.dk, c.dv, c.prescale, c.softcap);
        const std::vector<float> sinks = random_values(static_cast<size_t>(c.n_head), 3.0f, rng);
        if (c.sinks) s.sinks = sinks.data();
        const std::vector<float> slopes = c.alibi ? alibi_slopes(c.n_head, 8.0f) : std::vector<float>();
        if (c.alibi) s.alibi = slopes.data();
        // A ring of capacity n_keys + 5 whose window starts mid-ring, so reads wrap.
        const int64_t first = 7, pos = first + c.n_keys - 1;
        s.q_pos = first + c.n_keys / 2;
        TestKvRing ring(c.cache, static_cast<int64_t>(c.n_head_kv) * c.dk, static_cast<int64_t>(c.n_head_kv) * c.dv, c.n_keys + 5);
        ring.fill(first, pos, [&](size_t n) { return random_values(n, 1.0f, rng); });
        const float vmax = ring.vmax;
        const KvView view = ring.view();
        // The SIMD attention reads f16 / f32 caches in place and a q8_0 cache
        // converted to f32 rows (exact), as the forward pass does.
        HugeFloats kf, vf;
        const KvRows rows = c.cache == GgmlType::Q8_0 ? kv_rows_f32(s, view, first, pos, kf, vf) : ring.rows();
        const std::vector<float> q = random_values(static_cast<size_t>(c.n_head * c.dk), 3.0f, rng);
        std::vector<float> ref(static_cast<size_t>(c.n_head * c.dv)), got(ref.size());
        AttentionScratch scratch;
        attend(s, q.data(), first, pos, view, ref.data(), scratch);
        // The scalar table's entry is the reference itself.
        std::vector<float> scalar(ref.size());
        scalar_kernels().attend_row(s, q.data(), first, pos, rows, scalar.data(), scratch);
        EXPECT_EQ(std::memcmp(scalar.data(), ref.data(), ref.size() * 4), 0);
        const float tol = (c.cache == GgmlType::F16 ? 2e-3f : 2e-5f) * vmax;  // q8_0 rows are exact f32 values
        for (const KernelTable* k : simd_tables()) {
            std::fill(got.begin(), got.end(), -1.0f);
            k->attend_row(s, q.data(), first, pos, rows, got.data(), scratch);
            float worst = 0;
            for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(got[i] - ref[i]));
            EXPECT_LE(worst, tol) << isa_name(k->isa);
            std::printf("[ figures  ] %s attention %s dk %d keys %lld: max |difference| %.3g (max |v| %.3g)\n",
                        isa_name(k->isa).data(), ggml_type_name(c.cache).data(), c.dk, static_cast<long long>(c.n_keys), worst, vmax);
            if (c.cache == GgmlType::Q8_0 && kv_reads_q8_0(s)) {
                // Decode reads q8_0 rows in place: the same bits as through the f32 rows.
                const KvRows direct = ring.rows();
                std::vector<float> in_place(ref.size(), -2.0f);
                k->attend_row(s, q.data(), first, pos, direct, in_place.data(), scratch);
                EXPECT_EQ(std::memcmp(in_place.data(), got.data(), got.size() * 4), 0) << isa_name(k->isa) << " q8_0 in place";
                scalar_kernels().attend_row(s, q.data(), first, pos, direct, in_place.data(), scratch);
                EXPECT_EQ(std::memcmp(in_place.data(), ref.data(), ref.size() * 4), 0) << "scalar q8_0 in place";
            }
        }
    }
}

// A block of rows of one sequence (a prefill chunk's queries of one KV head)
// gives every row the bits it gets alone, at every level: the row's keys end at
// its own position, partial 16-key blocks, value chunks, sinks, ALiBi and softcap.
TEST(OpKernels, AttentionBlockEqualsRowByRow) {
    std::mt19937 rng(12);
    struct BlockCase {
        int n_head, dk, dv;
        GgmlType cache;
        int n_rows;
        int64_t first_pos;  // the first row's position (its keys: [first, first_pos])
        int gap;            // positions between consecutive rows (1: consecutive)
        float softcap;
        bool sinks, alibi;
    };
    const BlockCase cases[] = {
        {4, 64, 64, GgmlType::F16, 16, 200, 1, 0, false, false},  {4, 64, 64, GgmlType::F16, 5, 31, 1, 0, false, false},
        {3, 64, 64, GgmlType::F32, 17, 0, 1, 0, false, false},    {4, 64, 64, GgmlType::Q8_0, 16, 150, 1, 0, false, false},
        {8, 128, 128, GgmlType::F16, 7, 90, 3, 30.0f, true, false}, {2, 96, 96, GgmlType::F16, 9, 40, 1, 0, false, true},
        {16, 576, 512, GgmlType::Q8_0, 4, 60, 1, 0, false, false}, {6, 32, 32, GgmlType::F32, 16, 14, 1, 0, true, true},
        {1, 64, 64, GgmlType::F16, 1, 0, 1, 0, false, false},
    };
    for (const BlockCase& c : cases) {
        SCOPED_TRACE("heads " + std::to_string(c.n_head) + " dk " + std::to_string(c.dk) + " rows " + std::to_string(c.n_rows) + " " +
                     std::string(ggml_type_name(c.cache)));
        AttentionShape s = test_attention_shape(c.n_head, 1, c.dk, c.dv, false, c.softcap);
        const std::vector<float> sinks = random_values(static_cast<size_t>(c.n_head), 3.0f, rng);
        if (c.sinks) s.sinks = sinks.data();
        const std::vector<float> slopes = c.alibi ? alibi_slopes(c.n_head, 8.0f) : std::vector<float>();
        if (c.alibi) s.alibi = slopes.data();
        std::vector<int64_t> pos;
        for (int r = 0; r < c.n_rows; ++r) pos.push_back(c.first_pos + static_cast<int64_t>(r) * c.gap);
        const int64_t first = 0, last = pos.back();
        TestKvRing ring(c.cache, c.dk, c.dv, last + 1);
        ring.fill(first, last, [&](size_t n) { return random_values(n, 1.0f, rng); });
        const KvRows rows = ring.rows();
        // Rows of the forward pass's layout: q [rows][heads * dk], out [rows][heads * dv] with room past each.
        const int64_t q_stride = static_cast<int64_t>(c.n_head) * c.dk + 16, out_stride = static_cast<int64_t>(c.n_head) * c.dv + 16;
        const std::vector<float> q = random_values(static_cast<size_t>(c.n_rows * q_stride), 3.0f, rng);
        std::vector<const KernelTable*> tables = simd_tables();
        tables.push_back(&scalar_kernels());
        for (const KernelTable* k : tables) {
            AttentionScratch scratch;
            std::vector<float> alone(static_cast<size_t>(c.n_rows * out_stride), -1.0f), block(alone.size(), -1.0f);
            for (int r = 0; r < c.n_rows; ++r) {
                AttentionShape row = s;
                row.q_pos = pos[static_cast<size_t>(r)];
                k->attend_row(row, q.data() + r * q_stride, first, pos[static_cast<size_t>(r)], rows, alone.data() + r * out_stride, scratch);
            }
            if (k->attend_block)
                k->attend_block(s, q.data(), q_stride, first, pos.data(), pos.data(), c.n_rows, rows, block.data(), out_stride, scratch);
            else  // the scalar table and AVX2: row by row
                for (int r = 0; r < c.n_rows; ++r) {
                    AttentionShape row = s;
                    row.q_pos = pos[static_cast<size_t>(r)];
                    k->attend_row(row, q.data() + r * q_stride, first, pos[static_cast<size_t>(r)], rows, block.data() + r * out_stride, scratch);
                }
            EXPECT_EQ(std::memcmp(block.data(), alone.data(), alone.size() * 4), 0) << isa_name(k->isa);
        }
    }
}

// A call with several KV heads (a decode task's run of heads, contiguous in each
// cached row, walked together) gives each head the bits a call of that head alone
// gives it, at every level, for one row and for a block of rows.
TEST(OpKernels, AttentionKvHeadRunEqualsHeadByHead) {
    std::mt19937 rng(13);
    struct RunCase {
        int n_head, n_head_kv, dk;
        GgmlType cache;
        int n_rows;
        int64_t first_pos;
        bool sinks, alibi;
    };
    const RunCase cases[] = {
        {16, 4, 64, GgmlType::F16, 1, 700, false, false}, {16, 4, 64, GgmlType::F16, 5, 90, false, false},
        {8, 2, 128, GgmlType::Q8_0, 1, 300, true, false}, {6, 3, 32, GgmlType::F32, 3, 40, false, true},
        {12, 4, 96, GgmlType::F16, 1, 33, false, false},
    };
    for (const RunCase& c : cases) {
        SCOPED_TRACE("heads " + std::to_string(c.n_head) + "/" + std::to_string(c.n_head_kv) + " dk " + std::to_string(c.dk) +
                     " rows " + std::to_string(c.n_rows) + " " + std::string(ggml_type_name(c.cache)));
        const int group = c.n_head / c.n_head_kv;
        AttentionShape s = test_attention_shape(c.n_head, c.n_head_kv, c.dk, c.dk);
        const std::vector<float> sinks = random_values(static_cast<size_t>(c.n_head), 3.0f, rng);
        if (c.sinks) s.sinks = sinks.data();
        const std::vector<float> slopes = c.alibi ? alibi_slopes(c.n_head, 8.0f) : std::vector<float>();
        if (c.alibi) s.alibi = slopes.data();
        std::vector<int64_t> pos;
        for (int r = 0; r < c.n_rows; ++r) pos.push_back(c.first_pos + r);
        const int64_t width = static_cast<int64_t>(c.n_head_kv) * c.dk;
        TestKvRing ring(c.cache, width, width, pos.back() + 1);
        ring.fill(0, pos.back(), [&](size_t n) { return random_values(n, 1.0f, rng); });
        const KvRows rows = ring.rows();
        const int64_t stride = static_cast<int64_t>(c.n_head) * c.dk;
        const std::vector<float> q = random_values(static_cast<size_t>(c.n_rows * stride), 3.0f, rng);
        std::vector<const KernelTable*> tables = simd_tables();
        tables.push_back(&scalar_kernels());
        for (const KernelTable* k : tables) {
            AttentionScratch scratch;
            std::vector<float> run(static_cast<size_t>(c.n_rows * stride), -1.0f), heads(run.size(), -1.0f);
            attend_rows_block_with(*k, s, q.data(), stride, 0, pos.data(), pos.data(), c.n_rows, rows, run.data(), stride, scratch);
            AttentionShape one = s;
            one.n_head = group;
            one.n_head_kv = 1;
            for (int g = 0; g < c.n_head_kv; ++g) {
                if (c.sinks) one.sinks = sinks.data() + g * group;
                if (c.alibi) one.alibi = slopes.data() + g * group;
                KvRows head = rows;
                head.k += kv_row_offset(c.cache, static_cast<uint64_t>(g) * c.dk);
                head.v += kv_row_offset(c.cache, static_cast<uint64_t>(g) * c.dk);
                attend_rows_block_with(*k, one, q.data() + g * group * c.dk, stride, 0, pos.data(), pos.data(), c.n_rows, head,
                                       heads.data() + g * group * c.dk, stride, scratch);
            }
            EXPECT_EQ(std::memcmp(run.data(), heads.data(), run.size() * 4), 0) << isa_name(k->isa);
        }
    }
}

// Buffers from 2 MiB up start on a 2 MiB boundary (so the kernel can back them
// with huge pages), smaller ones on a cache line; both are writable end to end.
TEST(HugePages, LargeBuffersStartOnHugePageBoundaries) {
    for (size_t bytes : {size_t{1}, size_t{100}, size_t{1} << 20, size_t{2} << 20, (size_t{5} << 20) + 3}) {
        void* p = allocate_huge(bytes);
        const uintptr_t a = reinterpret_cast<uintptr_t>(p);
        EXPECT_EQ(a % (bytes >= (size_t{2} << 20) ? (size_t{2} << 20) : 64), 0u) << bytes;
        std::memset(p, 0xA5, bytes);
        EXPECT_EQ(static_cast<unsigned char*>(p)[bytes - 1], 0xA5);
        std::free(p);
    }
    HugeFloats v(3 << 20, 1.0f);  // 12 MiB through the allocator
    EXPECT_EQ(reinterpret_cast<uintptr_t>(v.data()) % (size_t{2} << 20), 0u);
    EXPECT_EQ(v.back(), 1.0f);
}

}  // namespace
}  // namespace kiln
