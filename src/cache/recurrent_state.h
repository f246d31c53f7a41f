// The recurrent-state store: for every recurrent layer, a fixed-size state per
// sequence (a convolution's last inputs, an SSM or delta-rule state), which a
// recurrent mixer reads and overwrites at every position. Unlike KV cells, a
// state cannot be cut back to an earlier position, so the store keeps
// checkpoints: copies of a sequence's states at given positions, a few per
// sequence (the least recently used is replaced: CheckpointIndex, the policy the
// sliding-window rings share). Rolling back restores the latest checkpoint at or
// before the wanted position; the caller re-evaluates from there.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "cache/memory.h"
#include "compute/huge_pages.h"

namespace kiln {

struct RecurrentStateOptions {
    int n_seq = 1;
    int64_t n_ctx = 0;        // positions per sequence (the recurrence has no limit of its own)
    int n_checkpoints = 4;    // kept per sequence
};

class RecurrentState : public SequenceMemory {
public:
    // state_bytes: per layer, the bytes of one sequence's state (0: the layer has none).
    RecurrentState(std::span<const uint64_t> state_bytes, const RecurrentStateOptions& options);

    static uint64_t bytes_needed(std::span<const uint64_t> state_bytes, const RecurrentStateOptions& options);

    int n_seq() const override { return n_seq_; }
    int64_t n_ctx() const override { return n_ctx_; }
    int64_t rollback(int seq, int64_t n_keep, int64_t n_past) override;
    int64_t copy_prefix(int src, int dst, int64_t n, int64_t src_past) override;
    void checkpoint(int seq, int64_t n_past) override;
    bool keeps_checkpoints() const override { return n_checkpoints_ > 0; }
    Shortfall last_shortfall() const override { return shortfall_; }
    void clear(int seq) override;
    uint64_t bytes() const override { return total_bytes_; }
    uint64_t bytes_per_position() const override { return 0; }
    RecurrentState* recurrent() override { return this; }

    // The live state of `seq` in layer il (zeroed for a new sequence).
    uint8_t* state(int il, int seq);
    // Every layer's live state of `seq`, as one block (a replay log saves and restores it).
    std::span<uint8_t> live(int seq) { return {slot(seq, 0), static_cast<size_t>(seq_bytes_)}; }
    uint64_t state_bytes(int il) const { return layer_bytes_[static_cast<size_t>(il)]; }
    // Positions of the checkpoints `seq` holds, least recently used first.
    std::vector<int64_t> checkpoints(int seq) const;

    // A second block of `seq`'s states (allocated on first use, outside bytes():
    // kiln plan counts it in the replay log): a pass may write the sequence's next
    // state there while the live one stays as it was, and swap_spare makes it the
    // live one (the delta net's verification whose every row is kept) — a swap of
    // pointers where a copy back would read and write the whole state again.
    uint8_t* spare(int il, int seq);
    void swap_spare(int seq);
    uint64_t spare_bytes() const;

private:
    // Slot 0 of a sequence is its live state, slots 1..n_checkpoints its checkpoints;
    // the live state is in the spare block instead where swap_spare put it there.
    uint8_t* slot(int seq, int s) {
        if (s == 0 && !in_spare_.empty() && in_spare_[static_cast<size_t>(seq)]) return spares_[static_cast<size_t>(seq)].get();
        return buffer_.get() + (static_cast<uint64_t>(seq) * (n_checkpoints_ + 1) + s) * seq_bytes_;
    }
    void copy_slot(int from_seq, int from_slot, int to_seq, int to_slot);

    int n_seq_;
    int64_t n_ctx_;
    int n_checkpoints_;
    std::vector<uint64_t> layer_bytes_, layer_offset_;  // within a slot
    uint64_t seq_bytes_ = 0;                            // one slot: every layer's state
    uint64_t total_bytes_ = 0;
    CheckpointIndex index_;  // which slot holds which position
    Shortfall shortfall_ = Shortfall::None;
    HugeBytes buffer_;
    std::vector<HugeBytes> spares_;  // per sequence, allocated on first use
    std::vector<uint8_t> in_spare_;  // per sequence: its live state is its spare block
};

}  // namespace kiln
