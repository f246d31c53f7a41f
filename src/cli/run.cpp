// kiln run [-m FILE] -p TEXT [-n N] [--temp T] ...: raw completion. stdout carries
// only the generated text, streamed; figures go to stderr with --verbose.
// --parallel N --output-prefix P: N completions of the prompt at once, with seeds
// S, S+1, ..., each written to P.i.txt exactly as `kiln run --seed S+i` prints it.
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

#include "commands.h"
#include "common.h"
#include "generation_options.h"
#include "kiln/constraint.h"
#include "kiln/engine.h"
#include "kiln/error.h"

namespace kiln::cli {

int cmd_run(int argc, char** argv) {
    CLI::App app{"Complete a prompt (raw text, no chat template)", "run"};
    GenerationFlags flags;
    flags.add_to(app);
    std::string prompt, prompt_file;
    bool no_special = false;
    int parallel = 1;
    std::string output_prefix, json_schema_file, grammar_file, regex;
    app.add_option("-p,--prompt", prompt, "prompt text");
    app.add_option("-f,--file", prompt_file, "read the prompt from a file");
    app.add_flag("--no-special", no_special, "treat special-token text in the prompt as plain text");
    app.add_option("--parallel", parallel, "completions generated together (seeds S, S+1, ...)")->check(CLI::Range(1, 1024));
    app.add_option("--output-prefix", output_prefix, "with --parallel: write completion i to PREFIX.i.txt");
    auto* schema_opt = app.add_option("--json-schema", json_schema_file, "constrain the output to a JSON Schema (a file)");
    auto* grammar_opt = app.add_option("--grammar", grammar_file, "constrain the output to a GBNF grammar (a file)");
    auto* regex_opt = app.add_option("--regex", regex, "constrain the output to a regular expression");
    schema_opt->excludes(grammar_opt)->excludes(regex_opt);
    grammar_opt->excludes(regex_opt);
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    if (!prompt_file.empty()) prompt = read_text_file(prompt_file);
    if (prompt.empty()) throw Error("no prompt: give -p TEXT or -f FILE");
    if (parallel > 1 && output_prefix.empty()) throw Error("--parallel " + std::to_string(parallel) + " needs --output-prefix");

    const ResolvedModel resolved = resolve_model_full(flags.model);
    flags.apply_tuned(app);
    if (resolved.preset) flags.apply_preset(*resolved.preset, app);
    const std::string path = resolved.path;
    check_load_fits(path, flags.n_ctx, parallel, flags.kv_type, flags.n_batch, flags.memory_budget,
                    flags.draft_model.empty() ? "" : resolve_model(flags.draft_model), bytes_if_set(flags.experts_memory));
    auto model = Model::load(path, load_options(flags.experts_memory));
    for (const auto& note : model->load_notes())
        if (note.find("converted") != std::string::npos) std::fprintf(stderr, "note: %s\n", note.c_str());
    EncodeOptions eo;
    eo.parse_special = !no_special;
    std::vector<TokenId> tokens = model->tokenizer().encode(prompt, eo);
    // The constraint, compiled before anything is generated: a refused construct
    // is an error here, never an unconstrained reply.
    std::optional<Grammar> grammar;
    if (!json_schema_file.empty()) grammar = Grammar::from_json_schema(read_text_file(json_schema_file));
    if (!grammar_file.empty()) grammar = Grammar::from_gbnf(read_text_file(grammar_file));
    if (!regex.empty()) grammar = Grammar::from_regex(regex);
    std::optional<TokenVocabulary> vocab;
    if (grammar) vocab = TokenVocabulary::from_tokenizer(model->tokenizer());
    auto constraint = [&]() -> std::unique_ptr<SamplerStage> { return grammar ? grammar_stage(*grammar, *vocab) : nullptr; };
    ContextOptions co = flags.context();
    co.n_seq_max = parallel;
    Engine engine(model, co);
    flags.attach_draft_model(engine);
    if (flags.verbose) {
        const Context& ctx = engine.context();
        std::fprintf(stderr, "model %s (%s), loaded in %.3f s\n", path.c_str(), model->architecture().c_str(),
                     model->load_seconds());
        for (const auto& note : model->load_notes())
            if (note.find("converted") == std::string::npos) std::fprintf(stderr, "note: %s\n", note.c_str());
        std::fprintf(stderr, "context %d tokens, KV cache %s: %.1f KiB per position, %.1f MiB allocated; %d threads\n",
                     ctx.n_ctx(), flags.kv_type.c_str(), ctx.kv_bytes_per_position() / 1024.0, ctx.memory_bytes() / 1048576.0,
                     ctx.n_threads());
        if (const Model* draft = engine.draft_model())
            std::fprintf(stderr, "draft model %s (%s), loaded in %.3f s, its context %.1f MiB\n", draft->path().c_str(),
                         draft->architecture().c_str(), draft->load_seconds(), engine.draft_memory_bytes() / 1048576.0);
        std::fprintf(stderr, "prompt %zu tokens, seed %llu\n", tokens.size(),
                     static_cast<unsigned long long>(flags.resolved_seed()));
    }
    GenerateOptions go;
    go.max_tokens = flags.n_predict < 0 ? -1 : flags.n_predict;
    go.sampling = flags.sampling();
    go.stop = flags.stop;
    go.ignore_eos = flags.ignore_eos;
    go.cancel = &install_interrupt_handler();
    go.spec = flags.speculation();
    auto report = [&](const GenerationResult& r) {
        std::fprintf(stderr, "finish: %s; prompt %d tokens in %.3f s (%.1f t/s); generated %d tokens in %.3f s (%.1f t/s)\n",
                     std::string(finish_reason_name(r.finish)).c_str(), r.prompt_tokens, r.prefill_seconds,
                     r.prefill_seconds > 0 ? (r.prompt_tokens - r.reused_tokens) / r.prefill_seconds : 0.0,
                     r.completion_tokens, r.decode_seconds,
                     r.decode_seconds > 0 ? r.completion_tokens / r.decode_seconds : 0.0);
        std::fprintf(stderr, "%s\n", spec_report(r.spec, flags.spec).c_str());
    };
    if (output_prefix.empty()) {
        const SeqId seq = engine.submit(tokens, go, [](const TokenEvent& e) {
            if (!e.text.empty()) {
                std::fwrite(e.text.data(), 1, e.text.size(), stdout);
                std::fflush(stdout);
            }
            return true;
        }, constraint());
        while (!engine.finished(seq)) engine.step();
        std::fputc('\n', stdout);
        if (flags.verbose) report(engine.result(seq));
        return 0;
    }
    // The first completion evaluates the prompt; the others then copy its cells
    // (batch invariance: the same logits as evaluating it themselves).
    std::vector<SeqId> seqs;
    for (int i = 0; i < parallel; ++i) {
        GenerateOptions gi = go;
        gi.sampling.seed = go.sampling.seed + static_cast<uint64_t>(i);
        seqs.push_back(engine.submit(tokens, gi, nullptr, constraint()));
        if (i == 0)
            while (engine.busy() && engine.context().seq_length(seqs[0]) < static_cast<int64_t>(tokens.size())) engine.step();
    }
    while (engine.busy()) engine.step();
    for (int i = 0; i < parallel; ++i) {
        const GenerationResult& r = engine.result(seqs[static_cast<size_t>(i)]);
        const std::string file = output_prefix + "." + std::to_string(i) + ".txt";
        std::ofstream out(file, std::ios::binary);
        out << r.text << '\n';
        if (!out) throw Error(file + ": cannot write");
        if (flags.verbose) {
            std::fprintf(stderr, "%s: seed %llu, ", file.c_str(), static_cast<unsigned long long>(go.sampling.seed + static_cast<uint64_t>(i)));
            report(r);
        }
    }
    return 0;
}

}  // namespace kiln::cli
