// Which checkpoints each sequence holds, for the stores that keep copies of a
// sequence's memory at chosen positions: a recurrent state (its whole state) and
// the rings of sliding-window layers (the window before the position). One
// policy for both: a sequence has a fixed number of slots (its byte budget over
// one checkpoint's bytes); a new checkpoint takes its own position's slot, a
// free one, else the least recently used one (recorded or restored). Evicted
// positions are remembered so that a restore that falls short can say why.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace kiln {

// Why a rollback or copy kept fewer positions than asked.
enum class Shortfall {
    None,
    NoCheckpoint,        // no checkpoint at or before the position (and none was evicted there)
    CheckpointTooEarly,  // the nearest checkpoint lies before the position
    Evicted,             // a nearer checkpoint existed but was evicted for a newer one
};
std::string_view shortfall_name(Shortfall s);  // "", "no checkpoint", "checkpoint too early", "evicted"

class CheckpointIndex {
public:
    CheckpointIndex(int n_seq, int n_slots);

    int n_slots() const { return n_slots_; }
    // The slot that takes seq's checkpoint at pos (the caller copies into it).
    int record(int seq, int64_t pos);
    // The slot of seq's latest checkpoint at a position in [1, at_most] (-1:
    // none); it counts as used.
    int find(int seq, int64_t at_most);
    int64_t pos(int seq, int slot) const { return entry(seq, slot).pos; }
    // Forgets seq's checkpoints after pos: they describe a future being dropped.
    void drop_after(int seq, int64_t pos);
    void clear(int seq);
    // Why a restore of seq to `wanted` positions got only `got`.
    Shortfall why(int seq, int64_t wanted, int64_t got) const;
    // Positions of seq's checkpoints, least recently used first.
    std::vector<int64_t> positions(int seq) const;

private:
    struct Entry {
        int64_t pos = -1;    // -1: empty
        uint64_t stamp = 0;  // last recorded or restored
    };
    Entry& entry(int seq, int slot) { return entries_[static_cast<size_t>(seq) * static_cast<size_t>(n_slots_) + static_cast<size_t>(slot)]; }
    const Entry& entry(int seq, int slot) const {
        return entries_[static_cast<size_t>(seq) * static_cast<size_t>(n_slots_) + static_cast<size_t>(slot)];
    }

    int n_slots_;
    uint64_t stamp_ = 0;
    std::vector<Entry> entries_;                 // [n_seq * n_slots]
    std::vector<std::vector<int64_t>> evicted_;  // per sequence: positions whose checkpoint was evicted
};

}  // namespace kiln
