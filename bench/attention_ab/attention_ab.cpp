// In-process A/B of the AVX2 attention kernels: a commit's avx2_ops.cpp, built by
// run.sh under the namespace avx2_old, against the working tree's (the kiln_compute
// library), calls alternating old / new (the order flipped every round), on one
// decode step (or a prefill block of `rows` rows) of one sequence: group 4, head
// size 64, `heads` KV heads in the call, a cache of `depth` positions in rows of 8
// KV heads (the 1B bench model's). On a shared VM whose speed drifts by 2x over
// minutes, separate runs of two binaries differ by tens of percent; calls side by
// side in one process see the same machine, so the median of the per-round ratios
// and its quartiles resolve a few percent. Also says whether both give the same
// bits. Figures only, not a test.
//
//   bench/attention_ab/run.sh COMMIT [depth [heads [reps [f16|f32|q8_0 [rows]]]]]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "compute/attention.h"
#include "kiln/quant.h"

namespace kiln {
// The exact and streaming entry points of both builds (compute/kernels/dispatch.cpp's table).
#define KILN_AB_DECLARE(ns)                                                                                                         \
    namespace ns {                                                                                                                  \
    void attend_block(const AttentionShape&, const float*, int64_t, int64_t, const int64_t*, const int64_t*, int, const KvRows&,   \
                      float*, int64_t, AttentionScratch&);                                                                         \
    void attend_stream(const AttentionShape&, const float*, int64_t, int64_t, const int64_t*, const int64_t*, int, const KvRows&,  \
                       float*, int64_t, AttentionScratch&);                                                                        \
    }
KILN_AB_DECLARE(avx2_old)
KILN_AB_DECLARE(avx2)
}  // namespace kiln

namespace {

using namespace kiln;

uint64_t bits_hash(const std::vector<float>& v) {
    uint64_t h = 1469598103934665603ull;
    for (float f : v) {
        uint32_t b;
        std::memcpy(&b, &f, 4);
        h = (h ^ b) * 1099511628211ull;
    }
    return h;
}

double median(std::vector<double> v, double at = 0.5) {
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(at * static_cast<double>(v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
    const int64_t depth = argc > 1 ? std::atoll(argv[1]) : 256;
    const int heads = argc > 2 ? std::atoi(argv[2]) : 4;
    const int reps = argc > 3 ? std::atoi(argv[3]) : 500;
    const std::string type_name = argc > 4 ? argv[4] : "f16";
    const int rows = argc > 5 ? std::atoi(argv[5]) : 1;
    const GgmlType type = type_name == "f32" ? GgmlType::F32 : type_name == "q8_0" ? GgmlType::Q8_0 : GgmlType::F16;
    if (depth < 1 || heads < 1 || heads > 8 || reps < 1 || rows < 1 || rows > depth) {
        std::fprintf(stderr, "attention_ab: depth >= 1, 1 <= heads <= 8, reps >= 1, 1 <= rows <= depth\n");
        return 2;
    }
    constexpr int dk = 64, group = 4, rounds = 61;
    const uint64_t row_bytes = kv_row_offset(type, 8ull * dk);
    std::vector<uint8_t> k(row_bytes * static_cast<uint64_t>(depth)), v(k.size());
    std::mt19937 rng(7);
    std::normal_distribution<float> nd;
    std::vector<float> row(8 * dk);
    for (int64_t p = 0; p < depth; ++p) {
        for (auto& x : row) x = nd(rng);
        quant::quantize_row(type, row.data(), k.data() + p * row_bytes, 8 * dk);
        for (auto& x : row) x = nd(rng);
        quant::quantize_row(type, row.data(), v.data() + p * row_bytes, 8 * dk);
    }
    const int64_t q_stride = static_cast<int64_t>(heads) * group * dk;
    std::vector<float> q(static_cast<size_t>(rows * q_stride)), out_old(q.size()), out_new(q.size());
    for (auto& x : q) x = nd(rng);
    AttentionShape s;
    s.n_head = heads * group;
    s.n_head_kv = heads;
    s.head_dim_k = s.head_dim_v = dk;
    s.scale = 0.125f;
    KvRows kv;
    kv.type = type;
    kv.k = k.data();
    kv.v = v.data();
    kv.k_row_bytes = kv.v_row_bytes = row_bytes;
    kv.capacity = depth;
    kv.f16_rounding = type == GgmlType::F16;
    AttentionScratch scratch;
    std::vector<int64_t> pos(static_cast<size_t>(rows));
    double keys = 0;  // (query row, key) pairs per KV head
    for (int r = 0; r < rows; ++r) keys += static_cast<double>((pos[static_cast<size_t>(r)] = depth - rows + r) + 1);
    for (const bool stream : {false, true}) {
        auto run = [&](bool old, std::vector<float>& out) {
            const auto fn = stream ? (old ? avx2_old::attend_stream : avx2::attend_stream) : (old ? avx2_old::attend_block : avx2::attend_block);
            const auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < reps; ++i) fn(s, q.data(), q_stride, 0, pos.data(), pos.data(), rows, kv, out.data(), q_stride, scratch);
            return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / reps / keys / heads;
        };
        run(true, out_old), run(false, out_new);  // warm-up
        std::vector<double> t_old, t_new, ratio;
        for (int r = 0; r < rounds; ++r) {
            double a, b;
            if (r % 2) b = run(false, out_new), a = run(true, out_old);
            else a = run(true, out_old), b = run(false, out_new);
            t_old.push_back(a), t_new.push_back(b), ratio.push_back(a / b);
        }
        std::printf("%-6s %s depth %lld, %d KV heads, %d rows: old %.2f new %.2f ns per key and KV head; old / new %.3f (quartiles %.3f-%.3f); %s\n",
                    stream ? "stream" : "exact", type_name.c_str(), static_cast<long long>(depth), heads, rows, median(t_old), median(t_new),
                    median(ratio), median(ratio, 0.25), median(ratio, 0.75), bits_hash(out_old) == bits_hash(out_new) ? "same bits" : "BITS DIFFER");
    }
    return 0;
}
