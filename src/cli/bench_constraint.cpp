// kiln bench --json-schema FILE: what a constraint costs in generation. Greedy
// decoding of the same prompt with and without the schema's grammar, in
// interleaved rounds, the free run as long as the constrained one (which ends
// when its document is complete); the figure is the ratio of the median decode
// rates (tokens over decode time). The Grammar is compiled once, as a server
// keeping a schema would: rounds after the first start with a warm walker.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/constraint.h"
#include "kiln/engine.h"
#include "kiln/system.h"

namespace kiln::cli {

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int bench_constraint(std::shared_ptr<const Model> model, const std::string& schema_file, int n_gen, int reps, int n_threads,
                     bool json) {
    const auto t0 = std::chrono::steady_clock::now();
    const Grammar grammar = Grammar::from_json_schema(read_text_file(schema_file));
    const auto t1 = std::chrono::steady_clock::now();
    const TokenVocabulary vocab = TokenVocabulary::from_tokenizer(model->tokenizer());
    const auto t2 = std::chrono::steady_clock::now();
    ContextOptions co;
    co.n_ctx = 64 + n_gen;
    co.n_threads = n_threads;
    Session session(model, co);
    const std::vector<TokenId> prompt = model->tokenizer().encode("A JSON document:\n");
    GenerateOptions go;
    go.max_tokens = n_gen;
    go.sampling = SamplingParams::greedy();
    go.spec.mode = SpecMode::Off;  // one token per step on both sides: the figure is the constraint's cost
    std::vector<double> free_rate, constrained_rate;
    int constrained_tokens = 0;
    for (int r = 0; r <= reps; ++r) {  // r == 0 is the warm-up
        // The constrained run ends with its document; the free one then decodes
        // exactly as many tokens (ignoring end of generation), so both rates are
        // over the same positions: a longer free run would average in later,
        // slower positions and hide the first steps' fixed costs.
        int n_constrained = n_gen;
        for (int constrained = 1; constrained >= 0; --constrained) {
            GenerateOptions o = go;
            o.ignore_eos = !constrained;
            if (!constrained) o.max_tokens = n_constrained;
            session.reset();
            GenerationResult g = session.generate(prompt, o, nullptr, constrained ? grammar_stage(grammar, vocab) : nullptr);
            if (constrained) n_constrained = std::max(2, g.completion_tokens);
            if (r == 0 || g.decode_seconds <= 0 || g.completion_tokens < 2) continue;
            const double rate = (g.completion_tokens - 1) / g.decode_seconds;  // the first token is the prompt's
            (constrained ? constrained_rate : free_rate).push_back(rate);
            if (constrained) constrained_tokens = g.completion_tokens;
        }
    }
    const double f = median(free_rate), c = median(constrained_rate);
    const double compile_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const double vocab_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
    if (json) {
        nlohmann::json j = {{"schema", schema_file},          {"n_gen", n_gen},
                            {"reps", reps},                   {"kernels", kernel_level()},
                            {"compile_ms", compile_ms},       {"vocabulary_ms", vocab_ms},
                            {"free_tokens_per_s", f},         {"constrained_tokens_per_s", c},
                            {"constrained_tokens", constrained_tokens},
                            {"ratio", f > 0 ? c / f : 0.0}};
        std::printf("%s\n", j.dump(2).c_str());
        return 0;
    }
    std::printf("schema %s: compiled in %.2f ms, vocabulary trie %.1f ms\n", schema_file.c_str(), compile_ms, vocab_ms);
    std::printf("greedy decode, median of %d rounds: free %.1f t/s, constrained %.1f t/s (%d tokens), ratio %.3f\n", reps, f, c,
                constrained_tokens, f > 0 ? c / f : 0.0);
    return 0;
}

}  // namespace kiln::cli
