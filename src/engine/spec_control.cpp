#include "engine/spec_control.h"

#include <algorithm>

namespace kiln {

namespace {

constexpr double k_margin = 1.05;    // expected speed-up below which auto does not draft
constexpr double k_decay = 0.8;      // weight of the history in the acceptance counts
constexpr int k_min_backoff = 8;
constexpr int k_max_backoff = 256;

}  // namespace

void SpecCost::record(int rows, double seconds) {
    if (rows <= 0 || seconds <= 0) return;
    if (rows == 1) {
        t1_ = have_t1_ ? 0.9 * t1_ + 0.1 * seconds : seconds;
        have_t1_ = true;
        t1_est_ = t1_;
        return;
    }
    const double implied = seconds / ratio(rows - 1);
    t1_est_ = t1_est_ > 0 ? 0.9 * t1_est_ + 0.1 * implied : implied;
    if (!have_t1_) return;
    // Noise on a shared machine can make a pass look cheaper than one row or
    // absurdly dear: clamp one sample before averaging it in.
    const double b = std::clamp((seconds / t1_ - 1.0) / (rows - 1), 0.0, 2.0);
    beta_ = 0.8 * beta_ + 0.2 * b;
}

void SpecCost::record_draft(int passes, double seconds, DraftSource source) {
    const double t1 = have_t1_ ? t1_ : t1_est_;
    if (passes <= 0 || seconds <= 0 || t1 <= 0 || source == DraftSource::Lookup) return;
    const double g = std::clamp(seconds / passes / t1, 0.0, 4.0);
    double& gamma = gamma_[index(source)];
    gamma = 0.8 * gamma + 0.2 * g;
}

double SpecControl::acceptance() const { return accepted_ / (accepted_ + rejected_); }

double SpecControl::best_gain(int k_max, const SpecCost& cost, int* best_k) const {
    const double a = acceptance();
    double expected = 1.0, term = 1.0, best = 0.0;
    *best_k = 0;
    for (int k = 1; k <= k_max; ++k) {
        term *= a;
        expected += term;
        const double gain = expected / cost.ratio(k, source_);
        if (k >= o_.draft_min && gain > best) {
            best = gain;
            *best_k = k;
        }
    }
    return best;
}

int SpecControl::plan(int room, const SpecCost& cost) {
    probing_ = false;
    if (o_.mode == SpecMode::Off) return 0;
    const int k_max = std::min(o_.draft_max, room);
    if (k_max < std::max(o_.draft_min, 1)) return 0;
    if (o_.mode == SpecMode::Ngram) return k_max;
    if (o_.mode == SpecMode::Draft || o_.mode == SpecMode::Mtp) {  // always drafts; the length that pays best, at least draft_min
        int k = 0;
        best_gain(k_max, cost, &k);
        return std::max(k, std::max(o_.draft_min, 1));
    }
    if (skip_ > 0) {
        if (--skip_ == 0) probe_next_ = true;
        return 0;
    }
    if (probe_next_) {  // the wait is over: one short draft to measure again
        probe_next_ = false;
        probing_ = true;
        return std::max(o_.draft_min, 1);
    }
    int k = 0;
    if (best_gain(k_max, cost, &k) < k_margin) {
        skip_ = backoff_ - 1;  // this step is the first of backoff_ steps off
        if (skip_ == 0) probe_next_ = true;
        return 0;
    }
    return k;
}

void SpecControl::result(int drafted, int accepted, const SpecCost& cost) {
    if (drafted <= 0) return;
    accepted_ = k_decay * accepted_ + accepted;
    rejected_ = k_decay * rejected_ + (accepted < drafted ? 1.0 : 0.0);
    if (!probing_) return;
    probing_ = false;
    int k = 0;
    if (best_gain(o_.draft_max, cost, &k) >= k_margin) {
        backoff_ = k_min_backoff;
    } else {
        backoff_ = std::min(backoff_ * 2, k_max_backoff);
        skip_ = backoff_;
    }
}

}  // namespace kiln
