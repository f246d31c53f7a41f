// Microbenchmarks of the matrix kernels: one weight matrix of each fast-path type
// against 1 token (decode, bandwidth-bound) and 512 tokens (prefill, int8-bound),
// for every kernel level this CPU runs. Figures only; not a test.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "compute/kernels/kernels.h"
#include "compute/kernels/packing.h"
#include "compute/matmul.h"
#include "compute/probe.h"
#include "kiln/quant.h"

namespace {

using namespace kiln;

struct Fixture {
    std::vector<uint8_t> bytes;
    Matrix m;
};

// Packed in the panel layout `k` reads (KernelTable::panel_layout).
Fixture make(GgmlType type, const KernelTable& k, int64_t n_in, int64_t n_out) {
    Fixture f;
    const uint64_t rb = ggml_row_bytes(type, static_cast<uint64_t>(n_in));
    f.bytes.resize(rb * static_cast<uint64_t>(n_out));
    std::mt19937 rng(7);
    std::normal_distribution<float> nd;
    std::vector<float> row(static_cast<size_t>(n_in));
    if (quant::can_quantize(type)) {
        for (int64_t r = 0; r < n_out; ++r) {
            for (auto& v : row) v = nd(rng);
            quant::quantize_row(type, row.data(), f.bytes.data() + r * rb, n_in);
        }
    } else {  // no kiln quantizer (IQ4_XS, the grid i-quants): random blocks with a small f16 d (speed does not depend on values)
        const GgmlTypeInfo& info = ggml_type_info(type);
        for (auto& b : f.bytes) b = static_cast<uint8_t>(rng());
        const uint16_t h = quant::fp32_to_fp16(0.01f);
        for (uint64_t off = 0; off < f.bytes.size(); off += info.block_bytes) {
            if (type == GgmlType::IQ1_M)  // d is the top nibbles of the scale words at 48..55
                for (int k = 0; k < 4; ++k) f.bytes[off + 49 + 2 * k] = static_cast<uint8_t>((f.bytes[off + 49 + 2 * k] & 0x0F) | (((h >> (4 * k)) & 0xF) << 4));
            else
                std::memcpy(f.bytes.data() + off, &h, 2);
        }
    }
    f.m.type = type;
    f.m.data = f.bytes.data();
    f.m.n_in = n_in;
    f.m.n_out = n_out;
    f.m.row_bytes = rb;
    f.m.packed = pack_matrix(type, k.panel_layout(type), f.m.data, rb, n_in, n_out);
    return f;
}

void bm_matmul(benchmark::State& state, GgmlType type, const KernelTable* k, int64_t n_in, int64_t n_out, int64_t n_tokens, int threads) {
    static std::map<std::tuple<int, int, int64_t, int64_t>, Fixture> cache;
    auto key = std::make_tuple(static_cast<int>(type), static_cast<int>(k->panel_layout(type)), n_in, n_out);
    if (!cache.count(key)) cache.emplace(key, make(type, *k, n_in, n_out));
    const Fixture& f = cache.at(key);
    std::vector<float> x(static_cast<size_t>(n_in * n_tokens)), y(static_cast<size_t>(n_out * n_tokens));
    std::mt19937 rng(3);
    std::normal_distribution<float> nd;
    for (auto& v : x) v = nd(rng);
    ThreadPool pool(threads);
    MatmulScratch scratch;
    for (auto _ : state) {
        matmul_with(*k, f.m, x.data(), n_tokens, y.data(), pool, scratch);
        benchmark::DoNotOptimize(y.data());
    }
    const double macs = static_cast<double>(n_in) * static_cast<double>(n_out) * static_cast<double>(n_tokens);
    state.counters["Gop/s"] = benchmark::Counter(2 * macs * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
    state.counters["GB/s"] = benchmark::Counter(static_cast<double>(f.bytes.size()) * static_cast<double>(state.iterations()) / 1e9,
                                                benchmark::Counter::kIsRate);
}

// One decode step's matrix products of a 1B llama (Llama 3.2 1B's layers: 16 x
// q / k / v, o, gate / up, down; a 49,152-row output head), grouped as the engine
// groups them, each layer with its own weights so that nothing stays in cache.
// Shows what a token costs in products alone, against the memory bound.
void bm_decode_model(benchmark::State& state, GgmlType type, const KernelTable* k, int threads) {
    constexpr int64_t d = 2048, kv = 512, ff = 8192, vocab = 49152, layers = 16;
    struct Layer {
        Fixture q, k, v, o, gate, up, down;
    };
    static std::map<int, std::vector<Layer>> models;
    static std::map<int, Fixture> heads;
    const int key = static_cast<int>(type);
    if (!models.count(key)) {
        std::vector<Layer>& ls = models[key];
        for (int l = 0; l < layers; ++l)
            ls.push_back({make(type, *k, d, d), make(type, *k, d, kv), make(type, *k, d, kv), make(type, *k, d, d), make(type, *k, d, ff),
                          make(type, *k, d, ff), make(type, *k, ff, d)});
        heads.emplace(key, make(type, *k, d, vocab));
    }
    const std::vector<Layer>& ls = models.at(key);
    const Fixture& head = heads.at(key);
    std::vector<float> x(ff, 0.5f), a(d), b(kv), c(kv), g(ff), u(ff), logits(vocab);
    ThreadPool pool(threads);
    MatmulScratch scratch;
    double bytes = static_cast<double>(head.bytes.size());
    for (const Layer& l : ls)
        for (const Fixture* f : {&l.q, &l.k, &l.v, &l.o, &l.gate, &l.up, &l.down}) bytes += static_cast<double>(f->bytes.size());
    for (auto _ : state) {
        for (const Layer& l : ls) {
            const Matrix* qkv[] = {&l.q.m, &l.k.m, &l.v.m};
            float* qkv_out[] = {a.data(), b.data(), c.data()};
            matmul_many(qkv, x.data(), 1, qkv_out, pool, scratch);
            matmul_with(*k, l.o.m, a.data(), 1, x.data(), pool, scratch);
            const Matrix* gu[] = {&l.gate.m, &l.up.m};
            float* gu_out[] = {g.data(), u.data()};
            matmul_many(gu, x.data(), 1, gu_out, pool, scratch);
            matmul_with(*k, l.down.m, g.data(), 1, x.data(), pool, scratch);
        }
        matmul_with(*k, head.m, x.data(), 1, logits.data(), pool, scratch);
        benchmark::DoNotOptimize(logits.data());
    }
    state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
    state.counters["GB/s"] = benchmark::Counter(bytes * static_cast<double>(state.iterations()) / 1e9, benchmark::Counter::kIsRate);
}

// A plain read of 512 MiB with the machine probe's loop: the bandwidth the
// decode rows above are measured against. On a shared machine the bound moves
// from minute to minute, so a round of rows with this one beside them gives
// each row's share of the bandwidth at that moment.
void bm_read(benchmark::State& state, int threads) {
    constexpr size_t k_bytes = size_t{512} << 20;
    std::unique_ptr<uint8_t, decltype(&std::free)> buf(static_cast<uint8_t*>(std::aligned_alloc(64, k_bytes)), &std::free);
    std::memset(buf.get(), 1, k_bytes);
    ThreadPool pool(threads);
    double seconds = 0;
    for (auto _ : state) seconds += static_cast<double>(k_bytes) / read_pass(pool, buf.get(), k_bytes);
    state.counters["GB/s"] = benchmark::Counter(static_cast<double>(k_bytes) * static_cast<double>(state.iterations()) / 1e9 / seconds);
}

void register_all() {
    const GgmlType types[] = {GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1, GgmlType::Q8_0,
                              GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K, GgmlType::F16, GgmlType::BF16,
                              // the low-bit types (docs/perf.md, "Low-bit types")
                              GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::IQ4_XS, GgmlType::IQ4_NL, GgmlType::MXFP4,
                              GgmlType::IQ3_XXS, GgmlType::IQ3_S, GgmlType::IQ2_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S,
                              GgmlType::IQ1_S, GgmlType::IQ1_M, GgmlType::TQ1_0, GgmlType::TQ2_0};
    // Every level this CPU runs; on CPUs with AVX-VNNI also the AVX2 table without it,
    // with AVX512_VBMI the AVX-512 one without it, with AMX the AVX-512 one without it.
    std::vector<const KernelTable*> tables;
    for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
        if (const KernelTable* k = kernel_table(isa)) tables.push_back(k);
#if defined(__x86_64__)
    if (kernel_table(Isa::Avx2) && kernel_table(Isa::Avx2)->avx_vnni) tables.insert(tables.begin() + 1, &avx2_kernels_without_vnni());
    if (kernel_table(Isa::Avx512) && kernel_table(Isa::Avx512)->avx512_vbmi) tables.insert(tables.end() - 1, &avx512_kernels_without_vbmi());
    if (kernel_table(Isa::Avx512) && kernel_table(Isa::Avx512)->amx) tables.insert(tables.end() - 1, &avx512_kernels_without_amx());
#endif
    if (kernel_table(Isa::Avx2))
        for (int threads : {1, 2}) benchmark::RegisterBenchmark(("membw/read/512MiB/threads:" + std::to_string(threads)).c_str(), bm_read, threads);
    for (const KernelTable* k : tables) {
        for (GgmlType t : types)
            for (int64_t n_tokens : {1, 64, 512}) {
                if (k->isa == Isa::Scalar && n_tokens > 1) continue;
                for (int threads : {1, 2}) {
                    const int64_t n_in = n_tokens == 1 ? 8192 : 2048, n_out = n_tokens == 1 ? 16384 : 2048;
                    std::string name = "matmul/" + kernels_name(*k) + "/" + std::string(ggml_type_name(t)) + "/" + std::to_string(n_in) + "x" +
                                       std::to_string(n_out) + "/tokens:" + std::to_string(n_tokens) + "/threads:" + std::to_string(threads);
                    benchmark::RegisterBenchmark(name.c_str(), bm_matmul, t, k, n_in, n_out, n_tokens, threads)->UseRealTime();
                    // Decode of a matrix that stays in the last-level cache: the kernel's
                    // arithmetic rate, to set beside the one above that streams from memory.
                    if (n_tokens == 1) {
                        name = "matmul/" + kernels_name(*k) + "/" + std::string(ggml_type_name(t)) + "/2048x2048/tokens:1/in-cache/threads:" +
                               std::to_string(threads);
                        benchmark::RegisterBenchmark(name.c_str(), bm_matmul, t, k, 2048, 2048, 1, threads)->UseRealTime();
                        // A batch of one activation group (a speculative verification,
                        // a short prompt): the direct tiles, not the decoded prefill.
                        if (threads == 1 && k->isa != Isa::Scalar) {
                            name = "matmul/" + kernels_name(*k) + "/" + std::string(ggml_type_name(t)) + "/2048x2048/tokens:8/threads:1";
                            benchmark::RegisterBenchmark(name.c_str(), bm_matmul, t, k, 2048, 2048, 8, 1)->UseRealTime();
                        }
                    }
                }
            }
    }
    // Decode of a whole 1B llama's products (the active table, KILN_ISA's; matmul_many runs it).
    for (GgmlType t : {GgmlType::Q4_0, GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::Q2_K, GgmlType::Q3_K, GgmlType::IQ4_XS,
                       GgmlType::MXFP4, GgmlType::IQ2_XXS, GgmlType::IQ3_XXS, GgmlType::IQ2_XS, GgmlType::IQ2_S, GgmlType::IQ3_S,
                       GgmlType::TQ1_0, GgmlType::TQ2_0})
        for (int threads : {1, 2})
            benchmark::RegisterBenchmark(("decode/1B-llama/" + std::string(ggml_type_name(t)) + "/threads:" + std::to_string(threads)).c_str(),
                                         bm_decode_model, t, &kernels(), threads)
                ->UseRealTime();
    // Low-bit prefill on the shapes of a 1B llama layer (ffn gate / up, ffn down; attention is the 2048 x 2048 above).
    for (const KernelTable* k : tables) {
        if (k->isa == Isa::Scalar) continue;
        for (GgmlType t : {GgmlType::IQ3_XXS, GgmlType::IQ2_XXS, GgmlType::Q2_K, GgmlType::Q3_K})
            for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{2048, 8192}, {8192, 2048}}) {
                std::string name = "matmul/" + kernels_name(*k) + "/" + std::string(ggml_type_name(t)) + "/" + std::to_string(n_in) + "x" +
                                   std::to_string(n_out) + "/tokens:512/threads:2";
                benchmark::RegisterBenchmark(name.c_str(), bm_matmul, t, k, n_in, n_out, 512, 2)->UseRealTime();
            }
    }
    // Float prefill on the shapes of a 1B llama layer (attention, ffn gate / up, ffn down).
    for (Isa isa : {Isa::Avx2, Isa::Avx512}) {
        if (!kernel_table(isa)) continue;
        for (GgmlType t : {GgmlType::F16, GgmlType::BF16, GgmlType::F32})
            for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{2048, 2048}, {2048, 8192}, {8192, 2048}}) {
                if (t != GgmlType::F32 && n_in == 2048 && n_out == 2048) continue;  // registered with the other types above
                std::string name = "matmul/" + std::string(isa_name(isa)) + "/" + std::string(ggml_type_name(t)) + "/" +
                                   std::to_string(n_in) + "x" + std::to_string(n_out) + "/tokens:512/threads:2";
                benchmark::RegisterBenchmark(name.c_str(), bm_matmul, t, kernel_table(isa), n_in, n_out, 512, 2)->UseRealTime();
            }
    }
}

}  // namespace

int main(int argc, char** argv) {
    register_all();
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    return 0;
}
