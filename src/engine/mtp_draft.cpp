#include "engine/mtp_draft.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "kiln/error.h"
#include "model/internals.h"

namespace kiln {

namespace {

using Clock = std::chrono::steady_clock;

size_t common_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    return n;
}

TokenId argmax(std::span<const float> logits) {
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best]) best = i;  // ties: the lowest id, as greedy sampling
    return static_cast<TokenId>(best);
}

uint64_t bytes(const Matrix& m) { return m.empty() ? 0 : m.row_bytes * static_cast<uint64_t>(m.n_out); }

// The weight bytes one row of the head reads: its block (n_used experts of an
// expert layer), eh_proj and its output head.
uint64_t head_decode_bytes(const NextnHead& h) {
    const LayerWeights& l = h.weights.layers.front();
    const ExpertWeights& x = l.moe;
    uint64_t n = bytes(h.weights.output) + bytes(h.weights.nextn_input->eh_proj);
    for (const Matrix* m : {&l.wq, &l.wk, &l.wv, &l.wqkv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down, &l.mla.wq_a, &l.mla.wq_b,
                            &l.mla.wkv_a, &x.router, &x.shexp_gate, &x.shexp_up, &x.shexp_down, &x.shexp_router})
        n += bytes(*m);
    for (const auto* v : {&l.mla.k_b, &l.mla.v_b})
        for (const Matrix& m : *v) n += bytes(m);
    for (const auto* v : {&x.gate, &x.up, &x.down})
        if (!v->empty()) n += bytes(v->front()) * static_cast<uint64_t>(h.spec.moe.n_expert_used);
    return n;
}

}  // namespace

MtpDrafter::MtpDrafter(std::shared_ptr<const Model> model, const Context& target_ctx, const ContextOptions& target_options)
    : model_(std::move(model)) {
    const NextnHead* head = ModelInternals::nextn(*model_);
    if (!head) throw Error("model '" + model_->path() + "' has no multi-token-prediction head", ErrorKind::Unsupported);
    ContextOptions o;
    o.n_ctx = target_ctx.n_ctx();
    o.n_seq_max = target_ctx.n_seq_max();
    o.n_batch = target_ctx.n_batch();
    o.kv_type = target_options.kv_type;
    o.flash_attn = target_options.flash_attn;
    o.n_threads = target_ctx.n_threads();
    o.executor = target_options.executor;
    o.hidden_states = true;  // the chained drafts' states
    o.nextn = true;
    ctx_ = std::make_unique<Context>(model_, o);
    n_embd_ = model_->n_embd();
    states_.resize(static_cast<size_t>(o.n_seq_max));
    valid_.assign(static_cast<size_t>(o.n_seq_max), 0);
    zeros_.assign(static_cast<size_t>(n_embd_), 0.0f);
    const auto eog = model_->tokenizer().end_of_generation_ids();
    end_ids_.assign(eog.begin(), eog.end());
    const uint64_t target_bytes = model_->footprint().decode_bytes;
    if (target_bytes > 0) cost_prior_ = static_cast<double>(head_decode_bytes(*head)) / static_cast<double>(target_bytes);
}

void MtpDrafter::record(const Batch& b, const Context& target) {
    const size_t e = static_cast<size_t>(n_embd_);
    for (int i = 0; i < b.size(); ++i) {
        std::vector<float>& st = states_[static_cast<size_t>(b.seqs()[static_cast<size_t>(i)])];
        const size_t pos = static_cast<size_t>(b.positions()[static_cast<size_t>(i)]);
        if (st.size() < (pos + 1) * e) st.resize((pos + 1) * e);
        const std::span<const float> h = target.row_state(i);
        std::memcpy(st.data() + pos * e, h.data(), e * sizeof(float));
    }
}

void MtpDrafter::copy_states(SeqId src, SeqId dst, int64_t n) {
    if (src == dst || n <= 0) return;
    const std::vector<float>& from = states_[static_cast<size_t>(src)];
    std::vector<float>& to = states_[static_cast<size_t>(dst)];
    const size_t count = std::min(from.size(), static_cast<size_t>(n) * static_cast<size_t>(n_embd_));
    if (to.size() < count) to.resize(count);
    std::copy(from.begin(), from.begin() + static_cast<std::ptrdiff_t>(count), to.begin());
}

const float* MtpDrafter::state(SeqId seq, int64_t pos) const {
    if (pos < 0) return zeros_.data();
    return states_[static_cast<size_t>(seq)].data() + static_cast<size_t>(pos) * static_cast<size_t>(n_embd_);
}

void MtpDrafter::clear(SeqId seq) {
    ctx_->seq_clear(seq);
    valid_[static_cast<size_t>(seq)] = 0;
}

uint64_t MtpDrafter::memory_bytes() const {
    uint64_t n = ctx_->memory_bytes();
    for (const auto& s : states_) n += s.capacity() * sizeof(float);
    return n;
}

DraftTiming MtpDrafter::draft(std::span<const DraftRequest> requests) {
    DraftTiming timing;
    if (requests.empty()) return timing;
    const size_t e = static_cast<size_t>(n_embd_);
    // The first pass: each sequence's rows its head cells lack (from the trunk's
    // states), up to the pending token's, which has the output.
    batch_.clear();
    std::vector<int> first_output(requests.size(), -1);
    int n_out = 0;
    for (size_t q = 0; q < requests.size(); ++q) {
        const DraftRequest& r = requests[q];
        if (r.tokens.empty() || r.k <= 0) throw Error("draft request without tokens", ErrorKind::Internal);
        r.out->clear();
        const int64_t last = static_cast<int64_t>(r.tokens.size()) - 1;  // the pending token's position
        // Every position before it must have the trunk's state (the target evaluated it).
        if (states_[static_cast<size_t>(r.seq)].size() < static_cast<size_t>(last) * e) continue;
        int64_t& valid = valid_[static_cast<size_t>(r.seq)];
        const int64_t own = std::min<int64_t>(valid, static_cast<int64_t>(common_prefix(ctx_->seq_tokens(r.seq), r.tokens)));
        const int64_t want = std::min(own, last);
        const int64_t held = want == ctx_->seq_length(r.seq) ? want : ctx_->seq_rollback(r.seq, want);
        for (int64_t p = held; p <= last; ++p)
            batch_.add_with_state(r.tokens[static_cast<size_t>(p)], std::span<const float>(state(r.seq, p - 1), e), p, r.seq,
                                  p == last);
        valid = last + 1;
        first_output[q] = n_out++;
    }
    if (batch_.empty()) return timing;
    const bool small = batch_.size() <= 2 * static_cast<int>(requests.size());
    Clock::time_point t0 = Clock::now();
    ctx_->decode(batch_);
    if (small) {
        timing.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
        ++timing.passes;
    }
    chain_.resize(requests.size());
    auto ended = [&](const DraftRequest& r) {
        return r.out->empty() || static_cast<int>(r.out->size()) >= r.k ||
               std::binary_search(end_ids_.begin(), end_ids_.end(), r.out->back());
    };
    for (size_t q = 0; q < requests.size(); ++q) {
        if (first_output[q] < 0) continue;
        requests[q].out->push_back(argmax(ctx_->logits(first_output[q])));
        const std::span<const float> h = ctx_->hidden(first_output[q]);
        chain_[q].assign(h.begin(), h.end());
    }
    // Then one row per sequence still drafting for each further token: the
    // token just drafted with the head's own state of the row before.
    std::vector<size_t> going;
    for (;;) {
        going.clear();
        batch_.clear();
        for (size_t q = 0; q < requests.size(); ++q) {
            const DraftRequest& r = requests[q];
            if (first_output[q] < 0 || ended(r)) continue;
            going.push_back(q);
            batch_.add_with_state(r.out->back(), chain_[q], ctx_->seq_length(r.seq), r.seq, true);
        }
        if (going.empty()) break;
        t0 = Clock::now();
        ctx_->decode(batch_);
        timing.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
        ++timing.passes;
        for (size_t j = 0; j < going.size(); ++j) {
            requests[going[j]].out->push_back(argmax(ctx_->logits(static_cast<int>(j))));
            const std::span<const float> h = ctx_->hidden(static_cast<int>(j));
            chain_[going[j]].assign(h.begin(), h.end());
        }
    }
    return timing;
}

}  // namespace kiln
