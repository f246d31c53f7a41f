// Streaming attention (compute/attention.h: attend_rows_stream, the
// ContextOptions::flash_attn path) against the exact attention and against its
// own scalar reference, at every compiled level the CPU runs:
//  * the scalar table's kernel is the reference itself (bit for bit);
//  * each SIMD level against the reference: 2e-5 x max|v| (q.k summed in lanes,
//    the vector exponential's last bits, the block sums' order);
//  * the reference against attend(): f32 / q8_0 caches 2e-5 x max|v| (the same
//    softmax, its sum taken block by block); f16 caches 2e-3 x max|v| (attend()
//    rounds the normalised weights to f16 as llama.cpp's default attention does,
//    the streaming form keeps them in f32);
//  * a block of rows gives each row the bits it gets alone, and a call's KV heads
//    each the bits they get one at a time (batch invariance, any task split), at
//    every level; a ring of cache slots reads as a straight run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention_test_ring.h"
#include "compute/alibi.h"
#include "compute/attention.h"
#include "compute/kernels/kernels.h"
#include "kiln/quant.h"

namespace kiln {
namespace {

std::vector<float> normal_values(size_t n, float scale, std::mt19937& rng) {
    std::normal_distribution<float> nd(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = nd(rng);
    return v;
}

std::vector<const KernelTable*> all_tables() {
    std::vector<const KernelTable*> out{&scalar_kernels()};
    for (Isa isa : {Isa::Avx2, Isa::Avx512})
        if (const KernelTable* t = kernel_table(isa)) out.push_back(t);
    return out;
}

struct StreamCase {
    int n_head, n_head_kv, dk, dv;
    GgmlType cache;
    int n_rows;
    int64_t first_pos;  // the first row's position; rows follow it, `gap` apart
    int gap;
    float softcap = 0;
    bool prescale = false, sinks = false, alibi = false;
};

TEST(StreamAttention, TracksExactAttentionAndItsReference) {
    std::mt19937 rng(21);
    const StreamCase cases[] = {
        {4, 1, 64, 64, GgmlType::F16, 1, 8191, 1},           // a decode step at depth 8192 (the 1B model's group)
        {9, 3, 64, 64, GgmlType::F16, 1, 0, 1},              // one key
        {9, 3, 64, 64, GgmlType::F16, 1, 63, 1},             // exactly one block
        {9, 3, 64, 64, GgmlType::F16, 1, 64, 1},             // one key into the second block
        {4, 2, 64, 64, GgmlType::F32, 3, 100, 5},
        {4, 2, 64, 64, GgmlType::Q8_0, 1, 700, 1},           // q8_0 read in place
        {8, 2, 128, 128, GgmlType::Q8_0, 2, 200, 1, 20.0f, true},
        {4, 1, 256, 256, GgmlType::F16, 1, 300, 1, 30.0f, true},
        {2, 1, 24, 40, GgmlType::F32, 4, 23, 2},             // head sizes no fixed kernel takes
        {4, 2, 16, 16, GgmlType::F32, 1, 0, 1, 0, false, true},   // a sink against one key
        {8, 2, 64, 64, GgmlType::F16, 5, 150, 1, 0, false, true}, // sinks
        {6, 6, 16, 16, GgmlType::F16, 3, 40, 1, 0, false, false, true},  // ALiBi
        {12, 12, 64, 64, GgmlType::Q8_0, 1, 300, 1, 0, false, false, true},
        {4, 1, 576, 512, GgmlType::Q8_0, 2, 90, 1},          // latent attention's heads
        {4, 1, 64, 64, GgmlType::F16, 17, 500, 1},           // a prefill chunk's rows
    };
    for (const StreamCase& c : cases) {
        SCOPED_TRACE("heads " + std::to_string(c.n_head) + "/" + std::to_string(c.n_head_kv) + " dk " + std::to_string(c.dk) +
                     " rows " + std::to_string(c.n_rows) + " from " + std::to_string(c.first_pos) + " " +
                     std::string(ggml_type_name(c.cache)));
        AttentionShape s = test_attention_shape(c.n_head, c.n_head_kv, c.dk, c.dv, c.prescale, c.softcap);
        const std::vector<float> sinks = normal_values(static_cast<size_t>(c.n_head), 3.0f, rng);
        if (c.sinks) s.sinks = sinks.data();
        const std::vector<float> slopes = c.alibi ? alibi_slopes(c.n_head, 8.0f) : std::vector<float>();
        if (c.alibi) s.alibi = slopes.data();
        std::vector<int64_t> pos;
        for (int r = 0; r < c.n_rows; ++r) pos.push_back(c.first_pos + static_cast<int64_t>(r) * c.gap);
        // The keys start at position 3 (or the first row's), in a ring whose slots
        // (p + 37) % capacity wrap before the last key.
        const int64_t first = std::min<int64_t>(3, pos[0]), last = pos.back();
        TestKvRing cache(c.cache, static_cast<int64_t>(c.n_head_kv) * c.dk, static_cast<int64_t>(c.n_head_kv) * c.dv,
                         last - first + 1 + 11, -37);
        cache.fill(first, last, [&](size_t n) { return normal_values(n, 1.0f, rng); });
        const KvRows rows = cache.rows();
        const KvView view = cache.view();

        const int64_t q_stride = static_cast<int64_t>(c.n_head) * c.dk + 8, out_stride = static_cast<int64_t>(c.n_head) * c.dv + 8;
        const std::vector<float> q = normal_values(static_cast<size_t>(c.n_rows * q_stride), 3.0f, rng);
        const size_t n_out = static_cast<size_t>(c.n_rows * out_stride);
        AttentionScratch scratch;
        // The exact attention of each row, and the streaming reference.
        std::vector<float> exact(n_out, 0.0f), ref(n_out, -1.0f);
        for (int r = 0; r < c.n_rows; ++r) {
            AttentionShape row = s;
            row.q_pos = pos[static_cast<size_t>(r)];
            attend(row, q.data() + r * q_stride, first, pos[static_cast<size_t>(r)], view, exact.data() + r * out_stride, scratch);
        }
        attend_stream_scalar(s, q.data(), q_stride, first, pos.data(), pos.data(), c.n_rows, rows, ref.data(), out_stride, scratch);
        auto worst_diff = [&](const std::vector<float>& a, const std::vector<float>& b) {
            float worst = 0;
            for (int r = 0; r < c.n_rows; ++r)
                for (int64_t i = 0; i < static_cast<int64_t>(c.n_head) * c.dv; ++i)
                    worst = std::max(worst, std::fabs(a[static_cast<size_t>(r * out_stride + i)] - b[static_cast<size_t>(r * out_stride + i)]));
            return worst;
        };
        const float vs_exact = worst_diff(ref, exact);
        EXPECT_LE(vs_exact, (c.cache == GgmlType::F16 ? 2e-3f : 2e-5f) * cache.vmax);
        std::printf("[ figures  ] stream reference vs exact, %s dk %d, %d rows to %lld: max |difference| %.3g (max |v| %.3g)\n",
                    ggml_type_name(c.cache).data(), c.dk, c.n_rows, static_cast<long long>(last), vs_exact, cache.vmax);
        for (const KernelTable* k : all_tables()) {
            ASSERT_NE(k->attend_stream, nullptr) << isa_name(k->isa);
            std::vector<float> block(n_out, -1.0f), alone(n_out, -1.0f);
            k->attend_stream(s, q.data(), q_stride, first, pos.data(), pos.data(), c.n_rows, rows, block.data(), out_stride, scratch);
            for (int r = 0; r < c.n_rows; ++r)
                k->attend_stream(s, q.data() + r * q_stride, 0, first, &pos[static_cast<size_t>(r)], &pos[static_cast<size_t>(r)], 1,
                                 rows, alone.data() + r * out_stride, 0, scratch);
            EXPECT_EQ(std::memcmp(block.data(), alone.data(), n_out * 4), 0) << isa_name(k->isa) << ": a row in a block differs from alone";
            if (c.n_head_kv > 1) {  // each KV head alone: the same bits as all of them in one call
                std::vector<float> per_head(n_out, -1.0f);
                const int group = c.n_head / c.n_head_kv;
                AttentionShape one = s;
                one.n_head = group;
                one.n_head_kv = 1;
                for (int g = 0; g < c.n_head_kv; ++g) {
                    if (c.sinks) one.sinks = sinks.data() + g * group;
                    if (c.alibi) one.alibi = slopes.data() + g * group;
                    KvRows head = rows;
                    head.k += kv_row_offset(c.cache, static_cast<uint64_t>(g) * c.dk);
                    head.v += kv_row_offset(c.cache, static_cast<uint64_t>(g) * c.dv);
                    k->attend_stream(one, q.data() + g * group * c.dk, q_stride, first, pos.data(), pos.data(), c.n_rows, head,
                                     per_head.data() + g * group * c.dv, out_stride, scratch);
                }
                EXPECT_EQ(std::memcmp(block.data(), per_head.data(), n_out * 4), 0) << isa_name(k->isa) << ": KV heads one at a time differ";
            }
            const float d = worst_diff(block, ref);
            if (k == &scalar_kernels())
                EXPECT_EQ(std::memcmp(block.data(), ref.data(), n_out * 4), 0);
            else
                EXPECT_LE(d, 2e-5f * cache.vmax) << isa_name(k->isa);
            for (int r = 0; r < c.n_rows; ++r)  // nothing written past a row's heads
                for (int64_t i = static_cast<int64_t>(c.n_head) * c.dv; i < out_stride; ++i)
                    EXPECT_EQ(block[static_cast<size_t>(r * out_stride + i)], -1.0f) << isa_name(k->isa);
            std::printf("[ figures  ] %s stream vs its reference: max |difference| %.3g\n", isa_name(k->isa).data(), d);
        }
    }
}

}  // namespace
}  // namespace kiln
