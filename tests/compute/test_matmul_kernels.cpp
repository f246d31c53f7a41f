// Differential tests of the SIMD matrix kernels: every compiled and supported
// level must give results bit-identical to the scalar reference dot products
// (kiln/quant.h states their order), over random data and edge shapes (one row,
// partial panels, partial token groups, one block), for 1 and 3 threads.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "compute/activation_quant.h"
#include "compute/kernels/kernels.h"
#include "compute/kernels/packing.h"
#include "compute/kernels/x86.h"
#include "compute/matmul.h"
#include "kiln/error.h"
#include "kiln/quant.h"

namespace kiln {
namespace {

std::vector<Isa> simd_levels() {
    std::vector<Isa> out;
    for (Isa isa : {Isa::Avx2, Isa::Avx512})
        if (kernel_table(isa)) out.push_back(isa);
    return out;
}

// The tables to compare for a weight type: each compiled and supported level's;
// on CPUs with AVX-VNNI also the AVX2 table as CPUs without it get it (vpmaddubsw
// products); and for BF16 on CPUs with AVX512_BF16 also the AVX-512 table as CPUs
// without that extension get it (BF16 by the emulation); on CPUs with AVX512_VBMI
// also the AVX-512 table without it (the grid i-quants by gathers); on CPUs with
// AMX also the AVX-512 table without it (prefill by vpdpbusd).
std::vector<std::pair<std::string, const KernelTable*>> simd_tables(GgmlType type) {
    std::vector<std::pair<std::string, const KernelTable*>> out;
    for (Isa isa : simd_levels())
        out.push_back({std::string(isa_name(isa)) + (kernel_table(isa)->avx_vnni ? " with AVX-VNNI" : ""), kernel_table(isa)});
#if defined(__x86_64__)
    if (kernel_table(Isa::Avx2) && kernel_table(Isa::Avx2)->avx_vnni) out.push_back({"avx2 without AVX-VNNI", &avx2_kernels_without_vnni()});
    const KernelTable* t512 = kernel_table(Isa::Avx512);
    if (t512 && t512->avx512_vbmi) out.push_back({"avx512 without AVX512_VBMI", &avx512_kernels_without_vbmi()});
    if (t512 && t512->amx) out.push_back({"avx512 without AMX", &avx512_kernels_without_amx()});
    if (type == GgmlType::BF16 && t512 && t512->bf16_pair_acts) {
        static const KernelTable emulated = [t512] {
            KernelTable k = *t512;
            k.gemm_float = avx512::gemm_float_bf16_emulated;
            k.bf16_pair_acts = false;
            return k;
        }();
        out.push_back({"avx512 without AVX512_BF16", &emulated});
    }
#endif
    return out;
}

// Offsets of the f16 scale fields of one block, set to sane values in raw blocks.
std::vector<int> f16_fields(GgmlType t) {
    switch (t) {
        case GgmlType::Q4_0:
        case GgmlType::Q5_0:
        case GgmlType::Q8_0:
        case GgmlType::IQ4_NL: return {0};
        case GgmlType::Q4_1:
        case GgmlType::Q5_1:
        case GgmlType::Q4_K:
        case GgmlType::Q5_K: return {0, 2};
        case GgmlType::Q6_K: return {208};
        case GgmlType::Q2_K: return {80, 82};
        case GgmlType::Q3_K: return {108};
        case GgmlType::IQ4_XS: return {0};
        case GgmlType::TQ1_0: return {52};
        case GgmlType::IQ2_XXS:
        case GgmlType::IQ2_XS:
        case GgmlType::IQ2_S:
        case GgmlType::IQ3_XXS:
        case GgmlType::IQ3_S:
        case GgmlType::IQ1_S: return {0};
        case GgmlType::TQ2_0: return {64};
        default: return {};
    }
}

struct Case {
    GgmlType type;
    int64_t n_in, n_out, n_tokens;
    bool raw;  // random block bytes (every bit pattern of the levels and sub-scales)
};

// Sane block scales over raw block bytes: small f16 d's, MXFP4's E8M0 exponents.
void set_block_scales(const Case& c, std::vector<uint8_t>& w, std::mt19937& rng) {
    const GgmlTypeInfo& info = ggml_type_info(c.type);
    if (c.type == GgmlType::MXFP4)  // E8M0 scales 2^-18 .. 2^-1, and the subnormal ones (0, 1) now and then
        for (uint64_t blk = 0; blk < w.size() / info.block_bytes; ++blk)
            w[blk * info.block_bytes] = static_cast<uint8_t>(blk % 11 == 3 ? rng() % 3 : 110 + rng() % 17);
    std::uniform_real_distribution<float> scale(-0.02f, 0.02f);
    if (c.type == GgmlType::IQ1_M)  // its f16 d is the top nibbles of the four scale words (bytes 48..55)
        for (uint64_t blk = 0; blk < w.size() / info.block_bytes; ++blk) {
            const uint16_t h = quant::fp32_to_fp16(scale(rng));
            for (int k = 0; k < 4; ++k) {
                uint8_t& top = w[blk * info.block_bytes + 48 + 2 * k + 1];
                top = static_cast<uint8_t>((top & 0x0F) | (((h >> (4 * k)) & 0xF) << 4));
            }
        }
    for (uint64_t blk = 0; blk < w.size() / info.block_bytes; ++blk)
        for (int off : f16_fields(c.type)) {
            const uint16_t h = quant::fp32_to_fp16(scale(rng));
            std::memcpy(w.data() + blk * info.block_bytes + off, &h, 2);
        }
}

std::vector<uint8_t> make_weights(const Case& c, std::mt19937& rng) {
    const uint64_t row_bytes = ggml_row_bytes(c.type, static_cast<uint64_t>(c.n_in));
    std::vector<uint8_t> w(row_bytes * static_cast<uint64_t>(c.n_out));
    const GgmlTypeInfo& info = ggml_type_info(c.type);
    if (c.raw && info.quantized) {
        for (auto& b : w) b = static_cast<uint8_t>(rng());
        set_block_scales(c, w, rng);
        return w;
    }
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> row(static_cast<size_t>(c.n_in));
    for (int64_t r = 0; r < c.n_out; ++r) {
        const float s = std::exp(nd(rng));
        for (auto& v : row) v = nd(rng) * s;
        if (r % 7 == 3) std::fill(row.begin(), row.begin() + std::min<int64_t>(c.n_in, 32), 0.0f);
        quant::quantize_row(c.type, row.data(), w.data() + static_cast<uint64_t>(r) * row_bytes, c.n_in);
    }
    return w;
}

std::vector<float> make_activations(const Case& c, std::mt19937& rng) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(c.n_in * c.n_tokens));
    for (int64_t t = 0; t < c.n_tokens; ++t) {
        const float s = t % 5 == 4 ? 300.0f : std::exp(2.0f * nd(rng));
        for (int64_t i = 0; i < c.n_in; ++i) x[static_cast<size_t>(t * c.n_in + i)] = nd(rng) * s;
        if (t % 4 == 2)  // a zero block and a lone outlier
            for (int64_t i = 0; i < std::min<int64_t>(c.n_in, 256); ++i) x[static_cast<size_t>(t * c.n_in + i)] = i == 5 ? 1e3f : 0.0f;
        if (t == 6)
            for (int64_t i = 0; i < c.n_in; ++i) x[static_cast<size_t>(t * c.n_in + i)] = 0.0f;
    }
    return x;
}

// The case's weights as an unpacked matrix over bytes.
Matrix raw_matrix(const Case& c, const std::vector<uint8_t>& bytes) {
    Matrix m;
    m.type = c.type;
    m.data = bytes.data();
    m.n_in = c.n_in;
    m.n_out = c.n_out;
    m.row_bytes = ggml_row_bytes(c.type, static_cast<uint64_t>(c.n_in));
    return m;
}

// Every level's product of these weights and activations equals the reference's,
// bit for bit; returns the reference's result.
std::vector<float> check_data(const Case& c, const std::vector<uint8_t>& bytes, const std::vector<float>& x) {
    SCOPED_TRACE(std::string(ggml_type_name(c.type)) + " n_in " + std::to_string(c.n_in) + " n_out " + std::to_string(c.n_out) +
                 " tokens " + std::to_string(c.n_tokens) + (c.raw ? " raw" : ""));
    Matrix m = raw_matrix(c, bytes);
    ThreadPool one(1);
    MatmulScratch scratch;
    std::vector<float> expected(static_cast<size_t>(c.n_out * c.n_tokens));
    matmul_with(scalar_kernels(), m, x.data(), c.n_tokens, expected.data(), one, scratch);
    // Each table reads its own panel layout of the type: packed once per layout.
    std::map<PanelLayout, std::shared_ptr<const PackedMatrix>> packed;
    for (const auto& [name, table] : simd_tables(c.type)) {
        const PanelLayout layout = table->panel_layout(c.type);
        if (!packed.count(layout)) packed[layout] = pack_matrix(c.type, layout, m.data, m.row_bytes, m.n_in, m.n_out);
        m.packed = packed[layout];
        for (int threads : {1, 3}) {
            ThreadPool pool(threads);
            std::vector<float> got(expected.size(), -1.0f);
            matmul_with(*table, m, x.data(), c.n_tokens, got.data(), pool, scratch);
            size_t bad = 0, first = 0;
            for (size_t i = 0; i < got.size(); ++i)
                if (std::memcmp(&got[i], &expected[i], 4) != 0 && bad++ == 0) first = i;
            EXPECT_EQ(bad, 0u) << name << ", " << threads << " threads: first mismatch at token "
                               << first / static_cast<size_t>(c.n_out) << " row " << first % static_cast<size_t>(c.n_out)
                               << ": " << got[first] << " vs reference " << expected[first];
        }
    }
    return expected;
}

void check_case(const Case& c, std::mt19937& rng) {
    const std::vector<uint8_t> bytes = make_weights(c, rng);
    check_data(c, bytes, make_activations(c, rng));
}

// Every type of the traits table with a dot product (a new one is tested by being
// added there).
std::vector<GgmlType> dot_types() {
    std::vector<GgmlType> out;
    for (const quant::QuantTraits& t : quant::quant_traits())
        if (t.vec_dot_ref) out.push_back(t.type);
    return out;
}

class MatmulKernels : public ::testing::TestWithParam<GgmlType> {};

TEST_P(MatmulKernels, BitIdenticalToReference) {
    if (simd_levels().empty()) GTEST_SKIP() << "no SIMD level on this CPU";
    const GgmlType type = GetParam();
    const int64_t block = ggml_type_info(type).quantized ? ggml_type_info(type).block_size : 16;
    std::mt19937 rng(1234 + static_cast<unsigned>(type));
    const int64_t widths[] = {block, 2 * block, 7 * block, block == 16 ? 37 : 12 * block};
    const int64_t rows[] = {1, 15, 16, 17, 40, 100};  // 100: 2-stream decode tiles and a left-over panel
    const int64_t tokens[] = {1, 3, 8, 9, 17};
    for (int64_t n_in : widths)
        for (int64_t n_out : rows)
            for (int64_t n_tokens : tokens) {
                if (n_in > 4 * block && n_out > 17 && n_tokens > 9) continue;  // keep the test quick
                if (n_out == 100 && n_tokens > 3) continue;
                if (quant::can_quantize(type)) check_case({type, n_in, n_out, n_tokens, false}, rng);
                if (ggml_type_info(type).quantized) check_case({type, n_in, n_out, n_tokens, true}, rng);
            }
}

// Every byte of the levels one pattern (all the largest levels of one sign, of
// the other, alternating, ...) against activations all at full scale, of one sign
// or alternating: the largest integer sums a kernel's int16 steps must hold. Bit
// identity with the reference finds a sum that saturated or wrapped.
TEST_P(MatmulKernels, ExtremeLevelsAndActivations) {
    if (simd_levels().empty()) GTEST_SKIP() << "no SIMD level on this CPU";
    const GgmlType type = GetParam();
    if (!ggml_type_info(type).quantized) GTEST_SKIP() << "float type";
    const int64_t n_in = 4 * ggml_type_info(type).block_size, n_out = 32;
    std::mt19937 rng(99);
    for (int pattern : {0x00, 0xFF, 0x77, 0x88, 0x55, 0xAA, 0x0F, 0xF0})
        for (int sign : {1, -1, 0}) {  // 0: alternating
            SCOPED_TRACE("byte pattern " + std::to_string(pattern) + " activation sign " + std::to_string(sign));
            for (int64_t n_tokens : {1, 8, 17}) {
                const Case c{type, n_in, n_out, n_tokens, true};
                std::vector<uint8_t> w(ggml_row_bytes(type, static_cast<uint64_t>(n_in)) * n_out, static_cast<uint8_t>(pattern));
                set_block_scales(c, w, rng);
                std::vector<float> x(static_cast<size_t>(n_in * n_tokens));
                for (size_t i = 0; i < x.size(); ++i) x[i] = sign != 0 ? static_cast<float>(sign) : (i % 2 ? -1.0f : 1.0f);
                check_data(c, w, x);
            }
        }
}

// Float weights: rows wider than one element slice of the prefill tiles (1024)
// with a partial last slice; token counts that leave partial 12-token blocks and
// the few-token path; row counts that leave a partial 32-row panel, several panel
// groups, and the decode walks' left-over panels.
TEST(MatmulKernels, FloatWideRowsAndTokenBlocks) {
    if (simd_levels().empty()) GTEST_SKIP() << "no SIMD level on this CPU";
    std::mt19937 rng(77);
    for (GgmlType type : {GgmlType::F16, GgmlType::BF16, GgmlType::F32})
        for (int64_t n_in : {int64_t{1040}, int64_t{2600}})
            for (int64_t n_tokens : {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{7}, int64_t{53}, int64_t{131}})
                for (int64_t n_out : {int64_t{21}, int64_t{300}}) {
                    if (n_out == 300 && n_tokens > 53) continue;  // keep the test quick
                    check_case({type, n_in, n_out, n_tokens, false}, rng);
                }
}

// The grid i-quants' (and TQ1_0's, AVX-512) prefill decodes a panel's blocks 8 at a time (IqDecoded) and
// carries each row's sums in y from one chunk to the next: rows of 17 blocks (two
// whole chunks and one of a single block), a partial last panel, and token counts
// of several groups with a partial last one (or one group: the direct tiles).
TEST(MatmulKernels, GridIQuantPrefillChunks) {
    if (simd_levels().empty()) GTEST_SKIP() << "no SIMD level on this CPU";
    std::mt19937 rng(2121);
    for (GgmlType type : {GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ1_S,
                          GgmlType::IQ1_M, GgmlType::TQ1_0})
        for (int64_t n_tokens : {int64_t{5}, int64_t{27}}) check_case({type, 17 * 256, 37, n_tokens, true}, rng);
}

// The k-quants' AVX2 prefill decodes a panel's blocks 8 at a time (KqDecoded in
// avx2_kquant.cpp) and carries each row's sums in y between chunks: rows of 17
// blocks (two whole chunks and one of a single block), a partial last panel whose
// second half is empty, and token counts whose last group holds 1, 2, 3, 4 or 8
// tokens (5: one group, the direct tiles); quantized and raw weights.
TEST(MatmulKernels, KQuantPrefillChunks) {
    if (simd_levels().empty()) GTEST_SKIP() << "no SIMD level on this CPU";
    std::mt19937 rng(2626);
    for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K})
        for (int64_t n_tokens : {int64_t{5}, int64_t{9}, int64_t{10}, int64_t{19}, int64_t{28}, int64_t{32}})
            for (bool raw : {false, true}) check_case({type, 17 * 256, 37, n_tokens, raw}, rng);
}

// BF16 near the bottom of f32's range: subnormal weights and activations (read as
// zero) and sums that cross the smallest normal (flushed to zero at every step),
// as the BF16 dot-product instruction does; on CPUs that have it, the AVX-512
// level runs that instruction, so this checks it against the reference.
TEST(MatmulKernels, Bf16SubnormalsAndFlushes) {
    if (simd_levels().empty()) GTEST_SKIP() << "no SIMD level on this CPU";
    std::mt19937 rng(5);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    const Case c{GgmlType::BF16, 301, 70, 14, false};
    std::vector<uint8_t> w(static_cast<size_t>(2 * c.n_in * c.n_out));
    for (size_t i = 0; i < w.size(); i += 2) {
        uint16_t h = quant::fp32_to_bf16(std::ldexp(nd(rng), -60));
        if (rng() % 5 == 0) h = static_cast<uint16_t>((rng() & 0x807F) | 1);  // a subnormal
        std::memcpy(&w[i], &h, 2);
    }
    std::vector<float> x(static_cast<size_t>(c.n_in * c.n_tokens));
    for (size_t i = 0; i < x.size(); ++i) x[i] = rng() % 6 == 0 ? std::ldexp(nd(rng), -128) : std::ldexp(nd(rng), -66);
    const std::vector<float> y = check_data(c, w, x);
    // The data does reach the flushes: an unflushed chain differs somewhere.
    int differ = 0;
    for (int64_t o = 0; o < c.n_out; ++o) {
        float sum = 0.0f;
        for (int64_t i = 0; i < c.n_in; i += 2)
            for (int64_t e : {i + 1, i})
                if (e < c.n_in) {
                    uint16_t h;
                    std::memcpy(&h, &w[static_cast<size_t>(2 * (o * c.n_in + e))], 2);
                    sum = std::fma(quant::bf16_to_fp32(h), quant::bf16_to_fp32(quant::fp32_to_bf16(x[static_cast<size_t>(e)])), sum);
                }
        differ += std::memcmp(&sum, &y[static_cast<size_t>(o)], 4) != 0;
    }
    EXPECT_GT(differ, 0);
}

// Every quantized type with a dot product has a packed layout and a kernel at
// every SIMD level (so BitIdenticalToReference exercises a kernel for each, and
// none runs the scalar reference, or is converted at load, for want of one).
TEST(MatmulKernels, EveryDotTypeHasAKernelAtEveryLevel) {
    if (simd_levels().empty()) GTEST_SKIP() << "no SIMD level on this CPU";
    for (GgmlType type : dot_types()) {
        if (is_float_weight(type)) continue;
        EXPECT_TRUE(has_packed_layout(type)) << ggml_type_name(type);
        for (const auto& [name, table] : simd_tables(type)) EXPECT_NE(table->find_quant(type), nullptr) << ggml_type_name(type) << " " << name;
    }
}

// A table's kernel reads only the panel layout it names (Q5_K: masks at AVX-512,
// bit planes at AVX2): a matrix packed in the other, for another table, is
// refused with an error, never misread.
TEST(MatmulKernels, PackedLayoutMustBeTheTables) {
    std::mt19937 rng(31);
    const Case c{GgmlType::Q5_K, 512, 40, 3, true};
    const std::vector<uint8_t> bytes = make_weights(c, rng);
    const std::vector<float> x = make_activations(c, rng);
    Matrix m = raw_matrix(c, bytes);
    ThreadPool pool(1);
    MatmulScratch scratch;
    std::vector<float> y(static_cast<size_t>(c.n_out * c.n_tokens));
    int checked = 0;
    for (const auto& [name, table] : simd_tables(c.type))
        for (PanelLayout layout : {PanelLayout::Standard, PanelLayout::BitPlanes}) {
            m.packed = pack_matrix(c.type, layout, m.data, m.row_bytes, m.n_in, m.n_out);
            if (layout == table->panel_layout(c.type)) {
                EXPECT_NO_THROW(matmul_with(*table, m, x.data(), c.n_tokens, y.data(), pool, scratch)) << name;
            } else {
                EXPECT_THROW(matmul_with(*table, m, x.data(), c.n_tokens, y.data(), pool, scratch), Error) << name;
                ++checked;
            }
        }
    EXPECT_EQ(checked, static_cast<int>(simd_tables(c.type).size()));  // each SIMD table refused the other layout
    // A type without a second layout has none to pack.
    EXPECT_THROW(pack_matrix(GgmlType::Q4_K, PanelLayout::BitPlanes, m.data, m.row_bytes, m.n_in, m.n_out), Error);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatmulKernels, ::testing::ValuesIn(dot_types()),
                         [](const auto& info) { return std::string(ggml_type_name(info.param)); });

// The packed activation layouts hold exactly what the reference activation
// quantizers produce (levels, scales, sums).
TEST(ActivationPacking, MatchesReferenceQuantizers) {
    std::mt19937 rng(99);
    for (Isa isa : simd_levels()) {
        const KernelTable& k = *kernel_table(isa);
        for (GgmlType wt : {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q4_K, GgmlType::Q6_K}) {
            SCOPED_TRACE(std::string(isa_name(isa)) + " " + std::string(ggml_type_name(wt)));
            const ActFormat f = act_format(wt);
            const int64_t n_in = 4 * 256, n_tokens = 11;
            const std::vector<float> x = make_activations({wt, n_in, 1, n_tokens, false}, rng);
            ActPack a;
            a.format = f;
            a.n_tokens = n_tokens;
            a.n_blocks = n_in / f.block;
            a.group_bytes = f.block_stride * static_cast<uint64_t>(a.n_blocks);
            std::vector<uint8_t> buf(a.group_bytes * static_cast<uint64_t>(a.n_groups()));
            a.data = buf.data();
            k.prep_act(x.data(), n_in, 0, a.n_groups(), a);
            std::vector<uint8_t> ref(ggml_row_bytes(f.act_type, n_in));
            for (int64_t t = 0; t < n_tokens; ++t) {
                quantize_activations(f.act_type, x.data() + t * n_in, ref.data(), n_in);
                const uint8_t* g = a.group(t / k_act_group);
                const int tt = static_cast<int>(t % k_act_group);
                const GgmlTypeInfo& info = ggml_type_info(f.act_type);
                for (int64_t b = 0; b < a.n_blocks; ++b) {
                    const uint8_t* blk = g + static_cast<uint64_t>(b) * f.block_stride;
                    const uint8_t* rb = ref.data() + static_cast<uint64_t>(b) * info.block_bytes;
                    const int qs_off = f.act_type == GgmlType::Q8_0 ? 2 : f.act_type == GgmlType::Q8_1 ? 4 : 4;
                    ASSERT_EQ(std::memcmp(blk + act_qs_offset(tt, f.block), rb + qs_off, static_cast<size_t>(f.block)), 0)
                        << "levels of token " << t << " block " << b;
                    float d_ref, d_got;
                    std::memcpy(&d_got, blk + act_d_offset(f.block) + 4 * tt, 4);
                    if (f.act_type == GgmlType::Q8_K) {
                        std::memcpy(&d_ref, rb, 4);
                    } else {
                        uint16_t h;
                        std::memcpy(&h, rb, 2);
                        d_ref = quant::fp16_to_fp32(h);
                    }
                    EXPECT_EQ(std::memcmp(&d_ref, &d_got, 4), 0) << "scale of token " << t << " block " << b;
                }
            }
        }
    }
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// matmul_many (q / k / v, gate / up in one parallel region) equals separate products.
TEST(MatmulMany, FusedEqualsSeparate) {
    std::mt19937 rng(17);
    for (GgmlType type : {GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::F16}) {
        const int64_t n_in = 512;
        const int64_t outs[] = {96, 32, 40};
        std::vector<std::vector<uint8_t>> bytes;
        std::vector<Matrix> ms(3);
        for (int i = 0; i < 3; ++i) {
            bytes.push_back(make_weights({type, n_in, outs[i], 1, false}, rng));
            Matrix& m = ms[static_cast<size_t>(i)];
            m.type = type;
            m.data = bytes.back().data();
            m.n_in = n_in;
            m.n_out = outs[i];
            m.row_bytes = ggml_row_bytes(type, static_cast<uint64_t>(n_in));
        }
        std::vector<Matrix*> ptrs = {&ms[0], &ms[1], &ms[2]};
        prepare_matrices(ptrs);
        for (int64_t n_tokens : {1, 5, 19}) {
            const std::vector<float> x = make_activations({type, n_in, 1, n_tokens, false}, rng);
            ThreadPool pool(2);
            MatmulScratch scratch;
            std::vector<std::vector<float>> sep(3), fused(3);
            for (int i = 0; i < 3; ++i) {
                sep[static_cast<size_t>(i)].resize(static_cast<size_t>(outs[i] * n_tokens));
                fused[static_cast<size_t>(i)].resize(sep[static_cast<size_t>(i)].size());
                matmul_with(scalar_kernels(), ms[static_cast<size_t>(i)], x.data(), n_tokens, sep[static_cast<size_t>(i)].data(), pool, scratch);
            }
            const Matrix* ws[] = {&ms[0], &ms[1], &ms[2]};
            float* ys[] = {fused[0].data(), fused[1].data(), fused[2].data()};
            matmul_many(ws, x.data(), n_tokens, ys, pool, scratch);
            for (int i = 0; i < 3; ++i)
                EXPECT_EQ(std::memcmp(sep[static_cast<size_t>(i)].data(), fused[static_cast<size_t>(i)].data(),
                                      sep[static_cast<size_t>(i)].size() * 4),
                          0)
                    << ggml_type_name(type) << " matrix " << i << ", " << n_tokens << " tokens";
        }
    }
}

}  // namespace
}  // namespace kiln

namespace kiln {
namespace {

// A quantized matrix left unpacked (read in place: experts beyond the memory
// budget) runs the packed kernels on panels repacked per task: bit-identical to
// the matrix packed at load, alone and sharing an input, for decode and prefill
// token counts, partial panels and tasks, at every level and thread count.
TEST(MatmulKernels, InPlaceEqualsPacked) {
    std::mt19937 rng(29);
    for (GgmlType type : {GgmlType::Q4_K, GgmlType::MXFP4, GgmlType::Q8_0, GgmlType::Q6_K, GgmlType::Q5_0, GgmlType::Q5_K}) {
        const int64_t n_in = 512;
        const int64_t outs[] = {100, 16};  // 7 panels (two tasks, the last panel partial); one panel
        std::vector<std::vector<uint8_t>> bytes;
        std::vector<Matrix> in_place(2), packed(2);
        for (int i = 0; i < 2; ++i) {
            bytes.push_back(make_weights({type, n_in, outs[i], 1, i == 1}, rng));
            Matrix& m = in_place[static_cast<size_t>(i)];
            m.type = type;
            m.data = bytes.back().data();
            m.n_in = n_in;
            m.n_out = outs[i];
            m.row_bytes = ggml_row_bytes(type, static_cast<uint64_t>(n_in));
            packed[static_cast<size_t>(i)] = m;
        }
        for (const auto& [name, table] : simd_tables(type)) {
            for (int i = 0; i < 2; ++i)  // in the layout this table reads
                packed[static_cast<size_t>(i)].packed =
                    pack_matrix(type, table->panel_layout(type), bytes[static_cast<size_t>(i)].data(),
                                packed[static_cast<size_t>(i)].row_bytes, n_in, outs[i]);
            for (int threads : {1, 3})
                for (int64_t n_tokens : {1, 3, 17}) {
                    const std::vector<float> x = make_activations({type, n_in, 1, n_tokens, false}, rng);
                    ThreadPool pool(threads);
                    MatmulScratch scratch;
                    for (int i = 0; i < 2; ++i) {
                        std::vector<float> want(static_cast<size_t>(outs[i] * n_tokens)), got(want.size(), -1.0f);
                        matmul_with(*table, packed[static_cast<size_t>(i)], x.data(), n_tokens, want.data(), pool, scratch);
                        matmul_with(*table, in_place[static_cast<size_t>(i)], x.data(), n_tokens, got.data(), pool, scratch);
                        EXPECT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0)
                            << ggml_type_name(type) << " " << name << ", " << threads << " threads, " << n_tokens << " tokens, matrix " << i;
                    }
                }
        }
        // Two in-place matrices sharing an input (gate / up) through matmul_many, at the best level.
        for (int i = 0; i < 2; ++i)
            packed[static_cast<size_t>(i)].packed = pack_matrix(type, kernels().panel_layout(type), bytes[static_cast<size_t>(i)].data(),
                                                                packed[static_cast<size_t>(i)].row_bytes, n_in, outs[i]);
        ThreadPool pool(2);
        MatmulScratch scratch;
        const std::vector<float> x = make_activations({type, n_in, 1, 5, false}, rng);
        std::vector<float> a(static_cast<size_t>(outs[0] * 5)), b(static_cast<size_t>(outs[1] * 5)), pa(a.size()), pb(b.size());
        const Matrix* ws[] = {&in_place[0], &in_place[1]};
        float* ys[] = {a.data(), b.data()};
        matmul_many(ws, x.data(), 5, ys, pool, scratch);
        matmul(packed[0], x.data(), 5, pa.data(), pool, scratch);
        matmul(packed[1], x.data(), 5, pb.data(), pool, scratch);
        EXPECT_EQ(std::memcmp(a.data(), pa.data(), a.size() * 4), 0) << ggml_type_name(type);
        EXPECT_EQ(std::memcmp(b.data(), pb.data(), b.size() * 4), 0) << ggml_type_name(type);
    }
}

}  // namespace
}  // namespace kiln
