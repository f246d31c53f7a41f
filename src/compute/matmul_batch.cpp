#include "compute/matmul_batch.h"

#include "compute/kernels/packing.h"

#include <algorithm>
#include <functional>
#include <vector>

namespace kiln {

namespace {

// Whether every job can run in the one-region quantized path: packed panels of
// one quantized type, in the layout the table has a kernel for.
bool one_region(const KernelTable& k, std::span<const MatmulJob> jobs) {
    if (!k.prep_act) return false;
    const GgmlType type = jobs[0].w->type;
    if (is_float_weight(type) || !k.find_quant(type)) return false;
    for (const MatmulJob& j : jobs)
        if (!j.w->packed || j.w->type != type || !k.find_quant(*j.w->packed)) return false;
    return true;
}

// Otherwise: the jobs that share an input through matmul_many, one after another.
void by_input(const KernelTable& k, std::span<const MatmulJob> jobs, const ThreadPool& pool, MatmulScratch& scratch) {
    std::vector<const Matrix*> ws;
    std::vector<float*> ys;
    for (size_t i = 0; i < jobs.size();) {
        size_t j = i;
        ws.clear();
        ys.clear();
        for (; j < jobs.size() && jobs[j].x == jobs[i].x && jobs[j].n_tokens == jobs[i].n_tokens; ++j) {
            ws.push_back(jobs[j].w);
            ys.push_back(jobs[j].y);
        }
        if (&k == &kernels()) {
            matmul_many(ws, jobs[i].x, jobs[i].n_tokens, ys, pool, scratch);
        } else {
            for (size_t m = 0; m < ws.size(); ++m) matmul_with(k, *ws[m], jobs[i].x, jobs[i].n_tokens, ys[m], pool, scratch);
        }
        i = j;
    }
}

}  // namespace

void matmul_batch_with(const KernelTable& k, std::span<const MatmulJob> all, const ThreadPool& pool, MatmulScratch& scratch) {
    std::vector<MatmulJob> kept;
    for (const MatmulJob& j : all)
        if (j.n_tokens > 0) kept.push_back(j);
    if (kept.empty()) return;
    std::span<const MatmulJob> jobs = kept;
    if (!one_region(k, jobs)) return by_input(k, jobs, pool, scratch);

    // Each distinct input (pointer, width, tokens) converted once, into one buffer.
    auto& packs = scratch.packs;
    auto& group0 = scratch.pack_group0;
    auto& job_pack = scratch.job_pack;
    packs.clear();
    group0.clear();
    job_pack.assign(jobs.size(), -1);
    std::vector<const float*> inputs;
    uint64_t bytes = 0;
    int64_t n_groups_total = 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
        const MatmulJob& j = jobs[i];
        for (size_t p = 0; p < inputs.size(); ++p)
            if (inputs[p] == j.x && packs[p].n_tokens == j.n_tokens && packs[p].n_blocks * packs[p].format.block == j.w->n_in &&
                packs[p].format.act_type == act_format(j.w->type).act_type)
                job_pack[i] = static_cast<int>(p);
        if (job_pack[i] >= 0) continue;
        ActPack a;
        a.format = act_format(j.w->type);
        a.n_tokens = j.n_tokens;
        a.n_blocks = j.w->n_in / a.format.block;
        a.group_bytes = a.format.block_stride * static_cast<uint64_t>(a.n_blocks);
        a.data = reinterpret_cast<uint8_t*>(bytes);  // an offset until the buffer exists
        bytes += (a.group_bytes * static_cast<uint64_t>(a.n_groups()) + 63) / 64 * 64;
        job_pack[i] = static_cast<int>(packs.size());
        packs.push_back(a);
        group0.push_back(n_groups_total);
        n_groups_total += a.n_groups();
        inputs.push_back(j.x);
    }
    scratch.activations.resize(static_cast<size_t>(bytes + 64));
    uint8_t* base = scratch.activations.data() + (64 - reinterpret_cast<uintptr_t>(scratch.activations.data()) % 64) % 64;
    for (ActPack& a : packs) a.data = base + reinterpret_cast<uint64_t>(a.data);
    group0.push_back(n_groups_total);
    auto prep = [&](int64_t g, int) {
        const size_t p = static_cast<size_t>(std::upper_bound(group0.begin(), group0.end(), g) - group0.begin() - 1);
        const int64_t local = g - group0[p];
        k.prep_act(inputs[p], packs[p].n_blocks * packs[p].format.block, local, local + 1, packs[p]);
    };
    // A decode step's few rows are quantized faster than the pool wakes up.
    const int64_t n_in = packs[0].n_blocks * packs[0].format.block;
    if (n_groups_total * n_in <= 16384) {
        for (int64_t g = 0; g < n_groups_total; ++g) prep(g, 0);
    } else {
        pool.run(n_groups_total, prep);
    }

    // Tasks: about two per thread over all the jobs, each job's share by its work
    // (panels x token groups), cut along panels first (decode: one token group).
    auto& tasks = scratch.tasks;
    tasks.clear();
    int64_t total = 0;
    for (size_t i = 0; i < jobs.size(); ++i) total += jobs[i].w->packed->n_panels * packs[static_cast<size_t>(job_pack[i])].n_groups();
    const int64_t want = static_cast<int64_t>(pool.size()) * 2;
    for (size_t i = 0; i < jobs.size(); ++i) {
        const int64_t n_panels = jobs[i].w->packed->n_panels;
        const int64_t n_groups = packs[static_cast<size_t>(job_pack[i])].n_groups();
        const int64_t share = std::max<int64_t>(1, (want * n_panels * n_groups + total - 1) / total);
        const int64_t panel_chunks = std::min(n_panels, share);
        const int64_t group_chunks = std::min(n_groups, (share + panel_chunks - 1) / panel_chunks);
        const int64_t panels_per = (n_panels + panel_chunks - 1) / panel_chunks;
        const int64_t groups_per = (n_groups + group_chunks - 1) / group_chunks;
        for (int64_t p0 = 0; p0 < n_panels; p0 += panels_per)
            for (int64_t g0 = 0; g0 < n_groups; g0 += groups_per)
                tasks.push_back({static_cast<int>(i), p0, std::min(n_panels, p0 + panels_per), g0, std::min(n_groups, g0 + groups_per)});
    }
    const PackedGemmFn gemm = k.find_quant(*jobs[0].w->packed);
    pool.run(static_cast<int64_t>(tasks.size()), [&](int64_t t_index, int) {
        const MatmulScratch::Task& t = tasks[static_cast<size_t>(t_index)];
        const MatmulJob& j = jobs[static_cast<size_t>(t.m)];
        const ActPack& a = packs[static_cast<size_t>(job_pack[static_cast<size_t>(t.m)])];
        ActPack part = a;
        part.data = a.data + static_cast<uint64_t>(t.g0) * a.group_bytes;
        part.n_tokens = std::min(j.n_tokens, t.g1 * k_act_group) - t.g0 * k_act_group;
        gemm(*j.w->packed, part, t.p0, t.p1, j.y + t.g0 * k_act_group * j.w->n_out, j.w->n_out);
    });
}

void matmul_batch(std::span<const MatmulJob> jobs, const ThreadPool& pool, MatmulScratch& scratch) {
    if (scratch.observe)
        for (const MatmulJob& j : jobs)
            if (j.n_tokens > 0) scratch.observe(*j.w, j.x, j.n_tokens);
    matmul_batch_with(kernels(), jobs, pool, scratch);
}

bool matmul_expert_chains(std::span<const ExpertChain> chains, const float* x, const std::function<void(size_t chain)>& activate,
                          const ThreadPool& pool, MatmulScratch& scratch) {
    const KernelTable& k = kernels();
    const size_t n = chains.size(), threads = static_cast<size_t>(pool.size());
    // A task per chain: with fewer chains than about 4 per thread, only an even
    // share keeps every thread busy to the end.
    if (n == 0 || scratch.observe || !k.prep_act || n < threads || (n % threads != 0 && n < 4 * threads)) return false;
    auto quant_packed = [&](const Matrix* w) { return w && w->packed && !is_float_weight(w->type) && k.find_quant(*w->packed); };
    const Matrix* first_in = chains[0].gate ? chains[0].gate : chains[0].up;
    for (const ExpertChain& c : chains) {
        if ((c.gate && !quant_packed(c.gate)) || !quant_packed(c.up) || !quant_packed(c.down)) return false;
        if ((c.gate && c.gate->type != first_in->type) || c.up->type != first_in->type || c.up->n_in != first_in->n_in) return false;
    }

    // The input's activations (one token), then one buffer per chain for its
    // down product's input, all in scratch.activations.
    auto pack_for = [](const Matrix& w) {
        ActPack a;
        a.format = act_format(w.type);
        a.n_tokens = 1;
        a.n_blocks = w.n_in / a.format.block;
        a.group_bytes = a.format.block_stride * static_cast<uint64_t>(a.n_blocks);
        return a;
    };
    auto& packs = scratch.packs;
    packs.clear();
    packs.push_back(pack_for(*first_in));
    // Each pack's offset into the buffer, held in its data pointer until the buffer exists.
    uint64_t bytes = (packs[0].group_bytes + 63) / 64 * 64;
    for (const ExpertChain& c : chains) {
        packs.push_back(pack_for(*c.down));
        packs.back().data = reinterpret_cast<uint8_t*>(bytes);
        bytes += (packs.back().group_bytes + 63) / 64 * 64;
    }
    scratch.activations.resize(static_cast<size_t>(bytes + 64));
    uint8_t* base = scratch.activations.data() + (64 - reinterpret_cast<uintptr_t>(scratch.activations.data()) % 64) % 64;
    for (ActPack& a : packs) a.data = base + reinterpret_cast<uint64_t>(a.data);
    k.prep_act(x, first_in->n_in, 0, 1, packs[0]);

    const PackedGemmFn gemm_in = k.find_quant(*first_in->packed);
    pool.run(static_cast<int64_t>(n), [&](int64_t ci, int) {
        const ExpertChain& c = chains[static_cast<size_t>(ci)];
        if (c.gate) gemm_in(*c.gate->packed, packs[0], 0, c.gate->packed->n_panels, c.gate_out, c.gate->n_out);
        gemm_in(*c.up->packed, packs[0], 0, c.up->packed->n_panels, c.gate ? c.up_out : c.gate_out, c.up->n_out);
        activate(static_cast<size_t>(ci));
        ActPack& a = packs[static_cast<size_t>(ci) + 1];
        k.prep_act(c.gate_out, c.down->n_in, 0, 1, a);
        k.find_quant(*c.down->packed)(*c.down->packed, a, 0, c.down->packed->n_panels, c.down_out, c.down->n_out);
    });
    return true;
}

}  // namespace kiln
