// The attention of one decode step at depth, alone: a synthetic cache of the 1B
// bench model's shape (16 layers, 8 KV heads of 64, 32 query heads) filled to
// --depth positions, one query per layer, split over the threads as the forward
// pass splits it. Prints the step's attention time, the cache bytes it reads,
// the rate that makes, and that rate against the probed memory bandwidth (the
// issue's bound: extra decode time at depth <= 1.2 x cache bytes / bandwidth).
// Interleaved rounds of every variant; medians. Besides wall time it prints the
// busiest thread's CPU time per step, which other jobs on a shared machine
// inflate much less than the wall time. Figures only; not a test.
//
//   attention_depth [--depth 8192] [--type f16|q8_0] [--threads 2] [--rounds 5]
//                   [--layers 16] [--kv-heads 8] [--group 4] [--head-dim 64]
//                   [--variants thread,thread-stream,...] [--rows N]
//
// --rows N: a prefill chunk instead of a decode step: N query rows at the last N
// positions (causal), split as the forward pass splits a chunk (16 rows of one
// KV head a task); the variants are then exact and stream, and the rate is the
// multiply-adds' GFLOP/s against the probed f32 FMA rate.
//
// --variants picks some of: head (exact, one task per KV head), thread (exact, a
// run of KV heads per thread: the forward pass's split), head-stream,
// thread-stream (streaming), keys (keys split over the threads); default all.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "compute/attention.h"
#include "compute/kernels/kernels.h"
#include "compute/thread_pool.h"
#include "kiln/quant.h"
#include "kiln/system.h"

namespace {

using namespace kiln;

struct Options {
    int64_t depth = 8192;
    GgmlType type = GgmlType::F16;
    int threads = 2, rounds = 5, layers = 16, kv_heads = 8, group = 4, head_dim = 64;
    int64_t rows = 0;  // > 0: a prefill chunk of this many rows
    std::string variants;  // empty: every variant of the mode
};

struct Layer {
    std::vector<uint8_t> k, v;
};

double thread_cpu_ms() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) * 1e-6;
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i], v = argv[i + 1];
        if (a == "--depth") o.depth = std::stoll(v);
        else if (a == "--type") o.type = v == "q8_0" ? GgmlType::Q8_0 : v == "f32" ? GgmlType::F32 : GgmlType::F16;
        else if (a == "--threads") o.threads = std::stoi(v);
        else if (a == "--rounds") o.rounds = std::stoi(v);
        else if (a == "--layers") o.layers = std::stoi(v);
        else if (a == "--kv-heads") o.kv_heads = std::stoi(v);
        else if (a == "--group") o.group = std::stoi(v);
        else if (a == "--head-dim") o.head_dim = std::stoi(v);
        else if (a == "--variants") o.variants = v;
        else if (a == "--rows") o.rows = std::stoll(v);
        else {
            std::fprintf(stderr, "attention_depth: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    const int n_head = o.kv_heads * o.group, dk = o.head_dim;
    const uint64_t row_bytes = ggml_row_bytes(o.type, static_cast<uint64_t>(o.kv_heads * dk));
    std::mt19937 rng(7);
    std::normal_distribution<float> nd;
    std::vector<float> row(static_cast<size_t>(o.kv_heads * dk));
    std::vector<Layer> layers(static_cast<size_t>(o.layers));
    for (Layer& l : layers) {
        l.k.resize(row_bytes * static_cast<uint64_t>(o.depth));
        l.v.resize(row_bytes * static_cast<uint64_t>(o.depth));
        for (int64_t p = 0; p < o.depth; ++p) {
            for (auto& x : row) x = nd(rng);
            quant::quantize_row(o.type, row.data(), l.k.data() + p * row_bytes, static_cast<int64_t>(row.size()));
            for (auto& x : row) x = nd(rng);
            quant::quantize_row(o.type, row.data(), l.v.data() + p * row_bytes, static_cast<int64_t>(row.size()));
        }
    }
    if (o.rows < 0 || o.rows > o.depth) {
        std::fprintf(stderr, "attention_depth: --rows must be in [0, --depth]\n");
        return 2;
    }
    const int64_t n_q = std::max<int64_t>(1, o.rows);
    std::vector<float> q(static_cast<size_t>(n_q * n_head * dk)), out(static_cast<size_t>(n_q * n_head * dk));
    for (auto& x : q) x = nd(rng);

    ThreadPool pool(o.threads);
    std::vector<AttentionScratch> scratch(static_cast<size_t>(o.threads));
    std::vector<double> cpu(static_cast<size_t>(o.threads));  // CPU ms each thread spent in tasks
    AttentionShape as;
    as.n_head = n_head;
    as.n_head_kv = o.kv_heads;
    as.head_dim_k = as.head_dim_v = dk;
    as.scale = 0.125f;
    auto rows_of = [&](const Layer& l) {
        KvRows r;
        r.type = o.type;
        r.k = l.k.data();
        r.v = l.v.data();
        r.k_row_bytes = r.v_row_bytes = row_bytes;
        r.base = 0;
        r.capacity = o.depth;
        r.f16_rounding = o.type == GgmlType::F16;
        return r;
    };
    // One decode step's attention over every layer, `per` KV heads a task (1: the
    // forward pass's split before runs of KV heads; heads / threads: its split
    // now), exact or streaming.
    auto split_heads = [&](int per, bool stream) {
        for (const Layer& l : layers) {
            const KvRows all = rows_of(l);
            pool.run((o.kv_heads + per - 1) / per, [&](int64_t task, int t) {
                const double c0 = thread_cpu_ms();
                const int g0 = static_cast<int>(task) * per, ng = std::min(per, o.kv_heads - g0);
                AttentionShape part = as;
                part.n_head = ng * o.group;
                part.n_head_kv = ng;
                KvRows heads = all;
                heads.k += kv_row_offset(o.type, static_cast<uint64_t>(g0 * dk));
                heads.v += kv_row_offset(o.type, static_cast<uint64_t>(g0 * dk));
                const int64_t last = o.depth - 1;
                const float* qh = q.data() + g0 * o.group * dk;
                float* oh = out.data() + g0 * o.group * dk;
                if (stream)
                    attend_rows_stream(part, qh, 0, 0, &last, &last, 1, heads, oh, 0, scratch[static_cast<size_t>(t)]);
                else
                    attend_rows(part, qh, 0, last, heads, oh, scratch[static_cast<size_t>(t)]);
                cpu[static_cast<size_t>(t)] += thread_cpu_ms() - c0;
            });
        }
    };
    const int run = (o.kv_heads + o.threads - 1) / o.threads;
    auto per_head = [&] { split_heads(1, false); };
    auto per_thread = [&] { split_heads(run, false); };
    auto per_head_stream = [&] { split_heads(1, true); };
    auto per_thread_stream = [&] { split_heads(run, true); };
    // Timing only (the halves are not merged): each thread streams a contiguous
    // range of keys with every KV head, reading whole rows in order.
    auto split_keys = [&] {
        for (const Layer& l : layers) {
            const KvRows all = rows_of(l);
            const int64_t per = (o.depth / o.threads + 63) / 64 * 64;
            pool.run(o.threads, [&](int64_t task, int t) {
                const double c0 = thread_cpu_ms();
                const int64_t first = task * per, last = std::min<int64_t>(o.depth, first + per) - 1;
                attend_rows_stream(as, q.data(), 0, first, &last, &last, 1, all, out.data(), 0, scratch[static_cast<size_t>(t)]);
                cpu[static_cast<size_t>(t)] += thread_cpu_ms() - c0;
            });
        }
    };
    // A prefill chunk of o.rows rows at the last positions, as Forward splits it:
    // a task is 16 rows of one KV head (its group of query heads).
    std::vector<int64_t> row_pos(static_cast<size_t>(n_q));
    for (int64_t r = 0; r < n_q; ++r) row_pos[static_cast<size_t>(r)] = o.depth - n_q + r;
    auto prefill = [&](bool stream) {
        constexpr int64_t per = 16;
        const int64_t blocks = (n_q + per - 1) / per;
        const int64_t q_stride = static_cast<int64_t>(n_head) * dk;
        for (const Layer& l : layers) {
            const KvRows all = rows_of(l);
            pool.run(blocks * o.kv_heads, [&](int64_t task, int t) {
                const double c0 = thread_cpu_ms();
                const int64_t r0 = task / o.kv_heads * per;
                const int g = static_cast<int>(task % o.kv_heads);
                const int nr = static_cast<int>(std::min(per, n_q - r0));
                AttentionShape part = as;
                part.n_head = o.group;
                part.n_head_kv = 1;
                KvRows head = all;
                head.k += kv_row_offset(o.type, static_cast<uint64_t>(g * dk));
                head.v += kv_row_offset(o.type, static_cast<uint64_t>(g * dk));
                const float* qr = q.data() + r0 * q_stride + g * o.group * dk;
                float* orow = out.data() + r0 * q_stride + g * o.group * dk;
                const int64_t* pos = row_pos.data() + r0;
                if (stream)
                    attend_rows_stream(part, qr, q_stride, 0, pos, pos, nr, head, orow, q_stride, scratch[static_cast<size_t>(t)]);
                else
                    attend_rows_block(part, qr, q_stride, 0, pos, pos, nr, head, orow, q_stride, scratch[static_cast<size_t>(t)]);
                cpu[static_cast<size_t>(t)] += thread_cpu_ms() - c0;
            });
        }
    };
    struct Variant {
        const char* key;
        const char* name;
        std::function<void()> fn;
        std::vector<double> ms, cpu_ms;
    };
    std::vector<Variant> every = {{"head", "exact, per KV head", per_head, {}, {}},
                                  {"thread", "exact, per thread", per_thread, {}, {}},
                                  {"head-stream", "streaming, per KV head", per_head_stream, {}, {}},
                                  {"thread-stream", "streaming, per thread", per_thread_stream, {}, {}},
                                  {"keys", "keys split (no merge)", split_keys, {}, {}}};
    if (o.rows > 0) {
        every = {{"exact", "prefill, exact", [&] { prefill(false); }, {}, {}},
                 {"stream", "prefill, streaming", [&] { prefill(true); }, {}, {}}};
    }
    if (o.variants.empty()) o.variants = o.rows > 0 ? "exact,stream" : "head,thread,head-stream,thread-stream,keys";
    std::vector<Variant> variants;
    for (Variant& v : every)
        if (("," + o.variants + ",").find("," + std::string(v.key) + ",") != std::string::npos) variants.push_back(v);
    if (variants.empty()) {
        std::fprintf(stderr, "attention_depth: --variants names none of %s\n",
                     o.rows > 0 ? "exact, stream" : "head, thread, head-stream, thread-stream, keys");
        return 2;
    }
    for (Variant& v : variants) v.fn();  // warm-up
    for (int r = 0; r < o.rounds; ++r)
        for (size_t i = 0; i < variants.size(); ++i) {
            Variant& v = variants[(i + static_cast<size_t>(r)) % variants.size()];
            std::fill(cpu.begin(), cpu.end(), 0.0);
            const auto t0 = std::chrono::steady_clock::now();
            for (int rep = 0; rep < 3; ++rep) v.fn();
            v.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / 3);
            v.cpu_ms.push_back(*std::max_element(cpu.begin(), cpu.end()) / 3);
        }
    const double bytes = 2.0 * static_cast<double>(row_bytes) * static_cast<double>(o.depth) * o.layers;
    const MachineProbe probe = probe_machine(o.threads);
    // The output's bits per variant (FNV-1a over the last layer's result), so that
    // two builds of a kernel can be checked to compute the same thing.
    auto output_hash = [&](Variant& v) {
        v.fn();
        uint64_t hash = 1469598103934665603ull;
        const auto* bytes = reinterpret_cast<const unsigned char*>(out.data());
        for (size_t i = 0; i < out.size() * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 1099511628211ull;
        return static_cast<unsigned long long>(hash);
    };
    if (o.rows > 0) {
        // q.k and p.v: 2 x head_dim multiply-adds per query head and key seen.
        double keys = 0;
        for (int64_t p : row_pos) keys += static_cast<double>(p + 1);
        const double flop = keys * n_head * 2.0 * dk * 2.0 * o.layers;
        std::printf("kernels %s, %d threads, %lld rows at depth %lld, %s cache, %d layers x %d KV heads of %d (%d query heads)\n",
                    kernels_name(kernels()).c_str(), o.threads, static_cast<long long>(o.rows), static_cast<long long>(o.depth - o.rows),
                    std::string(ggml_type_name(o.type)).c_str(), o.layers, o.kv_heads, dk, n_head);
        std::printf("%.1f GFLOP per chunk; probed f32 FMA %.1f GFLOP/s\n", flop / 1e9, probe.f32_flops / 1e9);
        std::printf("%-24s %10s %10s %8s %14s %10s %18s\n", "variant", "wall ms", "GFLOP/s", "of FMA", "busiest cpu ms", "best ms", "output hash");
        for (Variant& v : variants) {
            const double ms = median(v.ms), c = median(v.cpu_ms);
            const unsigned long long hash = output_hash(v);
            std::printf("%-24s %10.1f %10.1f %7.0f%% %14.1f %10.1f %18llx\n", v.name, ms, flop / ms / 1e6, 100.0 * flop / ms / 1e6 / (probe.f32_flops / 1e9), c,
                        *std::min_element(v.ms.begin(), v.ms.end()), hash);
        }
        return 0;
    }
    std::printf("kernels %s, %d threads, depth %lld, %s cache, %d layers x %d KV heads of %d (%d query heads)\n",
                kernels_name(kernels()).c_str(), o.threads, static_cast<long long>(o.depth), std::string(ggml_type_name(o.type)).c_str(), o.layers,
                o.kv_heads, dk, n_head);
    std::printf("cache bytes read per step %.1f MiB; probed read bandwidth %.1f GB/s -> bound %.2f ms\n", bytes / (1 << 20),
                probe.read_bandwidth / 1e9, bytes / probe.read_bandwidth * 1e3);
    const double bound_ms = bytes / probe.read_bandwidth * 1e3;
    std::printf("%-24s %10s %10s %8s %14s %8s %18s\n", "variant", "wall ms", "GB/s", "x bound", "busiest cpu ms", "x bound", "output hash");
    for (Variant& v : variants) {
        const double ms = median(v.ms), c = median(v.cpu_ms);
        std::printf("%-24s %10.3f %10.1f %8.2f %14.3f %8.2f %18llx\n", v.name, ms, bytes / ms / 1e6, ms / bound_ms, c, c / bound_ms,
                    output_hash(v));
    }
    return 0;
}
