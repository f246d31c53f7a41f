// The KV cache: per layer, one row of K and one row of V per position, stored as
// f16 (default), f32 or q8_0. Full-attention layers keep every position up to
// the context size; sliding-window layers keep a ring of window + batch - 1
// positions (enough for every query of a chunk to see its whole window).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compute/huge_pages.h"
#include "kiln/gguf/ggml_type.h"
#include "model/spec.h"

namespace kiln {

enum class KvType { F32, F16, Q8_0 };
std::string_view kv_type_name(KvType t);
KvType parse_kv_type(std::string_view name);  // "f32" | "f16" | "q8_0"; throws otherwise
GgmlType kv_ggml_type(KvType t);

struct KvLayer {
    uint8_t* k = nullptr;        // capacity rows of k_row_bytes, in the cache's buffer
    uint8_t* v = nullptr;
    int64_t capacity = 0;        // positions held (ring size for sliding layers)
    uint64_t k_row_bytes = 0;
    uint64_t v_row_bytes = 0;
    int window = 0;              // 0: full attention
};

class KvCache {
public:
    KvCache(const ModelSpec& spec, int n_ctx, int n_batch_max, KvType type);

    int n_ctx() const { return n_ctx_; }
    KvType type() const { return type_; }
    GgmlType ggml_type() const { return kv_ggml_type(type_); }
    int n_layer() const { return static_cast<int>(layers_.size()); }
    const KvLayer& layer(int il) const { return layers_[static_cast<size_t>(il)]; }

    // Stores the K and V rows of position pos (converted from f32).
    void store(int il, int64_t pos, const float* k, const float* v);
    const uint8_t* k_row(int il, int64_t pos) const;
    const uint8_t* v_row(int il, int64_t pos) const;

    // Positions [0, n_past) are in the cache. Keeping only [0, n_keep) is possible
    // when every layer still holds what positions >= n_keep will attend to.
    bool can_keep_prefix(int64_t n_keep, int64_t n_past) const;

    uint64_t bytes_per_position() const;  // as if every layer were full attention
    uint64_t allocated_bytes() const;

private:
    int n_ctx_;
    KvType type_;
    std::vector<KvLayer> layers_;
    HugeBytes buffer_;  // every layer's rows, on huge pages
};

}  // namespace kiln
