#include "compute/matmul.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "compute/activation_quant.h"
#include "compute/kernels/packing.h"
#include "kiln/error.h"
#include "kiln/quant.h"

namespace kiln {

bool matmul_supports(GgmlType type) { return quant::can_vec_dot(type); }

void matrix_row_f32(const Matrix& w, int64_t r, float* out) {
    if (w.rows_fd < 0) {
        quant::dequantize_row(w.type, w.row(r), out, w.n_in);
        return;
    }
    thread_local std::vector<uint8_t> bytes;
    bytes.resize(static_cast<size_t>(w.row_bytes));
    uint64_t offset = w.rows_fd_offset + static_cast<uint64_t>(r) * w.row_bytes;
    for (size_t done = 0; done < bytes.size();) {
        const ssize_t got = ::pread(w.rows_fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0)
            throw Error("embedding row " + std::to_string(r) + ": read failed: " + (got < 0 ? std::strerror(errno) : "end of file"));
        done += static_cast<size_t>(got);
        offset += static_cast<uint64_t>(got);
    }
    quant::dequantize_row(w.type, bytes.data(), out, w.n_in);
}

namespace {

// Activation rows converted to the weight's dot-product format, once per call.
const uint8_t* convert_activations(const quant::QuantTraits& t, const float* x, int64_t n_in, int64_t n_tokens,
                                   const ThreadPool& pool, MatmulScratch& scratch, uint64_t& act_row_bytes) {
    if (t.vec_dot_type == GgmlType::F32) {
        act_row_bytes = static_cast<uint64_t>(n_in) * sizeof(float);
        return reinterpret_cast<const uint8_t*>(x);
    }
    act_row_bytes = ggml_row_bytes(t.vec_dot_type, static_cast<uint64_t>(n_in));
    scratch.activations.resize(static_cast<size_t>(act_row_bytes * static_cast<uint64_t>(n_tokens)));
    uint8_t* out = scratch.activations.data();
    const GgmlType at = t.vec_dot_type;
    pool.parallel_for(n_tokens, 1, [&](int64_t b, int64_t e, int) {
        for (int64_t r = b; r < e; ++r) quantize_activations(at, x + r * n_in, out + static_cast<uint64_t>(r) * act_row_bytes, n_in);
    });
    return out;
}

// Reference path: every output element is vec_dot_ref(weight row, activation row).
void matmul_reference(const quant::QuantTraits& t, const Matrix& w, const float* x, int64_t n_tokens, float* y,
                      const ThreadPool& pool, MatmulScratch& scratch) {
    uint64_t act_row_bytes = 0;
    const uint8_t* act = convert_activations(t, x, w.n_in, n_tokens, pool, scratch, act_row_bytes);
    const int64_t n_out = w.n_out;
    const quant::VecDotFn dot = t.vec_dot_ref;
    pool.parallel_for(n_out, 16, [&](int64_t b, int64_t e, int) {
        for (int64_t tkn = 0; tkn < n_tokens; ++tkn) {
            const uint8_t* a = act + static_cast<uint64_t>(tkn) * act_row_bytes;
            float* yt = y + tkn * n_out;
            for (int64_t o = b; o < e; ++o) yt[o] = dot(w.n_in, w.row(o), a);
        }
    });
}

// Whether the kernels of `k` take `type` in packed form.
bool packed_kernel(const KernelTable& k, GgmlType type) {
    return is_float_weight(type) ? k.gemm_float != nullptr : k.prep_act != nullptr && k.find_quant(type) != nullptr;
}

// Work for the packed paths: contiguous runs of panels (each thread writes whole
// 64-byte row runs of y: no false sharing) and, when panels are few, runs of token
// groups as well, about 2 per thread over all the matrices.
void plan_tasks(std::span<const Matrix* const> ws, int64_t n_groups, const ThreadPool& pool, std::vector<MatmulScratch::Task>& tasks) {
    tasks.clear();
    int64_t total_panels = 0;
    for (const Matrix* w : ws) total_panels += w->packed->n_panels;
    // Two chunks per thread: enough for the shared counter to even out a slow
    // thread, and long ranges for decode's per-task streams (4 were slower).
    const int64_t want = static_cast<int64_t>(pool.size()) * 2;
    for (size_t m = 0; m < ws.size(); ++m) {
        const int64_t n_panels = ws[m]->packed->n_panels;
        // This matrix's share of the chunks, by panel count.
        const int64_t share = std::max<int64_t>(1, want * n_panels / total_panels);
        int64_t panel_chunks = std::min(n_panels, share);
        int64_t group_chunks = 1;
        if (panel_chunks < share && n_groups > 1) group_chunks = std::min(n_groups, (share + panel_chunks - 1) / panel_chunks);
        const int64_t panels_per = (n_panels + panel_chunks - 1) / panel_chunks;
        const int64_t groups_per = (n_groups + group_chunks - 1) / group_chunks;
        for (int64_t p0 = 0; p0 < n_panels; p0 += panels_per)
            for (int64_t g0 = 0; g0 < n_groups; g0 += groups_per)
                tasks.push_back({static_cast<int>(m), p0, std::min(n_panels, p0 + panels_per), g0, std::min(n_groups, g0 + groups_per)});
    }
}

// 64-byte aligned scratch of at least n bytes.
uint8_t* aligned_scratch(std::vector<uint8_t>& buf, uint64_t n) {
    buf.resize(static_cast<size_t>(n + 64));
    return buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
}

// The activations of n_tokens rows quantized as w's type wants them, in groups
// of 8 tokens (into scratch), in one parallel region.
ActPack quantize_activations(const KernelTable& k, const Matrix& w, const float* x, int64_t n_tokens, const ThreadPool& pool,
                             MatmulScratch& scratch) {
    ActPack a;
    a.format = act_format(w.type);
    a.n_tokens = n_tokens;
    a.n_blocks = w.n_in / a.format.block;
    a.group_bytes = a.format.block_stride * static_cast<uint64_t>(a.n_blocks);
    a.data = aligned_scratch(scratch.activations, a.group_bytes * static_cast<uint64_t>(a.n_groups()));
    pool.parallel_for(a.n_groups(), 1, [&](int64_t g0, int64_t g1, int) { k.prep_act(x, w.n_in, g0, g1, a); });
    return a;
}

// Quantized weights: activations quantized into groups of 8 tokens, then tiles
// of 16 rows x up to 8 tokens. Several matrices of one type that read the same
// input (q / k / v, gate / up) share the activation conversion and one parallel
// region.
void matmul_quant(const KernelTable& k, PackedGemmFn gemm, std::span<const Matrix* const> ws, const float* x, int64_t n_tokens,
                  std::span<float* const> ys, const ThreadPool& pool, MatmulScratch& scratch) {
    const ActPack a = quantize_activations(k, *ws[0], x, n_tokens, pool, scratch);
    const int64_t n_groups = a.n_groups();

    plan_tasks(ws, n_groups, pool, scratch.tasks);
    pool.run(static_cast<int64_t>(scratch.tasks.size()), [&](int64_t i, int) {
        const MatmulScratch::Task& t = scratch.tasks[static_cast<size_t>(i)];
        const Matrix& w = *ws[static_cast<size_t>(t.m)];
        ActPack part = a;
        part.data = a.data + static_cast<uint64_t>(t.g0) * a.group_bytes;
        part.n_tokens = std::min(n_tokens, t.g1 * k_act_group) - t.g0 * k_act_group;
        gemm(*w.packed, part, t.p0, t.p1, ys[static_cast<size_t>(t.m)] + t.g0 * k_act_group * w.n_out, w.n_out);
    });
}

// Quantized weights not repacked at load (read in place from the file): as
// matmul_quant, but each task first repacks its few panels into its thread's
// buffer (in cache while the tiles read it), then runs the packed kernel over
// them for every token group. Same kernels on the same panels: the results are
// matmul_quant's, element for element.
void matmul_quant_in_place(const KernelTable& k, PackedGemmFn gemm, std::span<const Matrix* const> ws, const float* x, int64_t n_tokens,
                           std::span<float* const> ys, const ThreadPool& pool, MatmulScratch& scratch) {
    const ActPack a = quantize_activations(k, *ws[0], x, n_tokens, pool, scratch);
    const int64_t n_groups = a.n_groups();

    // 4 panels a task: 64 rows, a few tens of KiB repacked into L2 at a time.
    constexpr int64_t k_panels_per_task = 4;
    std::vector<PackedMatrix> layouts(ws.size());
    auto& tasks = scratch.tasks;
    tasks.clear();
    for (size_t m = 0; m < ws.size(); ++m) {
        packed_layout(ws[m]->type, k.panel_layout(ws[m]->type), ws[m]->n_in, ws[m]->n_out, layouts[m]);
        for (int64_t p0 = 0; p0 < layouts[m].n_panels; p0 += k_panels_per_task)
            tasks.push_back({static_cast<int>(m), p0, std::min(layouts[m].n_panels, p0 + k_panels_per_task), 0, n_groups});
    }
    // Every thread's buffer sized here: nothing allocates (or throws) inside the region.
    uint64_t most = 0;
    for (const PackedMatrix& l : layouts) most = std::max(most, static_cast<uint64_t>(k_panels_per_task) * l.panel_bytes);
    if (scratch.in_place.size() < static_cast<size_t>(pool.size())) scratch.in_place.resize(static_cast<size_t>(pool.size()));
    for (MatmulScratch::PanelBuffer& b : scratch.in_place)
        if (b.capacity < most) {
            b.panels.data = aligned_bytes(most);
            b.capacity = most;
        }
    pool.run(static_cast<int64_t>(tasks.size()), [&](int64_t i, int thread) {
        const MatmulScratch::Task& t = tasks[static_cast<size_t>(i)];
        const Matrix& w = *ws[static_cast<size_t>(t.m)];
        const PackedMatrix& layout = layouts[static_cast<size_t>(t.m)];
        // The task's panels as a matrix of their rows (the last panel's mask from its real row count).
        PackedMatrix& part = scratch.in_place[static_cast<size_t>(thread)].panels;
        part.type = layout.type;
        part.layout = layout.layout;
        part.n_in = layout.n_in;
        part.n_out = std::min(layout.n_out - t.p0 * k_panel_rows, (t.p1 - t.p0) * k_panel_rows);
        part.n_panels = t.p1 - t.p0;
        part.n_blocks = layout.n_blocks;
        part.block_bytes = layout.block_bytes;
        part.panel_bytes = layout.panel_bytes;
        pack_panels(layout, w.data, w.row_bytes, t.p0, t.p1, part.data.get());
        gemm(part, a, 0, part.n_panels, ys[static_cast<size_t>(t.m)] + t.p0 * k_panel_rows, w.n_out);
    });
}

// A BF16 activation value: elements i and i + 1 of a row already rounded to
// bfloat16 (zero past n), as one float's bits (layout.h).
float bf16_pair(const float* r, int64_t i, int64_t n) {
    const uint32_t lo = std::bit_cast<uint32_t>(r[i]) >> 16;
    const uint32_t hi = i + 1 < n ? std::bit_cast<uint32_t>(r[i + 1]) & 0xFFFF0000u : 0;
    return std::bit_cast<float>(lo | hi);
}

// Float weights: activations rounded to the weight's type (as the reference's
// conversion to vec_dot_type) and laid out in value-major blocks of 12 tokens
// (FloatActs; BF16 in element pairs), then tiles of 32 rows x up to 12 tokens.
void matmul_float(const KernelTable& k, std::span<const Matrix* const> ws, const float* x, int64_t n_tokens, std::span<float* const> ys,
                  const ThreadPool& pool, MatmulScratch& scratch) {
    const GgmlType type = ws[0]->type;
    const int64_t n_in = ws[0]->n_in;
    const bool pairs = type == GgmlType::BF16;
    FloatActs a;
    a.width = ws[0]->packed->n_blocks;
    a.n_tokens = n_tokens;
    a.value_floats = pairs && !k.bf16_pair_acts ? 2 : 1;
    const auto round = type == GgmlType::F16 ? k.round_to_f16 : type == GgmlType::BF16 ? k.round_to_bf16 : nullptr;
    if (n_tokens == 1 && !round) {
        a.data = x;
    } else {
        const uint64_t n = static_cast<uint64_t>(a.width * a.value_floats * n_tokens);
        float* out = reinterpret_cast<float*>(aligned_scratch(scratch.activations, 4 * n));
        a.data = out;
        scratch.rounded.resize(static_cast<size_t>(pool.size() * n_in));
        // Token j of a block of nt, rounded, to its values' places (stride nt values).
        auto place = [&](const float* src, float* dst, int nt, int thread) {
            if (nt == 1 && round && !pairs) return round(src, dst, n_in);  // one token: its row as it is
            float* row = scratch.rounded.data() + thread * n_in;
            if (round) round(src, row, n_in);
            const float* r = round ? row : src;
            if (pairs && a.value_floats == 1) {
                for (int64_t v = 0; v < a.width; ++v) dst[v * nt] = bf16_pair(r, 2 * v, n_in);
            } else if (pairs) {
                for (int64_t v = 0; v < a.width; ++v) {
                    dst[2 * v * nt] = 2 * v + 1 < n_in ? r[2 * v + 1] : 0.0f;
                    dst[2 * v * nt + 1] = r[2 * v];
                }
            } else {
                for (int64_t i = 0; i < n_in; ++i) dst[i * nt] = r[i];
            }
        };
        if (n_tokens == 1) {
            place(x, out, 1, 0);
        } else {
            pool.parallel_for(a.n_blocks(), 1, [&](int64_t b0, int64_t b1, int thread) {
                for (int64_t b = b0; b < b1; ++b) {
                    const int nt = a.block_tokens(b);
                    float* dst = out + b * k_float_block_tokens * a.width * a.value_floats;
                    for (int j = 0; j < nt; ++j) place(x + (b * k_float_block_tokens + j) * n_in, dst + j * a.value_floats, nt, thread);
                }
            });
        }
    }
    plan_tasks(ws, a.n_blocks(), pool, scratch.tasks);
    pool.run(static_cast<int64_t>(scratch.tasks.size()), [&](int64_t i, int) {
        const MatmulScratch::Task& t = scratch.tasks[static_cast<size_t>(i)];
        const Matrix& w = *ws[static_cast<size_t>(t.m)];
        FloatActs part = a;
        part.data = a.block(t.g0);
        part.n_tokens = std::min(n_tokens, t.g1 * k_float_block_tokens) - t.g0 * k_float_block_tokens;
        k.gemm_float(*w.packed, part, t.p0, t.p1, ys[static_cast<size_t>(t.m)] + t.g0 * k_float_block_tokens * w.n_out, w.n_out);
    });
}

// The packed path for matrices of one type and input width, if the kernels have one.
bool matmul_packed(const KernelTable& k, std::span<const Matrix* const> ws, const float* x, int64_t n_tokens, std::span<float* const> ys,
                   const ThreadPool& pool, MatmulScratch& scratch) {
    const GgmlType type = ws[0]->type;
    if (!packed_kernel(k, type)) return false;
    bool in_place = true, packed = true;
    for (const Matrix* w : ws) {
        if (w->type != type || w->n_in != ws[0]->n_in) return false;
        (w->packed ? in_place : packed) = false;
    }
    if (in_place && !is_float_weight(type) && has_packed_layout(type)) {
        matmul_quant_in_place(k, k.find_quant(type), ws, x, n_tokens, ys, pool, scratch);
        return true;
    }
    if (!packed) return false;
    if (is_float_weight(type)) {
        matmul_float(k, ws, x, n_tokens, ys, pool, scratch);
        return true;
    }
    // A matrix packed for a table that reads another layout of its type (a test or
    // benchmark that packed once and switched tables) is a programming error.
    for (const Matrix* w : ws)
        if (!k.find_quant(*w->packed))
            throw Error("matmul: a " + std::string(ggml_type_name(type)) + " matrix packed in the " +
                            panel_layout_name(w->packed->layout) + " panel layout, which the " + kernels_name(k) +
                            " kernels do not read (they read " + panel_layout_name(k.panel_layout(type)) + ")",
                        ErrorKind::Internal);
    matmul_quant(k, k.find_quant(*ws[0]->packed), ws, x, n_tokens, ys, pool, scratch);
    return true;
}

}  // namespace

void matmul_with(const KernelTable& k, const Matrix& w, const float* x, int64_t n_tokens, float* y, const ThreadPool& pool,
                 MatmulScratch& scratch) {
    if (n_tokens <= 0) return;
    const Matrix* ws[] = {&w};
    float* ys[] = {y};
    if (matmul_packed(k, ws, x, n_tokens, ys, pool, scratch)) return;
    const quant::QuantTraits* t = quant::find_quant_traits(w.type);
    if (!t || !t->vec_dot_ref) throw Error("matmul: no dot product for " + std::string(ggml_type_name(w.type)), ErrorKind::Unsupported);
    matmul_reference(*t, w, x, n_tokens, y, pool, scratch);
}

void matmul(const Matrix& w, const float* x, int64_t n_tokens, float* y, const ThreadPool& pool, MatmulScratch& scratch) {
    if (scratch.observe && n_tokens > 0) scratch.observe(w, x, n_tokens);
    matmul_with(kernels(), w, x, n_tokens, y, pool, scratch);
}

void matmul_many(std::span<const Matrix* const> ws, const float* x, int64_t n_tokens, std::span<float* const> ys, const ThreadPool& pool,
                 MatmulScratch& scratch) {
    if (n_tokens <= 0 || ws.empty()) return;
    if (scratch.observe)
        for (const Matrix* w : ws) scratch.observe(*w, x, n_tokens);
    const KernelTable& k = kernels();
    if (matmul_packed(k, ws, x, n_tokens, ys, pool, scratch)) return;
    for (size_t i = 0; i < ws.size(); ++i) matmul_with(k, *ws[i], x, n_tokens, ys[i], pool, scratch);
}

namespace {

// The matrices prepare_matrices repacks, and of those one per distinct tensor (a
// tied output shares the embedding's bytes).
void matrices_to_pack(std::span<Matrix* const> matrices, std::vector<Matrix*>& todo, std::vector<Matrix*>& unique) {
    const KernelTable& k = kernels();
    for (Matrix* m : matrices)
        if (m && !m->empty() && !m->packed && has_packed_layout(m->type) && packed_kernel(k, m->type)) todo.push_back(m);
    std::set<const uint8_t*> seen;
    for (Matrix* m : todo)
        if (seen.insert(m->data).second) unique.push_back(m);
}

}  // namespace

PackPlan plan_prepare_matrices(std::span<Matrix* const> matrices) {
    std::vector<Matrix*> todo, unique;
    matrices_to_pack(matrices, todo, unique);
    PackPlan plan;
    const KernelTable& k = kernels();
    for (const Matrix* m : unique) {
        PackedMatrix layout;
        packed_layout(m->type, k.panel_layout(m->type), m->n_in, m->n_out, layout);
        plan.packed_bytes += packed_allocation_bytes(layout.bytes());
        const uint64_t source = m->row_bytes * static_cast<uint64_t>(m->n_out);
        plan.source_bytes += source;
        plan.largest_source = std::max(plan.largest_source, source);
        plan.sources.push_back(m->data);
    }
    return plan;
}

uint64_t prepare_matrices(std::span<Matrix* const> matrices, bool release_file_pages) {
    std::vector<Matrix*> todo, unique;
    matrices_to_pack(matrices, todo, unique);
    if (todo.empty()) return 0;
    std::map<const uint8_t*, std::shared_ptr<const PackedMatrix>> done;
    for (Matrix* m : unique) done.emplace(m->data, nullptr);
    const KernelTable& k = kernels();  // the table whose kernels will read the panels
    std::vector<std::shared_ptr<const PackedMatrix>> packed(unique.size());
    std::atomic<size_t> next{0};
    std::exception_ptr failure;
    std::atomic<bool> failed{false};
    auto worker = [&] {
        for (size_t i; (i = next.fetch_add(1)) < unique.size() && !failed;) {
            const Matrix& m = *unique[i];
            try {
                packed[i] = pack_matrix(m.type, k.panel_layout(m.type), m.data, m.row_bytes, m.n_in, m.n_out, release_file_pages);
                if (release_file_pages) release_pages(m.data, m.row_bytes * static_cast<uint64_t>(m.n_out));
            } catch (...) {
                if (!failed.exchange(true)) failure = std::current_exception();
            }
        }
    };
    const unsigned n_threads = std::max(1u, std::min<unsigned>(std::thread::hardware_concurrency(), 8));
    std::vector<std::thread> threads;
    for (unsigned t = 1; t < n_threads; ++t) threads.emplace_back(worker);
    worker();
    for (auto& t : threads) t.join();
    if (failure) std::rethrow_exception(failure);
    // Once more, now that every thread is done: a fault in one matrix while another
    // thread packed maps the fault-around window (or a large folio) of the page
    // cache around it, which re-maps pages of a neighbour released before.
    if (release_file_pages)
        for (const Matrix* m : unique) release_pages(m->data, m->row_bytes * static_cast<uint64_t>(m->n_out));
    uint64_t bytes = 0;
    for (size_t i = 0; i < unique.size(); ++i) {
        done[unique[i]->data] = packed[i];
        bytes += packed[i]->bytes();
    }
    for (Matrix* m : todo) m->packed = done[m->data];
    return bytes;
}

}  // namespace kiln
