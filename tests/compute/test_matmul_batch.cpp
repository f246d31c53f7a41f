// matmul_batch (the expert layers' products in one parallel region) against the
// scalar reference product of each job: bit-identical at every compiled level,
// with jobs of 0, 1 and many tokens, shared and separate inputs, partial panels.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "compute/kernels/kernels.h"
#include "compute/kernels/packing.h"
#include "compute/matmul.h"
#include "compute/matmul_batch.h"
#include "kiln/quant.h"

namespace kiln {
namespace {

struct Expert {
    std::vector<uint8_t> bytes;
    Matrix m;
};

Expert make_expert(GgmlType type, int64_t n_in, int64_t n_out, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    Expert e;
    const uint64_t rb = ggml_row_bytes(type, static_cast<uint64_t>(n_in));
    e.bytes.resize(static_cast<size_t>(rb * static_cast<uint64_t>(n_out)));
    std::vector<float> row(static_cast<size_t>(n_in));
    for (int64_t r = 0; r < n_out; ++r) {
        for (float& v : row) v = u(rng);
        if (type == GgmlType::F32)
            std::memcpy(e.bytes.data() + r * rb, row.data(), static_cast<size_t>(rb));
        else
            quant::quantize_row(type, row.data(), e.bytes.data() + r * rb, n_in);
    }
    e.m.type = type;
    e.m.n_in = n_in;
    e.m.n_out = n_out;
    e.m.row_bytes = rb;
    return e;
}

TEST(MatmulBatch, EveryJobEqualsItsReferenceProduct) {
    std::mt19937 rng(23);
    std::uniform_real_distribution<float> u(-2.0f, 2.0f);
    for (GgmlType type : {GgmlType::Q4_K, GgmlType::Q8_0, GgmlType::Q6_K, GgmlType::Q4_0, GgmlType::Q5_K, GgmlType::F32}) {
        const int64_t n_in = 256, n_out = 40;  // 40 rows: a partial 16-row panel
        std::vector<Expert> ex;
        for (int i = 0; i < 6; ++i) ex.push_back(make_expert(type, n_in, n_out, rng));
        for (auto& e : ex) e.m.data = e.bytes.data();
        // Inputs of 1, 3, 9 and 17 tokens; jobs 0/1 share input 0 (gate / up).
        const int64_t tokens[] = {1, 3, 9, 17, 0};
        std::vector<std::vector<float>> xs;
        for (int64_t t : tokens) {
            xs.emplace_back(static_cast<size_t>(std::max<int64_t>(t, 1) * n_in));
            for (float& v : xs.back()) v = u(rng);
        }
        const int input_of[] = {0, 0, 1, 2, 3, 4};
        std::vector<const KernelTable*> tables = {&kernels(), &scalar_kernels()};
        for (Isa isa : {Isa::Avx2, Isa::Avx512})
            if (kernel_table(isa)) tables.push_back(kernel_table(isa));
        for (int threads : {1, 3}) {
            ThreadPool pool(threads);
            for (const KernelTable* k : tables) {
                for (auto& e : ex)  // in the panel layout this table reads (KernelTable::panel_layout)
                    e.m.packed = pack_matrix(type, k->panel_layout(type), e.m.data, e.m.row_bytes, e.m.n_in, e.m.n_out);
                MatmulScratch scratch;
                std::vector<std::vector<float>> got(6), want(6);
                std::vector<MatmulJob> jobs;
                for (int i = 0; i < 6; ++i) {
                    const int64_t nt = tokens[input_of[i]];
                    got[static_cast<size_t>(i)].assign(static_cast<size_t>(std::max<int64_t>(nt, 1) * n_out), -7.0f);
                    want[static_cast<size_t>(i)] = got[static_cast<size_t>(i)];
                    jobs.push_back({&ex[static_cast<size_t>(i)].m, xs[static_cast<size_t>(input_of[i])].data(), nt,
                                    got[static_cast<size_t>(i)].data()});
                    matmul_with(scalar_kernels(), ex[static_cast<size_t>(i)].m, xs[static_cast<size_t>(input_of[i])].data(), nt,
                                want[static_cast<size_t>(i)].data(), pool, scratch);
                }
                matmul_batch_with(*k, jobs, pool, scratch);
                for (int i = 0; i < 6; ++i)
                    EXPECT_EQ(std::memcmp(got[static_cast<size_t>(i)].data(), want[static_cast<size_t>(i)].data(),
                                          got[static_cast<size_t>(i)].size() * sizeof(float)),
                              0)
                        << ggml_type_name(type) << ", job " << i << ", " << isa_name(k->isa) << ", " << threads << " threads";
            }
        }
    }
}

}  // namespace
}  // namespace kiln
