// The grammar as a sampler stage: before the other stages see the candidates,
// every token the matcher does not allow leaves them (or gets a logit of -inf,
// stage_mask.h), so neither greedy nor a draw can pick it; the chosen token
// advances the matcher.
#include <cmath>
#include <limits>

#include "constrain/stage_mask.h"
#include "kiln/constraint.h"
#include "kiln/error.h"
#include "kiln/sampling.h"

namespace kiln {

namespace {

class GrammarStage : public SamplerStage {
public:
    GrammarStage(const Grammar& grammar, const TokenVocabulary& vocab) : vocab_(vocab), matcher_(grammar, vocab) {}

    std::string_view name() const override { return "grammar"; }

    void apply(Candidates& c) override {
        matcher_.fill_allowed(mask_);
        if (mask_.count() == 0) {
            // Past an accepted end of generation (generation that ignores it) only
            // more of it may follow; anything else would break the match.
            if (!matcher_.is_terminated()) throw Error("the constraint allows no token at this point", ErrorKind::Internal);
            for (TokenId id : vocab_.end_of_generation_ids()) mask_.allow(id);
        }
        constrain::keep_allowed(mask_, c);
    }

    void accept(int32_t token) override {
        if (matcher_.is_terminated()) return;
        // The chain picked from the allowed tokens, so the matcher takes it.
        if (!matcher_.accept_token(token))
            throw Error("token " + std::to_string(token) + " was generated against the constraint", ErrorKind::Internal);
    }

    void reset() override { matcher_.reset(); }

private:
    TokenVocabulary vocab_;
    GrammarMatcher matcher_;
    TokenMask mask_;
};

}  // namespace

std::unique_ptr<SamplerStage> grammar_stage(const Grammar& grammar, const TokenVocabulary& vocab) {
    return std::make_unique<GrammarStage>(grammar, vocab);
}

}  // namespace kiln
