// A model's per-sequence memory: what the positions a sequence has evaluated
// leave behind for the positions after them. One interface over its kinds —
// KV cells (attention layers), a recurrent state (recurrent layers), or both for
// a hybrid model — sized and allocated once for a number of sequences.
//
// Sequences are numbered 0 .. n_seq() - 1. A sequence holds positions
// [0, n_past); who evaluates decides n_past (the engine's Context keeps each
// sequence's tokens), the memory only keeps what those positions produced.
#pragma once

#include <cstdint>

#include "cache/checkpoint_index.h"

namespace kiln {

class KvCache;
class RecurrentState;

class SequenceMemory {
public:
    virtual ~SequenceMemory() = default;

    virtual int n_seq() const = 0;
    // Positions one sequence may hold.
    virtual int64_t n_ctx() const = 0;

    // Rolls sequence `seq` back from n_past positions to n_keep. Returns the
    // number of positions it really holds afterwards (<= n_keep): an earlier
    // checkpoint of a recurrent state, or 0 when a sliding window has already
    // dropped what position n_keep needs. The caller re-evaluates the rest.
    virtual int64_t rollback(int seq, int64_t n_keep, int64_t n_past) = 0;

    // Makes `dst` hold the first n positions of `src` (which holds src_past).
    // Returns the positions dst holds (<= n, as rollback).
    virtual int64_t copy_prefix(int src, int dst, int64_t n, int64_t src_past) = 0;

    // Records the state of `seq` at n_past, for later rollbacks (recurrent
    // states, the rings of sliding-window layers; full-attention cells need none).
    virtual void checkpoint(int seq, int64_t n_past) { (void)seq, (void)n_past; }
    // The same at an earlier position `pos` of a sequence that holds n_past: a
    // ring still has the window before pos when pos lies in the forward pass that
    // just ended; a recurrent state has only its n_past (pos < n_past records nothing).
    virtual void checkpoint_at(int seq, int64_t pos, int64_t n_past) {
        if (pos == n_past) checkpoint(seq, n_past);
    }
    // Whether rollbacks can need checkpoints (else checkpoint is a no-op).
    virtual bool keeps_checkpoints() const { return false; }
    // Why the last rollback or copy_prefix kept fewer positions than asked.
    virtual Shortfall last_shortfall() const { return Shortfall::None; }

    virtual void clear(int seq) = 0;

    virtual uint64_t bytes() const = 0;                 // allocated
    virtual uint64_t bytes_per_position() const = 0;    // KV bytes one position adds (0: none)

    // The parts the forward pass reads and writes (null when the model has none).
    virtual KvCache* kv() { return nullptr; }
    virtual RecurrentState* recurrent() { return nullptr; }
};

}  // namespace kiln
