// kiln run [-m FILE] -p TEXT [-n N] [--temp T] ...: raw completion. stdout carries
// only the generated text, streamed; figures go to stderr with --verbose.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/generation_options.h"
#include "kiln/engine.h"
#include "kiln/error.h"

namespace kiln::cli {

int cmd_run(int argc, char** argv) {
    CLI::App app{"Complete a prompt (raw text, no chat template)", "run"};
    GenerationFlags flags;
    flags.add_to(app);
    std::string prompt, prompt_file;
    bool no_special = false;
    app.add_option("-p,--prompt", prompt, "prompt text");
    app.add_option("-f,--file", prompt_file, "read the prompt from a file");
    app.add_flag("--no-special", no_special, "treat special-token text in the prompt as plain text");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    if (!prompt_file.empty()) {
        std::ifstream in(prompt_file, std::ios::binary);
        if (!in) throw Error(prompt_file + ": cannot read");
        std::stringstream ss;
        ss << in.rdbuf();
        prompt = ss.str();
    }
    if (prompt.empty()) throw Error("no prompt: give -p TEXT or -f FILE");

    const std::string path = resolve_model(flags.model);
    auto model = Model::load(path);
    for (const auto& note : model->load_notes())
        if (note.find("converted") != std::string::npos) std::fprintf(stderr, "note: %s\n", note.c_str());
    Session session(model, flags.context());
    EncodeOptions eo;
    eo.parse_special = !no_special;
    std::vector<TokenId> tokens = model->tokenizer().encode(prompt, eo);
    if (flags.verbose) {
        const Context& ctx = session.context();
        std::fprintf(stderr, "model %s (%s), loaded in %.3f s\n", path.c_str(), model->architecture().c_str(),
                     model->load_seconds());
        for (const auto& note : model->load_notes())
            if (note.find("converted") == std::string::npos) std::fprintf(stderr, "note: %s\n", note.c_str());
        std::fprintf(stderr, "context %d tokens, KV cache %s: %.1f KiB per position, %.1f MiB allocated; %d threads\n",
                     ctx.n_ctx(), flags.kv_type.c_str(), ctx.kv_bytes_per_position() / 1024.0, ctx.kv_bytes() / 1048576.0,
                     ctx.n_threads());
        std::fprintf(stderr, "prompt %zu tokens, seed %llu\n", tokens.size(),
                     static_cast<unsigned long long>(flags.resolved_seed()));
    }
    GenerateOptions go;
    go.max_tokens = flags.n_predict < 0 ? -1 : flags.n_predict;
    go.sampling = flags.sampling();
    go.stop = flags.stop;
    go.ignore_eos = flags.ignore_eos;
    go.cancel = &install_interrupt_handler();
    GenerationResult r = session.generate(tokens, go, [](const TokenEvent& e) {
        if (!e.text.empty()) {
            std::fwrite(e.text.data(), 1, e.text.size(), stdout);
            std::fflush(stdout);
        }
        return true;
    });
    std::fputc('\n', stdout);
    if (flags.verbose)
        std::fprintf(stderr, "finish: %s; prompt %d tokens in %.3f s (%.1f t/s); generated %d tokens in %.3f s (%.1f t/s)\n",
                     std::string(finish_reason_name(r.finish)).c_str(), r.prompt_tokens, r.prefill_seconds,
                     r.prefill_seconds > 0 ? (r.prompt_tokens - r.reused_tokens) / r.prefill_seconds : 0.0,
                     r.completion_tokens, r.decode_seconds,
                     r.decode_seconds > 0 ? r.completion_tokens / r.decode_seconds : 0.0);
    return 0;
}

}  // namespace kiln::cli
