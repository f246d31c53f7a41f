#include "kiln/engine.h"
#include "kiln/error.h"

namespace kiln {

Session::Session(std::shared_ptr<const Model> model, const ContextOptions& options) {
    ContextOptions one = options;
    one.n_seq_max = 1;
    engine_ = std::make_unique<Engine>(std::move(model), one);
}

Session::~Session() = default;

const Model& Session::model() const { return engine_->model(); }
const Tokenizer& Session::tokenizer() const { return engine_->model().tokenizer(); }
Context& Session::context() { return engine_->context(); }
Engine& Session::engine() { return *engine_; }
void Session::reset() { engine_->clear(); }
int Session::prefill(std::span<const TokenId> prompt) { return engine_->prefill(prompt); }

GenerationResult Session::generate(std::span<const TokenId> prompt, const GenerateOptions& options,
                                   const TokenCallback& on_token, std::unique_ptr<SamplerStage> constraint) {
    const SeqId seq = engine_->submit(prompt, options, on_token, std::move(constraint));
    try {
        while (!engine_->finished(seq)) engine_->step();
    } catch (...) {
        engine_->cancel(seq);
        throw;
    }
    return engine_->result(seq);
}

}  // namespace kiln
