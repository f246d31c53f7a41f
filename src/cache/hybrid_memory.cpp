#include "cache/hybrid_memory.h"

#include <algorithm>

#include "kiln/error.h"

namespace kiln {

HybridMemory::HybridMemory(std::unique_ptr<KvCache> kv, std::unique_ptr<RecurrentState> recurrent)
    : kv_(std::move(kv)), recurrent_(std::move(recurrent)) {
    if (!kv_ || !recurrent_ || kv_->n_seq() != recurrent_->n_seq())
        throw Error("hybrid memory: the KV cache and the recurrent state must hold the same sequences", ErrorKind::Internal);
}

int64_t HybridMemory::rollback(int seq, int64_t n_keep, int64_t n_past) {
    // The recurrent state decides how far back it can go; the KV cells follow it.
    const int64_t r = recurrent_->rollback(seq, n_keep, n_past);
    shortfall_ = recurrent_->last_shortfall();
    const int64_t k = kv_->rollback(seq, r, n_past);
    if (k < r) {
        shortfall_ = kv_->last_shortfall();
        recurrent_->clear(seq);
        kv_->clear(seq);
        return 0;
    }
    return r;
}

int64_t HybridMemory::copy_prefix(int src, int dst, int64_t n, int64_t src_past) {
    const int64_t r = recurrent_->copy_prefix(src, dst, n, src_past);
    shortfall_ = recurrent_->last_shortfall();
    if (r <= 0) return 0;
    const int64_t k = kv_->copy_prefix(src, dst, r, src_past);
    if (k < r) {
        shortfall_ = kv_->last_shortfall();
        recurrent_->clear(dst);
        kv_->clear(dst);
        return 0;
    }
    return r;
}

void HybridMemory::clear(int seq) {
    kv_->clear(seq);
    recurrent_->clear(seq);
}

}  // namespace kiln
