#include "cache/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <new>

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

std::vector<KvCache::Layer> KvCache::plan(std::span<const KvLayerShape> shapes, const KvCacheOptions& o, uint64_t& bytes) {
    const GgmlType gt = kv_ggml_type(o.type);
    const uint32_t block = ggml_type_info(gt).block_size;
    if (o.n_seq < 1 || o.n_ctx < 1 || o.n_batch_max < 1)
        throw Error("KV cache: " + std::to_string(o.n_seq) + " sequences of " + std::to_string(o.n_ctx) +
                    " positions (both must be positive)");
    std::vector<Layer> layers;
    bytes = 0;
    for (const KvLayerShape& s : shapes) {
        Layer l;
        l.shape = s;
        if (s.n_head_kv > 0) {
            if (s.head_dim_k % static_cast<int>(block) != 0 || s.head_dim_v % static_cast<int>(block) != 0)
                throw Error("KV cache type " + std::string(kv_type_name(o.type)) + " needs head sizes divisible by " +
                                std::to_string(block) + " (this model has " + std::to_string(s.head_dim_k) + ")",
                            ErrorKind::Unsupported);
            l.cells = s.window > 0 ? std::min<int64_t>(o.n_ctx, static_cast<int64_t>(s.window) + o.n_batch_max - 1) : o.n_ctx;
            l.ring = s.window > 0 && l.cells < o.n_ctx;
            l.k_row_bytes = ggml_row_bytes(gt, static_cast<uint64_t>(s.n_head_kv) * static_cast<uint64_t>(s.head_dim_k));
            l.v_row_bytes = ggml_row_bytes(gt, static_cast<uint64_t>(s.n_head_kv) * static_cast<uint64_t>(s.head_dim_v));
            // Each layer's K and V at 64-byte aligned offsets.
            for (uint64_t row_bytes : {l.k_row_bytes, l.v_row_bytes})
                bytes += (static_cast<uint64_t>(o.n_seq) * static_cast<uint64_t>(l.cells) * row_bytes + 63) / 64 * 64;
        }
        layers.push_back(l);
    }
    return layers;
}

namespace {

// A checkpoint holds, per ring, the window - 1 positions before its position.
uint64_t ring_checkpoint_bytes(const KvLayerShape& s, uint64_t k_row_bytes, uint64_t v_row_bytes) {
    return static_cast<uint64_t>(s.window - 1) * (k_row_bytes + v_row_bytes);
}

}  // namespace

uint64_t KvCache::checkpoint_bytes(std::span<const KvLayerShape> layers, const KvCacheOptions& options) {
    uint64_t bytes = 0;
    uint64_t b = 0;
    for (const Layer& l : plan(layers, options, bytes))
        if (l.ring) b += ring_checkpoint_bytes(l.shape, l.k_row_bytes, l.v_row_bytes);
    return b;
}

// The cells only: ring checkpoints are allocated on first use (a sequence that
// never diverges past its window never needs them), up to checkpoint_bytes x
// n_checkpoints per sequence.
uint64_t KvCache::bytes_needed(std::span<const KvLayerShape> layers, const KvCacheOptions& options) {
    uint64_t bytes = 0;
    plan(layers, options, bytes);
    return bytes;
}

KvCache::KvCache(std::span<const KvLayerShape> shapes, const KvCacheOptions& o)
    : n_seq_(o.n_seq), n_ctx_(o.n_ctx), type_(o.type), index_(std::max(o.n_seq, 1), o.n_checkpoints) {
    uint64_t bytes = 0;
    layers_ = plan(shapes, o, bytes);
    for (Layer& l : layers_)
        if (l.ring) {
            l.ckpt_offset = ckpt_bytes_;
            ckpt_bytes_ += ring_checkpoint_bytes(l.shape, l.k_row_bytes, l.v_row_bytes);
        }
    ckpts_.resize(static_cast<size_t>(n_seq_) * static_cast<size_t>(index_.n_slots()));
    try {
        buffer_.reset(static_cast<uint8_t*>(allocate_huge(std::max<uint64_t>(bytes, 64))));
    } catch (const std::bad_alloc&) {
        throw Error("out of memory allocating the KV cache (" + std::to_string(bytes >> 20) + " MiB for " +
                        std::to_string(o.n_seq) + " sequences of " + std::to_string(o.n_ctx) + " positions)",
                    ErrorKind::ResourceExhausted);
    }
    // Zeroed so that no read of it is ever of uninitialised memory.
    std::memset(buffer_.get(), 0, bytes);
    uint64_t offset = 0;
    for (Layer& l : layers_) {
        if (l.cells == 0) continue;
        l.k = buffer_.get() + offset;
        offset += (static_cast<uint64_t>(n_seq_) * static_cast<uint64_t>(l.cells) * l.k_row_bytes + 63) / 64 * 64;
        l.v = buffer_.get() + offset;
        offset += (static_cast<uint64_t>(n_seq_) * static_cast<uint64_t>(l.cells) * l.v_row_bytes + 63) / 64 * 64;
    }
}

uint8_t* KvCache::k_cell(const Layer& l, int seq, int64_t pos) const {
    const uint64_t cell = static_cast<uint64_t>(seq) * static_cast<uint64_t>(l.cells) + static_cast<uint64_t>(pos % l.cells);
    return l.k + cell * l.k_row_bytes;
}

uint8_t* KvCache::v_cell(const Layer& l, int seq, int64_t pos) const {
    const uint64_t cell = static_cast<uint64_t>(seq) * static_cast<uint64_t>(l.cells) + static_cast<uint64_t>(pos % l.cells);
    return l.v + cell * l.v_row_bytes;
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

void KvCache::store(int il, int seq, int64_t pos, const float* k, const float* v) {
    const Layer& l = layers_[static_cast<size_t>(il)];
    const GgmlType t = ggml_type();
    const uint32_t bb = ggml_type_info(t).block_bytes, bs = ggml_type_info(t).block_size;
    store_row(t, k, k_cell(l, seq, pos), static_cast<int64_t>(l.k_row_bytes / bb * bs));
    store_row(t, v, v_cell(l, seq, pos), static_cast<int64_t>(l.v_row_bytes / bb * bs));
}

const uint8_t* KvCache::k_row(int il, int seq, int64_t pos) const { return k_cell(layers_[static_cast<size_t>(il)], seq, pos); }
const uint8_t* KvCache::v_row(int il, int seq, int64_t pos) const { return v_cell(layers_[static_cast<size_t>(il)], seq, pos); }

KvRows KvCache::rows(int il, int seq) const {
    const Layer& l = layers_[static_cast<size_t>(il)];
    KvRows r;
    r.type = ggml_type();
    r.k = l.k + static_cast<uint64_t>(seq) * static_cast<uint64_t>(l.cells) * l.k_row_bytes;
    r.v = l.v + static_cast<uint64_t>(seq) * static_cast<uint64_t>(l.cells) * l.v_row_bytes;
    r.k_row_bytes = l.k_row_bytes;
    r.v_row_bytes = l.v_row_bytes;
    r.base = 0;
    r.capacity = l.cells;
    r.f16_rounding = r.type == GgmlType::F16;
    return r;
}

namespace {

// Whether a sliding layer's ring, after positions [0, n_past) were written, still
// holds every position a query at n_keep or later looks at.
bool ring_holds(int64_t cells, int window, int64_t n_keep, int64_t n_past) {
    const int64_t oldest_held = std::max<int64_t>(0, n_past - cells);
    const int64_t oldest_needed = std::max<int64_t>(0, n_keep - window + 1);
    return oldest_needed >= oldest_held;
}

}  // namespace

bool KvCache::rings_hold(int64_t n_keep, int64_t n_past) const {
    for (const Layer& l : layers_)
        if (l.ring && !ring_holds(l.cells, l.shape.window, n_keep, n_past)) return false;
    return true;
}

// A checkpoint's rows of one ring: positions pos - window + 1 .. pos - 1 in
// order (those before position 0 are left as they are: nothing reads them).
void KvCache::save_rings(int seq, int64_t pos, uint8_t* ckpt) const {
    for (const Layer& l : layers_) {
        if (!l.ring) continue;
        const int64_t first = pos - l.shape.window + 1;
        uint8_t* k = ckpt + l.ckpt_offset;
        uint8_t* v = k + static_cast<uint64_t>(l.shape.window - 1) * l.k_row_bytes;
        for (int64_t p = std::max<int64_t>(0, first); p < pos; ++p) {
            std::memcpy(k + static_cast<uint64_t>(p - first) * l.k_row_bytes, k_cell(l, seq, p), l.k_row_bytes);
            std::memcpy(v + static_cast<uint64_t>(p - first) * l.v_row_bytes, v_cell(l, seq, p), l.v_row_bytes);
        }
    }
}

void KvCache::load_rings(int seq, int64_t pos, const uint8_t* ckpt) {
    for (const Layer& l : layers_) {
        if (!l.ring) continue;
        const int64_t first = pos - l.shape.window + 1;
        const uint8_t* k = ckpt + l.ckpt_offset;
        const uint8_t* v = k + static_cast<uint64_t>(l.shape.window - 1) * l.k_row_bytes;
        for (int64_t p = std::max<int64_t>(0, first); p < pos; ++p) {
            std::memcpy(k_cell(l, seq, p), k + static_cast<uint64_t>(p - first) * l.k_row_bytes, l.k_row_bytes);
            std::memcpy(v_cell(l, seq, p), v + static_cast<uint64_t>(p - first) * l.v_row_bytes, l.v_row_bytes);
        }
    }
}

void KvCache::checkpoint_at(int seq, int64_t pos, int64_t n_past) {
    if (!keeps_checkpoints() || pos <= 0 || pos > n_past) return;
    // The rings must still hold the window before pos (true for a position of
    // the forward pass that just ended: a ring has a batch more than its window).
    if (!rings_hold(pos, n_past)) return;
    std::vector<uint8_t>& c = ckpts_[static_cast<size_t>(seq) * static_cast<size_t>(index_.n_slots()) +
                                     static_cast<size_t>(index_.record(seq, pos))];
    if (c.empty()) {
        try {
            c.resize(ckpt_bytes_);
        } catch (const std::bad_alloc&) {
            index_.drop_after(seq, pos - 1);  // the record just made has no rows: forget it
            throw Error("out of memory allocating a sliding-window checkpoint (" + std::to_string(ckpt_bytes_ >> 20) + " MiB)",
                        ErrorKind::ResourceExhausted);
        }
    }
    save_rings(seq, pos, c.data());
}

int64_t KvCache::rollback(int seq, int64_t n_keep, int64_t n_past) {
    shortfall_ = Shortfall::None;
    if (n_keep >= n_past) return n_past;
    n_keep = std::max<int64_t>(0, n_keep);
    index_.drop_after(seq, n_keep);  // checkpoints of the future being dropped
    if (rings_hold(n_keep, n_past)) return n_keep;
    const int best = index_.find(seq, n_keep);
    const int64_t got = best < 0 ? 0 : index_.pos(seq, best);
    shortfall_ = index_.why(seq, n_keep, got);
    if (best >= 0)
        load_rings(seq, got, ckpts_[static_cast<size_t>(seq) * static_cast<size_t>(index_.n_slots()) + static_cast<size_t>(best)].data());
    return got;
}

int64_t KvCache::copy_prefix(int src, int dst, int64_t n, int64_t src_past) {
    n = std::min(n, src_past);
    if (src == dst) return rollback(src, n, src_past);
    shortfall_ = Shortfall::None;
    index_.clear(dst);  // dst's checkpoints are of the history it is leaving
    if (n <= 0) return 0;
    const uint8_t* ckpt = nullptr;  // the rings' rows come from a checkpoint of src
    if (!rings_hold(n, src_past)) {
        const int best = index_.find(src, n);
        const int64_t got = best < 0 ? 0 : index_.pos(src, best);
        shortfall_ = index_.why(src, n, got);
        if (best < 0) return 0;
        n = got;
        ckpt = ckpts_[static_cast<size_t>(src) * static_cast<size_t>(index_.n_slots()) + static_cast<size_t>(best)].data();
    }
    for (const Layer& l : layers_) {
        if (l.cells == 0 || (l.ring && ckpt)) continue;
        // Full layers: every position; sliding ones: those a query at n or later sees.
        if (l.shape.window == 0 || !l.ring) {  // positions [0, n) are cells [0, n): one block
            std::memcpy(k_cell(l, dst, 0), k_cell(l, src, 0), static_cast<uint64_t>(n) * l.k_row_bytes);
            std::memcpy(v_cell(l, dst, 0), v_cell(l, src, 0), static_cast<uint64_t>(n) * l.v_row_bytes);
            continue;
        }
        for (int64_t p = std::max<int64_t>(0, n - l.shape.window + 1); p < n; ++p) {
            std::memcpy(k_cell(l, dst, p), k_cell(l, src, p), l.k_row_bytes);
            std::memcpy(v_cell(l, dst, p), v_cell(l, src, p), l.v_row_bytes);
        }
    }
    if (ckpt) {
        load_rings(dst, n, ckpt);
        // dst keeps that checkpoint too: its next turn may diverge there again.
        std::vector<uint8_t>& c = ckpts_[static_cast<size_t>(dst) * static_cast<size_t>(index_.n_slots()) +
                                         static_cast<size_t>(index_.record(dst, n))];
        if (c.empty()) c.resize(ckpt_bytes_);
        std::memcpy(c.data(), ckpt, ckpt_bytes_);
    }
    return n;
}

uint64_t KvCache::bytes_per_position() const {
    uint64_t b = 0;
    for (const Layer& l : layers_) b += l.k_row_bytes + l.v_row_bytes;
    return b;
}

uint64_t KvCache::bytes_read(int64_t n_past) const {
    uint64_t b = 0;
    for (const Layer& l : layers_) {
        const int64_t seen = l.shape.window > 0 ? std::min<int64_t>(n_past + 1, l.shape.window) : n_past + 1;
        b += static_cast<uint64_t>(seen) * (l.k_row_bytes + l.v_row_bytes);
    }
    return b;
}

uint64_t KvCache::bytes() const {
    uint64_t b = 0;
    for (const Layer& l : layers_) b += static_cast<uint64_t>(n_seq_) * static_cast<uint64_t>(l.cells) * (l.k_row_bytes + l.v_row_bytes);
    for (const std::vector<uint8_t>& c : ckpts_) b += c.size();
    return b;
}

}  // namespace kiln
