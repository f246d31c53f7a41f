#include "model/moe.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "compute/kernels/kernels.h"
#include "compute/kernels/packing.h"
#include "compute/matmul_batch.h"
#include "kiln/error.h"

namespace kiln {

namespace {

// gpt-oss's clamped SwiGLU (ggml_swiglu_oai): gate clamped above at limit, up to
// [-limit, limit]; gate · sigmoid(alpha · gate) · (up + 1). In place on gate.
void swiglu_oai(float* gate, const float* up, int64_t n) {
    constexpr float alpha = 1.702f, limit = 7.0f;
    for (int64_t i = 0; i < n; ++i) {
        const float g = std::min(gate[i], limit);
        const float u = std::clamp(up[i], -limit, limit);
        gate[i] = g / (1.0f + std::exp(alpha * -g)) * (u + 1.0f);
    }
}

// max(x, 0)², exact in float (ggml: relu, then sqr), in place.
void relu2(float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float v = std::max(x[i], 0.0f);
        x[i] = v * v;
    }
}

std::atomic<int>& expert_chains_flag() {
    static std::atomic<int> on{[] {
        const char* v = std::getenv("KILN_EXPERT_CHAINS");
        return v && std::string(v) == "0" ? 0 : 1;
    }()};
    return on;
}

std::atomic<uint64_t> chain_layers{0};

}  // namespace

uint64_t expert_chain_layers() { return chain_layers.load(); }
void set_expert_chains(bool on) { expert_chains_flag().store(on ? 1 : 0); }
bool expert_chains() { return expert_chains_flag().load() != 0; }

MoeBlock::MoeBlock(const ModelSpec& spec, int n_batch_max) : spec_(spec) {
    const MoeSpec& m = spec.moe;
    usage_.resize(static_cast<size_t>(spec.n_layer));
    int max_ff = 0, max_sh = 0;
    bool any = false;
    for (size_t il = 0; il < spec.layers.size(); ++il) {
        const LayerSpec& l = spec.layers[il];
        if (l.ffn != FfnKind::Experts) continue;
        any = true;
        usage_[il].assign(static_cast<size_t>(m.n_expert), 0);
        max_ff = std::max(max_ff, l.n_ff);
        max_sh = std::max(max_sh, l.n_ff_shexp);
    }
    if (!any) return;
    if (m.ungated && spec.activation != FfnActivation::Relu2 && spec.activation != FfnActivation::Gelu)
        throw Error("ungated experts are supported with ReLU² and GELU only (architecture '" + spec.arch + "')", ErrorKind::Unsupported);
    if (m.ungated && spec.activation == FfnActivation::Gelu) ones_.assign(static_cast<size_t>(max_ff), 1.0f);
    const size_t b = static_cast<size_t>(n_batch_max), k = static_cast<size_t>(m.n_expert_used), e = static_cast<size_t>(spec.n_embd);
    const size_t rows = b * k;
    logits_.resize(b * static_cast<size_t>(m.n_expert));
    selected_.resize(rows);
    weights_.resize(rows);
    count_.resize(static_cast<size_t>(m.n_expert));
    first_.resize(static_cast<size_t>(m.n_expert));
    slot_row_.resize(rows);
    row_token_.resize(rows);
    xg_.resize(rows * e);
    gate_.resize(rows * static_cast<size_t>(max_ff));
    up_.resize(rows * static_cast<size_t>(max_ff));
    down_.resize(rows * e);
    sh_gate_.resize(b * static_cast<size_t>(max_sh));
    sh_up_.resize(b * static_cast<size_t>(max_sh));
    sh_down_.resize(max_sh > 0 ? b * e : 0);
    sh_router_.resize(max_sh > 0 ? b : 0);
}

void MoeBlock::reset_usage() {
    for (auto& row : usage_) std::fill(row.begin(), row.end(), 0);
}

void MoeBlock::eval(int il, const LayerWeights& lw, const float* h, int n, float* out, const ThreadPool& pool, MatmulScratch& mm,
                    const MoeDump& dump, const float* router_in) {
    const MoeSpec& m = spec_.moe;
    const LayerSpec& l = spec_.layers[static_cast<size_t>(il)];
    const ExpertWeights& x = lw.moe;
    const int64_t e = spec_.n_embd, ff = l.n_ff, ne = m.n_expert;
    const int k = m.n_expert_used;
    auto show = [&](const char* name, const float* data, int64_t per_row, int64_t n_rows) {
        if (dump) dump(name, il, data, per_row, n_rows);
    };

    // Router and routing, per token.
    matmul(x.router, router_in ? router_in : h, n, logits_.data(), pool, mm);
    if (x.router_b)
        for (int t = 0; t < n; ++t) ops::add(logits_.data() + t * ne, x.router_b, ne);
    show("ffn_moe_logits", logits_.data(), ne, n);
    if (router_scratch_.size() < static_cast<size_t>(pool.size())) router_scratch_.resize(static_cast<size_t>(pool.size()));
    pool.parallel_for(n, 4, [&](int64_t t0, int64_t t1, int thread) {
        for (int64_t t = t0; t < t1; ++t)
            route_token(m, logits_.data() + t * ne, x.probs_bias, selected_.data() + t * k, weights_.data() + t * k,
                        router_scratch_[static_cast<size_t>(thread)]);
    });
    show("ffn_moe_weights", weights_.data(), k, n);

    // Group the (token, slot) pairs by expert: expert x's rows are
    // first_[x] .. first_[x] + count_[x], its tokens in batch order.
    std::fill(count_.begin(), count_.end(), 0);
    for (int i = 0; i < n * k; ++i) {
        const int32_t id = selected_[static_cast<size_t>(i)];
        ++count_[static_cast<size_t>(id)];
        ++usage_[static_cast<size_t>(il)][static_cast<size_t>(id)];
    }
    for (int64_t id = 0, row = 0; id < ne; ++id) {
        first_[static_cast<size_t>(id)] = static_cast<int32_t>(row);
        row += count_[static_cast<size_t>(id)];
    }
    {
        std::vector<int32_t>& next = count_;  // reused as a cursor, restored below
        for (int64_t id = 0; id < ne; ++id) next[static_cast<size_t>(id)] = first_[static_cast<size_t>(id)];
        for (int t = 0; t < n; ++t)
            for (int j = 0; j < k; ++j) {
                const int32_t row = next[static_cast<size_t>(selected_[static_cast<size_t>(t * k + j)])]++;
                slot_row_[static_cast<size_t>(t * k + j)] = row;
                row_token_[static_cast<size_t>(row)] = t;
            }
        for (int64_t id = 0; id < ne; ++id) next[static_cast<size_t>(id)] -= first_[static_cast<size_t>(id)];
    }

    // Experts read in place: every selected expert's pages asked for at once, so
    // their reads from the file overlap instead of one fault after another.
    if (x.in_place)
        for (int64_t id = 0; id < ne; ++id)
            if (count_[static_cast<size_t>(id)] > 0)
                for (const auto* v : {&x.gate, &x.up, &x.down})
                    if (static_cast<size_t>(id) < v->size() && !(*v)[static_cast<size_t>(id)].packed) {
                        const Matrix& mx = (*v)[static_cast<size_t>(id)];
                        advise_pages(mx.data, mx.row_bytes * static_cast<uint64_t>(mx.n_out), MADV_WILLNEED);
                    }

    // Per-expert scales (gemma4), biases (gpt-oss) and the activation, on rows
    // [r0, r1) of expert id.
    const auto act = m.oai_swiglu ? swiglu_oai : spec_.activation == FfnActivation::Silu ? kernels().silu_mul : kernels().gelu_mul;
    auto scale_and_bias = [&](int64_t id, int64_t r) {
        if (x.gate_s) ops::scale(gate_.data() + r * ff, ff, x.gate_s[id]);
        if (x.up_s) ops::scale(up_.data() + r * ff, ff, x.up_s[id]);
        if (x.gate_b) ops::add(gate_.data() + r * ff, x.gate_b + id * ff, ff);
        if (x.up_b) ops::add(up_.data() + r * ff, x.up_b + id * ff, ff);
    };
    auto activate_rows = [&](int64_t r0, int64_t r1) {
        if (m.ungated && !ones_.empty()) {
            // GELU(up x): the gated kernel with a gate of ones (x * 1.0f is exact), as the dense plain FFN.
            for (int64_t r = r0; r < r1; ++r) act(gate_.data() + r * ff, ones_.data(), ff);
        } else if (m.ungated) {
            relu2(gate_.data() + r0 * ff, (r1 - r0) * ff);
        } else
            act(gate_.data() + r0 * ff, up_.data() + r0 * ff, (r1 - r0) * ff);
    };

    // Decode: each selected expert's gate / up -> activation -> down as one task
    // of one parallel region (one wait on the pool instead of two).
    bool chained = false;
    if (n == 1 && !m.weight_before_ffn && !x.in_place && expert_chains()) {
        std::vector<ExpertChain>& chains = chains_;
        std::vector<int64_t>& chain_id = chain_id_;
        chains.clear();
        chain_id.clear();
        for (int64_t id = 0; id < ne; ++id) {
            const int32_t r0 = first_[static_cast<size_t>(id)];
            if (count_[static_cast<size_t>(id)] == 0) continue;
            chains.push_back({m.ungated ? nullptr : &x.gate[static_cast<size_t>(id)], &x.up[static_cast<size_t>(id)],
                              &x.down[static_cast<size_t>(id)], gate_.data() + r0 * ff, up_.data() + r0 * ff, down_.data() + r0 * e});
            chain_id.push_back(id);
        }
        chained = matmul_expert_chains(
            chains, h,
            [&](size_t c) {
                const int64_t id = chain_id[c], r = first_[static_cast<size_t>(id)];
                scale_and_bias(id, r);
                activate_rows(r, r + 1);
            },
            pool, mm);
        if (chained) chain_layers.fetch_add(1, std::memory_order_relaxed);
    }

    if (!chained) {
        // gate / up of every used expert over its rows, in one region. An expert with
        // one token reads that token's row in place: in decode every expert reads
        // the same row, converted once.
        std::vector<MatmulJob> jobs;
        jobs.reserve(static_cast<size_t>(2 * ne));
        // With weight_before_ffn (llama4) every grouped row is its token's row times
        // that slot's weight.
        if (m.weight_before_ffn)
            for (int t = 0; t < n; ++t)
                for (int j = 0; j < k; ++j) {
                    const int32_t r = slot_row_[static_cast<size_t>(t * k + j)];
                    const float w = weights_[static_cast<size_t>(t * k + j)];
                    for (int64_t i = 0; i < e; ++i) xg_[static_cast<size_t>(r * e + i)] = h[t * e + i] * w;
                }
        for (int64_t id = 0; id < ne; ++id) {
            const int32_t c = count_[static_cast<size_t>(id)], r0 = first_[static_cast<size_t>(id)];
            if (c == 0) continue;
            const float* in = h + static_cast<int64_t>(row_token_[static_cast<size_t>(r0)]) * e;
            if (m.weight_before_ffn) {
                in = xg_.data() + r0 * e;
            } else if (c > 1) {
                for (int32_t r = r0; r < r0 + c; ++r)
                    std::memcpy(xg_.data() + r * e, h + static_cast<int64_t>(row_token_[static_cast<size_t>(r)]) * e,
                                static_cast<size_t>(e) * sizeof(float));
                in = xg_.data() + r0 * e;
            }
            if (!m.ungated) jobs.push_back({&x.gate[static_cast<size_t>(id)], in, c, gate_.data() + r0 * ff});
            // Ungated: up's product goes where the activation's output is read from.
            jobs.push_back({&x.up[static_cast<size_t>(id)], in, c, (m.ungated ? gate_ : up_).data() + r0 * ff});
        }
        matmul_batch(jobs, pool, mm);

        for (int64_t id = 0; id < ne; ++id) {
            const int32_t c = count_[static_cast<size_t>(id)], r0 = first_[static_cast<size_t>(id)];
            for (int32_t r = r0; r < r0 + c; ++r) scale_and_bias(id, r);
        }
        // Rows by the 16 K elements (a decode step's k rows at once, without the pool).
        pool.parallel_for(static_cast<int64_t>(n) * k, std::max<int64_t>(1, 16384 / ff),
                          [&](int64_t r0, int64_t r1, int) { activate_rows(r0, r1); });
    }
    show("ffn_moe_act", gate_.data(), ff, static_cast<int64_t>(n) * k);

    if (!chained) {
        std::vector<MatmulJob> jobs;
        for (int64_t id = 0; id < ne; ++id) {
            const int32_t c = count_[static_cast<size_t>(id)], r0 = first_[static_cast<size_t>(id)];
            if (c > 0) jobs.push_back({&x.down[static_cast<size_t>(id)], gate_.data() + r0 * ff, c, down_.data() + r0 * e});
        }
        matmul_batch(jobs, pool, mm);
    }
    if (x.down_s)
        for (int64_t id = 0; id < ne; ++id) {
            const int32_t c = count_[static_cast<size_t>(id)], r0 = first_[static_cast<size_t>(id)];
            for (int32_t r = r0; r < r0 + c; ++r) ops::scale(down_.data() + r * e, e, x.down_s[id]);
        }
    if (x.down_b)
        for (int64_t id = 0; id < ne; ++id) {
            const int32_t c = count_[static_cast<size_t>(id)], r0 = first_[static_cast<size_t>(id)];
            for (int32_t r = r0; r < r0 + c; ++r) ops::add(down_.data() + r * e, x.down_b + id * e, e);
        }

    // A token's experts weighted and summed in its slot order (as llama.cpp adds
    // the views of its experts: slot 0 + slot 1 + ...).
    pool.parallel_for(n, 4, [&](int64_t t0, int64_t t1, int) {
        for (int64_t t = t0; t < t1; ++t) {
            float* o = out + t * e;
            for (int j = 0; j < k; ++j) {
                const float w = m.weight_before_ffn ? 1.0f : weights_[static_cast<size_t>(t * k + j)];
                const float* d = down_.data() + static_cast<int64_t>(slot_row_[static_cast<size_t>(t * k + j)]) * e;
                if (j == 0)
                    for (int64_t i = 0; i < e; ++i) o[i] = d[i] * w;
                else
                    for (int64_t i = 0; i < e; ++i) o[i] += d[i] * w;
            }
        }
    });
    show("ffn_moe_out", out, e, n);

    if (x.shexp_up.empty()) return;
    const int64_t sff = l.n_ff_shexp;
    if (m.ungated) {
        matmul(x.shexp_up, h, n, sh_gate_.data(), pool, mm);
        pool.parallel_for(n, 4, [&](int64_t t0, int64_t t1, int) { relu2(sh_gate_.data() + t0 * sff, (t1 - t0) * sff); });
    } else {
        const Matrix* ws[] = {&x.shexp_gate, &x.shexp_up};
        float* ys[] = {sh_gate_.data(), sh_up_.data()};
        matmul_many(ws, h, n, ys, pool, mm);
        const auto silu_mul = kernels().silu_mul;
        pool.parallel_for(n, 4, [&](int64_t t0, int64_t t1, int) {
            silu_mul(sh_gate_.data() + t0 * sff, sh_up_.data() + t0 * sff, (t1 - t0) * sff);
        });
    }
    matmul(x.shexp_down, sh_gate_.data(), n, sh_down_.data(), pool, mm);
    show("ffn_shexp", sh_down_.data(), e, n);
    if (!x.shexp_router.empty()) matmul(x.shexp_router, h, n, sh_router_.data(), pool, mm);
    for (int t = 0; t < n; ++t) {
        // The shared expert's gate: sigmoid of one logit per token.
        const float g = x.shexp_router.empty() ? 1.0f : 1.0f / (1.0f + std::exp(-sh_router_[static_cast<size_t>(t)]));
        float* o = out + static_cast<int64_t>(t) * e;
        const float* d = sh_down_.data() + static_cast<int64_t>(t) * e;
        for (int64_t i = 0; i < e; ++i) o[i] += d[i] * g;
    }
}

}  // namespace kiln
