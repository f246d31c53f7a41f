// kiln rerank -m FILE --query Q (--documents F | --document D ...) [--top-n N] [--truncate] [--json]
// A reranker's (a cross-encoder with a classification head) score of each
// document for the query, most relevant first: "score<TAB>index<TAB>document"
// lines, or with --json {"results": [{"index", "relevance_score", "document"}], "usage"}.
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/embedding.h"
#include "kiln/error.h"
#include "kiln/model.h"

namespace kiln::cli {

int cmd_rerank(int argc, char** argv) {
    CLI::App app{"Rank documents for a query with a reranker (a cross-encoder with a classification head)", "rerank"};
    std::string model, query, file;
    std::vector<std::string> docs;
    int top_n = 0, n_threads = 0;
    bool json = false, truncate = false;
    app.add_option("-m,--model", model, "GGUF file or model name (a reranker: rank pooling, cls.output tensors)");
    app.add_option("--query", query, "the query")->required();
    auto* f = app.add_option("--documents", file, "a file with one document per line");
    auto* d = app.add_option("--document", docs, "a document (repeatable)");
    f->excludes(d);
    app.add_option("--top-n", top_n, "print only the N most relevant (default: all)")->check(CLI::Range(0, 1 << 20));
    app.add_flag("--truncate", truncate, "cut pairs longer than the context instead of failing");
    app.add_flag("--json", json, "print one JSON object (Jina / llama-server rerank shape)");
    app.add_option("-t,--threads", n_threads, "threads (default: all cores)");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    if (f->count()) {
        const std::string text = read_text_file(file);
        size_t start = 0;
        while (start < text.size()) {
            size_t nl = text.find('\n', start);
            if (nl == std::string::npos) nl = text.size();
            std::string line = text.substr(start, nl - start);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (!line.empty()) docs.push_back(line);
            start = nl + 1;
        }
    }
    if (docs.empty()) {
        std::fprintf(stderr, "kiln rerank: give --documents or --document\n");
        return 1;
    }
    auto m = Model::load(resolve_model(model));
    Embedder embedder(m, {.n_threads = n_threads});
    int64_t tokens = 0;
    const std::vector<float> scores = embedder.rerank(query, docs, truncate, &tokens);
    std::vector<size_t> order(docs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    if (top_n > 0 && static_cast<size_t>(top_n) < order.size()) order.resize(static_cast<size_t>(top_n));
    if (json) {
        nlohmann::json results = nlohmann::json::array();
        for (size_t i : order)
            results.push_back({{"index", i}, {"relevance_score", scores[i]}, {"document", {{"text", docs[i]}}}});
        std::printf("%s\n", nlohmann::json({{"results", results}, {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}})
                                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                                .c_str());
        return 0;
    }
    for (size_t i : order) std::printf("%.6g\t%zu\t%s\n", static_cast<double>(scores[i]), i, docs[i].c_str());
    return 0;
}

}  // namespace kiln::cli
