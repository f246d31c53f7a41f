// The KV cache: for every attention layer, one row of K and one row of V per
// position of each sequence, stored as f16 (default), f32 or q8_0.
//
// Each sequence owns a region of cells. A full-attention layer's region holds
// n_ctx positions (position p at cell p); a sliding-window layer's region is a
// ring of window + n_batch - 1 cells (position p at cell p % ring), enough for
// every query of a batch to see its whole window. A region is contiguous, so
// attention reads a sequence's rows in place (KvRows).
//
// A ring forgets: once a sequence has moved a batch past a position, it can no
// longer return there by itself. Checkpoints let it: a copy, at a position p, of
// every ring's rows of the window before p (window - 1 rows a layer; the
// full-attention layers keep positions < p anyway). Rolling back to n restores
// the latest checkpoint at or before n (CheckpointIndex: a number of slots per
// sequence, least recently used replaced, as for recurrent states). Checkpoint
// memory is allocated on first use (up to 256 MiB a sequence, see Context), not
// planned with the cells: a sequence that never diverges past its window needs none.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cache/memory.h"
#include "compute/attention.h"
#include "compute/huge_pages.h"
#include "kiln/gguf/ggml_type.h"

namespace kiln {

enum class KvType { F32, F16, Q8_0 };
std::string_view kv_type_name(KvType t);
KvType parse_kv_type(std::string_view name);  // "f32" | "f16" | "q8_0"; throws otherwise
GgmlType kv_ggml_type(KvType t);

// What one attention layer stores per position.
struct KvLayerShape {
    int n_head_kv = 0;
    int head_dim_k = 0;
    int head_dim_v = 0;
    int window = 0;  // sliding-window size (0: full attention)
};

struct KvCacheOptions {
    KvType type = KvType::F16;
    int n_seq = 1;        // sequences
    int64_t n_ctx = 0;    // positions per sequence
    int n_batch_max = 1;  // most positions of one sequence evaluated together
    int n_checkpoints = 0;  // per sequence, of the sliding layers' rings (none: a rollback past the ring re-evaluates)
};

class KvCache : public SequenceMemory {
public:
    // layers: one entry per model layer; entries with n_head_kv == 0 store nothing
    // (layers without attention).
    KvCache(std::span<const KvLayerShape> layers, const KvCacheOptions& options);

    // The bytes a cache of these shapes and options allocates up front (its cells).
    static uint64_t bytes_needed(std::span<const KvLayerShape> layers, const KvCacheOptions& options);
    // The bytes of one checkpoint of these rings (0: no layer forgets; every
    // rollback is exact without checkpoints).
    static uint64_t checkpoint_bytes(std::span<const KvLayerShape> layers, const KvCacheOptions& options);

    int n_seq() const override { return n_seq_; }
    int64_t n_ctx() const override { return n_ctx_; }
    int64_t rollback(int seq, int64_t n_keep, int64_t n_past) override;
    int64_t copy_prefix(int src, int dst, int64_t n, int64_t src_past) override;
    void checkpoint(int seq, int64_t n_past) override { checkpoint_at(seq, n_past, n_past); }
    void checkpoint_at(int seq, int64_t pos, int64_t n_past) override;
    bool keeps_checkpoints() const override { return ckpt_bytes_ > 0 && index_.n_slots() > 0; }
    Shortfall last_shortfall() const override { return shortfall_; }
    // Cells are overwritten before they are read again; only the checkpoints go.
    void clear(int seq) override { index_.clear(seq); }
    // Cells and the checkpoints allocated so far.
    uint64_t bytes() const override;
    uint64_t bytes_per_position() const override;
    // The cached bytes one query at position n_past reads: every layer's rows of
    // the positions it sees (a sliding layer's window, the others' n_past + 1).
    uint64_t bytes_read(int64_t n_past) const;
    KvCache* kv() override { return this; }

    KvType type() const { return type_; }
    GgmlType ggml_type() const { return kv_ggml_type(type_); }
    int window(int il) const { return layers_[static_cast<size_t>(il)].shape.window; }
    // Positions of the ring checkpoints `seq` holds, least recently used first.
    std::vector<int64_t> checkpoints(int seq) const { return index_.positions(seq); }

    // Stores the K and V rows (f32, converted to the cache type) of `seq` at `pos`.
    void store(int il, int seq, int64_t pos, const float* k, const float* v);
    const uint8_t* k_row(int il, int seq, int64_t pos) const;
    const uint8_t* v_row(int il, int seq, int64_t pos) const;
    // Where attention reads the rows of `seq` in layer il (f16 / f32 caches).
    KvRows rows(int il, int seq) const;

private:
    struct Layer {
        KvLayerShape shape;
        uint8_t* k = nullptr;  // n_seq regions of `cells` rows of k_row_bytes
        uint8_t* v = nullptr;
        int64_t cells = 0;     // per sequence: n_ctx, or the ring of a sliding layer
        uint64_t k_row_bytes = 0, v_row_bytes = 0;
        bool ring = false;         // a sliding layer's ring shorter than the context: it forgets
        uint64_t ckpt_offset = 0;  // of its rows in a checkpoint (rings only)
    };
    static std::vector<Layer> plan(std::span<const KvLayerShape> shapes, const KvCacheOptions& o, uint64_t& bytes);
    uint8_t* k_cell(const Layer& l, int seq, int64_t pos) const;
    uint8_t* v_cell(const Layer& l, int seq, int64_t pos) const;
    bool rings_hold(int64_t n_keep, int64_t n_past) const;
    // Copies the ring rows of the window before `pos` between seq's cells and a checkpoint.
    void save_rings(int seq, int64_t pos, uint8_t* ckpt) const;
    void load_rings(int seq, int64_t pos, const uint8_t* ckpt);

    int n_seq_;
    int64_t n_ctx_;
    KvType type_;
    std::vector<Layer> layers_;
    HugeBytes buffer_;  // every layer's rows, on huge pages
    uint64_t ckpt_bytes_ = 0;                  // one checkpoint: every ring's window rows
    CheckpointIndex index_;
    std::vector<std::vector<uint8_t>> ckpts_;  // [n_seq * n_checkpoints], allocated on first use
    Shortfall shortfall_ = Shortfall::None;
};

}  // namespace kiln
