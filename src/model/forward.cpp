#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "compute/alibi.h"
#include "compute/kernels/kernels.h"
#include "kiln/error.h"

namespace kiln {

Forward::Forward(const ModelSpec& spec, const ModelWeights& weights, SequenceMemory& memory, const ThreadPool& pool,
                 int n_batch_max)
    : spec_(spec), w_(weights), cache_(memory.kv()), recurrent_(memory.recurrent()), pool_(pool), n_batch_max_(n_batch_max),
      moe_(spec, n_batch_max) {
    for (const LayerSpec& l : spec.layers) {
        if ((l.mixer == MixerKind::Attention && !cache_) || (l.has_recurrent_state() && !recurrent_))
            throw Error("forward: the memory has no part for the layers' mixers (architecture '" + spec.arch + "')",
                        ErrorKind::Internal);
        if (l.ffn == FfnKind::Gated && (spec.activation == FfnActivation::Relu2 || spec.activation == FfnActivation::Xielu))
            throw Error("a gated FFN with ReLU² or xIELU is not supported (architecture '" + spec.arch + "')",
                        ErrorKind::Unsupported);
    }
    const BufferSizes z = buffer_sizes(spec, n_batch_max);
    x_.resize(z.x);
    h_.resize(z.x);
    o_.resize(z.x);
    q_.resize(z.q);
    k_.resize(z.k);
    v_.resize(z.v);
    att_.resize(z.att);
    gate_.resize(z.ff);
    up_.resize(z.ff);
    if (z.ones) ones_.assign(z.ones, 1.0f);
    qkv_.resize(z.qkv);
    gate_up_.resize(z.gate_up);
    mla_q_.resize(z.mla_q);
    mla_qa_.resize(z.mla_qa);
    mla_nope_.resize(z.mla_nope);
    mla_lat_.resize(z.mla_lat);
    par_.resize(z.par);
    ssm_o_.resize(z.ssm_o);
    // LongRoPE: the long factors when a sequence's context exceeds the original
    // one, as llama.cpp chooses them (by the context size, not the position).
    rope_factors_ = weights.rope_freqs;
    if (!rope_factors_ && (weights.rope_long || weights.rope_short))
        rope_factors_ = cache_ && cache_->n_ctx() > spec.rope.n_ctx_orig ? weights.rope_long : weights.rope_short;
    attn_scratch_.resize(static_cast<size_t>(pool.size()));
    if (spec.alibi_max_bias > 0.0f) {
        for (const LayerSpec& l : spec.layers)
            if (l.mixer == MixerKind::Attention && l.n_head != spec.max_n_head())
                throw Error("ALiBi with a different head count per layer (architecture '" + spec.arch + "')", ErrorKind::Unsupported);
        alibi_slopes_ = alibi_slopes(spec.max_n_head(), spec.alibi_max_bias);
    }
    for (const LayerSpec& l : spec.layers)
        if (l.n_ff_dense > 0 && moe_in_.empty()) {
            const size_t rows = static_cast<size_t>(n_batch_max) * static_cast<size_t>(spec.n_embd);
            moe_in_.resize(rows);
            moe_router_in_.resize(rows);
            moe_out_.resize(rows);
            embd_ones_.assign(static_cast<size_t>(spec.n_embd), 1.0f);
        }
    if (spec.v_norm || spec.qk_rms_after_rope)
        norm_ones_.assign(static_cast<size_t>(std::max(spec.max_head_dim_v(), spec.max_head_dim_k())), 1.0f);
    if (spec.n_embd_per_layer > 0) {
        ple_.resize(z.ple);
        ple_gate_.resize(static_cast<size_t>(n_batch_max) * static_cast<size_t>(spec.n_embd_per_layer));
    }
    if (spec.attn_output_gate) {
        if (spec.head_dim_k != spec.head_dim_v)
            throw Error("an attention output gate needs equal key and value head sizes (architecture '" + spec.arch + "')");
        qg_.resize(2 * q_.size());
        ogate_.resize(q_.size());
    }
    if (recurrent_) ssm_ = std::make_unique<SsmMixer>(spec, n_batch_max);
    if (weights.nextn_input) nextn_cat_.resize(2 * z.x);
    if (weights.assistant_input)  // [target embedding | state] rows of the target's width
        nextn_cat_.resize(2 * static_cast<size_t>(n_batch_max) * static_cast<size_t>(spec.n_embd_target));
}

Forward::BufferSizes Forward::buffer_sizes(const ModelSpec& spec, int n_batch_max) {
    const size_t b = static_cast<size_t>(n_batch_max);
    BufferSizes z;
    z.x = b * static_cast<size_t>(spec.n_embd);
    z.q = b * static_cast<size_t>(spec.max_n_head() * spec.max_head_dim_k());
    z.k = b * static_cast<size_t>(spec.max_n_head_kv() * spec.max_head_dim_k());
    z.v = b * static_cast<size_t>(spec.max_n_head_kv() * spec.max_head_dim_v());
    z.att = b * static_cast<size_t>(spec.max_n_head() * spec.max_head_dim_v());
    z.ple = b * static_cast<size_t>(spec.n_embd_per_layer) * static_cast<size_t>(spec.n_layer);
    z.ff = b * static_cast<size_t>(spec.max_n_ff());
    for (const LayerSpec& l : spec.layers) {
        if (l.ffn == FfnKind::Plain) z.ones = static_cast<size_t>(spec.max_n_ff());
        if (l.parallel) z.par = z.x;
        if (l.parallel_ssm) z.ssm_o = z.x;
    }
    // Fused products before their split: Q/K/V where a layer has attn_qkv, gate / up (phi3).
    if (spec.fused_qkv) z.qkv = z.q + z.k + z.v;
    if (spec.fused_gate_up) z.gate_up = 2 * z.ff;
    if (const MlaSpec& m = spec.mla; m.kv_lora_rank > 0) {
        const size_t nh = static_cast<size_t>(spec.max_n_head()), nope = static_cast<size_t>(m.head_dim_qk - spec.rope.n_dims);
        z.mla_q = b * nh * static_cast<size_t>(std::max(m.head_dim_qk, m.head_dim_v));
        z.mla_qa = b * static_cast<size_t>(m.q_lora_rank);
        z.mla_nope = b * nh * std::max(nope, static_cast<size_t>(m.head_dim_v));
        z.mla_lat = b * nh * static_cast<size_t>(m.kv_lora_rank);
    }
    return z;
}

uint64_t Forward::scratch_bytes(const ModelSpec& spec, int n_batch_max, int n_threads, int64_t n_keys_max, bool q8_0_cache) {
    const BufferSizes z = buffer_sizes(spec, n_batch_max);
    const uint64_t b = static_cast<uint64_t>(n_batch_max);
    // The buffers made at construction: x, h, o, q, k, v, att, gate, up, ones, qkv, gate_up,
    // par, latent attention's and the per-layer embeddings' (rows and gate).
    uint64_t floats = 3 * z.x + z.q + z.k + z.v + z.att + 2 * z.ff + z.ones + z.qkv + z.gate_up + z.par + z.mla_q +
                      z.mla_qa + z.mla_nope + z.mla_lat + z.ple + b * static_cast<uint64_t>(spec.n_embd_per_layer);
    // Grown on the first full batch: the rows whose output is wanted (at most a
    // batch), the RoPE cos / sin of both bases.
    floats += z.x + 2 * b * static_cast<uint64_t>(std::max({spec.rope.n_dims, spec.rope.n_dims_swa, 0}));
    // A thread's attention scores (every key of a query's group of heads) and rows.
    const uint64_t group = static_cast<uint64_t>(std::max(1, spec.max_n_head() / std::max(1, spec.max_n_head_kv())));
    floats += static_cast<uint64_t>(std::max(n_threads, 1)) *
              (static_cast<uint64_t>(n_keys_max) * group + static_cast<uint64_t>(spec.max_head_dim_k()) * (group + 1) +
               static_cast<uint64_t>(spec.max_head_dim_v()));
    // A q8_0 cache is read as f32 rows of the keys a batch sees (one layer at a time).
    if (q8_0_cache)
        floats += static_cast<uint64_t>(n_keys_max) * static_cast<uint64_t>(spec.max_n_head_kv()) *
                  static_cast<uint64_t>(spec.max_head_dim_k() + spec.max_head_dim_v());
    // The matmul's converted activations: a batch of its widest input as 8-bit
    // blocks with their scales (at most 2 bytes an element covers every format).
    const uint64_t widest = static_cast<uint64_t>(std::max({spec.n_embd, spec.max_n_ff(), spec.max_n_head() * spec.max_head_dim_v()}));
    return floats * sizeof(float) + 2 * widest * b;
}

// y = norm(x) row by row (+ bias: LayerNorm's, or an RMS norm's where the family
// has one, added after the weight as ggml's build_norm); with no weight (a family
// without pre-norms) y = x.
void norm_rows(const ModelSpec& s, const float* x, const float* w, const float* b, float* y, int n, int64_t width,
               const ThreadPool& pool) {
    if (!w) {
        if (y != x) std::copy(x, x + static_cast<int64_t>(n) * width, y);
        return;
    }
    const auto rms_norm = kernels().rms_norm;
    pool.parallel_for(n, 8, [&](int64_t r0, int64_t r1, int) {
        for (int64_t r = r0; r < r1; ++r) {
            if (s.norm == NormKind::Rms) {
                rms_norm(x + r * width, w, y + r * width, width, s.norm_eps);
                if (b) ops::add(y + r * width, b, width);
            } else
                ops::layer_norm(x + r * width, w, b, y + r * width, width, s.norm_eps);
        }
    });
}

// y += x over n floats (the residual adds), split across the pool.
void add_rows(float* y, const float* x, int64_t n, const ThreadPool& pool) {
    pool.parallel_for(n, 16384, [&](int64_t b, int64_t e, int) { ops::add(y + b, x + b, e - b); });
}

namespace {

void add_bias(float* y, const float* bias, int n, int64_t width) {
    if (!bias) return;
    for (int r = 0; r < n; ++r) ops::add(y + r * width, bias, width);
}

// A matrix's weight scale (`.scale`); 1 when the file has none.
void scale_rows(float* y, float s, int n, int64_t width) {
    if (s != 1.0f) ops::scale(y, static_cast<int64_t>(n) * width, s);
}

}  // namespace

ops::RopeParams Forward::rope_params(bool swa_base) const {
    ops::RopeParams rp;
    rp.layout = spec_.rope.layout;
    rp.n_dims = swa_base && spec_.rope.n_dims_swa > 0 ? spec_.rope.n_dims_swa : spec_.rope.n_dims;
    rp.freq_base = swa_base ? spec_.rope.freq_base_swa : spec_.rope.freq_base;
    rp.freq_scale = swa_base ? spec_.rope.freq_scale_swa : spec_.rope.freq_scale;
    const bool plain = swa_base && spec_.rope.swa_unscaled;
    rp.ext_factor = plain ? 0.0f : spec_.rope.yarn_ext_factor;
    rp.attn_factor = plain ? 1.0f : spec_.rope.yarn_attn_factor;
    rp.beta_fast = spec_.rope.yarn_beta_fast;
    rp.beta_slow = spec_.rope.yarn_beta_slow;
    rp.n_ctx_orig = spec_.rope.n_ctx_orig;
    rp.freq_factors = swa_base && spec_.rope.factors_full_only ? nullptr : rope_factors_;
    return rp;
}

void Forward::prepare_rope(const BatchRows& b) {
    bool any = false, any_swa = false;
    for (const LayerSpec& l : spec_.layers) {
        if (!l.use_rope) continue;
        if (l.sliding && spec_.rope.freq_base_swa > 0.0f)
            any_swa = true;
        else
            any = true;
    }
    for (int pass = 0; pass < 2; ++pass) {
        if (!(pass == 0 ? any : any_swa)) continue;
        const ops::RopeParams rp = rope_params(pass == 1);
        const size_t dims = static_cast<size_t>(rp.n_dims);
        std::vector<float>& caches = pass == 0 ? rope_cache_ : rope_cache_swa_;
        caches.resize(static_cast<size_t>(b.n) * dims);
        for (int r = 0; r < b.n; ++r) ops::rope_cache(rp, b.pos[r], caches.data() + static_cast<size_t>(r) * dims);
    }
}

void Forward::plan_spans(const BatchRows& b) {
    // Sequences in order of first appearance; few per batch, so a linear search.
    size_t used = 0;
    row_span_.resize(static_cast<size_t>(b.n));
    for (int r = 0; r < b.n; ++r) {
        size_t i = 0;
        while (i < used && spans_[i].seq != b.seq[r]) ++i;
        if (i == used) {
            if (spans_.size() <= used) spans_.emplace_back();
            spans_[i].seq = b.seq[r];
            spans_[i].pos_min = spans_[i].pos_max = b.pos[r];
            ++used;
        }
        spans_[i].pos_min = std::min(spans_[i].pos_min, b.pos[r]);
        spans_[i].pos_max = std::max(spans_[i].pos_max, b.pos[r]);
        row_span_[static_cast<size_t>(r)] = static_cast<int>(i);
    }
    n_spans_ = used;
}

void Forward::attend_run(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                         const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                         AttentionScratch& sc) const {
    if (stream_attention_) return attend_rows_stream(s, q, q_stride, first, pos, q_pos, n_rows, kv, out, out_stride, sc);
    if (n_rows > 1) return attend_rows_block(s, q, q_stride, first, pos, q_pos, n_rows, kv, out, out_stride, sc);
    AttentionShape row = s;
    row.q_pos = *q_pos;
    attend_rows(row, q, first, *pos, kv, out, sc);
}

void Forward::attention_layer(int il, const BatchRows& b) {
    const int n = b.n;
    const LayerSpec& l = spec_.layers[static_cast<size_t>(il)];
    const LayerWeights& lw = w_.layers[static_cast<size_t>(il)];
    const int64_t e = spec_.n_embd, dk = l.head_dim_k, dv = l.head_dim_v;
    const int64_t nq = l.n_head * dk, nk = l.n_head_kv * dk, nv = l.n_head_kv * dv;
    // A shared-KV layer (gemma4) computes only its queries and attends over an
    // earlier layer's cache (kl); every other layer reads its own.
    const bool own_kv = l.kv_source < 0;
    const int kl = own_kv ? il : l.kv_source;

    // A post-norm block (encoders) reads the residual stream itself; with a
    // second attention norm the layer's input is added again, so it is kept.
    // attn_norm_2 means that in an encoder (jina-bert-v2), and the attention's
    // own input norm in a decoder (Falcon-40B).
    const float* in = x_.data();
    const bool encoder_norm_2 = lw.attn_norm_2 && spec_.post_norm, decoder_norm_2 = lw.attn_norm_2 && !spec_.post_norm;
    if (encoder_norm_2) std::copy(x_.data(), x_.data() + n * e, h_.data());
    if (lw.attn_norm) {
        norm_rows(spec_, x_.data(), lw.attn_norm, lw.attn_norm_b, h_.data(), n, e, pool_);
        dump("attn_norm", il, h_.data(), e, n);
        in = h_.data();
    }
    if (decoder_norm_2) {
        // The attention's own norm; h_ keeps attn_norm for the FFN. o_ is free
        // until the output projection, after Q/K/V have been read from it.
        norm_rows(spec_, x_.data(), lw.attn_norm_2, lw.attn_norm_2_b, o_.data(), n, e, pool_);
        dump("attn_norm_2", il, o_.data(), e, n);
        in = o_.data();
    }

    if (!lw.wqkv.empty()) {
        // One product, then each row split into its Q, K and V parts.
        const int64_t nqkv = nq + nk + nv;
        matmul(lw.wqkv, in, n, qkv_.data(), pool_, mm_);
        scale_rows(qkv_.data(), lw.wqkv_s, n, nqkv);
        add_bias(qkv_.data(), lw.bqkv, n, nqkv);
        dump("wqkv", il, qkv_.data(), nqkv, n);
        for (int r = 0; r < n; ++r) {
            const float* row = qkv_.data() + r * nqkv;
            std::copy(row, row + nq, q_.data() + r * nq);
            std::copy(row + nq, row + nq + nk, k_.data() + r * nk);
            std::copy(row + nq + nk, row + nqkv, v_.data() + r * nv);
        }
    } else {
        // Q, and K and V where the layer has its own (no attn_v: V is K's product, gemma4).
        const Matrix* ws[3] = {&lw.wq};
        float* ys[3] = {spec_.attn_output_gate ? qg_.data() : q_.data()};
        size_t n_mat = 1;
        if (own_kv) {
            ws[n_mat] = &lw.wk;
            ys[n_mat++] = k_.data();
            if (!lw.wv.empty()) {
                ws[n_mat] = &lw.wv;
                ys[n_mat++] = v_.data();
            }
        }
        matmul_many(std::span<const Matrix* const>(ws, n_mat), in, n, std::span<float* const>(ys, n_mat), pool_, mm_);
        scale_rows(ys[0], lw.wq_s, n, spec_.attn_output_gate ? 2 * nq : nq);
        if (own_kv) {
            scale_rows(k_.data(), lw.wk_s, n, nk);
            if (lw.wv.empty())
                std::copy(k_.data(), k_.data() + n * nk, v_.data());
            else
                scale_rows(v_.data(), lw.wv_s, n, nv);
        }
    }
    if (spec_.attn_output_gate) {
        // Per head: [q | gate] -> q_ and ogate_ (a Q bias covers both halves).
        add_bias(qg_.data(), lw.bq, n, 2 * nq);
        for (int64_t r = 0; r < n; ++r)
            for (int h = 0; h < l.n_head; ++h) {
                const float* src = qg_.data() + r * 2 * nq + h * 2 * dk;
                std::copy(src, src + dk, q_.data() + r * nq + h * dk);
                std::copy(src + dk, src + 2 * dk, ogate_.data() + r * nq + h * dk);
            }
    }
    if (!spec_.attn_output_gate) add_bias(q_.data(), lw.bq, n, nq);
    add_bias(k_.data(), lw.bk, n, nk);
    add_bias(v_.data(), lw.bv, n, nv);
    if (spec_.clamp_kqv > 0.0f) {  // after the biases, as llama.cpp's build_qkv
        const float c = spec_.clamp_kqv;
        auto clamp = [c](std::vector<float>& v, int64_t count) {
            for (int64_t i = 0; i < count; ++i) v[static_cast<size_t>(i)] = std::clamp(v[static_cast<size_t>(i)], -c, c);
        };
        clamp(q_, n * nq);
        clamp(k_, n * nk);
        clamp(v_, n * nv);
    }
    dump("Qcur", il, q_.data(), nq, n);
    dump("Kcur", il, k_.data(), nk, n);
    dump("Vcur", il, v_.data(), nv, n);

    // Q/K norms in the model's norm kind (LayerNorm without bias in stablelm and
    // command-r), over the whole projection or per head, with one weight row per
    // head (qk_norm_heads) or one shared by the heads; before RoPE, or after it
    // (hunyuan-dense, qk_norm_after_rope).
    auto qk_norms = [&] {
        const auto rms_norm = kernels().rms_norm;
        auto qk_norm = [&](float* x, const float* w, int64_t width) {
            if (spec_.norm == NormKind::Rms)
                rms_norm(x, w, x, width, spec_.norm_eps);
            else
                ops::layer_norm(x, w, nullptr, x, width, spec_.norm_eps);
        };
        const int64_t w_step = spec_.tensors.qk_norm_heads ? dk : 0;
        pool_.parallel_for(n, 8, [&](int64_t r0, int64_t r1, int) {
            for (int64_t r = r0; r < r1; ++r) {
                if (spec_.norm == NormKind::Layer && spec_.tensors.qk_norm_full) {  // LayerNorms with biases (jina-bert-v2)
                    ops::layer_norm(q_.data() + r * nq, lw.q_norm, lw.q_norm_b, q_.data() + r * nq, nq, spec_.norm_eps);
                    ops::layer_norm(k_.data() + r * nk, lw.k_norm, lw.k_norm_b, k_.data() + r * nk, nk, spec_.norm_eps);
                    continue;
                }
                if (spec_.tensors.qk_norm_full) {
                    qk_norm(q_.data() + r * nq, lw.q_norm, nq);
                    qk_norm(k_.data() + r * nk, lw.k_norm, nk);
                    continue;
                }
                for (int h = 0; h < l.n_head; ++h) qk_norm(q_.data() + r * nq + h * dk, lw.q_norm + h * w_step, dk);
                if (own_kv)
                    for (int h = 0; h < l.n_head_kv; ++h) qk_norm(k_.data() + r * nk + h * dk, lw.k_norm + h * w_step, dk);
            }
        });
        dump("Qcur_normed", il, q_.data(), nq, n);
        if (own_kv) dump("Kcur_normed", il, k_.data(), nk, n);
    };
    if (lw.q_norm && !spec_.tensors.qk_norm_after_rope) qk_norms();
    if (spec_.v_norm && own_kv) {
        // Each V head RMS-normed without a weight (ones: x * 1.0f is exact).
        const auto rms_norm = kernels().rms_norm;
        pool_.parallel_for(n, 8, [&](int64_t r0, int64_t r1, int) {
            for (int64_t r = r0; r < r1; ++r)
                for (int h = 0; h < l.n_head_kv; ++h) {
                    float* x = v_.data() + r * nv + h * dv;
                    rms_norm(x, norm_ones_.data(), x, dv, spec_.norm_eps);
                }
        });
        dump("Vcur_normed", il, v_.data(), nv, n);
    }

    if (l.use_rope) {
        const bool swa_base = l.sliding && spec_.rope.freq_base_swa > 0.0f;
        const ops::RopeParams rp = rope_params(swa_base);
        // The angles depend only on the position: computed once per chunk (eval).
        const std::vector<float>& caches = swa_base ? rope_cache_swa_ : rope_cache_;
        const auto rope_apply = kernels().rope_apply;
        pool_.parallel_for(n, 16, [&](int64_t r0, int64_t r1, int) {
            for (int64_t r = r0; r < r1; ++r) {
                const float* cache = caches.data() + static_cast<size_t>(r) * static_cast<size_t>(rp.n_dims);
                rope_apply(rp, cache, q_.data() + r * nq, l.n_head, dk);
                if (own_kv) rope_apply(rp, cache, k_.data() + r * nk, l.n_head_kv, dk);
            }
        });
        dump("Qcur_rope", il, q_.data(), nq, n);
        if (own_kv) dump("Kcur_rope", il, k_.data(), nk, n);
    }
    if (lw.q_norm && spec_.tensors.qk_norm_after_rope) qk_norms();
    if (spec_.attn_temp.floor > 0 && (spec_.attn_temp.every_layer || !l.use_rope)) {
        // Attention temperature tuning (llama4's layers without RoPE, every layer of mistral3): queries scaled by position.
        const auto& at = spec_.attn_temp;
        for (int64_t r = 0; r < n; ++r) {
            const float pos = static_cast<float>(b.pos[r]);
            const float t = static_cast<float>(std::log(std::floor((pos + at.offset) / static_cast<float>(at.floor)) + 1.0) * at.scale + 1.0);
            ops::scale(q_.data() + r * nq, nq, t);
        }
        dump("Qcur_temp", il, q_.data(), nq, n);
    }
    if (l.use_rope && spec_.qk_rms_after_rope) {
        // Each Q and K head RMS-normed without a weight (ones: x * 1.0f is exact).
        const auto rms_norm = kernels().rms_norm;
        pool_.parallel_for(n, 8, [&](int64_t r0, int64_t r1, int) {
            for (int64_t r = r0; r < r1; ++r) {
                for (int h = 0; h < l.n_head; ++h) rms_norm(q_.data() + r * nq + h * dk, norm_ones_.data(), q_.data() + r * nq + h * dk, dk, spec_.norm_eps);
                if (own_kv)
                    for (int h = 0; h < l.n_head_kv; ++h)
                        rms_norm(k_.data() + r * nk + h * dk, norm_ones_.data(), k_.data() + r * nk + h * dk, dk, spec_.norm_eps);
            }
        });
        dump("Qcur_normed", il, q_.data(), nq, n);
        if (own_kv) dump("Kcur_normed", il, k_.data(), nk, n);
    }

    if (own_kv)
        pool_.parallel_for(n, 16, [&](int64_t r0, int64_t r1, int) {
            for (int64_t r = r0; r < r1; ++r) cache_->store(il, b.seq[r], b.pos[r], k_.data() + r * nk, v_.data() + r * nv);
        });

    AttentionShape as;
    as.n_head = l.n_head;
    as.n_head_kv = l.n_head_kv;
    as.head_dim_k = static_cast<int>(dk);
    as.head_dim_v = static_cast<int>(dv);
    as.scale = spec_.attention_scale > 0.0f ? spec_.attention_scale : 1.0f / std::sqrt(static_cast<float>(dk));
    as.prescale_q = spec_.attention_scale > 0.0f;
    as.softcap = spec_.attn_softcap;
    as.sinks = lw.attn_sinks;
    if (!alibi_slopes_.empty()) as.alibi = alibi_slopes_.data();
    // The keys a row sees: its window (or everything) up to itself, or with
    // non-causal attention up to its sequence's last position in the batch
    // (a symmetric window: half of it on each side).
    const int window = cache_->window(kl);
    const bool symmetric = !spec_.causal && spec_.swa_symmetric && window > 0;
    // A chunked layer (llama4) sees from its chunk's start: within the window too.
    auto first_key = [&](int64_t pos) {
        if (window > 0 && spec_.swa_chunked) return pos - pos % window;
        return window > 0 ? std::max<int64_t>(0, pos - window + 1) : 0;
    };
    auto first_key_row = [&](int64_t r) -> int64_t {
        if (symmetric) return std::max<int64_t>(0, b.pos[r] - window / 2);
        return spec_.causal ? first_key(b.pos[r]) : 0;
    };
    // A Gemma 4 assistant's rows are not in the target's cells it reads: each
    // sees the positions before its own (llama.cpp: no cell at the row's position).
    const int64_t self_key = spec_.n_embd_target > 0 ? 1 : 0;
    auto last_key = [&](int64_t r) -> int64_t {
        if (spec_.causal) return b.pos[r] - self_key;
        const int64_t end = spans_[static_cast<size_t>(row_span_[static_cast<size_t>(r)])].pos_max;
        return symmetric ? std::min<int64_t>(end, b.pos[r] + window / 2) : end;
    };
    for (size_t i = 0; i < n_spans_; ++i) {
        SeqSpan& sp = spans_[i];
        if (cache_->ggml_type() == GgmlType::Q8_0 && kv_convert_q8_0(as, sp.pos_max - sp.pos_min + 1)) {
            // Dequantized once for all the span's queries (kv_convert_q8_0).
            KvView kv;
            kv.type = cache_->ggml_type();
            kv.k_row = [&, seq = sp.seq](int64_t p) { return cache_->k_row(kl, seq, p); };
            kv.v_row = [&, seq = sp.seq](int64_t p) { return cache_->v_row(kl, seq, p); };
            sp.rows = kv_rows_f32(as, kv, spec_.causal ? first_key(sp.pos_min) : 0, sp.pos_max, sp.k_f32, sp.v_f32, &pool_);
        } else {
            sp.rows = cache_->rows(kl, sp.seq);
        }
    }
    // One task per block of rows and run of KV heads. In a prefill chunk a task
    // takes 16 consecutive rows of one KV head, so that head's cached keys and
    // values stay in L2 from one query to the next (a whole row's heads at depth
    // 2,048 do not fit there). In decode a task is one row, and with fewer rows
    // and KV heads than threads (one KV head) a pair's query heads are split
    // over tasks too; with several KV heads a decode task takes a run of them
    // (as many runs per row as threads), which are contiguous in every cached row and walk
    // the keys together, so each row is read in runs rather than in head-sized
    // pieces. A query head's result does not depend on the others' (attend_rows,
    // attend_rows_stream), so each task computes exactly what a whole-row call
    // computes for its heads.
    const int group = l.n_head / l.n_head_kv;
    const int64_t rows_per_task = n >= 2 * pool_.size() ? 16 : 1;
    const int64_t row_blocks = (n + rows_per_task - 1) / rows_per_task;
    // Decode: each row's KV heads in as many runs as threads, so the tasks are a
    // multiple of the threads whatever the number of rows.
    const int kv_runs_wanted = std::min(l.n_head_kv, pool_.size());
    const int kv_run = rows_per_task == 1 ? (l.n_head_kv + kv_runs_wanted - 1) / kv_runs_wanted : 1;
    const int kv_runs = (l.n_head_kv + kv_run - 1) / kv_run;
    const int64_t pairs = row_blocks * kv_runs;
    const int64_t wanted = pairs >= pool_.size() || kv_run > 1 ? 1 : std::min<int64_t>(group, (pool_.size() + pairs - 1) / pairs);
    const int per_part = static_cast<int>((group + wanted - 1) / wanted);
    const int parts = (group + per_part - 1) / per_part;  // none left empty
    pool_.run(pairs * parts, [&](int64_t task, int thread) {
        const int64_t r0 = task / (static_cast<int64_t>(kv_runs) * parts) * rows_per_task;
        const int g = static_cast<int>(task / parts % kv_runs) * kv_run;  // the run's first KV head
        const int n_kv = std::min(kv_run, l.n_head_kv - g);
        const int h0 = g * group + static_cast<int>(task % parts) * per_part;
        const int nh = n_kv > 1 ? n_kv * group : std::min(per_part, (g + 1) * group - h0);
        AttentionShape part = as;
        part.n_head = nh;
        part.n_head_kv = n_kv;
        if (as.sinks) part.sinks = as.sinks + h0;
        if (as.alibi) part.alibi = as.alibi + h0;
        const int64_t r_end = std::min<int64_t>(n, r0 + rows_per_task);
        for (int64_t r = r0, e; r < r_end; r = e) {
            // All of a chunk's rows without a sliding window attend as one block.
            e = self_key ? r + 1 : attention_run(r, r_end, [&](int64_t x) { return first_key_row(x) == first_key_row(r); });
            KvRows head = spans_[static_cast<size_t>(row_span_[static_cast<size_t>(r)])].rows;
            head.k += kv_row_offset(head.type, static_cast<uint64_t>(g) * static_cast<uint64_t>(dk));
            head.v += kv_row_offset(head.type, static_cast<uint64_t>(g) * static_cast<uint64_t>(dv));
            const float* qr = q_.data() + r * nq + static_cast<int64_t>(h0) * dk;
            float* out = att_.data() + r * l.n_head * dv + static_cast<int64_t>(h0) * dv;
            AttentionScratch& scratch = attn_scratch_[static_cast<size_t>(thread)];
            const int64_t last = last_key(r);  // a row alone may see past itself (an encoder); a run's rows are causal
            attend_run(part, qr, nq, first_key_row(r), e - r > 1 ? b.pos + r : &last, b.pos + r, static_cast<int>(e - r), head, out,
                       static_cast<int64_t>(l.n_head) * dv, scratch);
        }
    });
    dump("kqv_out", il, att_.data(), l.n_head * dv, n);
    if (spec_.attn_output_gate) {
        pool_.parallel_for(n * nq, 4096, [&](int64_t b0, int64_t b1, int) {
            for (int64_t i = b0; i < b1; ++i) att_[static_cast<size_t>(i)] *= ops::sigmoid(ogate_[static_cast<size_t>(i)]);
        });
        dump("attn_gated", il, att_.data(), l.n_head * dv, n);
    }

    matmul(lw.wo, att_.data(), n, o_.data(), pool_, mm_);
    scale_rows(o_.data(), lw.wo_s, n, e);
    add_bias(o_.data(), lw.bo, n, e);
    dump("attn_out", il, o_.data(), e, n);
    if (lw.attn_post_norm) {
        norm_rows(spec_, o_.data(), lw.attn_post_norm, nullptr, o_.data(), n, e, pool_);
        dump("attn_post_norm", il, o_.data(), e, n);
    }
    if (l.parallel_ssm) {
        // falcon-h1: the recurrent mixer on the attention's normed input, the sum then added once.
        ssm_->eval(il, lw.ssm, b.seq, n, h_.data(), ssm_o_.data(), *recurrent_, pool_, mm_, hook_);
        add_rows(o_.data(), ssm_o_.data(), n * e, pool_);
        dump("layer_out", il, o_.data(), e, n);
    }
    if (spec_.residual_scale != 0.0f) ops::scale(o_.data(), static_cast<int64_t>(n) * e, spec_.residual_scale);
    if (l.parallel) {
        // The FFN reads the layer's input too; the attention output waits for it.
        std::swap(o_, par_);
        return;
    }
    add_rows(x_.data(), o_.data(), n * e, pool_);
    if (lw.attn_out_norm) norm_rows(spec_, x_.data(), lw.attn_out_norm, lw.attn_out_norm_b, x_.data(), n, e, pool_);
    if (encoder_norm_2) {
        add_rows(x_.data(), h_.data(), n * e, pool_);
        norm_rows(spec_, x_.data(), lw.attn_norm_2, lw.attn_norm_2_b, x_.data(), n, e, pool_);
    }
    dump("ffn_inp", il, x_.data(), e, n);
}

void Forward::ffn_layer(int il, int n) {
    const LayerSpec& l = spec_.layers[static_cast<size_t>(il)];
    const LayerWeights& lw = w_.layers[static_cast<size_t>(il)];
    // An expert layer with a dense branch (gemma4) runs the dense FFN below at its width, then the experts.
    const bool dense_branch = l.ffn == FfnKind::Experts && l.n_ff_dense > 0;
    const int64_t e = spec_.n_embd, ff = dense_branch ? l.n_ff_dense : l.n_ff;
    const float* in = x_.data();  // a post-norm block (encoders) reads the residual stream
    if (lw.ffn_norm) {
        norm_rows(spec_, x_.data(), lw.ffn_norm, lw.ffn_norm_b, h_.data(), n, e, pool_);
        dump("ffn_norm", il, h_.data(), e, n);
        in = h_.data();
    } else if (l.parallel) {
        in = h_.data();  // the attention norm's output, still there
    }
    const auto act = spec_.activation == FfnActivation::Silu ? kernels().silu_mul : kernels().gelu_mul;
    if (l.ffn == FfnKind::Experts && !dense_branch) {
        moe_.eval(il, lw, in, n, o_.data(), pool_, mm_, hook_);  // model/moe.h
    } else if (lw.ffn_gate_up_fused) {
        // One product [gate; up] per row, then act(gate) * up into gate_.
        matmul(lw.ffn_up, in, n, gate_up_.data(), pool_, mm_);
        add_bias(gate_up_.data(), lw.ffn_up_b, n, 2 * ff);  // one bias over both halves (jina-bert-v2)
        scale_rows(gate_up_.data(), lw.ffn_up_s, n, 2 * ff);
        pool_.parallel_for(n, 1, [&](int64_t r0, int64_t r1, int) {
            for (int64_t r = r0; r < r1; ++r) {
                float* row = gate_up_.data() + r * 2 * ff;
                act(row, row + ff, ff);
                std::copy(row, row + ff, gate_.data() + r * ff);
            }
        });
    } else if (l.ffn == FfnKind::Gated || dense_branch) {
        const Matrix* ws[] = {&lw.ffn_gate, &lw.ffn_up};
        float* ys[] = {gate_.data(), up_.data()};
        matmul_many(ws, in, n, ys, pool_, mm_);
        add_bias(gate_.data(), lw.ffn_gate_b, n, ff);
        scale_rows(gate_.data(), lw.ffn_gate_s, n, ff);
        add_bias(up_.data(), lw.ffn_up_b, n, ff);
        scale_rows(up_.data(), lw.ffn_up_s, n, ff);
        pool_.parallel_for(n * ff, 4096, [&](int64_t b, int64_t end, int) { act(gate_.data() + b, up_.data() + b, end - b); });
    } else {
        // act(up): the gated kernel with a gate of ones (x * 1.0f is exact), so both
        // kinds share one activation kernel per CPU level.
        matmul(lw.ffn_up, in, n, gate_.data(), pool_, mm_);
        add_bias(gate_.data(), lw.ffn_up_b, n, ff);
        scale_rows(gate_.data(), lw.ffn_up_s, n, ff);
        if (spec_.activation == FfnActivation::Relu2) {
            // max(x, 0)^2, exact in float (ggml: relu, then sqr).
            pool_.parallel_for(n * ff, 4096, [&](int64_t b0, int64_t b1, int) {
                for (int64_t i = b0; i < b1; ++i) {
                    const float v = std::max(gate_[static_cast<size_t>(i)], 0.0f);
                    gate_[static_cast<size_t>(i)] = v * v;
                }
            });
        } else if (spec_.activation == FfnActivation::Xielu) {
            // Element by element as ggml's xIELU (expm1f, fminf), no SIMD kernel: an
            // elementwise op beside two matrix products.
            const XieluParams p = l.xielu;
            pool_.parallel_for(n * ff, 4096, [&](int64_t b0, int64_t b1, int) {
                for (int64_t i = b0; i < b1; ++i) {
                    float& v = gate_[static_cast<size_t>(i)];
                    v = v > 0.0f ? p.alpha_p * v * v + p.beta * v : (std::expm1(std::fmin(v, p.eps)) - v) * p.alpha_n + p.beta * v;
                }
            });
        } else {
            pool_.parallel_for(n, 1, [&](int64_t r0, int64_t r1, int) {
                for (int64_t r = r0; r < r1; ++r) act(gate_.data() + r * ff, ones_.data(), ff);
            });
        }
    }
    if (l.ffn != FfnKind::Experts || dense_branch) {
        if (lw.ffn_act_s) {  // AWQ's activation scales (mpt): divided, as ggml_div
            pool_.parallel_for(n, 1, [&](int64_t r0, int64_t r1, int) {
                for (int64_t r = r0; r < r1; ++r)
                    for (int64_t i = 0; i < ff; ++i) gate_[static_cast<size_t>(r * ff + i)] /= lw.ffn_act_s[i];
            });
        }
        dump("ffn_act", il, gate_.data(), ff, n);
        matmul(lw.ffn_down, gate_.data(), n, o_.data(), pool_, mm_);
        add_bias(o_.data(), lw.ffn_down_b, n, e);
        scale_rows(o_.data(), lw.ffn_down_s, n, e);
    }
    if (dense_branch) {
        // gemma4: post_ffw_norm_1(dense) + post_ffw_norm_2(experts(pre_ffw_norm_2(x))),
        // the router reading rms(x) / sqrt(n_embd) * ffn_gate_inp.scale.
        const ExpertWeights& xw = lw.moe;
        norm_rows(spec_, o_.data(), xw.post_norm_1, nullptr, o_.data(), n, e, pool_);
        dump("ffn_mlp", il, o_.data(), e, n);
        norm_rows(spec_, x_.data(), xw.pre_norm_2, nullptr, moe_in_.data(), n, e, pool_);
        dump("ffn_norm_2", il, moe_in_.data(), e, n);
        const auto rms_norm = kernels().rms_norm;
        const float inv_sqrt_e = 1.0f / std::sqrt(static_cast<float>(e));
        pool_.parallel_for(n, 4, [&](int64_t r0, int64_t r1, int) {
            for (int64_t r = r0; r < r1; ++r) {
                float* y = moe_router_in_.data() + r * e;
                rms_norm(x_.data() + r * e, embd_ones_.data(), y, e, spec_.norm_eps);
                for (int64_t i = 0; i < e; ++i) y[i] = y[i] * inv_sqrt_e * xw.router_in_s[i];
            }
        });
        moe_.eval(il, lw, moe_in_.data(), n, moe_out_.data(), pool_, mm_, hook_, moe_router_in_.data());
        norm_rows(spec_, moe_out_.data(), xw.post_norm_2, nullptr, moe_out_.data(), n, e, pool_);
        dump("ffn_moe", il, moe_out_.data(), e, n);
        add_rows(o_.data(), moe_out_.data(), n * e, pool_);
    }
    dump("ffn_out", il, o_.data(), e, n);
    if (lw.ffn_post_norm) {
        norm_rows(spec_, o_.data(), lw.ffn_post_norm, nullptr, o_.data(), n, e, pool_);
        dump("ffn_post_norm", il, o_.data(), e, n);
    }
    if (spec_.residual_scale != 0.0f) ops::scale(o_.data(), static_cast<int64_t>(n) * e, spec_.residual_scale);
    if (l.parallel) add_rows(o_.data(), par_.data(), n * e, pool_);  // ffn + attn, then the residual
    add_rows(x_.data(), o_.data(), n * e, pool_);
    if (lw.layer_out_norm) norm_rows(spec_, x_.data(), lw.layer_out_norm, lw.layer_out_norm_b, x_.data(), n, e, pool_);
    if (spec_.n_embd_per_layer > 0) per_layer_embedding(il, n);  // per_layer_embd.cpp
    if (lw.out_scale != 1.0f) {
        ops::scale(x_.data(), static_cast<int64_t>(n) * e, lw.out_scale);
        dump("out_scaled", il, x_.data(), e, n);
    }
    dump("l_out", il, x_.data(), e, n);
}

// A recurrent layer: attn_norm → the layer's mixer over the rows in batch order
// (src/model/ssm.cpp) → residual.
void Forward::recurrent_layer(int il, const BatchRows& b) {
    const int n = b.n;
    const LayerWeights& lw = w_.layers[static_cast<size_t>(il)];
    const int64_t e = spec_.n_embd;
    if (spec_.ssm.kind == SsmKind::Rwkv6 || spec_.ssm.kind == SsmKind::Rwkv7) {
        // The whole block, its norms and residual adds included (model/rwkv6.cpp).
        ssm_->eval(il, lw.ssm, b.seq, n, x_.data(), o_.data(), *recurrent_, pool_, mm_, hook_);
        std::swap(x_, o_);
        return;
    }
    norm_rows(spec_, x_.data(), lw.attn_norm, lw.attn_norm_b, h_.data(), n, e, pool_);
    dump("attn_norm", il, h_.data(), e, n);
    ssm_->eval(il, lw.ssm, b.seq, n, h_.data(), o_.data(), *recurrent_, pool_, mm_, hook_);
    if (spec_.residual_scale != 0.0f) ops::scale(o_.data(), static_cast<int64_t>(n) * e, spec_.residual_scale);  // granitehybrid
    add_rows(x_.data(), o_.data(), n * e, pool_);
    dump(spec_.layers[static_cast<size_t>(il)].ffn == FfnKind::None ? "l_out" : "ffn_inp", il, x_.data(), e, n);
}

// An encoder's input: the token row + the token type's row + the position's
// row where positions are learned (in llama.cpp's order of additions),
// LayerNormed (token_embd_norm).
void Forward::encoder_inputs(const BatchRows& b) {
    const int64_t e = spec_.n_embd;
    float* tmp = o_.data();  // [n_embd]: one looked-up row at a time
    for (int r = 0; r < b.n; ++r) {
        float* row = x_.data() + r * e;
        const int32_t type = b.types ? b.types[r] : 0;
        if (type < 0 || type >= std::max<int>(1, static_cast<int>(w_.type_embd.n_out)))
            throw Error("token type " + std::to_string(type) + " is outside the model's " +
                        std::to_string(w_.type_embd.n_out) + " token types");
        if (!w_.type_embd.empty()) {
            matrix_row_f32(w_.type_embd, type, tmp);
            ops::add(row, tmp, e);
        }
    }
    if (!w_.pos_embd.empty()) add_position_rows(b);  // else positions by RoPE or ALiBi in the attention
    norm_rows(spec_, x_.data(), w_.tok_embd_norm, w_.tok_embd_norm_b, x_.data(), b.n, e, pool_);
}

// Learned absolute positions: each row += position_embd's row of its position.
void Forward::add_position_rows(const BatchRows& b) {
    const int64_t e = spec_.n_embd;
    float* tmp = o_.data();  // [n_embd]: one looked-up row at a time
    for (int r = 0; r < b.n; ++r) {
        if (b.pos[r] < 0 || b.pos[r] >= w_.pos_embd.n_out)
            throw Error("position " + std::to_string(b.pos[r]) + " is outside the model's " + std::to_string(w_.pos_embd.n_out) +
                        " learned positions (position_embd.weight)");
        matrix_row_f32(w_.pos_embd, b.pos[r], tmp);
        ops::add(x_.data() + r * e, tmp, e);
    }
}

void Forward::eval(const BatchRows& b, float* logits, float* hidden, float* row_hidden) {
    const int n = b.n;
    if (n <= 0 || n > n_batch_max_)
        throw Error("forward: batch of " + std::to_string(n) + " rows (1 to " + std::to_string(n_batch_max_) + " allowed)",
                    ErrorKind::Internal);
    const int64_t e = spec_.n_embd;
    if (w_.nextn_input) nextn_inputs(b);  // nextn.cpp
    if (w_.assistant_input) assistant_inputs(b);  // assistant.cpp
    for (int r = 0; r < n && !w_.nextn_input && !w_.assistant_input; ++r) {
        float* row = x_.data() + r * e;
        if (b.tokens[r] < 0) {
            if (!b.embd) throw Error("forward: row " + std::to_string(r) + " has no token and no embedding", ErrorKind::Internal);
            std::copy(b.embd + r * e, b.embd + (r + 1) * e, row);
            continue;
        }
        if (b.tokens[r] >= spec_.n_vocab)
            throw Error("token id " + std::to_string(b.tokens[r]) + " is outside the vocabulary (" + std::to_string(spec_.n_vocab) + ")");
        matrix_row_f32(w_.tok_embd, b.tokens[r], row);
        if (spec_.embedding_scale != 1.0f) ops::scale(row, e, spec_.embedding_scale);
    }
    if (spec_.post_norm)
        encoder_inputs(b);
    else if (!w_.pos_embd.empty())  // learned positions of a decoder (gpt2, starcoder)
        add_position_rows(b);
    else if (w_.tok_embd_norm)  // the input rows' norm (modern-bert; bloom's with a bias)
        norm_rows(spec_, x_.data(), w_.tok_embd_norm, w_.tok_embd_norm_b, x_.data(), n, e, pool_);
    prepare_rope(b);
    plan_spans(b);
    if (ssm_) ssm_->set_pass_rows(b.seq, b.pos, n, *recurrent_, pool_);
    dump("inp_embd", -1, x_.data(), e, n);
    if (spec_.n_embd_per_layer > 0) per_layer_inputs(b);  // per_layer_embd.cpp

    for (int il = 0; il < spec_.n_layer; ++il) {
        const LayerSpec& l = spec_.layers[static_cast<size_t>(il)];
        if (l.mixer == MixerKind::Recurrent)
            recurrent_layer(il, b);
        else if (l.mixer == MixerKind::Attention && spec_.mla.kv_lora_rank > 0)
            mla_attention_layer(il, b);
        else if (l.mixer == MixerKind::Attention)
            attention_layer(il, b);
        if (l.ffn != FfnKind::None) ffn_layer(il, n);
    }

    // The rows whose output is wanted, gathered (in decode and at the end of a
    // prompt that is the last row alone).
    int n_out = 0;
    for (int r = 0; r < n; ++r) n_out += b.output[r] ? 1 : 0;
    // Every row's final state: the norm is per row, so the output rows' bits are
    // those the gathered path below gives them.
    if (row_hidden) {
        if (!w_.output_norm) throw Error("forward: every row's hidden state asked of a model without a final norm", ErrorKind::Internal);
        norm_rows(spec_, x_.data(), w_.output_norm, w_.output_norm_b, row_hidden, n, e, pool_);
    }
    if (n_out == 0 || (!logits && !hidden)) return;
    out_x_.resize(static_cast<size_t>(n_out) * static_cast<size_t>(e));
    for (int r = 0, k = 0; r < n; ++r)
        if (b.output[r]) std::copy(x_.data() + r * e, x_.data() + (r + 1) * e, out_x_.data() + (k++) * e);
    if (w_.output_norm) {
        norm_rows(spec_, out_x_.data(), w_.output_norm, w_.output_norm_b, h_.data(), n_out, e, pool_);
        dump("result_norm", -1, h_.data(), e, n_out);
    } else {  // encoders: the last layer's output as it is
        std::copy(out_x_.begin(), out_x_.end(), h_.begin());
        dump("result_embd", -1, h_.data(), e, n_out);
    }
    if (hidden) std::copy(h_.data(), h_.data() + static_cast<int64_t>(n_out) * e, hidden);
    if (!logits || w_.output.empty()) return;
    matmul(w_.output, h_.data(), n_out, logits, pool_, mm_);
    add_bias(logits, w_.output_b, n_out, spec_.n_vocab);
    if (spec_.logit_multiplier != 1.0f) ops::scale(logits, static_cast<int64_t>(n_out) * spec_.n_vocab, spec_.logit_multiplier);
    if (spec_.final_softcap > 0.0f) ops::softcap(logits, static_cast<int64_t>(n_out) * spec_.n_vocab, spec_.final_softcap);
    dump("result_output", -1, logits, spec_.n_vocab, n_out);
}

void Forward::log_rows(int seq, int64_t pos0, int n_rows) {
    if (ssm_) ssm_->log_start(seq, pos0, n_rows, *recurrent_, pool_);
}

void Forward::log_stop(int seq) {
    if (ssm_) ssm_->log_stop(seq, *recurrent_, pool_);
}

void Forward::flush_recurrent(int seq) {
    if (ssm_) ssm_->flush(seq, *recurrent_, pool_);
}

void Forward::drop_recurrent(int seq) {
    if (ssm_) ssm_->drop(seq);
}

uint64_t Forward::replay_log_bytes(const ModelSpec& spec, int n_seq, int n_rows) {
    bool recurrent = false;
    for (const LayerSpec& l : spec.layers) recurrent = recurrent || l.has_recurrent_state();
    return recurrent ? SsmMixer::log_bytes_needed(spec, n_seq, n_rows) : 0;
}

bool Forward::can_replay(int seq, int64_t n_keep) const { return ssm_ && ssm_->can_replay(seq, n_keep); }

int Forward::replay(int seq, int64_t n_keep) {
    const int n_rows = static_cast<int>(n_keep - ssm_->log_start_pos(seq));
    for (int il = 0; il < spec_.n_layer; ++il)
        if (spec_.layers[static_cast<size_t>(il)].has_recurrent_state())
            ssm_->replay_layer(il, w_.layers[static_cast<size_t>(il)].ssm, seq, n_rows, *recurrent_, pool_);
    ssm_->log_truncate(seq, n_rows);
    return n_rows;
}

}  // namespace kiln
