// A hybrid model's memory: KV cells for its attention layers and a recurrent
// state for its recurrent layers, rolled back and copied together (the position
// both can return to is the smaller of the two).
#pragma once

#include <memory>

#include "cache/kv_cache.h"
#include "cache/recurrent_state.h"

namespace kiln {

class HybridMemory : public SequenceMemory {
public:
    HybridMemory(std::unique_ptr<KvCache> kv, std::unique_ptr<RecurrentState> recurrent);

    int n_seq() const override { return kv_->n_seq(); }
    int64_t n_ctx() const override { return kv_->n_ctx(); }
    int64_t rollback(int seq, int64_t n_keep, int64_t n_past) override;
    int64_t copy_prefix(int src, int dst, int64_t n, int64_t src_past) override;
    void checkpoint(int seq, int64_t n_past) override {
        recurrent_->checkpoint(seq, n_past);
        kv_->checkpoint(seq, n_past);
    }
    // Both parts at the same positions: only where the recurrent state is (pos == n_past).
    void checkpoint_at(int seq, int64_t pos, int64_t n_past) override {
        if (pos == n_past) checkpoint(seq, n_past);
    }
    bool keeps_checkpoints() const override { return recurrent_->keeps_checkpoints() || kv_->keeps_checkpoints(); }
    Shortfall last_shortfall() const override { return shortfall_; }
    void clear(int seq) override;
    uint64_t bytes() const override { return kv_->bytes() + recurrent_->bytes(); }
    uint64_t bytes_per_position() const override { return kv_->bytes_per_position(); }
    KvCache* kv() override { return kv_.get(); }
    RecurrentState* recurrent() override { return recurrent_.get(); }

private:
    std::unique_ptr<KvCache> kv_;
    std::unique_ptr<RecurrentState> recurrent_;
    Shortfall shortfall_ = Shortfall::None;
};

}  // namespace kiln
