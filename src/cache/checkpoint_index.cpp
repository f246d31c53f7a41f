#include "cache/checkpoint_index.h"

#include <algorithm>

namespace kiln {

std::string_view shortfall_name(Shortfall s) {
    switch (s) {
        case Shortfall::None: return "";
        case Shortfall::NoCheckpoint: return "no checkpoint";
        case Shortfall::CheckpointTooEarly: return "checkpoint too early";
        case Shortfall::Evicted: return "evicted";
    }
    return "";
}

CheckpointIndex::CheckpointIndex(int n_seq, int n_slots)
    : n_slots_(std::max(n_slots, 0)),
      entries_(static_cast<size_t>(n_seq) * static_cast<size_t>(std::max(n_slots, 0))),
      evicted_(static_cast<size_t>(n_seq)) {}

int CheckpointIndex::record(int seq, int64_t pos) {
    int target = -1;
    for (int i = 0; i < n_slots_ && target < 0; ++i)
        if (entry(seq, i).pos == pos) target = i;
    for (int i = 0; i < n_slots_ && target < 0; ++i)
        if (entry(seq, i).pos < 0) target = i;
    std::vector<int64_t>& ev = evicted_[static_cast<size_t>(seq)];
    if (target < 0) {
        target = 0;
        for (int i = 1; i < n_slots_; ++i)
            if (entry(seq, i).stamp < entry(seq, target).stamp) target = i;
        ev.push_back(entry(seq, target).pos);
    }
    ev.erase(std::remove(ev.begin(), ev.end(), pos), ev.end());
    entry(seq, target) = {pos, ++stamp_};
    return target;
}

int CheckpointIndex::find(int seq, int64_t at_most) {
    int best = -1;
    for (int i = 0; i < n_slots_; ++i) {
        const int64_t p = entry(seq, i).pos;
        if (p > 0 && p <= at_most && (best < 0 || p > entry(seq, best).pos)) best = i;
    }
    if (best >= 0) entry(seq, best).stamp = ++stamp_;
    return best;
}

void CheckpointIndex::drop_after(int seq, int64_t pos) {
    for (int i = 0; i < n_slots_; ++i)
        if (entry(seq, i).pos > pos) entry(seq, i) = {};
    std::vector<int64_t>& ev = evicted_[static_cast<size_t>(seq)];
    ev.erase(std::remove_if(ev.begin(), ev.end(), [pos](int64_t p) { return p > pos; }), ev.end());
}

void CheckpointIndex::clear(int seq) {
    for (int i = 0; i < n_slots_; ++i) entry(seq, i) = {};
    evicted_[static_cast<size_t>(seq)].clear();
}

Shortfall CheckpointIndex::why(int seq, int64_t wanted, int64_t got) const {
    if (got >= wanted) return Shortfall::None;
    for (int64_t p : evicted_[static_cast<size_t>(seq)])
        if (p > got && p <= wanted) return Shortfall::Evicted;
    return got > 0 ? Shortfall::CheckpointTooEarly : Shortfall::NoCheckpoint;
}

std::vector<int64_t> CheckpointIndex::positions(int seq) const {
    std::vector<std::pair<uint64_t, int64_t>> v;
    for (int i = 0; i < n_slots_; ++i)
        if (entry(seq, i).pos >= 0) v.push_back({entry(seq, i).stamp, entry(seq, i).pos});
    std::sort(v.begin(), v.end());
    std::vector<int64_t> out;
    for (const auto& [stamp, pos] : v) out.push_back(pos);
    return out;
}

}  // namespace kiln
