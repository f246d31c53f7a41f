#include "cache/recurrent_state.h"

#include <algorithm>
#include <cstring>
#include <new>

#include "kiln/error.h"

namespace kiln {

namespace {

uint64_t slot_bytes(std::span<const uint64_t> state_bytes) {
    uint64_t b = 0;
    for (uint64_t s : state_bytes) b += (s + 63) / 64 * 64;
    return b;
}

}  // namespace

uint64_t RecurrentState::bytes_needed(std::span<const uint64_t> state_bytes, const RecurrentStateOptions& o) {
    return slot_bytes(state_bytes) * static_cast<uint64_t>(o.n_seq) * static_cast<uint64_t>(o.n_checkpoints + 1);
}

RecurrentState::RecurrentState(std::span<const uint64_t> state_bytes, const RecurrentStateOptions& o)
    : n_seq_(o.n_seq), n_ctx_(o.n_ctx), n_checkpoints_(o.n_checkpoints), index_(std::max(o.n_seq, 1), o.n_checkpoints) {
    if (o.n_seq < 1 || o.n_ctx < 1 || o.n_checkpoints < 0)
        throw Error("recurrent state: " + std::to_string(o.n_seq) + " sequences of " + std::to_string(o.n_ctx) +
                    " positions with " + std::to_string(o.n_checkpoints) + " checkpoints each");
    for (uint64_t s : state_bytes) {
        layer_offset_.push_back(seq_bytes_);
        layer_bytes_.push_back(s);
        seq_bytes_ += (s + 63) / 64 * 64;
    }
    total_bytes_ = bytes_needed(state_bytes, o);
    try {
        buffer_.reset(static_cast<uint8_t*>(allocate_huge(std::max<uint64_t>(total_bytes_, 64))));
    } catch (const std::bad_alloc&) {
        throw Error("out of memory allocating the recurrent state (" + std::to_string(total_bytes_ >> 20) + " MiB)",
                    ErrorKind::ResourceExhausted);
    }
    std::memset(buffer_.get(), 0, total_bytes_);
}

uint8_t* RecurrentState::state(int il, int seq) { return slot(seq, 0) + layer_offset_[static_cast<size_t>(il)]; }

void RecurrentState::copy_slot(int from_seq, int from_slot, int to_seq, int to_slot) {
    std::memcpy(slot(to_seq, to_slot), slot(from_seq, from_slot), seq_bytes_);
}

void RecurrentState::checkpoint(int seq, int64_t n_past) {
    if (n_checkpoints_ == 0) return;
    copy_slot(seq, 0, seq, 1 + index_.record(seq, n_past));
}

int64_t RecurrentState::rollback(int seq, int64_t n_keep, int64_t n_past) {
    shortfall_ = Shortfall::None;
    if (n_keep >= n_past) return n_past;
    const int best = index_.find(seq, n_keep);
    // Checkpoints after the kept position describe a future that is being dropped.
    index_.drop_after(seq, n_keep);
    const int64_t got = best < 0 ? 0 : index_.pos(seq, best);
    shortfall_ = index_.why(seq, n_keep, got);
    if (best < 0) {
        std::memset(slot(seq, 0), 0, seq_bytes_);
        return 0;
    }
    copy_slot(seq, 1 + best, seq, 0);
    return got;
}

int64_t RecurrentState::copy_prefix(int src, int dst, int64_t n, int64_t src_past) {
    n = std::min(n, src_past);
    if (src == dst) return rollback(src, n, src_past);
    clear(dst);
    shortfall_ = Shortfall::None;
    if (n <= 0) return 0;
    if (n == src_past) {
        copy_slot(src, 0, dst, 0);
        return n;
    }
    const int best = index_.find(src, n);
    const int64_t got = best < 0 ? 0 : index_.pos(src, best);
    shortfall_ = index_.why(src, n, got);
    if (best < 0) return 0;
    copy_slot(src, 1 + best, dst, 0);
    checkpoint(dst, got);
    return got;
}

void RecurrentState::clear(int seq) {
    std::memset(slot(seq, 0), 0, seq_bytes_);
    index_.clear(seq);
}

uint8_t* RecurrentState::spare(int il, int seq) {
    const size_t s = static_cast<size_t>(seq);
    if (spares_.empty()) {
        spares_.resize(static_cast<size_t>(n_seq_));
        in_spare_.assign(static_cast<size_t>(n_seq_), 0);
    }
    if (!spares_[s]) {
        try {
            spares_[s].reset(static_cast<uint8_t*>(allocate_huge(std::max<uint64_t>(seq_bytes_, 64))));
        } catch (const std::bad_alloc&) {
            throw Error("out of memory allocating a second recurrent state (" + std::to_string(seq_bytes_ >> 20) + " MiB)",
                        ErrorKind::ResourceExhausted);
        }
        std::memset(spares_[s].get(), 0, seq_bytes_);
    }
    uint8_t* other = in_spare_[s] ? buffer_.get() + static_cast<uint64_t>(seq) * (n_checkpoints_ + 1) * seq_bytes_ : spares_[s].get();
    return other + layer_offset_[static_cast<size_t>(il)];
}

void RecurrentState::swap_spare(int seq) {
    const size_t s = static_cast<size_t>(seq);
    if (s < spares_.size() && spares_[s]) in_spare_[s] ^= 1;
}

uint64_t RecurrentState::spare_bytes() const {
    uint64_t n = 0;
    for (const HugeBytes& b : spares_) n += b ? seq_bytes_ : 0;
    return n;
}

std::vector<int64_t> RecurrentState::checkpoints(int seq) const { return index_.positions(seq); }

}  // namespace kiln
