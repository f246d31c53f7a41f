#include <algorithm>
#include <chrono>

#include "cache/hybrid_memory.h"
#include "engine/context_internals.h"
#include "cache/kv_cache.h"
#include "cache/recurrent_state.h"
#include "cache/memory.h"
#include "engine/context_sizing.h"
#include "compute/thread_pool.h"
#include "kiln/context.h"
#include "kiln/error.h"
#include "model/forward.h"
#include "model/internals.h"
#include "model/ssm.h"

namespace kiln {

namespace {

constexpr int k_default_ctx_cap = 4096;

std::vector<KvLayerShape> kv_shapes(const ModelSpec& spec) {
    std::vector<KvLayerShape> shapes;
    for (const LayerSpec& l : spec.layers) {
        KvLayerShape s;
        // A shared-KV layer (gemma4) reads another layer's cells and has none.
        if (l.mixer == MixerKind::Attention && l.kv_source < 0) {
            s.n_head_kv = l.n_head_kv;
            s.head_dim_k = l.head_dim_k;
            // Latent attention caches one row per position; its values are that row's start.
            s.head_dim_v = spec.mla.kv_lora_rank > 0 ? 0 : l.head_dim_v;
            s.window = l.sliding ? spec.sliding_window : 0;
        }
        shapes.push_back(s);
    }
    return shapes;
}

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB"; }

// Checkpoints kept per sequence, of a recurrent state or of the sliding layers'
// rings (one policy: the least recently used is replaced): as many as 256 MiB per
// sequence holds, up to 32, at least the 2 a prompt leaves (a large Mamba's state
// is over 100 MiB). And how often a long prompt leaves one where nothing else does.
constexpr int k_max_checkpoints = 32;
constexpr int k_min_checkpoints = 2;
constexpr uint64_t k_checkpoint_bytes = 256ull << 20;
constexpr int64_t k_checkpoint_interval = 512;
// Planned checkpoints closer than this to an earlier one are left out (the end
// of a prompt just after the start of its generation prompt).
constexpr int64_t k_checkpoint_gap = 16;
// A decode whose rows of a sequence all want outputs (a speculative verification
// batch) and number at most this logs them, so that a rollback into them replays
// the recurrences instead of evaluating the kept rows again (SsmMixer's replay log).
constexpr int64_t k_max_logged_rows = 64;

int checkpoint_count(uint64_t one) {
    if (one == 0) return 0;
    return static_cast<int>(std::clamp<uint64_t>(k_checkpoint_bytes / one, k_min_checkpoints, k_max_checkpoints));
}

// The KV cells for n_seq sequences of n_ctx positions each, or as many
// positions as the budget holds (0: no budget).
// A hybrid's rings keep as many checkpoints as its recurrent state (n_checkpoints
// >= 0): the two are recorded and restored together.
KvCacheOptions size_kv(const std::vector<KvLayerShape>& shapes, const ContextOptions& o, int64_t n_ctx, int n_batch,
                       uint64_t budget, int n_checkpoints = -1) {
    KvCacheOptions ko;
    ko.type = parse_kv_type(o.kv_type);
    ko.n_seq = o.n_seq_max;
    ko.n_ctx = n_ctx;
    ko.n_batch_max = n_batch;
    ko.n_checkpoints = n_checkpoints >= 0 ? n_checkpoints : checkpoint_count(KvCache::checkpoint_bytes(shapes, ko));
    const uint64_t full = KvCache::bytes_needed(shapes, ko);
    if (budget > 0 && full > budget) {
        // The most positions per sequence that fit (memory grows with them).
        int64_t lo = 0, hi = n_ctx;
        while (lo < hi) {
            const int64_t mid = (lo + hi + 1) / 2;
            ko.n_ctx = mid;
            if (KvCache::bytes_needed(shapes, ko) <= budget)
                lo = mid;
            else
                hi = mid - 1;
        }
        if (lo < 1) {
            ko.n_ctx = 1;
            throw Error("memory budget of " + mib(budget) + " is too small: " + std::to_string(o.n_seq_max) +
                            " sequences need " + mib(KvCache::bytes_needed(shapes, ko)) + " for one position each",
                        ErrorKind::ResourceExhausted);
        }
        ko.n_ctx = lo;
    }
    return ko;
}

// The memory the sizing describes: KV cells, a recurrent state, or both.
std::unique_ptr<SequenceMemory> make_memory(const ModelSpec& spec, const ContextSizing& z) {
    if (spec.memory == MemoryKind::Kv) return std::make_unique<KvCache>(z.shapes, z.kv);
    if (spec.memory == MemoryKind::Recurrent) return std::make_unique<RecurrentState>(z.state_bytes, z.recurrent);
    return std::make_unique<HybridMemory>(std::make_unique<KvCache>(z.shapes, z.kv),
                                          std::make_unique<RecurrentState>(z.state_bytes, z.recurrent));
}

}  // namespace

// The memory the model's registry row asks for: KV cells, a recurrent state
// (fixed per sequence, with checkpoints; its bytes come off the budget first),
// or both.
ContextSizing size_context(const ModelSpec& spec, const ContextOptions& o) {
    const int n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min(spec.n_ctx_train, k_default_ctx_cap);
    if (n_ctx > spec.n_ctx_train)
        throw Error("context of " + std::to_string(n_ctx) + " tokens exceeds the model's maximum of " +
                    std::to_string(spec.n_ctx_train));
    if (n_ctx < 1) throw Error("context size must be positive");
    if (o.n_batch < 1) throw Error("batch size must be positive");
    if (o.n_seq_max < 1) throw Error("the number of sequences must be positive");
    ContextSizing z;
    z.n_batch = std::min(o.n_batch, n_ctx * o.n_seq_max);
    z.shapes = kv_shapes(spec);
    const int kv_batch = std::min(z.n_batch, n_ctx);
    if (spec.memory == MemoryKind::Kv) {
        z.kv = size_kv(z.shapes, o, n_ctx, kv_batch, o.memory_budget);
        z.memory_bytes = KvCache::bytes_needed(z.shapes, z.kv);
        return z;
    }
    for (const LayerSpec& l : spec.layers) z.state_bytes.push_back(l.has_recurrent_state() ? ssm_state_bytes(spec) : 0);
    RecurrentStateOptions& ro = z.recurrent;
    ro.n_seq = o.n_seq_max;
    ro.n_ctx = n_ctx;
    uint64_t per_state = 0;
    for (uint64_t b : z.state_bytes) per_state += b;
    ro.n_checkpoints = checkpoint_count(std::max<uint64_t>(per_state, 1));
    const uint64_t recurrent = RecurrentState::bytes_needed(z.state_bytes, ro);
    if (o.memory_budget > 0 && recurrent >= o.memory_budget)
        throw Error("memory budget of " + mib(o.memory_budget) + " is too small: the recurrent state of " +
                        std::to_string(o.n_seq_max) + " sequences with " + std::to_string(ro.n_checkpoints) +
                        " checkpoints each needs " + mib(recurrent),
                    ErrorKind::ResourceExhausted);
    z.memory_bytes = recurrent;
    if (spec.memory == MemoryKind::Hybrid) {
        z.kv = size_kv(z.shapes, o, n_ctx, kv_batch, o.memory_budget > 0 ? o.memory_budget - recurrent : 0, ro.n_checkpoints);
        ro.n_ctx = z.kv.n_ctx;
        z.memory_bytes += KvCache::bytes_needed(z.shapes, z.kv);
    } else {
        z.kv.n_ctx = n_ctx;  // no cells: the context is what the options ask for
        z.kv.n_seq = o.n_seq_max;
    }
    return z;
}

void Batch::add(TokenId token, int64_t pos, SeqId seq, bool output, int32_t token_type) {
    types_.push_back(token_type);
    tokens_.push_back(token);
    pos_.push_back(pos);
    seq_.push_back(seq);
    output_.push_back(output ? 1 : 0);
    if (n_embd_ > 0) embd_.resize(embd_.size() + static_cast<size_t>(n_embd_), 0.0f);
}

void Batch::add_embedding(std::span<const float> embedding, int64_t pos, SeqId seq, bool output) {
    if (embedding.empty()) throw Error("batch: empty embedding");
    if (n_embd_ == 0) {
        n_embd_ = static_cast<int>(embedding.size());
        embd_.assign(tokens_.size() * embedding.size(), 0.0f);
    } else if (static_cast<int>(embedding.size()) != n_embd_) {
        throw Error("batch: embedding of " + std::to_string(embedding.size()) + " values after ones of " + std::to_string(n_embd_));
    }
    types_.push_back(0);
    tokens_.push_back(k_no_token);
    pos_.push_back(pos);
    seq_.push_back(seq);
    output_.push_back(output ? 1 : 0);
    embd_.insert(embd_.end(), embedding.begin(), embedding.end());
}

void Batch::add_with_state(TokenId token, std::span<const float> state, int64_t pos, SeqId seq, bool output) {
    if (token == k_no_token) throw Error("batch: an entry with a state needs a token");
    add_embedding(state, pos, seq, output);
    tokens_.back() = token;
}

void Batch::clear() {
    tokens_.clear();
    pos_.clear();
    seq_.clear();
    output_.clear();
    types_.clear();
    embd_.clear();
    n_embd_ = 0;
}

struct Context::Impl {
    std::shared_ptr<const Model> model;
    const ModelSpec* spec = nullptr;
    int n_ctx = 0;
    int n_batch = 0;
    bool hidden_states = false;
    bool row_states = false;
    bool nextn = false;       // the model's multi-token-prediction head
    bool want_logits = true;  // ContextOptions::logits and the model has an output head
    std::unique_ptr<ThreadPool> pool;
    std::unique_ptr<SequenceMemory> memory;
    std::unique_ptr<Forward> forward;
    std::vector<std::vector<TokenId>> tokens;  // per sequence: what its positions hold
    // Outputs of the last decode: f32 [n_vocab, n_outputs], [n_embd, n_outputs].
    std::vector<float> logits, hidden;
    std::vector<float> states;  // row_states: f32 [n_embd, entries of the last decode]
    int n_outputs = 0;
    std::vector<float> last_logits;  // sequence 0's last token (single-sequence API)
    Batch one;                       // scratch for the single-sequence API

    void check_seq(SeqId seq) const {
        if (seq < 0 || seq >= static_cast<SeqId>(tokens.size()))
            throw Error("sequence id " + std::to_string(seq) + " is outside 0.." + std::to_string(tokens.size() - 1));
    }
    // Checks a batch; leaves in `added` how many entries each sequence has in it.
    void validate(const Batch& b);
    std::vector<int64_t> next, added;  // [n_seq_max]: scratch of validate, its result
    std::vector<int64_t> target;       // [n_seq_max]: each sequence's length after the decode
    std::vector<uint8_t> logged;       // [n_seq_max]: this decode logs the sequence's rows (replay)
    std::vector<uint8_t> verifying;    // [n_seq_max]: ... is a verification batch (logged unless log_verifications is off)
    std::vector<uint8_t> all_out;      // [n_seq_max]: scratch: every row of the sequence wants an output
    ReplayStats replay;
    bool log_verifications = true;  // ContextInternals::set_verification_logging (bench/replay_cost.cpp)
    // seq_plan_checkpoints: per sequence, the positions its prompt leaves
    // checkpoints at (ascending), and the prompt's end.
    std::vector<std::vector<int64_t>> plans;
    std::vector<int64_t> plan_end;
    Shortfall shortfall = Shortfall::None;  // of the last rollback / copy
    // Whether seq's entries of this decode lie in its planned prompt.
    bool planned(size_t s) const { return !plans[s].empty() && target[s] <= plan_end[s]; }
    bool plan_has(size_t s, int64_t pos) const { return std::binary_search(plans[s].begin(), plans[s].end(), pos); }
};

Context::Context(std::shared_ptr<const Model> model, const ContextOptions& o) : impl_(std::make_unique<Impl>()) {
    Impl& im = *impl_;
    const NextnHead* head = o.nextn ? ModelInternals::nextn(*model) : nullptr;
    if (o.nextn && !head)
        throw Error("model '" + model->path() + "' has no multi-token-prediction head (" +
                        (ModelInternals::spec(*model).n_layer_nextn > 0
                             ? "its NextN layers are not supported for architecture '" + model->architecture() + "'"
                             : std::string("no nextn_predict_layers")) +
                        ")",
                    ErrorKind::Unsupported);
    const ModelSpec& spec = head ? head->spec : ModelInternals::spec(*model);
    const ModelWeights& weights = head ? head->weights : ModelInternals::weights(*model);
    if (spec.n_embd_target > 0)
        throw Error("model '" + model->path() + "' (" + model->architecture() + ") drafts for a " + spec.target_arch +
                        " model, reading its cache: give it as the draft model (--draft-model) of one; it does not run alone",
                    ErrorKind::Unsupported);
    im.model = std::move(model);
    im.spec = &spec;
    const ContextSizing z = size_context(spec, o);
    im.n_batch = z.n_batch;
    im.hidden_states = o.hidden_states;
    im.row_states = o.row_states;
    im.nextn = head != nullptr;
    im.want_logits = o.logits && spec.output_head;
    im.pool = std::make_unique<ThreadPool>(o.executor ? o.executor : Executor::shared(), o.n_threads);
    im.memory = make_memory(spec, z);
    im.n_ctx = static_cast<int>(im.memory->n_ctx());
    im.forward = std::make_unique<Forward>(spec, weights, *im.memory, *im.pool, im.n_batch);
    im.forward->set_streaming_attention(o.flash_attn);
    im.tokens.resize(static_cast<size_t>(o.n_seq_max));
    im.plans.resize(static_cast<size_t>(o.n_seq_max));
    im.plan_end.assign(static_cast<size_t>(o.n_seq_max), 0);
}

Context::~Context() = default;

void Context::set_hidden_states(bool on) { impl_->hidden_states = on; }

SequenceMemory& ContextInternals::memory(Context& c) { return *c.impl_->memory; }
const ThreadPool& ContextInternals::pool(const Context& c) { return *c.impl_->pool; }
void ContextInternals::set_verification_logging(Context& c, bool on) { c.impl_->log_verifications = on; }
uint64_t ContextInternals::replay_log_bytes(const Context& c) { return c.impl_->forward->log_bytes(); }
void ContextInternals::flush_recurrent(Context& c, SeqId seq) {
    c.impl_->check_seq(seq);
    c.impl_->forward->flush_recurrent(seq);
}

const Model& Context::model() const { return *impl_->model; }
int Context::n_ctx() const { return impl_->n_ctx; }
int Context::n_seq_max() const { return static_cast<int>(impl_->tokens.size()); }
int Context::n_batch() const { return impl_->n_batch; }
int Context::n_threads() const { return impl_->pool->size(); }

void Context::Impl::validate(const Batch& b) {
    const int n_vocab = spec->n_vocab;
    if (b.n_embd() > 0 && b.n_embd() != spec->n_embd)
        throw Error("batch: embeddings of " + std::to_string(b.n_embd()) + " values, the model's width is " +
                    std::to_string(spec->n_embd));
    if (nextn && b.n_embd() == 0 && !b.empty())
        throw Error("batch: a multi-token-prediction head's entries need the trunk's hidden states (Batch::add_with_state)");
    // Each sequence's entries continue its positions in order.
    next.resize(tokens.size());
    for (size_t s = 0; s < tokens.size(); ++s) next[s] = static_cast<int64_t>(tokens[s].size());
    for (int i = 0; i < b.size(); ++i) {
        const SeqId seq = b.seqs()[static_cast<size_t>(i)];
        check_seq(seq);
        const TokenId t = b.tokens()[static_cast<size_t>(i)];
        if (t != k_no_token && (t < 0 || t >= n_vocab))
            throw Error("batch entry " + std::to_string(i) + ": token id " + std::to_string(t) + " is outside the vocabulary (" +
                        std::to_string(n_vocab) + ")");
        const int64_t pos = b.positions()[static_cast<size_t>(i)];
        int64_t& want = next[static_cast<size_t>(seq)];
        if (pos != want)
            throw Error("batch entry " + std::to_string(i) + ": sequence " + std::to_string(seq) + " is at position " +
                        std::to_string(want) + ", the entry is at " + std::to_string(pos));
        if (pos >= n_ctx)
            throw Error("sequence " + std::to_string(seq) + " is full: " + std::to_string(pos + 1) +
                            " positions do not fit its context of " + std::to_string(n_ctx) + " (memory for " +
                            std::to_string(tokens.size()) + " sequences of " + std::to_string(n_ctx) + " positions, " +
                            mib(memory->bytes()) + ")",
                        ErrorKind::ResourceExhausted);
        ++want;
    }
    // Non-causal attention sees the whole sequence: it must be evaluated at once.
    if (!spec->causal) {
        for (size_t s = 0; s < tokens.size(); ++s)
            if (next[s] != static_cast<int64_t>(tokens[s].size()) && !tokens[s].empty())
                throw Error("sequence " + std::to_string(s) + ": a non-causal model evaluates a sequence in one batch (clear it first)");
        if (b.size() > n_batch)
            throw Error("a non-causal model evaluates a batch at once: " + std::to_string(b.size()) +
                        " entries are more than the batch size " + std::to_string(n_batch));
    }
    added.resize(tokens.size());
    for (size_t s = 0; s < tokens.size(); ++s) added[s] = next[s] - static_cast<int64_t>(tokens[s].size());
}

void Context::decode(const Batch& batch) {
    Impl& im = *impl_;
    im.n_outputs = 0;
    if (batch.empty()) return;
    im.validate(batch);
    const int n_vocab = im.spec->n_vocab, n_embd = im.spec->n_embd;
    int n_out = 0;
    for (uint8_t o : batch.outputs()) n_out += o ? 1 : 0;
    const bool head = im.want_logits;  // an encoder has hidden states only
    im.logits.resize(head ? static_cast<size_t>(n_out) * static_cast<size_t>(n_vocab) : 0);
    if (im.hidden_states) im.hidden.resize(static_cast<size_t>(n_out) * static_cast<size_t>(n_embd));
    if (im.row_states) im.states.resize(static_cast<size_t>(batch.size()) * static_cast<size_t>(n_embd));
    int done_out = 0;
    // A recurrent state cannot be cut back, nor can a sliding layer's ring once
    // it has moved on, so a prompt (several entries of one sequence) leaves
    // checkpoints as it is evaluated. Where seq_plan_checkpoints planned them,
    // there; else (a recurrent state only) just before the last entry of the
    // decode (a new request for the same prompt evaluates that token again for
    // fresh logits), at its end, and every k_checkpoint_interval positions.
    // A recurrent state is recorded where a forward pass ends, so passes end
    // where one is due (the recurrence is batch-invariant: the split changes no
    // result); a ring still holds the window before any position of the pass
    // that just ended.
    const bool checkpoints = im.memory->keeps_checkpoints();
    const bool recurrent = im.memory->recurrent() != nullptr;
    // A verification batch's rows are logged instead of checkpointed: a rollback
    // into them replays the recurrences of the kept rows (Context::seq_rollback).
    im.logged.assign(im.tokens.size(), 0);
    im.verifying.assign(im.tokens.size(), 0);
    if (recurrent && im.forward->has_recurrent()) {
        std::vector<uint8_t>& all_out = im.all_out;
        all_out.assign(im.tokens.size(), 1);
        for (int i = 0; i < batch.size(); ++i)
            if (!batch.outputs()[static_cast<size_t>(i)]) all_out[static_cast<size_t>(batch.seqs()[static_cast<size_t>(i)])] = 0;
        for (size_t s = 0; s < im.tokens.size(); ++s) {
            if (im.added[s] == 0) continue;
            im.verifying[s] = all_out[s] && im.added[s] > 1 && im.added[s] <= k_max_logged_rows;
            im.logged[s] = im.verifying[s] && im.log_verifications;
            if (im.logged[s]) {
                const auto t0 = std::chrono::steady_clock::now();
                im.forward->log_rows(static_cast<int>(s), static_cast<int64_t>(im.tokens[s].size()), static_cast<int>(im.added[s]));
                im.replay.log_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                ++im.replay.logs;
            } else
                im.forward->log_stop(static_cast<int>(s));
        }
    }
    if (checkpoints) {
        im.target.resize(im.tokens.size());
        for (size_t s = 0; s < im.tokens.size(); ++s) im.target[s] = static_cast<int64_t>(im.tokens[s].size()) + im.added[s];
    }
    for (int done = 0; done < batch.size();) {
        int n = std::min(im.n_batch, batch.size() - done);
        if (checkpoints && recurrent) {
            // End the pass before an entry whose position is due a checkpoint.
            for (int i = done + 1; i < done + n; ++i) {
                const size_t s = static_cast<size_t>(batch.seqs()[static_cast<size_t>(i)]);
                const int64_t p = batch.positions()[static_cast<size_t>(i)];
                if (im.planned(s) ? im.plan_has(s, p) : !im.verifying[s] && im.added[s] > 1 && p == im.target[s] - 1) {
                    n = i - done;
                    break;
                }
            }
        }
        BatchRows rows;
        rows.n = n;
        rows.tokens = batch.tokens().data() + done;
        rows.embd = batch.n_embd() > 0 ? batch.embeddings().data() + static_cast<size_t>(done) * static_cast<size_t>(n_embd) : nullptr;
        rows.pos = batch.positions().data() + done;
        rows.seq = batch.seqs().data() + done;
        rows.output = batch.outputs().data() + done;
        rows.types = batch.token_types().data() + done;
        if (im.nextn) rows.state = rows.embd;
        int chunk_out = 0;
        for (int i = 0; i < n; ++i) chunk_out += rows.output[i] ? 1 : 0;
        im.forward->eval(rows, chunk_out && head ? im.logits.data() + static_cast<size_t>(done_out) * static_cast<size_t>(n_vocab) : nullptr,
                         chunk_out && im.hidden_states ? im.hidden.data() + static_cast<size_t>(done_out) * static_cast<size_t>(n_embd)
                                                       : nullptr,
                         im.row_states ? im.states.data() + static_cast<size_t>(done) * static_cast<size_t>(n_embd) : nullptr);
        for (int i = 0; i < n; ++i) im.tokens[static_cast<size_t>(rows.seq[i])].push_back(rows.tokens[i]);
        done_out += chunk_out;
        done += n;
        if (!checkpoints) continue;
        for (int i = 0; i < n; ++i) {
            const size_t s = static_cast<size_t>(rows.seq[i]);
            const bool last_in_pass = i + 1 == n || std::find(rows.seq + i + 1, rows.seq + n, rows.seq[i]) == rows.seq + n;
            if (!last_in_pass) continue;
            const int64_t len = static_cast<int64_t>(im.tokens[s].size());
            const int64_t before = len - std::count(rows.seq, rows.seq + n, rows.seq[i]);
            if (im.planned(s)) {
                const std::vector<int64_t>& plan = im.plans[s];
                for (auto it = std::upper_bound(plan.begin(), plan.end(), before); it != plan.end() && *it <= len; ++it) {
                    im.forward->flush_recurrent(static_cast<int>(s));  // deferred rows into the state it copies
                    im.memory->checkpoint_at(static_cast<int>(s), *it, len);
                }
                continue;
            }
            if (!recurrent || im.added[s] <= 1 || im.verifying[s]) continue;
            if (len == im.target[s] - 1 || len == im.target[s] || len / k_checkpoint_interval != before / k_checkpoint_interval) {
                im.forward->flush_recurrent(static_cast<int>(s));
                im.memory->checkpoint(static_cast<int>(s), len);
            }
        }
    }
    im.n_outputs = n_out;
}

int Context::n_outputs() const { return impl_->n_outputs; }

std::span<const float> Context::logits(int output) const {
    const Impl& im = *impl_;
    if (!im.spec->output_head)
        throw Error("model architecture '" + im.spec->arch + "' has no output head (an embedding model): it gives hidden states, not logits");
    if (!im.want_logits) throw Error("logits were not asked for (ContextOptions::logits)");
    if (output < 0 || output >= im.n_outputs)
        throw Error("output " + std::to_string(output) + " is outside the last batch's " + std::to_string(im.n_outputs) + " outputs");
    const size_t n_vocab = static_cast<size_t>(im.spec->n_vocab);
    return std::span<const float>(im.logits.data() + static_cast<size_t>(output) * n_vocab, n_vocab);
}

std::span<const float> Context::hidden(int output) const {
    const Impl& im = *impl_;
    if (!im.hidden_states) throw Error("hidden states were not asked for (ContextOptions::hidden_states)");
    if (output < 0 || output >= im.n_outputs)
        throw Error("output " + std::to_string(output) + " is outside the last batch's " + std::to_string(im.n_outputs) + " outputs");
    const size_t n_embd = static_cast<size_t>(im.spec->n_embd);
    return std::span<const float>(im.hidden.data() + static_cast<size_t>(output) * n_embd, n_embd);
}

std::span<const float> Context::row_state(int entry) const {
    const Impl& im = *impl_;
    if (!im.row_states) throw Error("every entry's hidden state was not asked for (ContextOptions::row_states)");
    const size_t n_embd = static_cast<size_t>(im.spec->n_embd);
    if (entry < 0 || static_cast<size_t>(entry) >= im.states.size() / n_embd)
        throw Error("entry " + std::to_string(entry) + " is outside the last batch's " + std::to_string(im.states.size() / n_embd) +
                    " entries");
    return std::span<const float>(im.states.data() + static_cast<size_t>(entry) * n_embd, n_embd);
}

int64_t Context::seq_length(SeqId seq) const {
    impl_->check_seq(seq);
    return static_cast<int64_t>(impl_->tokens[static_cast<size_t>(seq)].size());
}

const std::vector<TokenId>& Context::seq_tokens(SeqId seq) const {
    impl_->check_seq(seq);
    return impl_->tokens[static_cast<size_t>(seq)];
}

int64_t Context::seq_rollback(SeqId seq, int64_t n_keep) {
    Impl& im = *impl_;
    im.check_seq(seq);
    std::vector<TokenId>& t = im.tokens[static_cast<size_t>(seq)];
    const int64_t n_past = static_cast<int64_t>(t.size());
    n_keep = std::clamp<int64_t>(n_keep, 0, n_past);
    int64_t kept = 0;
    if (n_keep < n_past && im.forward->can_replay(seq, n_keep)) {
        // Into the rows of the last verification batch: the KV cells are cut, the
        // recurrent state replayed from before the batch.
        KvCache* kv = im.memory->kv();
        kept = kv ? kv->rollback(seq, n_keep, n_past) : n_keep;
        im.shortfall = kv && kept < n_keep ? kv->last_shortfall() : Shortfall::None;
        if (kept == n_keep) {
            const auto t0 = std::chrono::steady_clock::now();
            im.replay.replayed_rows += static_cast<uint64_t>(im.forward->replay(seq, n_keep));
            im.replay.replay_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            ++im.replay.replays;
        } else {  // a sliding ring that moved on: nothing is left to return to
            im.memory->clear(seq);
            im.forward->drop_recurrent(seq);
            kept = 0;
        }
    } else {
        kept = im.memory->rollback(seq, n_keep, n_past);
        im.shortfall = kept < n_keep ? im.memory->last_shortfall() : Shortfall::None;
        if (kept < n_past) im.forward->drop_recurrent(seq);  // a checkpoint restored (or the state cleared)
    }
    t.resize(static_cast<size_t>(kept));
    if (seq == 0) im.last_logits.clear();
    return kept;
}

int64_t Context::seq_copy(SeqId src, SeqId dst, int64_t n) {
    Impl& im = *impl_;
    im.check_seq(src);
    im.check_seq(dst);
    const std::vector<TokenId>& from = im.tokens[static_cast<size_t>(src)];
    n = std::clamp<int64_t>(n, 0, static_cast<int64_t>(from.size()));
    if (src == dst) return seq_rollback(src, n);
    if (n == static_cast<int64_t>(from.size())) im.forward->flush_recurrent(src);  // deferred rows into the live state it copies
    im.forward->drop_recurrent(dst);
    const int64_t held = im.memory->copy_prefix(src, dst, n, static_cast<int64_t>(from.size()));
    im.shortfall = held < n ? im.memory->last_shortfall() : Shortfall::None;
    im.tokens[static_cast<size_t>(dst)].assign(from.begin(), from.begin() + held);
    if (dst == 0) im.last_logits.clear();
    return held;
}

void Context::seq_clear(SeqId seq) {
    Impl& im = *impl_;
    im.check_seq(seq);
    im.memory->clear(seq);
    im.forward->drop_recurrent(seq);
    im.tokens[static_cast<size_t>(seq)].clear();
    im.plans[static_cast<size_t>(seq)].clear();
    if (seq == 0) im.last_logits.clear();
}

void Context::seq_plan_checkpoints(SeqId seq, std::span<const int64_t> positions, int64_t end) {
    Impl& im = *impl_;
    im.check_seq(seq);
    const int64_t from = seq_length(seq);
    std::vector<int64_t> want(positions.begin(), positions.end());
    std::sort(want.begin(), want.end());
    std::vector<int64_t>& plan = im.plans[static_cast<size_t>(seq)];
    plan.clear();
    for (int64_t p : want)
        if (p > from && p < end && (plan.empty() || p - plan.back() >= k_checkpoint_gap)) plan.push_back(p);
    // Just before the last token (a new request for the same prompt evaluates it
    // again) and at the end, unless a message (the generation prompt) starts
    // just before them: restoring that costs only its few tokens.
    const int64_t near = plan.empty() ? -k_checkpoint_gap : plan.back();
    for (int64_t p : {end - 1, end})
        if (p > from && p - near >= k_checkpoint_gap) plan.push_back(p);
    // Every k_checkpoint_interval positions, where nothing planned lies within half of it.
    std::sort(plan.begin(), plan.end());
    const int64_t half = k_checkpoint_interval / 2;
    std::vector<int64_t> fill;
    for (int64_t m = (from / k_checkpoint_interval + 1) * k_checkpoint_interval; m < end; m += k_checkpoint_interval) {
        auto it = std::lower_bound(plan.begin(), plan.end(), m - half);
        if (it == plan.end() || *it > m + half) fill.push_back(m);
    }
    plan.insert(plan.end(), fill.begin(), fill.end());
    std::sort(plan.begin(), plan.end());
    im.plan_end[static_cast<size_t>(seq)] = end;
}

const std::vector<int64_t>& Context::seq_planned_checkpoints(SeqId seq) const {
    impl_->check_seq(seq);
    return impl_->plans[static_cast<size_t>(seq)];
}

std::string_view Context::last_shortfall() const { return shortfall_name(impl_->shortfall); }
const ReplayStats& ContextInternals::replay_stats(const Context& c) { return c.impl_->replay; }

void Context::seq_checkpoint(SeqId seq) {
    impl_->check_seq(seq);
    impl_->forward->flush_recurrent(seq);
    impl_->memory->checkpoint(seq, seq_length(seq));
}

void Context::decode(std::span<const TokenId> tokens, std::vector<float>* all_logits) {
    Impl& im = *impl_;
    if (tokens.empty()) return;
    const size_t n_vocab = static_cast<size_t>(im.spec->n_vocab);
    const int64_t n_past = this->n_past();
    if (n_past + static_cast<int64_t>(tokens.size()) > im.n_ctx)
        throw Error("context full: " + std::to_string(n_past + static_cast<int64_t>(tokens.size())) +
                        " tokens do not fit in a context of " + std::to_string(im.n_ctx),
                    ErrorKind::ResourceExhausted);
    Batch& b = im.one;
    b.clear();
    for (size_t i = 0; i < tokens.size(); ++i)
        b.add(tokens[i], n_past + static_cast<int64_t>(i), 0, all_logits != nullptr || i + 1 == tokens.size());
    decode(b);
    if (all_logits) all_logits->assign(im.logits.begin(), im.logits.begin() + static_cast<std::ptrdiff_t>(tokens.size() * n_vocab));
    auto last = logits(im.n_outputs - 1);
    im.last_logits.assign(last.begin(), last.end());
}

std::span<const float> Context::last_logits() const { return impl_->last_logits; }
int64_t Context::n_past() const { return seq_length(0); }
const std::vector<TokenId>& Context::history() const { return seq_tokens(0); }

bool Context::keep_prefix(int64_t n_keep) {
    if (n_keep >= n_past()) return true;
    if (n_keep < 0 || seq_rollback(0, n_keep) != n_keep) {
        seq_clear(0);
        return n_keep <= 0;
    }
    return true;
}

void Context::clear() {
    for (SeqId s = 0; s < n_seq_max(); ++s) seq_clear(s);
}

uint64_t Context::kv_bytes_per_position() const { return impl_->memory->bytes_per_position(); }
uint64_t Context::kv_bytes_read(int64_t n_past) const {
    KvCache* kv = impl_->memory->kv();
    return kv ? kv->bytes_read(n_past) : 0;
}
uint64_t Context::memory_bytes() const { return impl_->memory->bytes(); }

void Context::set_tensor_hook(TensorHook hook) { impl_->forward->set_debug_hook(std::move(hook)); }

void Context::set_weight_input_hook(WeightInputHook hook) {
    if (!hook) return impl_->forward->set_matmul_observer(nullptr);
    // Each matrix's bytes lie inside one file tensor: find it by address.
    struct Span {
        const uint8_t* begin;
        uint64_t bytes, per_matrix;
        const std::string* name;
    };
    auto spans = std::make_shared<std::vector<Span>>();
    const gguf::File& file = impl_->model->file();
    for (const gguf::TensorInfo& t : file.tensors()) {
        if (t.shape.size() < 2) continue;
        const uint64_t n_mat = t.shape.size() > 2 ? t.shape[2] : 1;
        spans->push_back({file.tensor_data(t), t.bytes, t.bytes / std::max<uint64_t>(1, n_mat), &t.name});
    }
    std::sort(spans->begin(), spans->end(), [](const Span& a, const Span& b) { return a.begin < b.begin; });
    impl_->forward->set_matmul_observer([spans, hook = std::move(hook)](const Matrix& w, const float* x, int64_t n_rows) {
        auto it = std::upper_bound(spans->begin(), spans->end(), w.data, [](const uint8_t* p, const Span& s) { return p < s.begin; });
        if (it == spans->begin() || w.data >= std::prev(it)->begin + std::prev(it)->bytes)
            throw Error("weight input hook: a " + std::to_string(w.n_out) + " x " + std::to_string(w.n_in) +
                            " product's matrix is not one of the file's tensors (converted at load?)",
                        ErrorKind::Unsupported);
        const Span& s = *std::prev(it);
        hook(*s.name, static_cast<int>(static_cast<uint64_t>(w.data - s.begin) / s.per_matrix), x, w.n_in, n_rows);
    });
}

const std::vector<std::vector<uint64_t>>& Context::expert_usage() const { return impl_->forward->expert_usage(); }
void Context::reset_expert_usage() { impl_->forward->reset_expert_usage(); }

}  // namespace kiln
