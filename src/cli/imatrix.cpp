// kiln imatrix -m MODEL -f TEXT -o OUT [-c 512] [--chunks N] [--process-output] [-t N]
//
// The importance matrix of a model over a text, as llama.cpp's llama-imatrix
// computes it (kiln/imatrix.h), written in its GGUF format: `kiln quantize
// --imatrix OUT` and llama-quantize read it. The text is tokenized once (with
// BOS where the vocabulary adds one) and cut into chunks of -c tokens.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>

#include "commands.h"
#include "common.h"
#include "kiln/error.h"
#include "kiln/imatrix.h"
#include "kiln/model.h"

namespace kiln::cli {

int cmd_imatrix(int argc, char** argv) {
    CLI::App app{"Importance matrix of a model over a text (llama-imatrix's GGUF format), for kiln quantize --imatrix", "imatrix"};
    std::string path, text_file, out_path;
    ImatrixOptions opt;
    app.add_option("-m,--model", path, "GGUF file or catalog name (best an F16 / BF16 / Q8_0 file)");
    app.add_option("-f,--file", text_file, "the text (UTF-8)")->required();
    app.add_option("-o,--output", out_path, "the imatrix file to write")->required();
    app.add_option("-c,--ctx-size", opt.n_ctx, "tokens per chunk (default 512)")->check(CLI::Range(16, 1 << 20));
    app.add_option("--chunks", opt.n_chunks, "use only the first N chunks (default: all)")->check(CLI::Range(1, 1 << 30));
    app.add_flag("--process-output", opt.process_output, "also collect output.weight");
    app.add_option("-t,--threads", opt.n_threads, "threads (0: physical cores)")->check(CLI::Range(0, 1024));
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    path = resolve_model(path);
    auto model = Model::load(path);
    const Tokenizer& tok = model->tokenizer();
    const std::vector<TokenId> tokens =
        tok.encode(read_text_file(text_file), EncodeOptions{.add_special = true, .parse_special = false});
    opt.dataset = text_file;
    const bool tty = isatty(STDERR_FILENO);
    const auto t0 = std::chrono::steady_clock::now();
    std::fprintf(stderr, "imatrix: %s over %s: %zu tokens, chunks of %d\n", path.c_str(), text_file.c_str(), tokens.size(), opt.n_ctx);
    const Imatrix im = compute_imatrix(model, tokens, opt, [&](int done, int total) {
        if (!tty) return;
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        std::fprintf(stderr, "\r\033[K[%d/%d] %.1f s, about %.0f s left", done, total, s, s / done * (total - done));
    });
    if (tty) std::fprintf(stderr, "\r\033[K");
    im.save(out_path);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "imatrix: %zu entries over %u chunks of %u tokens written to %s (%.1f s)\n", im.entries.size(), im.chunk_count,
                 im.chunk_size, out_path.c_str(), s);
    return 0;
}

}  // namespace kiln::cli
