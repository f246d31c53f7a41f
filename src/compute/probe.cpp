#include "kiln/system.h"

#include "compute/probe.h"

#include "compute/cpu_features.h"
#include "compute/kernels/avx2_common.h"
#include "compute/kernels/avx512_intrinsics.h"
#include "compute/kernels/kernels.h"
#include "compute/kernels/packing.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "compute/thread_pool.h"

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

// Eight independent accumulators hide the instructions' latency; the loops are
// unrolled so they stay in registers.
__attribute__((target("avx512f,avx512bw,avx512vnni"))) double int8_vnni_512(int64_t iters) {
    __m512i acc[8];
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) acc[k] = _mm512_set1_epi32(k);
    const __m512i a = _mm512_set1_epi8(3), b = _mm512_set1_epi8(5);
    for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 8
        for (int k = 0; k < 8; ++k) acc[k] = _mm512_dpbusd_epi32(acc[k], a, b);
    __m512i s = acc[0];
#pragma GCC unroll 8
    for (int k = 1; k < 8; ++k) s = _mm512_add_epi32(s, acc[k]);
    return static_cast<double>(_mm512_reduce_add_epi32(s));
}

// AVX-VNNI's vpdpbusd on ymm, through the kernels' own helper. Twelve chains
// (with the two operands, 14 of the 16 ymm registers): an Intel core issues two
// a cycle at a latency of 5, and 8 chains measured about half its rate there
// (docs/perf.md, 2026-12-06).
constexpr int k_avx_vnni_chains = 12;
KILN_TARGET_AVX2 double int8_avx_vnni(int64_t iters) {
    __m256i acc[k_avx_vnni_chains];
#pragma GCC unroll 12
    for (int k = 0; k < k_avx_vnni_chains; ++k) acc[k] = _mm256_set1_epi32(k);
    const __m256i a = _mm256_set1_epi8(3), b = _mm256_set1_epi8(5);
    for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
        for (int k = 0; k < k_avx_vnni_chains; ++k) acc[k] = avx2::dpbusd(acc[k], a, b);
    __m256i s = acc[0];
#pragma GCC unroll 12
    for (int k = 1; k < k_avx_vnni_chains; ++k) s = _mm256_add_epi32(s, acc[k]);
    return static_cast<double>(_mm256_extract_epi32(s, 0));
}

__attribute__((target("avx2"))) double int8_avx2(int64_t iters) {
    // Eight independent products per iteration whose operand `a` changes every
    // iteration (a constant product would be hoisted out of the loop, leaving only
    // the adds to time): four values, each in both operand orders.
    __m256i a = _mm256_set1_epi8(3);
    const __m256i one = _mm256_set1_epi8(1);
    const __m256i b0 = _mm256_set1_epi8(5), b1 = _mm256_set1_epi8(6), b2 = _mm256_set1_epi8(7), b3 = _mm256_set1_epi8(9);
    __m256i c0 = _mm256_set1_epi16(1), c1 = c0, c2 = c0, c3 = c0, c4 = c0, c5 = c0, c6 = c0, c7 = c0;
    for (int64_t i = 0; i < iters; ++i) {
        a = _mm256_add_epi8(a, one);
        c0 = _mm256_add_epi16(c0, _mm256_maddubs_epi16(a, b0));
        c1 = _mm256_add_epi16(c1, _mm256_maddubs_epi16(b0, a));
        c2 = _mm256_add_epi16(c2, _mm256_maddubs_epi16(a, b1));
        c3 = _mm256_add_epi16(c3, _mm256_maddubs_epi16(b1, a));
        c4 = _mm256_add_epi16(c4, _mm256_maddubs_epi16(a, b2));
        c5 = _mm256_add_epi16(c5, _mm256_maddubs_epi16(b2, a));
        c6 = _mm256_add_epi16(c6, _mm256_maddubs_epi16(a, b3));
        c7 = _mm256_add_epi16(c7, _mm256_maddubs_epi16(b3, a));
    }
    const __m256i s = _mm256_add_epi16(_mm256_add_epi16(_mm256_add_epi16(c0, c1), _mm256_add_epi16(c2, c3)),
                                       _mm256_add_epi16(_mm256_add_epi16(c4, c5), _mm256_add_epi16(c6, c7)));
    return static_cast<double>(_mm256_extract_epi16(s, 0));
}

// Twelve independent f32 chains of one instruction: the fused multiply-add, or
// with `bf16` VDPBF16PS (two multiply-adds per lane), written as assembly so that
// the function needs only AVX-512 F (it runs only where the kernels use it).
template <bool bf16>
__attribute__((target("avx512f"))) double f32_chains_512(int64_t iters) {
    __m512 acc[12];
#pragma GCC unroll 12
    for (int k = 0; k < 12; ++k) acc[k] = _mm512_set1_ps(static_cast<float>(k));
    // bf16: pairs of bfloat16 0.996 and 0.001 (the sums grow by 0.002 a step).
    const __m512 a = bf16 ? _mm512_castsi512_ps(_mm512_set1_epi32(0x3F7F3F7F)) : _mm512_set1_ps(0.999f);
    const __m512 b = bf16 ? _mm512_castsi512_ps(_mm512_set1_epi32(0x3A833A83)) : _mm512_set1_ps(0.001f);
    for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
        for (int k = 0; k < 12; ++k) {
            if constexpr (bf16)
                __asm__("vdpbf16ps %2, %1, %0" : "+v"(acc[k]) : "v"(a), "v"(b));
            else
                acc[k] = _mm512_fmadd_ps(acc[k], a, b);
        }
    __m512 s = acc[0];
#pragma GCC unroll 12
    for (int k = 1; k < 12; ++k) s = _mm512_add_ps(s, acc[k]);
    return static_cast<double>(_mm512_reduce_add_ps(s));
}

__attribute__((target("avx2,fma"))) double fma_256(int64_t iters) {
    __m256 acc[12];
#pragma GCC unroll 12
    for (int k = 0; k < 12; ++k) acc[k] = _mm256_set1_ps(static_cast<float>(k));
    const __m256 a = _mm256_set1_ps(0.999f), b = _mm256_set1_ps(0.001f);
    for (int64_t i = 0; i < iters; ++i)
#pragma GCC unroll 12
        for (int k = 0; k < 12; ++k) acc[k] = _mm256_fmadd_ps(acc[k], a, b);
    __m256 s = acc[0];
#pragma GCC unroll 12
    for (int k = 1; k < 12; ++k) s = _mm256_add_ps(s, acc[k]);
    alignas(32) float out[8];
    _mm256_store_ps(out, s);
    return static_cast<double>(out[0]);
}

// Runs fn(iters) on every thread of the pool; the best of 3 rates of `per_iter`
// operations per iteration per thread.
template <typename Fn>
double rate(ThreadPool& pool, Fn fn, double per_iter) {
    const int64_t iters = 2000000;
    double best = 0;
    for (int rep = 0; rep < 3; ++rep) {
        std::atomic<double> sink{0};
        const auto t0 = std::chrono::steady_clock::now();
        pool.run(pool.size(), [&](int64_t, int) { sink.store(fn(iters), std::memory_order_relaxed); });
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::max(best, per_iter * static_cast<double>(iters) * pool.size() / s);
    }
    return best;
}

}  // namespace

double read_pass(ThreadPool& pool, const uint8_t* buf, size_t n) {
    std::atomic<uint64_t> sink{0};
    const auto t0 = std::chrono::steady_clock::now();
    const size_t per = n / static_cast<size_t>(pool.size()) / 256 * 256;
    pool.run(pool.size(), [&](int64_t t, int) { sink ^= read_slice_avx2(buf + static_cast<size_t>(t) * per, per); });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return static_cast<double>(per * static_cast<size_t>(pool.size())) / s;
}

MachineProbe probe_machine(int n_threads) {
    MachineProbe p;
    ThreadPool pool(n_threads);
    if (!cpu_features().avx2) return p;
    constexpr size_t k_bytes = size_t{512} << 20;
    std::unique_ptr<uint8_t, decltype(&std::free)> buf(static_cast<uint8_t*>(std::aligned_alloc(64, k_bytes)), &std::free);
    std::memset(buf.get(), 1, k_bytes);
    // The best of 5 reads of the whole buffer: the other jobs on a shared machine
    // only ever slow a read down.
    double best = 0;
    for (int rep = 0; rep < 5; ++rep) best = std::max(best, read_pass(pool, buf.get(), k_bytes));
    buf.reset();
    p.read_bandwidth = best;

    // The rates of the instruction set the kernels run at (KILN_ISA may lower it).
    const bool level512 = kernels().isa == Isa::Avx512;
    const bool vnni = level512 && cpu_features().avx512vnni && cpu_features().avx512bw;
    // vpdpbusd: 64 multiply-adds per instruction (ymm: 32); vpmaddubsw + vpaddw: 32; 8 per iteration (AVX-VNNI: 12).
    if (vnni) {
        p.int8_ops = rate(pool, int8_vnni_512, 2.0 * 64 * 8);
        p.int8_kind = "avx512-vnni";
    } else if (kernels().avx_vnni) {
        p.int8_ops = rate(pool, int8_avx_vnni, 2.0 * 32 * k_avx_vnni_chains);
        p.int8_kind = "avx-vnni";
    } else {
        p.int8_ops = rate(pool, int8_avx2, 2.0 * 32 * 8);
        p.int8_kind = "avx2";
    }
    const bool avx512 = level512 && cpu_features().avx512f;
    p.f32_flops = avx512 ? rate(pool, f32_chains_512<false>, 2.0 * 16 * 12) : (cpu_features().fma ? rate(pool, fma_256, 2.0 * 8 * 12) : 0);
    if (kernels().bf16_pair_acts) p.bf16_flops = rate(pool, f32_chains_512<true>, 2.0 * 32 * 12);
    return p;
}

std::string kernel_level() { return kernels_name(kernels()); }

}  // namespace kiln
