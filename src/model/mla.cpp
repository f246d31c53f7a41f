// Multi-head latent attention (ModelSpec::mla: DeepSeek-V2 / V3, Kimi K2), in
// llama.cpp's absorbed form (its deepseek2 graph with attn_k_b / attn_v_b):
//
//   q       = attn_q · h, or attn_q_b · rms_norm(attn_q_a · h)     [head_dim_qk, n_head]
//   kv      = attn_kv_a_mqa · h = [c | k_pe]                       [kv_lora + n_rot]
//   Kcur    = [rms_norm(c) | rope(k_pe)]   — the one cached row per position
//   Qcur_h  = [attn_k_b_h · q_nope_h | rope(q_pe_h)]               [kv_lora + n_rot] per head
//   o_h     = softmax(kq_scale · Qcur_h · K) · V, V = each row's first kv_lora values
//   out     = attn_output · [attn_v_b_h · o_h]_h
//
// The cache holds the latent alone: kv_lora + n_rot values per position and layer
// (576 for DeepSeek-V2 / V3) against n_head · (head_dim_qk + head_dim_v) for the
// expanded keys and values (V2-Lite: 16 · 320 = 5,120; V3: 128 · 320 = 40,960).
// Attention is MQA over the latent rows with the cache's kernels; the heads'
// products with attn_k_b / attn_v_b run as one batch of small matmuls per layer.
// All query heads attend in one pass over the latent rows (MQA); the latent is
// not decompressed into per-head keys and values at any point.
#include <algorithm>
#include <cmath>

#include "compute/kernels/kernels.h"
#include "compute/matmul_batch.h"
#include "kiln/error.h"
#include "model/forward.h"

namespace kiln {

void Forward::mla_attention_layer(int il, const BatchRows& b) {
    const int n = b.n;
    const LayerSpec& l = spec_.layers[static_cast<size_t>(il)];
    const LayerWeights& lw = w_.layers[static_cast<size_t>(il)];
    const MlaWeights& mw = lw.mla;
    const MlaSpec& m = spec_.mla;
    const int64_t e = spec_.n_embd, nh = l.n_head, lora = m.kv_lora_rank, rot = spec_.rope.n_dims;
    const int64_t dqk = m.head_dim_qk, nope = dqk - rot, dv = m.head_dim_v;
    const int64_t dk = lora + rot;  // a latent row: spec_.head_dim_k
    const int64_t nq_raw = nh * dqk, nq = nh * dk;

    norm_rows(spec_, x_.data(), lw.attn_norm, nullptr, h_.data(), n, e, pool_);
    dump("attn_norm", il, h_.data(), e, n);

    // Queries [head_dim_qk, n_head] per row, and the latent row of each position.
    const auto rms_norm = kernels().rms_norm;
    if (m.q_lora_rank > 0) {
        const int64_t qr = m.q_lora_rank;
        const Matrix* ws[] = {&mw.wq_a, &mw.wkv_a};
        float* ys[] = {mla_qa_.data(), k_.data()};
        matmul_many(ws, h_.data(), n, ys, pool_, mm_);
        pool_.parallel_for(n, 8, [&](int64_t r0, int64_t r1, int) {
            for (int64_t r = r0; r < r1; ++r) rms_norm(mla_qa_.data() + r * qr, mw.q_a_norm, mla_qa_.data() + r * qr, qr, spec_.norm_eps);
        });
        matmul(mw.wq_b, mla_qa_.data(), n, mla_q_.data(), pool_, mm_);
    } else {
        const Matrix* ws[] = {&lw.wq, &mw.wkv_a};
        float* ys[] = {mla_q_.data(), k_.data()};
        matmul_many(ws, h_.data(), n, ys, pool_, mm_);
    }
    dump("q", il, mla_q_.data(), nq_raw, n);
    dump("kv_cmpr_pe", il, k_.data(), dk, n);

    // The rotated parts (the angles of this chunk's positions, prepare_rope) and the
    // latent's norm; the non-rotated query halves gathered per head for attn_k_b.
    const ops::RopeParams rp = rope_params(false);
    const auto rope_apply = kernels().rope_apply;
    pool_.parallel_for(n, 4, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) {
            const float* cache = rope_cache_.data() + static_cast<size_t>(r) * static_cast<size_t>(rot);
            float* kr = k_.data() + r * dk;
            rope_apply(rp, cache, kr + lora, 1, rot);
            rms_norm(kr, mw.kv_a_norm, kr, lora, spec_.norm_eps);
            const float* qr = mla_q_.data() + r * nq_raw;
            float* qc = q_.data() + r * nq;
            for (int64_t h = 0; h < nh; ++h) {
                std::copy(qr + h * dqk, qr + h * dqk + nope, mla_nope_.data() + (h * n + r) * nope);
                std::copy(qr + h * dqk + nope, qr + (h + 1) * dqk, qc + h * dk + lora);
            }
            // The heads' rotated parts sit after each head's latent part: one call
            // with the row stride of a head rotates the first rot values at each.
            rope_apply(rp, cache, qc + lora, nh, dk);
        }
    });
    dump("Kcur", il, k_.data(), dk, n);

    // q_nope absorbed into the latent space, per head: [kv_lora, n] each.
    std::vector<MatmulJob> jobs;
    jobs.reserve(static_cast<size_t>(nh));
    for (int64_t h = 0; h < nh; ++h)
        jobs.push_back({&mw.k_b[static_cast<size_t>(h)], mla_nope_.data() + h * n * nope, n, mla_lat_.data() + h * n * lora});
    matmul_batch(jobs, pool_, mm_);
    pool_.parallel_for(n, 4, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t h = 0; h < nh; ++h)
                std::copy(mla_lat_.data() + (h * n + r) * lora, mla_lat_.data() + (h * n + r + 1) * lora, q_.data() + r * nq + h * dk);
    });
    dump("Qcur", il, q_.data(), nq, n);

    // The latent rows are the cache's K; its V is their first kv_lora values (the
    // cache stores no separate V for these layers).
    pool_.parallel_for(n, 16, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) cache_->store(il, b.seq[r], b.pos[r], k_.data() + r * dk, k_.data() + r * dk);
    });
    AttentionShape as;
    as.n_head = static_cast<int>(nh);
    as.n_head_kv = 1;
    as.head_dim_k = static_cast<int>(dk);
    as.head_dim_v = static_cast<int>(lora);
    as.scale = m.kq_scale;
    auto last_key = [&](int64_t r) { return spec_.causal ? b.pos[r] : spans_[static_cast<size_t>(row_span_[static_cast<size_t>(r)])].pos_max; };
    for (size_t i = 0; i < n_spans_; ++i) {
        SeqSpan& sp = spans_[i];
        if (cache_->ggml_type() == GgmlType::Q8_0 && kv_convert_q8_0(as, sp.pos_max - sp.pos_min + 1)) {
            KvView kv;
            kv.type = cache_->ggml_type();
            kv.k_row = [&, seq = sp.seq](int64_t p) { return cache_->k_row(il, seq, p); };
            kv.v_row = kv.k_row;
            sp.rows = kv_rows_f32(as, kv, 0, sp.pos_max, sp.k_f32, sp.v_f32, &pool_);
        } else {
            sp.rows = cache_->rows(il, sp.seq);
            sp.rows.v = sp.rows.k;
            sp.rows.v_row_bytes = sp.rows.k_row_bytes;
        }
    }
    // Every query head shares the one KV head: a task takes a block of rows with
    // all heads, so each latent row is read once for all of them (16 rows of a
    // prefill chunk per task; in decode the heads are split over the threads). A
    // head's result does not depend on the others' (attend_rows), so any split
    // gives the same bits.
    const int64_t rows_per_task = n >= 2 * pool_.size() ? 16 : 1;
    const int64_t blocks = (n + rows_per_task - 1) / rows_per_task;
    const int64_t wanted = blocks >= pool_.size() ? 1 : std::min<int64_t>(nh, (pool_.size() + blocks - 1) / blocks);
    const int64_t per_part = (nh + wanted - 1) / wanted, parts = (nh + per_part - 1) / per_part;
    pool_.run(blocks * parts, [&](int64_t task, int thread) {
        const int64_t r0 = task / parts * rows_per_task, h0 = task % parts * per_part;
        AttentionShape part = as;
        part.n_head = static_cast<int>(std::min(per_part, nh - h0));
        const int64_t r_end = std::min<int64_t>(n, r0 + rows_per_task);
        for (int64_t r = r0, e; r < r_end; r = e) {
            e = attention_run(r, r_end, [](int64_t) { return true; });  // every key from 0
            const KvRows& rows = spans_[static_cast<size_t>(row_span_[static_cast<size_t>(r)])].rows;
            const int64_t last = last_key(r);
            attend_run(part, q_.data() + r * nq + h0 * dk, nq, 0, e - r > 1 ? b.pos + r : &last, b.pos + r, static_cast<int>(e - r),
                       rows, att_.data() + (r * nh + h0) * lora, nh * lora, attn_scratch_[static_cast<size_t>(thread)]);
        }
    });
    dump("kqv", il, att_.data(), nh * lora, n);

    // Each head's latent result expanded by attn_v_b: gathered per head, [head_dim_v, n] out.
    pool_.parallel_for(n, 4, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t h = 0; h < nh; ++h)
                std::copy(att_.data() + (r * nh + h) * lora, att_.data() + (r * nh + h + 1) * lora, mla_lat_.data() + (h * n + r) * lora);
    });
    jobs.clear();
    for (int64_t h = 0; h < nh; ++h)
        jobs.push_back({&mw.v_b[static_cast<size_t>(h)], mla_lat_.data() + h * n * lora, n, mla_nope_.data() + h * n * dv});
    matmul_batch(jobs, pool_, mm_);
    pool_.parallel_for(n, 4, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r)
            for (int64_t h = 0; h < nh; ++h)
                std::copy(mla_nope_.data() + (h * n + r) * dv, mla_nope_.data() + (h * n + r + 1) * dv, mla_q_.data() + r * nh * dv + h * dv);
    });
    dump("kqv_out", il, mla_q_.data(), nh * dv, n);

    matmul(lw.wo, mla_q_.data(), n, o_.data(), pool_, mm_);
    dump("attn_out", il, o_.data(), e, n);
    add_rows(x_.data(), o_.data(), n * e, pool_);
    dump("ffn_inp", il, x_.data(), e, n);
}

}  // namespace kiln
