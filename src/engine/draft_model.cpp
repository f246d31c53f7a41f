#include "engine/draft_model.h"

#include <algorithm>
#include <chrono>

#include "kiln/error.h"
#include "model/internals.h"

namespace kiln {

namespace {

using Clock = std::chrono::steady_clock;

// A token's text for an error message: as stored (UTF-8), control bytes, quotes
// and backslashes as \xNN.
std::string shown(std::string_view text) {
    static const char* hex = "0123456789abcdef";
    std::string out;
    for (unsigned char c : text.substr(0, 64)) {
        if (c >= 0x20 && c != 0x7f && c != '\'' && c != '\\') {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    if (text.size() > 64) out += "...";
    return "'" + out + "'";
}

std::string id_name(TokenId id) { return id == k_no_token ? "none" : std::to_string(id); }

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

}  // namespace

void check_draft_vocabulary(const Model& target, const Model& draft) {
    const std::string what = "draft model '" + draft.path() + "' cannot draft for '" + target.path() + "': ";
    const Tokenizer& tt = target.tokenizer();
    const Tokenizer& dt = draft.tokenizer();
    if (!draft.has_output_head() || draft.is_embedding_model())
        throw Error(what + "it has no output head (an embedding model)");
    // The first id whose text differs (within the ids both have).
    const size_t n_common = std::min(dt.n_vocab(), tt.n_vocab());
    std::string differ;
    for (size_t i = 0; i < n_common && differ.empty(); ++i) {
        const TokenId id = static_cast<TokenId>(i);
        if (dt.token_text(id) != tt.token_text(id))
            differ = "token " + std::to_string(i) + " is " + shown(dt.token_text(id)) + " in the draft, " +
                     shown(tt.token_text(id)) + " in the target";
    }
    if (dt.n_vocab() != tt.n_vocab())
        throw Error(what + "its vocabulary has " + std::to_string(dt.n_vocab()) + " tokens, the target's " +
                    std::to_string(tt.n_vocab()) + (differ.empty() ? "" : " (" + differ + ")"));
    if (!differ.empty()) throw Error(what + differ);
    if (draft.n_vocab() != target.n_vocab())
        throw Error(what + "its output head has " + std::to_string(draft.n_vocab()) + " rows, the target's " +
                    std::to_string(target.n_vocab()));
    const SpecialTokens& ts = tt.special();
    const SpecialTokens& ds = dt.special();
    const std::pair<const char*, std::pair<TokenId, TokenId>> ids[] = {
        {"BOS", {ds.bos, ts.bos}}, {"EOS", {ds.eos, ts.eos}}, {"EOT", {ds.eot, ts.eot}}};
    for (const auto& [name, pair] : ids)
        if (pair.first != pair.second)
            throw Error(what + "its " + name + " token is " + id_name(pair.first) + ", the target's " +
                        id_name(pair.second));
    if (dt.add_bos() != tt.add_bos())
        throw Error(what + std::string("it ") + (dt.add_bos() ? "adds" : "does not add") +
                    " a BOS token to a prompt, the target " + (tt.add_bos() ? "does" : "does not"));
}

DraftModel::DraftModel(std::shared_ptr<const Model> draft, const Model& target, const Context& target_ctx,
                       const ContextOptions& target_options)
    : model_(std::move(draft)) {
    check_draft_vocabulary(target, *model_);
    ContextOptions o;
    // A draft model trained on a shorter context drafts while the sequence fits it.
    o.n_ctx = std::min(target_ctx.n_ctx(), model_->n_ctx_train() > 0 ? model_->n_ctx_train() : target_ctx.n_ctx());
    o.n_seq_max = target_ctx.n_seq_max();
    o.n_batch = target_ctx.n_batch();
    o.kv_type = target_options.kv_type;
    o.flash_attn = target_options.flash_attn;
    o.n_threads = target_ctx.n_threads();
    o.executor = target_options.executor;
    try {
        ctx_ = std::make_unique<Context>(model_, o);
    } catch (const Error& e) {
        throw Error("draft model '" + model_->path() + "' with the target's context of " + std::to_string(o.n_ctx) +
                        " tokens: " + e.what(),
                    e.kind());
    }
    checkpoints_ = ModelInternals::spec(*model_).memory != MemoryKind::Kv;
    const auto eog = target.tokenizer().end_of_generation_ids();
    end_ids_.assign(eog.begin(), eog.end());
}

void DraftModel::clear(SeqId seq) { ctx_->seq_clear(seq); }

// Brings the draft cells of `seq` to the longest prefix of `tokens` they (or
// another sequence's cells, copied) hold, short of its last token (whose logits
// are wanted). Returns the positions held.
int64_t DraftModel::sync(SeqId seq, std::span<const TokenId> tokens) {
    const size_t own = common_prefix(ctx_->seq_tokens(seq), tokens);
    SeqId src = -1;
    size_t best = own;
    // Another sequence's cells help only when the own ones lack more than the last token.
    for (SeqId s = 0; own + 1 < tokens.size() && s < ctx_->n_seq_max(); ++s) {
        if (s == seq) continue;
        const size_t c = common_prefix(ctx_->seq_tokens(s), tokens);
        if (c > best) {
            best = c;
            src = s;
        }
    }
    const int64_t want = static_cast<int64_t>(std::min(best, tokens.size() - 1));
    if (src >= 0 && want <= static_cast<int64_t>(own)) src = -1;  // nothing to gain from the copy
    if (src < 0 && want == ctx_->seq_length(seq)) return want;
    return src >= 0 ? ctx_->seq_copy(src, seq, want) : ctx_->seq_rollback(seq, want);
}

DraftModel::Timing DraftModel::draft(std::span<const Request> requests) {
    Timing timing;
    if (requests.empty()) return timing;
    // The first pass: each sequence's tokens its draft cells lack, the last with an output.
    batch_.clear();
    for (const Request& r : requests) {
        if (r.tokens.empty() || r.k <= 0) throw Error("draft request without tokens", ErrorKind::Internal);
        r.out->clear();
        const int64_t held = sync(r.seq, r.tokens);
        for (size_t i = static_cast<size_t>(held); i < r.tokens.size(); ++i)
            batch_.add(r.tokens[i], static_cast<int64_t>(i), r.seq, i + 1 == r.tokens.size());
    }
    const bool small = batch_.size() <= 2 * static_cast<int>(requests.size());
    Clock::time_point t0 = Clock::now();
    ctx_->decode(batch_);
    if (small) {
        timing.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
        ++timing.passes;
    }
    auto ended = [&](const Request& r) {
        return static_cast<int>(r.out->size()) >= r.k ||
               std::binary_search(end_ids_.begin(), end_ids_.end(), r.out->back());
    };
    for (size_t i = 0; i < requests.size(); ++i) {
        requests[i].out->push_back(argmax(ctx_->logits(static_cast<int>(i))));
        // A recurrent state rolls back only to checkpoints: one here makes a
        // rejected draft cost nothing more than the tokens after it.
        if (checkpoints_) ctx_->seq_checkpoint(requests[i].seq);
    }
    // Then one row per sequence still drafting, for each further token.
    std::vector<size_t> going;
    for (;;) {
        going.clear();
        batch_.clear();
        for (size_t i = 0; i < requests.size(); ++i) {
            const Request& r = requests[i];
            if (ended(r)) continue;
            going.push_back(i);
            batch_.add(r.out->back(), ctx_->seq_length(r.seq), r.seq, true);
        }
        if (going.empty()) break;
        t0 = Clock::now();
        ctx_->decode(batch_);
        timing.seconds += std::chrono::duration<double>(Clock::now() - t0).count();
        ++timing.passes;
        for (size_t j = 0; j < going.size(); ++j)
            requests[going[j]].out->push_back(argmax(ctx_->logits(static_cast<int>(j))));
    }
    return timing;
}

}  // namespace kiln
