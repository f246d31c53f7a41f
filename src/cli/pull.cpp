// kiln pull NAME: downloads a model (kiln/pull.h) — hf:OWNER/REPO[:QUANT|/FILE]
// into the Hugging Face hub cache, or an https:// URL into the kiln folder —
// with a progress bar, resuming a partial download; prints the name -m takes.
#include <unistd.h>

#include <cstdio>

#include "commands.h"
#include "common.h"
#include "kiln/error.h"
#include "kiln/pull.h"

namespace kiln::cli {

int cmd_pull(int argc, char** argv) {
    CLI::App app{"Download a model: hf:OWNER/REPO[:QUANT|/FILE] (Hugging Face, $HF_ENDPOINT, $HF_TOKEN) or an https:// URL",
                 "pull"};
    std::string name;
    PullOptions o = PullOptions::from_environment();
    bool quiet = false;
    app.add_option("model", name, "hf:OWNER/REPO, hf:OWNER/REPO:QUANT, hf:OWNER/REPO/FILE, or an https:// URL")->required();
    app.add_option("--revision", o.revision, "the hub revision (branch, tag or commit)");
    app.add_option("--sha256", o.sha256, "a URL download's expected SHA-256 (the hub's files are always checked)");
    app.add_flag("-q,--quiet", quiet, "no progress");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    const bool tty = isatty(STDERR_FILENO);
    bool line_open = false;
    if (!quiet)
        o.progress = [&](const PullProgress& p) {
            if (p.finished) {
                std::fprintf(stderr, "%s%s  %s  ok\n", tty && line_open ? "\r\033[K" : "", p.file.c_str(),
                             human_bytes(p.total).c_str());
                line_open = false;
                return;
            }
            if (!tty) {  // a log: one line when a fetch starts
                if (p.seconds == 0)
                    std::fprintf(stderr, "%s  %s%s\n", p.file.c_str(), p.total ? human_bytes(p.total).c_str() : "size unknown",
                                 p.resumed_at ? (", resuming at " + human_bytes(p.resumed_at)).c_str() : "");
                return;
            }
            const double rate = p.seconds > 0 ? static_cast<double>(p.done - p.resumed_at) / p.seconds : 0;
            std::fprintf(stderr, "\r\033[K%s  %5.1f%%  %s / %s  %s/s", p.file.c_str(),
                         p.total ? 100.0 * static_cast<double>(p.done) / static_cast<double>(p.total) : 0.0,
                         human_bytes(p.done).c_str(), p.total ? human_bytes(p.total).c_str() : "?",
                         human_bytes(static_cast<uint64_t>(rate)).c_str());
            line_open = true;
        };
    try {
        const PullResult r = pull_model(name, o);
        if (line_open) std::fputc('\n', stderr);
        if (!quiet && r.bytes_fetched == 0) std::fprintf(stderr, "already downloaded\n");
        for (const std::string& p : r.paths) std::fprintf(stderr, "%s\n", p.c_str());
        std::printf("%s\n", r.name.c_str());
        return 0;
    } catch (const Error& e) {
        if (line_open) std::fputc('\n', stderr);
        std::fprintf(stderr, "kiln pull: %s\n", e.what());
        return 1;
    }
}

}  // namespace kiln::cli
