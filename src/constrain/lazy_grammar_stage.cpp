// A grammar that starts when the model writes one of its trigger strings (a tool
// call's opening marker): until then generation is free; from the token that
// completes a trigger on, the grammar holds, and the grammar's text begins with
// the trigger itself; once it is complete (the call is closed) the text is free
// again until the next trigger. A token that completes a trigger and carries more bytes
// after it is allowed only if the grammar accepts those bytes too, so the
// constraint never starts in a state it cannot continue.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "constrain/stage_mask.h"
#include "kiln/constraint.h"
#include "kiln/error.h"
#include "kiln/sampling.h"

namespace kiln {

namespace {

constexpr float k_banned = -std::numeric_limits<float>::infinity();

class LazyGrammarStage : public SamplerStage {
public:
    LazyGrammarStage(const Grammar& grammar, const TokenVocabulary& vocab, std::vector<std::string> triggers,
                     std::string_view written)
        : vocab_(vocab), written_(written), triggers_(std::move(triggers)), matcher_(grammar, vocab) {
        if (triggers_.empty()) throw Error("lazy grammar: at least one trigger is needed", ErrorKind::InvalidInput);
        for (const std::string& t : triggers_) {
            if (t.empty()) throw Error("lazy grammar: a trigger is empty", ErrorKind::InvalidInput);
            max_trigger_ = std::max(max_trigger_, t.size());
            GrammarMatcher m(grammar, vocab);
            // The grammar's text starts with the trigger: refuse one that cannot.
            if (!m.accept_bytes(t))
                throw Error("lazy grammar: the grammar does not start with its trigger '" + t + "'",
                            ErrorKind::InvalidInput);
            started_.push_back(std::move(m));
        }
        // Tokens whose piece holds a whole trigger: the only ones that can
        // complete one when no partial trigger is pending.
        for (size_t id = 0; id < vocab_.n_vocab(); ++id) {
            const std::string_view p = vocab_.piece(static_cast<TokenId>(id));
            for (const std::string& t : triggers_)
                if (p.find(t) != std::string_view::npos) {
                    containing_.push_back(static_cast<TokenId>(id));
                    break;
                }
        }
        reset();
    }

    std::string_view name() const override { return "grammar"; }

    void apply(Candidates& c) override {
        if (active_) return apply_active(c);
        // Free text, except tokens that would start the grammar in a state it
        // cannot continue from.
        banned_.clear();
        auto check = [&](TokenId id) {
            const auto hit = completion(vocab_.piece(id));
            if (hit && !started_[hit->trigger].can_accept(hit->rest)) banned_.push_back(id);
        };
        for (TokenId id : containing_) check(id);
        for (size_t k = 1; k < max_trigger_ && k <= tail_.size(); ++k)
            for (size_t t = 0; t < triggers_.size(); ++t) {
                const std::string& trig = triggers_[t];
                if (k >= trig.size() || tail_.compare(tail_.size() - k, k, trig, 0, k) != 0) continue;
                for (TokenId id : starting_with(t, k)) check(id);
            }
        if (banned_.empty()) return;
        std::sort(banned_.begin(), banned_.end());
        for (TokenCandidate& t : c.items)
            if (std::binary_search(banned_.begin(), banned_.end(), t.token)) t.logit = k_banned;
    }

    void accept(int32_t token) override {
        if (token < 0 || static_cast<size_t>(token) >= vocab_.n_vocab()) return;
        if (active_) {
            if (!matcher_.accept_token(token))
                throw Error("token " + std::to_string(token) + " was generated against the constraint", ErrorKind::Internal);
            end_if_complete();
            return;
        }
        const std::string_view piece = vocab_.piece(token);
        if (const auto hit = completion(piece)) {
            matcher_ = started_[hit->trigger];
            if (!matcher_.accept_bytes(hit->rest))
                throw Error("token " + std::to_string(token) + " was generated against the constraint", ErrorKind::Internal);
            active_ = true;
            end_if_complete();
            return;
        }
        push_tail(piece);
    }

    void reset() override {
        active_ = false;
        tail_.clear();
        matcher_.reset();
        // The reply's text written before generation (an assistant prefill) is
        // read as if generated, byte by byte: it may open a call, or hold whole ones.
        for (char c : written_) {
            const std::string_view byte(&c, 1);
            if (active_) {
                if (!matcher_.accept_bytes(byte))
                    throw Error("the reply's prefill opens a tool call the constraint rejects", ErrorKind::InvalidInput);
                end_if_complete();
            } else if (const auto hit = completion(byte)) {
                matcher_ = started_[hit->trigger];
                active_ = true;
                end_if_complete();
            } else {
                push_tail(byte);
            }
        }
    }

private:
    struct Hit {
        size_t trigger = 0;
        std::string rest;  // the piece's bytes after the trigger
    };

    // A complete match ends the constraint (a call's grammar ends with it): the
    // text is free again, and the next trigger starts the grammar anew.
    void end_if_complete() {
        if (!matcher_.is_complete()) return;
        active_ = false;
        tail_.clear();
    }

    void push_tail(std::string_view piece) {
        tail_ += piece;
        if (tail_.size() >= max_trigger_) tail_.erase(0, tail_.size() - (max_trigger_ - 1));
    }

    // The first trigger that `piece`, written after the pending tail, completes.
    std::optional<Hit> completion(std::string_view piece) const {
        if (piece.empty()) return std::nullopt;
        const std::string text = tail_ + std::string(piece);
        std::optional<Hit> best;
        size_t best_end = std::string::npos;
        for (size_t t = 0; t < triggers_.size(); ++t) {
            const size_t at = text.find(triggers_[t]);
            if (at == std::string::npos) continue;
            const size_t end = at + triggers_[t].size();
            if (end < best_end) {
                best_end = end;
                best = Hit{t, text.substr(end)};
            }
        }
        return best;
    }

    void apply_active(Candidates& c) {
        matcher_.fill_allowed(mask_);
        if (mask_.count() == 0) {
            if (!matcher_.is_terminated()) throw Error("the constraint allows no token at this point", ErrorKind::Internal);
            for (TokenId id : vocab_.end_of_generation_ids()) mask_.allow(id);
        }
        constrain::keep_allowed(mask_, c);
    }

    // Tokens whose piece starts with trigger t's bytes from k on (or with a
    // prefix of them that runs to the piece's end, which completes nothing and
    // is skipped): found by one scan of the vocabulary, the first time needed.
    const std::vector<TokenId>& starting_with(size_t t, size_t k) {
        const uint64_t key = (static_cast<uint64_t>(t) << 32) | k;
        auto it = std::find_if(starting_.begin(), starting_.end(), [&](const auto& e) { return e.first == key; });
        if (it != starting_.end()) return it->second;
        const std::string_view rest = std::string_view(triggers_[t]).substr(k);
        std::vector<TokenId> ids;
        for (size_t id = 0; id < vocab_.n_vocab(); ++id)
            if (vocab_.piece(static_cast<TokenId>(id)).substr(0, rest.size()) == rest) ids.push_back(static_cast<TokenId>(id));
        starting_.emplace_back(key, std::move(ids));
        return starting_.back().second;
    }

    TokenVocabulary vocab_;
    std::string written_;
    std::vector<std::string> triggers_;
    size_t max_trigger_ = 0;
    std::vector<GrammarMatcher> started_;  // per trigger: a matcher that has read it
    std::vector<TokenId> containing_;
    std::vector<std::pair<uint64_t, std::vector<TokenId>>> starting_;
    std::vector<TokenId> banned_;
    std::string tail_;  // the last bytes of free text, shorter than the longest trigger
    bool active_ = false;
    GrammarMatcher matcher_;
    TokenMask mask_;
};

}  // namespace

std::unique_ptr<SamplerStage> lazy_grammar_stage(const Grammar& grammar, const TokenVocabulary& vocab,
                                                 std::vector<std::string> triggers, std::string_view written) {
    return std::make_unique<LazyGrammarStage>(grammar, vocab, std::move(triggers), written);
}

}  // namespace kiln
