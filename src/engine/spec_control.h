// Adaptive control of speculative decoding (kiln/engine.h, SpecOptions): how
// many drafted tokens a sequence's next step verifies, from the running
// acceptance rate and the measured cost of evaluating k + 1 rows against one.
//
// A step that verifies k drafted tokens emits 1 + (accepted tokens); with a
// per-token acceptance probability a it emits E(k) = 1 + a + ... + a^k tokens on
// average and costs c(k) = 1 + beta * k single-row steps (1 + (beta + gamma) * k
// with a draft model, gamma being one draft-model pass against a target pass). The controller drafts
// the k that maximizes E(k) / c(k), and not at all while that ratio stays under
// a margin above 1 (free text: the drafts are rarely right). While off it probes
// again after a number of steps that doubles with each failed probe, so a
// sequence that starts quoting its input gets drafting back.
#pragma once

#include <cstdint>

#include "kiln/engine.h"

namespace kiln {

// Where a sequence's drafts come from: prompt lookup (free), a draft model, or
// the model's own multi-token-prediction head (each of the last two at its
// measured cost per drafted token, gamma, relative to a target pass).
enum class DraftSource { Lookup, Model, Mtp };

// The measured cost of a verification pass, shared by the sequences of an
// Engine (the batched kernels read each weight once for all rows, so extra rows
// cost a fraction of a pass: beta, per row, relative to a one-row pass).
class SpecCost {
public:
    // A forward pass of `rows` rows of one generating sequence took `seconds`.
    void record(int rows, double seconds);
    // The draft model's (or MTP head's) `passes` passes for one sequence took `seconds`.
    void record_draft(int passes, double seconds, DraftSource source = DraftSource::Model);
    // gamma before it is measured: the drafter's weight bytes per token over the
    // target's (decode reads every weight once per pass).
    void set_draft_prior(double gamma, DraftSource source = DraftSource::Model) { gamma_[index(source)] = gamma; }
    double ratio(int k, DraftSource source) const { return 1.0 + (beta_ + gamma(source)) * k; }  // c(k)
    double ratio(int k, bool model_draft = false) const { return ratio(k, model_draft ? DraftSource::Model : DraftSource::Lookup); }
    double beta() const { return beta_; }
    double gamma(DraftSource source = DraftSource::Model) const {
        return source == DraftSource::Lookup ? 0.0 : gamma_[index(source)];
    }

private:
    double t1_ = 0;       // seconds of a one-row pass (running average)
    bool have_t1_ = false;
    // A one-row pass as the last multi-row passes imply it (t / c(k)): the
    // scale for the draft model's cost while no one-row pass was seen (a
    // sequence that always drafts has none).
    double t1_est_ = 0;
    double beta_ = 0.15;  // prior until measured
    static int index(DraftSource s) { return s == DraftSource::Mtp ? 1 : 0; }
    double gamma_[2] = {0.3, 0.3};  // the draft model's, the MTP head's: priors until measured (set_draft_prior)
};

class SpecControl {
public:
    SpecControl() = default;
    // model_draft: the drafts come from a draft model (their cost counts).
    explicit SpecControl(const SpecOptions& options, bool model_draft = false)
        : o_(options), source_(model_draft ? DraftSource::Model : DraftSource::Lookup) {}
    SpecControl(const SpecOptions& options, DraftSource source) : o_(options), source_(source) {}

    // How many tokens the next step may draft (0: none), given the room left
    // (context, max tokens, batch). Call once per step of the sequence.
    int plan(int room, const SpecCost& cost);
    // The step drafted `drafted` tokens (> 0) and `accepted` of them were kept.
    void result(int drafted, int accepted, const SpecCost& cost);

    double acceptance() const;  // the running estimate of a

private:
    double best_gain(int k_max, const SpecCost& cost, int* best_k) const;

    SpecOptions o_;
    DraftSource source_ = DraftSource::Lookup;
    // Decayed counts of accepted tokens and of rejections (a draft that ended
    // before its last token), with a prior of one each: a = A / (A + R).
    double accepted_ = 1.0, rejected_ = 1.0;
    int skip_ = 0;      // steps left before the next probe while off
    int backoff_ = 8;   // steps off after a failed probe (doubles, at most k_max_backoff)
    bool probe_next_ = false;  // the next step probes
    bool probing_ = false;     // the last plan was a probe
};

}  // namespace kiln
