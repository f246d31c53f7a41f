#include "compute/probe.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "compute/thread_pool.h"
#include "kiln/model.h"
#include "model/spec.h"
#include "model/weights.h"

namespace kiln {

namespace {

__attribute__((target("avx2"))) uint64_t read_slice_avx2(const uint8_t* p, size_t n) {
    // Four independent streams: one stream per core is latency-bound far below
    // what the memory system delivers.
    __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
    const size_t quarter = n / 4 / 64 * 64;
    const uint8_t* s0 = p;
    const uint8_t* s1 = p + quarter;
    const uint8_t* s2 = p + 2 * quarter;
    const uint8_t* s3 = p + 3 * quarter;
    for (size_t i = 0; i < quarter; i += 64) {
        a = _mm256_xor_si256(a, _mm256_load_si256(reinterpret_cast<const __m256i*>(s0 + i)));
        a = _mm256_xor_si256(a, _mm256_load_si256(reinterpret_cast<const __m256i*>(s0 + i + 32)));
        b = _mm256_xor_si256(b, _mm256_load_si256(reinterpret_cast<const __m256i*>(s1 + i)));
        b = _mm256_xor_si256(b, _mm256_load_si256(reinterpret_cast<const __m256i*>(s1 + i + 32)));
        c = _mm256_xor_si256(c, _mm256_load_si256(reinterpret_cast<const __m256i*>(s2 + i)));
        c = _mm256_xor_si256(c, _mm256_load_si256(reinterpret_cast<const __m256i*>(s2 + i + 32)));
        d = _mm256_xor_si256(d, _mm256_load_si256(reinterpret_cast<const __m256i*>(s3 + i)));
        d = _mm256_xor_si256(d, _mm256_load_si256(reinterpret_cast<const __m256i*>(s3 + i + 32)));
    }
    __m256i x = _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d));
    return static_cast<uint64_t>(_mm256_extract_epi64(x, 0));
}

__attribute__((target("avx512f,avx512bw,avx512vnni"))) double int8_vnni_512(int64_t iters) {
    __m512i acc[8];
    for (auto& r : acc) r = _mm512_set1_epi32(1);
    const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
    for (int64_t i = 0; i < iters; ++i)
        for (auto& r : acc) r = _mm512_dpbusd_epi32(r, a, b);
    __m512i s = acc[0];
    for (int k = 1; k < 8; ++k) s = _mm512_add_epi32(s, acc[k]);
    return static_cast<double>(_mm512_reduce_add_epi32(s));
}

__attribute__((target("avx2"))) double int8_avx2(int64_t iters) {
    __m256i acc[8];
    for (auto& r : acc) r = _mm256_set1_epi16(1);
    const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(5);
    for (int64_t i = 0; i < iters; ++i)
        for (auto& r : acc) r = _mm256_add_epi16(r, _mm256_maddubs_epi16(a, b));
    __m256i s = acc[0];
    for (int k = 1; k < 8; ++k) s = _mm256_add_epi16(s, acc[k]);
    return static_cast<double>(_mm256_extract_epi16(s, 0));
}

}  // namespace

MachineProbe probe_machine(int n_threads) {
    MachineProbe p;
    ThreadPool pool(n_threads);
    if (!__builtin_cpu_supports("avx2")) return p;
    constexpr size_t k_bytes = size_t{512} << 20;
    std::unique_ptr<uint8_t, decltype(&std::free)> buf(static_cast<uint8_t*>(std::aligned_alloc(64, k_bytes)), &std::free);
    std::memset(buf.get(), 1, k_bytes);
    double best = 0;
    volatile uint64_t sink = 0;
    for (int rep = 0; rep < 3; ++rep) {
        auto t0 = std::chrono::steady_clock::now();
        const size_t per = k_bytes / static_cast<size_t>(pool.size()) / 256 * 256;
        pool.run(pool.size(), [&](int64_t t, int) { sink ^= read_slice_avx2(buf.get() + static_cast<size_t>(t) * per, per); });
        double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::max(best, static_cast<double>(per * static_cast<size_t>(pool.size())) / s);
    }
    p.read_bandwidth = best;

    const bool vnni = __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512bw");
    const int64_t iters = 2000000;
    volatile double sink2 = 0;
    auto t0 = std::chrono::steady_clock::now();
    pool.run(pool.size(), [&](int64_t, int) { sink2 = sink2 + (vnni ? int8_vnni_512(iters) : int8_avx2(iters)); });
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // vpdpbusd: 64 multiply-adds per instruction; vpmaddubsw + vpaddw: 32.
    const double per_instr = vnni ? 64.0 : 32.0;
    p.int8_ops = 2.0 * per_instr * 8.0 * static_cast<double>(iters) * pool.size() / s;
    p.int8_kind = vnni ? "avx512-vnni" : "avx2";
    return p;
}

uint64_t model_weight_bytes(const Model& model) {
    const ModelWeights& w = model.weights();
    auto bytes = [](const Matrix& m) { return m.empty() ? uint64_t{0} : m.row_bytes * static_cast<uint64_t>(m.n_out); };
    uint64_t total = bytes(w.output);
    for (const LayerWeights& l : w.layers)
        total += bytes(l.wq) + bytes(l.wk) + bytes(l.wv) + bytes(l.wo) + bytes(l.ffn_gate) + bytes(l.ffn_up) + bytes(l.ffn_down);
    return total;
}

uint64_t model_params(const Model& model) {
    const ModelWeights& w = model.weights();
    auto n = [](const Matrix& m) { return static_cast<uint64_t>(m.n_in) * static_cast<uint64_t>(m.n_out); };
    uint64_t total = n(w.output);
    for (const LayerWeights& l : w.layers)
        total += n(l.wq) + n(l.wk) + n(l.wv) + n(l.wo) + n(l.ffn_gate) + n(l.ffn_up) + n(l.ffn_down);
    return total;
}

}  // namespace kiln
