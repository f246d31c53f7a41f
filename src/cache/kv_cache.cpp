#include "cache/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "compute/huge_pages.h"
#include "compute/kernels/kernels.h"
#include "kiln/error.h"
#include "kiln/quant.h"

namespace kiln {

std::string_view kv_type_name(KvType t) {
    switch (t) {
        case KvType::F32: return "f32";
        case KvType::F16: return "f16";
        case KvType::Q8_0: return "q8_0";
    }
    return "?";
}

KvType parse_kv_type(std::string_view name) {
    if (name == "f32") return KvType::F32;
    if (name == "f16") return KvType::F16;
    if (name == "q8_0") return KvType::Q8_0;
    throw Error("unknown KV cache type '" + std::string(name) + "' (f32, f16 or q8_0)");
}

GgmlType kv_ggml_type(KvType t) {
    switch (t) {
        case KvType::F32: return GgmlType::F32;
        case KvType::F16: return GgmlType::F16;
        case KvType::Q8_0: return GgmlType::Q8_0;
    }
    return GgmlType::F32;
}

KvCache::KvCache(const ModelSpec& spec, int n_ctx, int n_batch_max, KvType type) : n_ctx_(n_ctx), type_(type) {
    const GgmlType gt = kv_ggml_type(type);
    const uint32_t block = ggml_type_info(gt).block_size;
    if (spec.head_dim_k % static_cast<int>(block) != 0 || spec.head_dim_v % static_cast<int>(block) != 0)
        throw Error("KV cache type " + std::string(kv_type_name(type)) + " needs head sizes divisible by " +
                    std::to_string(block) + " (this model has " + std::to_string(spec.head_dim_k) + ")");
    for (const LayerSpec& l : spec.layers) {
        KvLayer kl;
        kl.window = l.sliding ? spec.sliding_window : 0;
        kl.capacity = kl.window > 0 ? std::min<int64_t>(n_ctx, static_cast<int64_t>(kl.window) + n_batch_max - 1) : n_ctx;
        kl.k_row_bytes = ggml_row_bytes(gt, static_cast<uint64_t>(l.n_head_kv) * spec.head_dim_k);
        kl.v_row_bytes = ggml_row_bytes(gt, static_cast<uint64_t>(l.n_head_kv) * spec.head_dim_v);
        layers_.push_back(kl);
    }
    // One buffer for all layers, each layer's K and V at 64-byte aligned offsets,
    // zeroed so that no read of it is ever of uninitialised memory.
    std::vector<uint64_t> offsets;
    uint64_t bytes = 0;
    for (const KvLayer& kl : layers_)
        for (uint64_t row_bytes : {kl.k_row_bytes, kl.v_row_bytes}) {
            offsets.push_back(bytes);
            bytes += (static_cast<uint64_t>(kl.capacity) * row_bytes + 63) / 64 * 64;
        }
    try {
        buffer_.reset(static_cast<uint8_t*>(allocate_huge(bytes)));
    } catch (const std::bad_alloc&) {
        throw Error("out of memory allocating the KV cache (" + std::to_string(bytes >> 20) + " MiB)");
    }
    std::memset(buffer_.get(), 0, bytes);
    for (size_t i = 0; i < layers_.size(); ++i) {
        layers_[i].k = buffer_.get() + offsets[2 * i];
        layers_[i].v = buffer_.get() + offsets[2 * i + 1];
    }
}

static void store_row(GgmlType t, const float* src, uint8_t* dst, int64_t n) {
    if (t == GgmlType::F32) {
        std::copy(src, src + n, reinterpret_cast<float*>(dst));
        return;
    }
    if (t == GgmlType::F16) {
        // SIMD where the CPU has it; bit-identical to quant::fp32_to_fp16.
        kernels().f32_to_f16(src, reinterpret_cast<uint16_t*>(dst), n);
        return;
    }
    quant::quantize_row(t, src, dst, n);
}

void KvCache::store(int il, int64_t pos, const float* k, const float* v) {
    KvLayer& l = layers_[static_cast<size_t>(il)];
    const int64_t slot = pos % l.capacity;
    const GgmlType t = ggml_type();
    const uint32_t bb = ggml_type_info(t).block_bytes, bs = ggml_type_info(t).block_size;
    store_row(t, k, l.k + slot * l.k_row_bytes, static_cast<int64_t>(l.k_row_bytes / bb * bs));
    store_row(t, v, l.v + slot * l.v_row_bytes, static_cast<int64_t>(l.v_row_bytes / bb * bs));
}

const uint8_t* KvCache::k_row(int il, int64_t pos) const {
    const KvLayer& l = layers_[static_cast<size_t>(il)];
    return l.k + (pos % l.capacity) * l.k_row_bytes;
}

const uint8_t* KvCache::v_row(int il, int64_t pos) const {
    const KvLayer& l = layers_[static_cast<size_t>(il)];
    return l.v + (pos % l.capacity) * l.v_row_bytes;
}

bool KvCache::can_keep_prefix(int64_t n_keep, int64_t n_past) const {
    if (n_keep > n_past) return false;
    for (const KvLayer& l : layers_) {
        if (l.window == 0) continue;
        // Oldest position still in the ring vs the oldest one position n_keep needs.
        const int64_t oldest = std::max<int64_t>(0, n_past - l.capacity);
        const int64_t needed = std::max<int64_t>(0, n_keep - l.window + 1);
        if (needed < oldest) return false;
    }
    return true;
}

uint64_t KvCache::bytes_per_position() const {
    uint64_t b = 0;
    for (const KvLayer& l : layers_) b += l.k_row_bytes + l.v_row_bytes;
    return b;
}

uint64_t KvCache::allocated_bytes() const {
    uint64_t b = 0;
    for (const KvLayer& l : layers_) b += static_cast<uint64_t>(l.capacity) * (l.k_row_bytes + l.v_row_bytes);
    return b;
}

}  // namespace kiln
