// The KV cache of an attention test: `capacity` rows of keys and values in one
// cache type, position p in slot (p - base) % capacity (KvRows' layout, so reads
// wrap when the positions do not start at slot 0), and the shape of a case.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "compute/attention.h"
#include "kiln/quant.h"

namespace kiln {

inline AttentionShape test_attention_shape(int n_head, int n_head_kv, int dk, int dv, bool prescale = false, float softcap = 0) {
    AttentionShape s;
    s.n_head = n_head;
    s.n_head_kv = n_head_kv;
    s.head_dim_k = dk;
    s.head_dim_v = dv;
    s.scale = 1.0f / std::sqrt(static_cast<float>(dk));
    s.prescale_q = prescale;
    s.softcap = softcap;
    return s;
}

struct TestKvRing {
    GgmlType type;
    int64_t k_width, v_width, capacity, base;
    uint64_t k_row_bytes, v_row_bytes;
    std::vector<uint8_t> k, v;
    float vmax = 0;  // the largest |value| written

    TestKvRing(GgmlType type, int64_t k_width, int64_t v_width, int64_t capacity, int64_t base = 0)
        : type(type), k_width(k_width), v_width(v_width), capacity(capacity), base(base),
          k_row_bytes(ggml_row_bytes(type, static_cast<uint64_t>(k_width))),
          v_row_bytes(ggml_row_bytes(type, static_cast<uint64_t>(v_width))),
          k(static_cast<size_t>(capacity) * k_row_bytes), v(static_cast<size_t>(capacity) * v_row_bytes) {}
    TestKvRing(const TestKvRing&) = delete;  // view() points into it

    size_t slot(int64_t pos) const { return static_cast<size_t>((pos - base) % capacity); }

    // Writes positions first..last, each its key row then its value row from
    // values(n) (a test's random generator: the order it is called in is kept).
    template <class Values>
    void fill(int64_t first, int64_t last, Values&& values) {
        for (int64_t p = first; p <= last; ++p) {
            const std::vector<float> kr = values(static_cast<size_t>(k_width));
            const std::vector<float> vr = values(static_cast<size_t>(v_width));
            for (float x : vr) vmax = std::max(vmax, std::fabs(x));
            quant::quantize_row(type, kr.data(), k.data() + slot(p) * k_row_bytes, k_width);
            quant::quantize_row(type, vr.data(), v.data() + slot(p) * v_row_bytes, v_width);
        }
    }

    // Read in place, rounded as the forward pass rounds an f16 cache.
    KvRows rows() const {
        KvRows r;
        r.type = type;
        r.k = k.data();
        r.v = v.data();
        r.k_row_bytes = k_row_bytes;
        r.v_row_bytes = v_row_bytes;
        r.base = base;
        r.capacity = capacity;
        r.f16_rounding = type == GgmlType::F16;
        return r;
    }

    KvView view() const {
        KvView view;
        view.type = type;
        view.k_row = [this](int64_t p) { return k.data() + slot(p) * k_row_bytes; };
        view.v_row = [this](int64_t p) { return v.data() + slot(p) * v_row_bytes; };
        return view;
    }
};

}  // namespace kiln
