#include "engine/assistant_draft.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "engine/context_internals.h"
#include "kiln/error.h"
#include "model/internals.h"

namespace kiln {

namespace {

using Clock = std::chrono::steady_clock;

TokenId argmax(std::span<const float> logits) {
    size_t best = 0;
    for (size_t i = 1; i < logits.size(); ++i)
        if (logits[i] > logits[best]) best = i;  // ties: the lowest id, as greedy sampling
    return static_cast<TokenId>(best);
}

std::string kind_name(bool sliding) { return sliding ? "sliding" : "full"; }

}  // namespace

ModelSpec assistant_spec_for(const Model& assistant, const Model& target) {
    const ModelSpec& as = ModelInternals::spec(assistant);
    const ModelSpec& ts = ModelInternals::spec(target);
    const ModelWeights& tw = ModelInternals::weights(target);
    const std::string what = "draft model '" + assistant.path() + "' (" + assistant.architecture() + ") cannot draft for '" +
                             target.path() + "': ";
    if (as.n_embd_target <= 0) throw Error(what + "it does not read a target's cache", ErrorKind::Internal);
    if (target.architecture() != as.target_arch)
        throw Error(what + "it reads the cache of a " + as.target_arch + " model, the target is " + target.architecture());
    if (ts.n_embd != as.n_embd_target)
        throw Error(what + "its embedding_length_out is " + std::to_string(as.n_embd_target) + ", the target's width " +
                    std::to_string(ts.n_embd));
    check_draft_vocabulary(target, assistant);
    if (tw.tok_embd.n_in != as.n_embd_target || tw.tok_embd.n_out != as.n_vocab)
        throw Error(what + "the target's token_embd.weight is not [" + std::to_string(as.n_embd_target) + ", " +
                    std::to_string(as.n_vocab) + "]");
    if (ts.n_layer < 2) throw Error(what + "the target has fewer than 2 layers");
    if (as.sliding_window != ts.sliding_window)
        throw Error(what + "its sliding window is " + std::to_string(as.sliding_window) + ", the target's " +
                    std::to_string(ts.sliding_window));
    // Each layer reads the cache of the target's last layer of its kind (llama.cpp:
    // n_layer - 2 for sliding, n_layer - 1 for full), where that layer's own
    // cache is (a shared-KV layer's source).
    ModelSpec spec = as;
    for (int il = 0; il < spec.n_layer; ++il) {
        LayerSpec& l = spec.layers[static_cast<size_t>(il)];
        const int src = ts.n_layer - (l.sliding ? 2 : 1);
        const LayerSpec& tl = ts.layers[static_cast<size_t>(src)];
        const std::string layer = "its layer " + std::to_string(il) + " (" + kind_name(l.sliding) + ") reads the target's layer " +
                                  std::to_string(src);
        if (tl.mixer != MixerKind::Attention || ts.mla.kv_lora_rank > 0)
            throw Error(what + layer + ", which has no plain attention cache");
        if (tl.sliding != l.sliding) throw Error(what + layer + ", which is a " + kind_name(tl.sliding) + " layer");
        if (tl.head_dim_k != l.head_dim_k || tl.head_dim_v != l.head_dim_v)
            throw Error(what + layer + ", whose head size is " + std::to_string(tl.head_dim_k) + " / " + std::to_string(tl.head_dim_v) +
                        " (K / V), its own " + std::to_string(l.head_dim_k) + " / " + std::to_string(l.head_dim_v));
        if (tl.n_head_kv != l.n_head_kv)
            throw Error(what + layer + ", which has " + std::to_string(tl.n_head_kv) + " KV heads, it " +
                        std::to_string(l.n_head_kv));
        if (l.n_head % l.n_head_kv != 0)
            throw Error(what + "its layer " + std::to_string(il) + " has " + std::to_string(l.n_head) + " heads, not a multiple of " +
                        std::to_string(l.n_head_kv) + " KV heads");
        l.kv_source = tl.kv_source >= 0 ? tl.kv_source : src;
    }
    return spec;
}

AssistantDrafter::AssistantDrafter(std::shared_ptr<const Model> assistant, const Model& target, Context& target_ctx,
                                   const ContextOptions& target_options)
    : model_(std::move(assistant)), pool_(ContextInternals::pool(target_ctx)) {
    spec_ = assistant_spec_for(*model_, target);
    const ModelSpec& as = ModelInternals::spec(*model_);
    const ModelWeights& aw = ModelInternals::weights(*model_);
    const ModelWeights& tw = ModelInternals::weights(target);
    weights_.tok_embd = aw.tok_embd;
    weights_.output_norm = aw.output_norm;
    weights_.output = aw.output;
    weights_.rope_freqs = aw.rope_freqs;
    weights_.layers = aw.layers;
    weights_.assistant_post = aw.assistant_post;
    input_.target_embd = tw.tok_embd;
    input_.scale = std::sqrt(static_cast<float>(as.n_embd_target));
    input_.pre = aw.assistant_pre;
    weights_.assistant_input = &input_;
    const int n_rows = std::max(1, target_ctx.n_seq_max());
    forward_ = std::make_unique<Forward>(spec_, weights_, ContextInternals::memory(target_ctx), pool_, n_rows);
    forward_->set_streaming_attention(target_options.flash_attn);
    n_ctx_ = target_ctx.n_ctx();
    n_embd_target_ = as.n_embd_target;
    kept_.resize(static_cast<size_t>(target_ctx.n_seq_max()));
    const auto eog = target.tokenizer().end_of_generation_ids();
    end_ids_.assign(eog.begin(), eog.end());
}

void AssistantDrafter::record(const Batch& b, const Context& target) {
    const size_t e = static_cast<size_t>(n_embd_target_);
    // A sequence of this batch keeps this batch's states only (its earlier rows
    // may have been rolled back); the others keep theirs.
    for (int i = 0; i < b.size(); ++i) kept_[static_cast<size_t>(b.seqs()[static_cast<size_t>(i)])].pos.clear();
    int out = 0;
    for (int i = 0; i < b.size(); ++i) {
        const size_t seq = static_cast<size_t>(b.seqs()[static_cast<size_t>(i)]);
        if (!b.outputs()[static_cast<size_t>(i)]) continue;
        const std::span<const float> h = target.hidden(out++);
        Kept& k = kept_[seq];
        k.pos.push_back(b.positions()[static_cast<size_t>(i)]);
        k.states.resize(k.pos.size() * e);
        std::memcpy(k.states.data() + (k.pos.size() - 1) * e, h.data(), e * sizeof(float));
    }
}

uint64_t AssistantDrafter::decode_bytes() const {
    auto bytes = [](const Matrix& m) { return m.empty() ? uint64_t{0} : m.row_bytes * static_cast<uint64_t>(m.n_out); };
    uint64_t n = bytes(weights_.output) + bytes(input_.pre) + bytes(weights_.assistant_post);
    for (const LayerWeights& l : weights_.layers)
        for (const Matrix* m : {&l.wq, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) n += bytes(*m);
    return n;
}

void AssistantDrafter::clear(SeqId seq) { kept_[static_cast<size_t>(seq)].pos.clear(); }

uint64_t AssistantDrafter::memory_bytes() const {
    uint64_t n = 0;
    for (const Kept& k : kept_) n += k.states.capacity() * sizeof(float);
    return n + (states_.capacity() + logits_.capacity() + hidden_.capacity()) * sizeof(float);
}

DraftTiming AssistantDrafter::draft(std::span<const DraftRequest> requests) {
    DraftTiming timing;
    const size_t e = static_cast<size_t>(n_embd_target_);
    const size_t n_vocab = static_cast<size_t>(spec_.n_vocab), n_embd = static_cast<size_t>(spec_.n_embd);
    std::vector<size_t> going;  // the requests in this pass, in row order
    tokens_.clear();
    pos_.clear();
    seqs_.clear();
    states_.clear();
    for (size_t q = 0; q < requests.size(); ++q) {
        const DraftRequest& r = requests[q];
        if (r.tokens.empty() || r.k <= 0) throw Error("draft request without tokens", ErrorKind::Internal);
        r.out->clear();
        // The pending token at L with the target's state at L - 1 (its row gave the token).
        const int64_t last = static_cast<int64_t>(r.tokens.size()) - 1;
        const Kept& k = kept_[static_cast<size_t>(r.seq)];
        const auto it = std::find(k.pos.begin(), k.pos.end(), last - 1);
        if (last < 1 || it == k.pos.end()) continue;
        const float* h = k.states.data() + static_cast<size_t>(it - k.pos.begin()) * e;
        going.push_back(q);
        tokens_.push_back(r.tokens[static_cast<size_t>(last)]);
        pos_.push_back(last);
        seqs_.push_back(r.seq);
        states_.insert(states_.end(), h, h + e);
    }
    while (!going.empty()) {
        const int n = static_cast<int>(going.size());
        outputs_.assign(static_cast<size_t>(n), 1);
        logits_.resize(static_cast<size_t>(n) * n_vocab);
        hidden_.resize(static_cast<size_t>(n) * n_embd);
        BatchRows rows;
        rows.n = n;
        rows.tokens = tokens_.data();
        rows.pos = pos_.data();
        rows.seq = seqs_.data();
        rows.output = outputs_.data();
        rows.state = states_.data();
        const Clock::time_point t0 = Clock::now();
        forward_->eval(rows, logits_.data(), hidden_.data());
        // The next step's states: nextn.post_projection of each normed row.
        std::vector<float> next(static_cast<size_t>(n) * e);
        matmul(weights_.assistant_post, hidden_.data(), n, next.data(), pool_, mm_);
        timing.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
        ++timing.passes;
        // The requests still drafting keep their rows, in order.
        size_t kept = 0;
        for (size_t j = 0; j < going.size(); ++j) {
            const DraftRequest& r = requests[going[j]];
            const TokenId t = argmax(std::span<const float>(logits_.data() + j * n_vocab, n_vocab));
            r.out->push_back(t);
            if (static_cast<int>(r.out->size()) >= r.k || std::binary_search(end_ids_.begin(), end_ids_.end(), t)) continue;
            going[kept] = going[j];
            tokens_[kept] = t;
            pos_[kept] = pos_[j];
            seqs_[kept] = seqs_[j];
            std::copy(next.begin() + static_cast<std::ptrdiff_t>(j * e), next.begin() + static_cast<std::ptrdiff_t>((j + 1) * e),
                      states_.begin() + static_cast<std::ptrdiff_t>(kept * e));
            ++kept;
        }
        going.resize(kept);
        tokens_.resize(kept);
        pos_.resize(kept);
        seqs_.resize(kept);
        states_.resize(kept * e);
    }
    return timing;
}

}  // namespace kiln
