#include "compute/attention.h"

#include <algorithm>
#include <cmath>

#include "compute/alibi.h"
#include "compute/kernels/kernels.h"
#include "compute/thread_pool.h"
#include "compute/ops.h"
#include "kiln/quant.h"

namespace kiln {

namespace {

// The first n elements of a cached row as f32.
void row_to_f32(GgmlType type, const uint8_t* row, int64_t n, float* out) {
    switch (type) {
        case GgmlType::F32: {
            const float* r = reinterpret_cast<const float*>(row);
            for (int64_t i = 0; i < n; ++i) out[i] = r[i];
            return;
        }
        case GgmlType::F16: {
            const uint16_t* r = reinterpret_cast<const uint16_t*>(row);
            for (int64_t i = 0; i < n; ++i) out[i] = quant::fp16_to_fp32(r[i]);
            return;
        }
        default: quant::dequantize_row(type, row, out, n); return;
    }
}

// One head's slice of a cached row as f32.
void head_to_f32(GgmlType type, const uint8_t* row, int head, int dim, float* out) {
    const uint64_t offset = ggml_row_bytes(type, static_cast<uint64_t>(head) * static_cast<uint64_t>(dim));
    row_to_f32(type, row + offset, dim, out);
}

}  // namespace

void attend(const AttentionShape& s, const float* q, int64_t first, int64_t pos, const KvView& kv, float* out,
            AttentionScratch& sc) {
    const int64_t n_keys = pos - first + 1;
    const int group = s.n_head / s.n_head_kv;
    sc.scores.resize(static_cast<size_t>(n_keys * group));
    sc.kbuf.resize(static_cast<size_t>(s.head_dim_k));
    sc.vbuf.resize(static_cast<size_t>(s.head_dim_v));
    sc.qbuf.resize(static_cast<size_t>(group * s.head_dim_k));
    const bool f16 = kv.type == GgmlType::F16 || kv.f16_rounding;
    auto round16 = [](float v) { return quant::fp16_to_fp32(quant::fp32_to_fp16(v)); };
    for (int g = 0; g < s.n_head_kv; ++g) {
        for (int hq = 0; hq < group; ++hq) {
            const float* qh = q + static_cast<int64_t>(g * group + hq) * s.head_dim_k;
            float* qb = sc.qbuf.data() + static_cast<size_t>(hq * s.head_dim_k);
            for (int i = 0; i < s.head_dim_k; ++i) {
                float v = s.prescale_q ? qh[i] * s.scale : qh[i];
                qb[i] = f16 ? round16(v) : v;
            }
        }
        const float score_scale = s.prescale_q ? 1.0f : s.scale;
        // Scores of the group's query heads against every visible key.
        for (int64_t j = 0; j < n_keys; ++j) {
            head_to_f32(kv.type, kv.k_row(first + j), g, s.head_dim_k, sc.kbuf.data());
            for (int hq = 0; hq < group; ++hq) {
                const float* qh = sc.qbuf.data() + static_cast<size_t>(hq * s.head_dim_k);
                float dot = 0.0f;
                for (int i = 0; i < s.head_dim_k; ++i) dot += qh[i] * sc.kbuf[static_cast<size_t>(i)];
                float v = dot * score_scale;
                if (s.softcap > 0.0f) v = std::tanh(v / s.softcap) * s.softcap;
                sc.scores[static_cast<size_t>(hq * n_keys + j)] = v;
            }
        }
        for (int hq = 0; hq < group; ++hq) {
            float* sp = sc.scores.data() + hq * n_keys;
            if (s.alibi) alibi_bias(sp, n_keys, first, s.q_pos, s.alibi[g * group + hq]);
            if (s.sinks)
                ops::softmax_with_sink(sp, n_keys, s.sinks[g * group + hq]);
            else
                ops::softmax(sp, n_keys);
            if (f16)
                for (int64_t j = 0; j < n_keys; ++j) sp[j] = round16(sp[j]);
        }
        for (int hq = 0; hq < group; ++hq) {
            float* oh = out + static_cast<int64_t>(g * group + hq) * s.head_dim_v;
            for (int d = 0; d < s.head_dim_v; ++d) oh[d] = 0.0f;
        }
        for (int64_t j = 0; j < n_keys; ++j) {
            head_to_f32(kv.type, kv.v_row(first + j), g, s.head_dim_v, sc.vbuf.data());
            for (int hq = 0; hq < group; ++hq) {
                const float p = sc.scores[static_cast<size_t>(hq * n_keys + j)];
                float* oh = out + static_cast<int64_t>(g * group + hq) * s.head_dim_v;
                for (int d = 0; d < s.head_dim_v; ++d) oh[d] += p * sc.vbuf[static_cast<size_t>(d)];
            }
        }
    }
}

KvRows kv_rows_f32(const AttentionShape& s, const KvView& kv, int64_t first, int64_t last, HugeFloats& kbuf,
                   HugeFloats& vbuf, const ThreadPool* pool) {
    const int64_t n = last - first + 1;
    const int64_t ks = static_cast<int64_t>(s.n_head_kv) * s.head_dim_k, vs = static_cast<int64_t>(s.n_head_kv) * s.head_dim_v;
    kbuf.resize(static_cast<size_t>(n * ks));
    vbuf.resize(static_cast<size_t>(n * vs));
    // q8_0 (the engine's caller) through the SIMD kernel, other types as attend() reads them.
    const auto q8_0 = kv.type == GgmlType::Q8_0 ? kernels().q8_0_to_f32 : nullptr;
    auto to_f32 = [&](const uint8_t* row, int64_t len, float* out) {
        if (q8_0)
            q8_0(row, out, len);
        else
            row_to_f32(kv.type, row, len, out);
    };
    auto convert = [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < p1; ++p) {  // whole rows: every KV head at once
            to_f32(kv.k_row(p), ks, kbuf.data() + (p - first) * ks);
            to_f32(kv.v_row(p), vs, vbuf.data() + (p - first) * vs);
        }
    };
    if (pool && n >= 128)
        pool->parallel_for(n, 64, [&](int64_t b, int64_t e, int) { convert(first + b, first + e); });
    else
        convert(first, last + 1);
    KvRows r;
    r.type = GgmlType::F32;
    r.k = reinterpret_cast<const uint8_t*>(kbuf.data());
    r.v = reinterpret_cast<const uint8_t*>(vbuf.data());
    r.k_row_bytes = static_cast<uint64_t>(ks) * 4;
    r.v_row_bytes = static_cast<uint64_t>(vs) * 4;
    r.base = first;
    r.capacity = n;
    r.f16_rounding = kv.type == GgmlType::F16;
    return r;
}

// attend() over KvRows: the same operations in the same order.
void attend_rows_scalar(const AttentionShape& s, const float* q, int64_t first, int64_t pos, const KvRows& kv, float* out,
                        AttentionScratch& sc) {
    KvView view;
    view.type = kv.type;
    view.f16_rounding = kv.f16_rounding;
    view.k_row = [&](int64_t p) { return kv.k_row(p); };
    view.v_row = [&](int64_t p) { return kv.v_row(p); };
    attend(s, q, first, pos, view, out, sc);
}

void attend_rows(const AttentionShape& s, const float* q, int64_t first, int64_t pos, const KvRows& kv, float* out,
                 AttentionScratch& scratch) {
    kernels().attend_row(s, q, first, pos, kv, out, scratch);
}

void attend_rows_block(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                       const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                       AttentionScratch& scratch) {
    const KernelTable& k = kernels();
    if (k.attend_block) return k.attend_block(s, q, q_stride, first, pos, q_pos, n_rows, kv, out, out_stride, scratch);
    AttentionShape row = s;
    for (int r = 0; r < n_rows; ++r) {
        row.q_pos = q_pos[r];
        k.attend_row(row, q + r * q_stride, first, pos[r], kv, out + r * out_stride, scratch);
    }
}

void attend_stream_scalar(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                          const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                          AttentionScratch& sc) {
    const int group = s.n_head / s.n_head_kv;
    const int dk = s.head_dim_k, dv = s.head_dim_v;
    const bool f16 = kv.type == GgmlType::F16 || kv.f16_rounding;
    const float score_scale = s.prescale_q ? 1.0f : s.scale;
    auto round16 = [](float v) { return quant::fp16_to_fp32(quant::fp32_to_fp16(v)); };
    sc.kbuf.resize(static_cast<size_t>(dk));
    sc.vbuf.resize(static_cast<size_t>(dv));
    sc.qbuf.resize(static_cast<size_t>(dk));
    sc.scores.resize(k_stream_block);
    sc.acc.resize(static_cast<size_t>(dv));
    for (int r = 0; r < n_rows; ++r) {
        const int64_t n_keys = pos[r] - first + 1;
        for (int h = 0; h < s.n_head; ++h) {
            const int g = h / group;
            const float* qh = q + r * q_stride + static_cast<int64_t>(h) * dk;
            for (int i = 0; i < dk; ++i) {
                const float v = s.prescale_q ? qh[i] * s.scale : qh[i];
                sc.qbuf[static_cast<size_t>(i)] = f16 ? round16(v) : v;
            }
            // A sink is a first key whose value is zero.
            float m = s.sinks ? s.sinks[h] : -INFINITY;
            float sum = s.sinks ? 1.0f : 0.0f;
            std::fill(sc.acc.begin(), sc.acc.end(), 0.0f);
            for (int64_t j0 = 0; j0 < n_keys; j0 += k_stream_block) {
                const int n = static_cast<int>(std::min<int64_t>(k_stream_block, n_keys - j0));
                float* sp = sc.scores.data();
                for (int jj = 0; jj < n; ++jj) {
                    head_to_f32(kv.type, kv.k_row(first + j0 + jj), g, dk, sc.kbuf.data());
                    float dot = 0.0f;
                    for (int i = 0; i < dk; ++i) dot += sc.qbuf[static_cast<size_t>(i)] * sc.kbuf[static_cast<size_t>(i)];
                    float v = dot * score_scale;
                    if (s.softcap > 0.0f) v = std::tanh(v / s.softcap) * s.softcap;
                    sp[jj] = v;
                }
                if (s.alibi) alibi_bias(sp, n, first + j0, q_pos[r], s.alibi[h]);
                float block_max = -INFINITY;
                for (int jj = 0; jj < n; ++jj) block_max = std::max(block_max, sp[jj]);
                const float m_new = std::max(m, block_max);
                if (m_new == -INFINITY) continue;  // nothing seen yet has any weight
                const float rescale = m == -INFINITY ? 0.0f : std::exp(m - m_new);
                float block_sum = 0.0f;
                for (int jj = 0; jj < n; ++jj) block_sum += sp[jj] = std::exp(sp[jj] - m_new);
                sum = sum * rescale + block_sum;
                if (rescale != 1.0f)
                    for (float& a : sc.acc) a *= rescale;
                for (int jj = 0; jj < n; ++jj) {
                    head_to_f32(kv.type, kv.v_row(first + j0 + jj), g, dv, sc.vbuf.data());
                    for (int d = 0; d < dv; ++d) sc.acc[static_cast<size_t>(d)] += sp[jj] * sc.vbuf[static_cast<size_t>(d)];
                }
                m = m_new;
            }
            float* oh = out + r * out_stride + static_cast<int64_t>(h) * dv;
            const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
            for (int d = 0; d < dv; ++d) oh[d] = sc.acc[static_cast<size_t>(d)] * inv;
        }
    }
}

void attend_rows_stream(const AttentionShape& s, const float* q, int64_t q_stride, int64_t first, const int64_t* pos,
                        const int64_t* q_pos, int n_rows, const KvRows& kv, float* out, int64_t out_stride,
                        AttentionScratch& scratch) {
    const KernelTable& k = kernels();
    (k.attend_stream ? k.attend_stream : attend_stream_scalar)(s, q, q_stride, first, pos, q_pos, n_rows, kv, out, out_stride,
                                                                scratch);
}

}  // namespace kiln
