// kiln embed -m FILE (--text T ... | --file F | --jsonl F) [--normalize none|l2|l1|maxabs|pN]
//            [--pooling P] [--dimensions N] [--truncate] [--json]
// One vector per input (kiln/embedding.h): a line of values each, or with
// --json the OpenAI embeddings shape {"data": [{"index", "embedding"}], "usage"}.
#include <charconv>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "kiln/embedding.h"
#include "kiln/error.h"
#include "kiln/model.h"

namespace kiln::cli {

namespace {

// --file: one input per line (a trailing newline makes no empty input; empty lines are refused).
std::vector<std::string> read_lines(const std::string& path) {
    std::vector<std::string> out;
    std::string text = read_text_file(path), line;
    size_t start = 0;
    while (start < text.size()) {
        size_t nl = text.find('\n', start);
        if (nl == std::string::npos) nl = text.size();
        line = text.substr(start, nl - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) throw Error(path + ": line " + std::to_string(out.size() + 1) + " is empty");
        out.push_back(line);
        start = nl + 1;
    }
    return out;
}

// --jsonl: one JSON value per line, a string or an object with a string "text".
std::vector<std::string> read_jsonl(const std::string& path) {
    std::vector<std::string> out;
    std::ifstream in(path);
    if (!in) throw Error("cannot read " + path);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        nlohmann::json j;
        try {
            j = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
            throw Error(path + ": line " + std::to_string(n) + ": not JSON (" + e.what() + ")");
        }
        if (j.is_string()) {
            out.push_back(j.get<std::string>());
        } else if (j.is_object() && j.contains("text") && j["text"].is_string()) {
            out.push_back(j["text"].get<std::string>());
        } else {
            throw Error(path + ": line " + std::to_string(n) + ": expected a string or an object with a string \"text\"");
        }
    }
    return out;
}

// The shortest text that reads back as the same float (JSON numbers as well).
std::string float_text(float v) {
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    return std::string(buf, r.ptr);
}

void append_values(std::string& out, const float* v, size_t n) {
    out += '[';
    for (size_t j = 0; j < n; ++j) {
        if (j) out += ',';
        out += float_text(v[j]);
    }
    out += ']';
}

}  // namespace

int cmd_embed(int argc, char** argv) {
    CLI::App app{"Embeddings of texts (an embedding model: bert, or a file that sets a pooling type)", "embed"};
    std::string model, file, jsonl, normalize = "l2", pooling;
    std::vector<std::string> texts;
    bool json = false, truncate = false;
    int dimensions = 0, n_threads = 0, n_ctx = 0;
    app.add_option("-m,--model", model, "GGUF file or model name");
    auto* t = app.add_option("--text", texts, "a text to embed (repeatable)");
    auto* f = app.add_option("--file", file, "a file with one text per line");
    auto* l = app.add_option("--jsonl", jsonl, "a file with one JSON string (or {\"text\": ...}) per line");
    t->excludes(f)->excludes(l);
    f->excludes(l);
    app.add_option("--normalize", normalize, "none | l2 (default) | l1 | maxabs | pN");
    app.add_option("--pooling", pooling, "none | mean | cls | last | rank (default: the file's)");
    app.add_option("--dimensions", dimensions, "keep the first N values and normalize them (Matryoshka)");
    app.add_flag("--truncate", truncate, "cut inputs longer than the context instead of failing");
    app.add_flag("--json", json, "print one JSON object in the OpenAI embeddings shape");
    app.add_option("-t,--threads", n_threads, "threads (default: all cores)");
    app.add_option("-c,--ctx-size", n_ctx, "tokens one input may have (default: the model's trained context)");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    if (t->count()) {
    } else if (f->count()) {
        texts = read_lines(file);
    } else if (l->count()) {
        texts = read_jsonl(jsonl);
    } else {
        std::fprintf(stderr, "kiln embed: give --text, --file or --jsonl\n");
        return 1;
    }
    if (texts.empty()) throw Error("kiln embed: no inputs");

    EmbedOptions o;
    o.normalize = parse_normalization(normalize, o.p);
    if (!pooling.empty()) o.pooling = parse_pooling(pooling);
    o.truncate = truncate;
    o.dimensions = dimensions;
    auto m = Model::load(resolve_model(model));
    if (!m->is_embedding_model() && !o.pooling)
        throw Error(m->path() + ": architecture '" + m->architecture() +
                    "' is a generative model whose file sets no pooling type; give --pooling (last or mean) to embed with it");
    Embedder embedder(m, {.n_ctx = n_ctx, .n_threads = n_threads});
    const std::vector<Embedding> out = embedder.embed_texts(texts, o);
    const bool per_token = embedder.pooling(o) == Pooling::None;
    const size_t n_embd = static_cast<size_t>(embedder.n_embd());

    if (json) {
        // Written by hand: nlohmann would print each float widened to 17 digits.
        std::string data;
        int64_t tokens = 0;
        for (size_t i = 0; i < out.size(); ++i) {
            const std::vector<float>& v = out[i].values;
            data += std::string(i ? "," : "") + "{\"object\":\"embedding\",\"index\":" + std::to_string(i) + ",\"embedding\":";
            if (per_token) {
                data += '[';
                for (size_t r = 0; r * n_embd < v.size(); ++r) {
                    if (r) data += ',';
                    append_values(data, v.data() + r * n_embd, n_embd);
                }
                data += ']';
            } else {
                append_values(data, v.data(), v.size());
            }
            data += '}';
            tokens += out[i].n_tokens;
        }
        const nlohmann::json usage = {{"prompt_tokens", tokens}, {"total_tokens", tokens}};
        std::printf("{\"object\":\"list\",\"data\":[%s],\"model\":%s,\"usage\":%s}\n", data.c_str(),
                    nlohmann::json(m->path()).dump().c_str(), usage.dump().c_str());
        return 0;
    }
    // One line of values per input (per token with pooling none, each after its input's "# i" line).
    for (size_t i = 0; i < out.size(); ++i) {
        const std::vector<float>& v = out[i].values;
        const size_t width = per_token ? n_embd : v.size();
        if (per_token) std::printf("# %zu\n", i);
        for (size_t r = 0; r * width < v.size(); ++r) {
            for (size_t j = 0; j < width; ++j) std::printf("%s%s", j ? " " : "", float_text(v[r * width + j]).c_str());
            std::printf("\n");
        }
    }
    return 0;
}

}  // namespace kiln::cli
