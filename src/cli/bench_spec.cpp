// kiln bench --spec MODE: what speculative decoding gives in generation.
// Greedy decoding of one prompt (by default an editing task, which copies its
// input: where drafts pay) with --spec off and with MODE, in interleaved rounds;
// the figures are the median decode rates (emitted tokens over decode time,
// drafting included), their ratio, and the drafts' counts and acceptance rate.
// Both sides must give the same text (speculation is lossless); a difference is
// reported as an error.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/chat.h"
#include "kiln/engine.h"
#include "kiln/error.h"
#include "kiln/system.h"

namespace kiln::cli {

namespace {

constexpr const char* k_default_prompt =
    "Rewrite the following text, replacing every 'cat' with 'dog' and changing nothing else.\n\n"
    "The cat sat on the mat by the door. Every morning the cat watched the birds in the garden, and every evening "
    "the cat slept by the fire. The neighbours said the cat was the calmest animal on the street, and the children "
    "brought the cat small presents: a ribbon, a ball of wool, a paper crown.";

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// The prompt in the model's chat template (a raw completion when it has none).
std::vector<TokenId> prompt_tokens(const std::shared_ptr<const Model>& model, const std::string& text) {
    EncodeOptions eo;
    eo.parse_special = true;
    try {
        ChatSession chat(model);
        chat.add_user(text);
        return model->tokenizer().encode(chat.render({}), eo);
    } catch (const Error&) {
        return model->tokenizer().encode(text);
    }
}

}  // namespace

int bench_spec(std::shared_ptr<const Model> model, const SpecBenchOptions& o) {
    ContextOptions co;
    co.n_threads = o.n_threads;
    Session session(model, co);
    if (!o.draft_model.empty()) session.engine().set_draft_model(Model::load(resolve_model(o.draft_model)));
    SpecOptions spec;
    spec.mode = o.mode == "off"     ? SpecMode::Off
                : o.mode == "ngram" ? SpecMode::Ngram
                : o.mode == "draft" ? SpecMode::Draft
                : o.mode == "mtp"   ? SpecMode::Mtp
                                    : SpecMode::Auto;
    spec.draft_max = o.draft_max;
    spec.draft_min = std::min(o.draft_min, o.draft_max);
    const std::string text = o.prompt_file.empty() ? std::string(k_default_prompt) : read_text_file(o.prompt_file);
    const std::vector<TokenId> prompt = prompt_tokens(model, text);
    if (static_cast<int64_t>(prompt.size()) + o.n_gen > session.context().n_ctx())
        throw Error("bench --spec: the prompt's " + std::to_string(prompt.size()) + " tokens and -n " + std::to_string(o.n_gen) +
                    " do not fit the context of " + std::to_string(session.context().n_ctx()));
    GenerateOptions go;
    go.max_tokens = o.n_gen;
    go.sampling = SamplingParams::greedy();
    std::vector<double> off_rate, on_rate, acceptance;
    SpecStats last;
    int tokens = 0;
    for (int r = 0; r <= o.reps; ++r) {  // r == 0 is the warm-up
        std::string off_text;
        for (int on = 0; on < 2; ++on) {
            GenerateOptions g = go;
            g.spec = spec;
            if (!on) g.spec.mode = SpecMode::Off;
            session.reset();
            const GenerationResult res = session.generate(prompt, g);
            if (!on) {
                off_text = res.text;
            } else if (res.text != off_text) {
                throw Error("bench --spec " + o.mode + ": the text differs from --spec off's (speculation must be lossless)",
                            ErrorKind::Internal);
            }
            if (r == 0 || res.decode_seconds <= 0 || res.completion_tokens < 2) continue;
            const double rate = (res.completion_tokens - 1) / res.decode_seconds;  // the first token is the prompt's
            (on ? on_rate : off_rate).push_back(rate);
            if (on) {
                acceptance.push_back(res.spec.acceptance());
                last = res.spec;
                tokens = res.completion_tokens;
            }
        }
    }
    const double f = median(off_rate), s = median(on_rate);
    const Model* draft = session.engine().draft_model();
    if (o.json) {
        nlohmann::json j = {{"model", model->path()},
                            {"draft_model", draft ? draft->path() : ""},
                            {"spec", o.mode},
                            {"n_gen", o.n_gen},
                            {"prompt_tokens", prompt.size()},
                            {"generated_tokens", tokens},
                            {"reps", o.reps},
                            {"threads", session.context().n_threads()},
                            {"kernels", kernel_level()},
                            {"off_tokens_per_s", f},
                            {"spec_tokens_per_s", s},
                            {"ratio", f > 0 ? s / f : 0.0},
                            {"drafted", last.drafted},
                            {"accepted", last.accepted},
                            {"acceptance", median(acceptance)},
                            {"steps", last.steps},
                            {"draft_steps", last.draft_steps}};
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("greedy decode of %zu prompt tokens + %d, median of %d interleaved rounds, %d threads, %s kernels%s%s\n",
                prompt.size(), tokens, o.reps, session.context().n_threads(), kernel_level().c_str(),
                draft ? ", draft model " : "", draft ? draft->path().c_str() : "");
    std::printf("| spec | t/s | ratio to off | drafted | accepted | acceptance | steps with a draft |\n|---|---|---|---|---|---|---|\n");
    std::printf("| off | %.1f | 1.000 | - | - | - | - |\n", f);
    std::printf("| %s | %.1f | %.3f | %d | %d | %.1f%% | %d of %d |\n", o.mode.c_str(), s, f > 0 ? s / f : 0.0, last.drafted,
                last.accepted, 100.0 * median(acceptance), last.draft_steps, last.steps);
    return 0;
}

}  // namespace kiln::cli
