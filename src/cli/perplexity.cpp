// kiln perplexity -m MODEL -f TEXT [-c 512] [-b N] [--chunks N] [-t N] [--flash-attn on|off] [--json]
//                 [--kl-divergence-base F [--kl-divergence]]
//
// Perplexity as llama.cpp's llama-perplexity computes it, so the two can be
// compared number for number: the whole text is tokenized once (with BOS where
// the vocabulary adds one), cut into chunks of -c tokens; each chunk is
// evaluated from an empty memory with its first token replaced by BOS, and
// only the second half of each chunk is scored (every scored token has at
// least c/2 tokens of context). The running estimate after each chunk is
// printed as [i]PPL, then the final estimate with its standard error.
//
// --kl-divergence-base F alone also writes every scored position's
// log-probabilities to F (llama-perplexity's file format, logprob_file.h);
// with --kl-divergence it reads F instead (its tokens and chunking; no -f) and
// reports how far this model's distributions are from that base model's
// (kl_divergence.h): the way to measure what a quantization costs.
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/model.h"
#include "kl_divergence.h"
#include "logprob_file.h"

namespace kiln::cli {

namespace {

// log p(token) from one row of logits, in double like llama-perplexity (the sum
// of exponentials is accumulated in double from float exponentials).
double log_prob(std::span<const float> logits, TokenId token) {
    float max_logit = logits[0];
    for (float v : logits) max_logit = std::max(max_logit, v);
    double sum_exp = 0.0;
    for (float v : logits) sum_exp += std::exp(v - max_logit);
    return static_cast<double>(logits[static_cast<size_t>(token)] - max_logit) - std::log(sum_exp);
}

}  // namespace

int cmd_perplexity(int argc, char** argv) {
    CLI::App app{"Perplexity of a model over a text, computed as llama.cpp's llama-perplexity does", "perplexity"};
    std::string path, text_file, base_file;
    int n_ctx = 512, n_batch = 0, n_chunks = -1, n_threads = 0;
    bool json = false, kl = false;
    app.add_option("-m,--model", path, "GGUF file or catalog name (default: the model setup installed)");
    auto* file_opt = app.add_option("-f,--file", text_file, "the text (UTF-8)");
    auto* ctx_opt = app.add_option("-c,--ctx-size", n_ctx, "tokens per chunk; the second half of each is scored (default 512)")
                        ->check(CLI::Range(8, 1 << 20));
    app.add_option("-b,--batch-size", n_batch, "tokens per forward pass (default: the chunk)")->check(CLI::Range(0, 1 << 20));
    app.add_option("--chunks", n_chunks, "score only the first N chunks (default: all)")->check(CLI::Range(1, 1 << 30));
    app.add_option("-t,--threads", n_threads, "threads (0: physical cores)")->check(CLI::Range(0, 1024));
    app.add_option("--kl-divergence-base", base_file,
                   "write the base model's log-probabilities to this file (llama-perplexity's format); with "
                   "--kl-divergence, read them from it");
    app.add_flag("--kl-divergence", kl, "compare with the base file's model: KL divergence, Δp, same top token (no -f)");
    app.add_flag("--json", json, "print one JSON object instead of llama-perplexity's text");
    std::string flash_attn = "off";
    app.add_option("--flash-attn", flash_attn,
                   "attention: off (the default: llama-perplexity -fa off's order) or on (streaming, as -fa on)")
        ->check(CLI::IsMember({"on", "off"}));
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    if (kl && base_file.empty()) throw Error("perplexity: --kl-divergence needs --kl-divergence-base FILE to read");
    if (kl && file_opt->count()) throw Error("perplexity: --kl-divergence takes its tokens from the base file; drop -f");
    if (!kl && !file_opt->count()) throw Error("perplexity: give the text with -f FILE");
    path = resolve_model(path);

    auto model = Model::load(path);
    const Tokenizer& tok = model->tokenizer();
    if (tok.add_eos())
        throw Error("perplexity: " + path + "'s vocabulary appends EOS to every text; chunks would not be plain text");
    std::vector<TokenId> tokens;
    std::optional<LogProbReader> reader;
    if (kl) {
        reader.emplace(base_file);
        if (reader->n_vocab() != static_cast<int>(model->n_vocab()))
            throw Error("perplexity: " + base_file + " was made with a vocabulary of " + std::to_string(reader->n_vocab()) +
                        " tokens, " + path + " has " + std::to_string(model->n_vocab()));
        if (ctx_opt->count() && n_ctx != reader->n_ctx())
            throw Error("perplexity: " + base_file + " was made with -c " + std::to_string(reader->n_ctx()) + ", not " +
                        std::to_string(n_ctx));
        n_ctx = reader->n_ctx();
        tokens = reader->tokens();
    } else {
        tokens = tok.encode(read_text_file(text_file), EncodeOptions{.add_special = true, .parse_special = false});
        if (static_cast<int64_t>(tokens.size()) < 2LL * n_ctx)
            throw Error("perplexity: " + text_file + " has " + std::to_string(tokens.size()) + " tokens; -c " +
                        std::to_string(n_ctx) + " needs at least " + std::to_string(2LL * n_ctx));
    }
    if (n_ctx > model->n_ctx_train())
        throw Error("perplexity: -c " + std::to_string(n_ctx) + " is above the model's context of " +
                    std::to_string(model->n_ctx_train()));
    const int n_chunk_max = kl ? reader->n_chunk() : static_cast<int>(tokens.size() / static_cast<size_t>(n_ctx));
    const int n_chunk = n_chunks < 0 ? n_chunk_max : std::min(n_chunks, n_chunk_max);
    const bool add_bos = tok.add_bos() && tok.special().bos != k_no_token;

    ContextOptions co;
    co.n_ctx = n_ctx;
    co.n_batch = n_batch > 0 ? std::min(n_batch, n_ctx) : n_ctx;
    co.n_threads = n_threads;
    co.flash_attn = flash_attn == "on";
    Context ctx(model, co);
    const bool progress = !json && isatty(STDERR_FILENO);
    const int first = n_ctx / 2;
    const int n_scored = n_ctx - 1 - first;  // per chunk
    std::fprintf(stderr, "perplexity: %zu tokens, %d chunks of %d, scoring the last %d of each, %d threads\n", tokens.size(),
                 n_chunk, n_ctx, n_scored, ctx.n_threads());

    std::optional<LogProbWriter> writer;
    if (!kl && !base_file.empty()) writer.emplace(base_file, n_ctx, static_cast<int>(model->n_vocab()), n_chunk, tokens);
    const size_t stride = row_stride(static_cast<int>(model->n_vocab()));
    std::vector<uint16_t> rows;
    KlDivergence kld;
    if (kl && !json)
        std::printf("chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p\n");

    double nll = 0, nll2 = 0;
    int64_t count = 0;
    std::vector<double> estimates;
    nlohmann::json kl_chunks = nlohmann::json::array();
    Batch batch;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n_chunk; ++i) {
        const size_t start = static_cast<size_t>(i) * static_cast<size_t>(n_ctx);
        ctx.clear();
        batch.clear();
        for (int k = 0; k < n_ctx; ++k) {
            const TokenId t = k == 0 && add_bos ? tok.special().bos : tokens[start + static_cast<size_t>(k)];
            batch.add(t, k, 0, k >= first);
        }
        ctx.decode(batch);
        if (kl) reader->read_rows(rows);
        if (writer) rows.assign(static_cast<size_t>(n_scored) * stride, 0);
        // Output j is position first + j; it predicts the token after it.
        for (int j = 0; j < n_scored; ++j) {
            const TokenId next = tokens[start + static_cast<size_t>(first + j + 1)];
            const std::span<uint16_t> row =
                rows.empty() ? std::span<uint16_t>() : std::span<uint16_t>(rows).subspan(static_cast<size_t>(j) * stride, stride);
            if (kl) {
                kld.add(ctx.logits(j), row.data(), next);
                continue;
            }
            const double v = writer ? encode_logprob_row(ctx.logits(j), next, row) : -log_prob(ctx.logits(j), next);
            nll += v;
            nll2 += v * v;
            ++count;
        }
        if (writer) writer->write_rows(rows);
        if (kl) {
            const nlohmann::json r = kld.running();
            kl_chunks.push_back(r);
            if (!json)
                std::printf("%4d    %9.4f ± %9.4f    %10.5f ± %10.5f    %10.5f ± %10.5f    %6.3f %%            %6.3f ± %6.3f %%\n",
                            i + 1, r["ppl"].get<double>(), r["ppl_error"].get<double>(), r["ln_ppl_ratio"].get<double>(),
                            r["ln_ppl_ratio_error"].get<double>(), r["kld"].get<double>(), r["kld_error"].get<double>(),
                            100 * r["rms_p_diff"].get<double>(), 100 * r["same_top"].get<double>(),
                            100 * r["same_top_error"].get<double>());
        } else {
            estimates.push_back(std::exp(nll / static_cast<double>(count)));
            if (!json) std::printf("[%d]%.4f,", i + 1, estimates.back());
        }
        std::fflush(stdout);
        if (progress) {
            const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            std::fprintf(stderr, "\r\033[Kperplexity: chunk %d/%d, %.1f s, about %.0f s left", i + 1, n_chunk, s,
                         s / (i + 1) * (n_chunk - i - 1));
        }
    }
    if (progress) std::fprintf(stderr, "\r\033[K");
    if (writer) writer->close();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (kl) {
        nlohmann::json s = kld.summary();
        if (json) {
            s["model"] = path;
            s["base_file"] = base_file;
            s["n_ctx"] = n_ctx;
            s["chunks"] = n_chunk;
            s["running"] = kl_chunks;
            s["seconds"] = seconds;
            std::printf("%s\n", s.dump(2).c_str());
        } else {
            std::printf("\n");
            print_kl_summary(s);
        }
        return 0;
    }
    const double mean = nll / static_cast<double>(count);
    const double ppl = std::exp(mean);
    const double var = nll2 / static_cast<double>(count) - mean * mean;
    const double stderr_ppl = var > 0 ? std::sqrt(var / static_cast<double>(count - 1)) * ppl : 0.0;
    if (json) {
        nlohmann::json out = {{"model", path}, {"file", text_file}, {"tokens", tokens.size()}, {"n_ctx", n_ctx},
                              {"chunks", n_chunk}, {"scored", count}, {"estimates", estimates}, {"ppl", ppl},
                              {"ppl_stderr", stderr_ppl}, {"seconds", seconds}};
        std::printf("%s\n", out.dump(2).c_str());
    } else {
        std::printf("\nFinal estimate: PPL = %.4f +/- %.5f\n", ppl, stderr_ppl);
        std::fprintf(stderr, "perplexity: %lld tokens scored in %.2f s (%.1f tokens/s evaluated)\n",
                     static_cast<long long>(count), seconds, n_chunk * n_ctx / seconds);
    }
    if (writer) std::fprintf(stderr, "perplexity: log-probabilities written to %s\n", base_file.c_str());
    return 0;
}

}  // namespace kiln::cli
