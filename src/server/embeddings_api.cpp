// Embeddings routes: OpenAI's POST /v1/embeddings and Ollama's POST /api/embed,
// over the model's Embedder (kiln/embedding.h; one request at a time per model,
// its inputs batched as separate sequences).
//
// OpenAI: input is a string, an array of strings, an array of token ids or an
// array of such arrays; encoding_format float (default) or base64 (the f32
// values' little-endian bytes); dimensions (Matryoshka); an input longer than
// the context is a 400 naming both lengths unless "truncate": true (a kiln
// extension, as are "pooling" and "normalize"). Ollama: input a string or an
// array of strings, truncate defaults to true, as Ollama does.
// Reranking (a cross-encoder: rank pooling, classification head): Jina's /v1/rerank
// shape (query, documents, top_n, return_documents -> results of index and
// relevance_score, the raw score as llama-server gives it) or TEI's /rerank
// (query, texts, return_text, raw_scores -> [{index, score}], the score through a
// sigmoid unless raw_scores or the scores are already probabilities: a Qwen3
// reranker's P(yes)), most relevant first.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <httplib.h>

#include "kiln/embedding.h"
#include "kiln/error.h"
#include "loaded_model.h"
#include "request_fields.h"
#include "routes.h"

namespace kiln::server {

namespace {

constexpr size_t k_max_inputs = 2048;  // OpenAI's limit on inputs per request

std::string base64(const uint8_t* p, size_t n) {
    static const char k[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    out.reserve((n + 2) / 3 * 4);
    for (size_t i = 0; i < n; i += 3) {
        const uint32_t v = (static_cast<uint32_t>(p[i]) << 16) | (i + 1 < n ? static_cast<uint32_t>(p[i + 1]) << 8 : 0) |
                           (i + 2 < n ? p[i + 2] : 0);
        out += k[(v >> 18) & 63];
        out += k[(v >> 12) & 63];
        out += i + 1 < n ? k[(v >> 6) & 63] : '=';
        out += i + 2 < n ? k[v & 63] : '=';
    }
    return out;
}

// The options every embeddings request shares: the server's defaults, then the
// request's own pooling / normalize / dimensions / truncate.
EmbedOptions embed_options(const ServerState& state, const Json& body, bool truncate_default) {
    EmbedOptions o;
    try {
        const std::string norm = get_string(body, "normalize").value_or(state.options.embd_normalize);
        o.normalize = parse_normalization(norm, o.p);
    } catch (const Error& e) {
        throw ApiError(400, std::string("'normalize': ") + e.what(), "normalize");
    }
    const std::string pooling = get_string(body, "pooling").value_or(state.options.embd_pooling);
    if (!pooling.empty()) {
        try {
            o.pooling = parse_pooling(pooling);
        } catch (const Error& e) {
            throw ApiError(400, std::string("'pooling': ") + e.what(), "pooling");
        }
    }
    o.dimensions = static_cast<int>(get_int(body, "dimensions", 1, 1 << 20).value_or(0));
    o.truncate = get_bool(body, "truncate").value_or(truncate_default);
    return o;
}

// The model's Embedder (made on first use); 400 for a generative model that
// neither its file nor the request / server gives a pooling type.
Embedder& embedder_for(ServerState& state, LoadedModel& m, const EmbedOptions& o) {
    if (!m.model->is_embedding_model() && !o.pooling)
        throw ApiError(400, "model '" + m.name + "' is a generative model (architecture '" + m.model->architecture() +
                                "') whose file sets no pooling type: it cannot give embeddings (name a pooling, e.g. "
                                "\"pooling\": \"last\", or start the server with --pooling)",
                       "model", "model_not_supported");
    if (!m.embedder)
        m.embedder = std::make_unique<Embedder>(
            m.model, EmbedderOptions{.n_ctx = std::min(state.options.n_ctx, m.model->n_ctx_train()), .n_seq_max = std::max(8, state.options.parallel),
                                     .n_threads = state.options.n_threads});
    return *m.embedder;
}

void check_dimensions(const Embedder& e, const EmbedOptions& o) {
    if (o.dimensions > e.n_embd())
        throw ApiError(400, "'dimensions': " + std::to_string(o.dimensions) + " is more than the model's " +
                                std::to_string(e.n_embd()) + " dimensions",
                       "dimensions");
}

// OpenAI's input: a string, [string], [int] or [[int]].
std::vector<EmbedInput> openai_inputs(const Json& body, const Embedder& e) {
    const Json* in = field(body, "input");
    if (!in) throw ApiError(400, "'input' is required", "input");
    std::vector<EmbedInput> out;
    auto text = [&](const Json& s, const std::string& where) {
        const std::string t = s.get<std::string>();
        if (t.empty()) throw ApiError(400, "'" + where + "' is empty", "input");
        out.push_back({e.tokenize(t), {}});
    };
    auto ids = [&](const Json& a, const std::string& where) {
        EmbedInput x;
        for (const Json& v : a) {
            if (!v.is_number_integer()) throw ApiError(400, "'" + where + "': token ids must be integers", "input");
            const long long id = v.get<long long>();
            if (id < 0 || id >= e.model().n_vocab())
                throw ApiError(400, "'" + where + "': token id " + std::to_string(id) + " is outside the vocabulary (" +
                                        std::to_string(e.model().n_vocab()) + ")",
                               "input");
            x.tokens.push_back(static_cast<TokenId>(id));
        }
        if (x.tokens.empty()) throw ApiError(400, "'" + where + "' has no tokens", "input");
        out.push_back(std::move(x));
    };
    if (in->is_string()) {
        text(*in, "input");
    } else if (in->is_array() && !in->empty()) {
        if (in->size() > k_max_inputs)
            throw ApiError(400, "'input': " + std::to_string(in->size()) + " inputs, at most " + std::to_string(k_max_inputs), "input");
        if ((*in)[0].is_number_integer()) {
            ids(*in, "input");
        } else {
            for (size_t i = 0; i < in->size(); ++i) {
                const Json& x = (*in)[i];
                const std::string where = "input[" + std::to_string(i) + "]";
                if (x.is_string()) text(x, where);
                else if (x.is_array()) ids(x, where);
                else throw ApiError(400, "'" + where + "': expected a string or an array of token ids", "input");
            }
        }
    } else {
        throw ApiError(400, "'input': expected a string, an array of strings or token ids, or an array of such arrays", "input");
    }
    return out;
}

// The embeddings of the inputs; an over-long input without truncation is a 400 naming both lengths.
std::vector<Embedding> run(Embedder& e, LoadedModel& m, const std::vector<EmbedInput>& inputs, const EmbedOptions& o) {
    std::lock_guard lock(m.embed_mutex);
    try {
        return e.embed(std::span<const EmbedInput>(inputs), o);
    } catch (const Error& err) {
        if (err.kind() == ErrorKind::InvalidInput) throw ApiError(400, err.what(), "input");
        throw;
    }
}

}  // namespace

void handle_embeddings(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    const std::string format = get_string(body, "encoding_format").value_or("float");
    if (format != "float" && format != "base64")
        throw ApiError(400, "'encoding_format': expected float or base64, found '" + format + "'", "encoding_format");
    std::shared_ptr<LoadedModel> held = state.model_for(body);
    LoadedModel& m = *held;
    const EmbedOptions o = embed_options(state, body, false);
    Embedder& e = embedder_for(state, m, o);
    check_dimensions(e, o);
    const std::vector<EmbedInput> inputs = openai_inputs(body, e);
    const std::vector<Embedding> out = run(e, m, inputs, o);
    const bool per_token = e.pooling(o) == Pooling::None;
    const size_t n_embd = static_cast<size_t>(e.n_embd());
    Json data = Json::array();
    int64_t tokens = 0;
    for (size_t i = 0; i < out.size(); ++i) {
        const std::vector<float>& v = out[i].values;
        Json emb;
        if (format == "base64") {
            // f32 little-endian, as OpenAI's clients decode it (x86 and ARM are little-endian).
            emb = base64(reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(float));
        } else if (per_token) {
            emb = Json::array();
            for (size_t r = 0; r * n_embd < v.size(); ++r)
                emb.push_back(std::vector<float>(v.begin() + static_cast<long>(r * n_embd), v.begin() + static_cast<long>((r + 1) * n_embd)));
        } else {
            emb = v;
        }
        data.push_back({{"object", "embedding"}, {"index", i}, {"embedding", std::move(emb)}});
        tokens += out[i].n_tokens;
    }
    res.set_content(json_text({{"object", "list"}, {"data", std::move(data)}, {"model", m.name},
                               {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}}),
                    "application/json");
}

void handle_rerank(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const Json body = parse_body(req.body);
    const bool tei = field(body, "texts") != nullptr;
    const std::string list = tei ? "texts" : "documents";
    const auto query = get_string(body, "query");
    if (!query) throw ApiError(400, "'query' is required", "query");
    const Json* docs = get_array(body, list);
    if (!docs) throw ApiError(400, "'documents' (or TEI's 'texts') is required", "documents");
    if (docs->size() > k_max_inputs)
        throw ApiError(400, "'" + list + "': " + std::to_string(docs->size()) + " documents, at most " + std::to_string(k_max_inputs), list);
    std::vector<std::string> texts;
    for (size_t i = 0; i < docs->size(); ++i) {
        const Json& d = (*docs)[i];
        // Jina also takes {"text": ...} objects.
        if (d.is_string()) texts.push_back(d.get<std::string>());
        else if (!tei && d.is_object() && d.contains("text") && d["text"].is_string()) texts.push_back(d["text"].get<std::string>());
        else throw ApiError(400, "'" + list + "[" + std::to_string(i) + "]': expected a string", list);
    }
    const auto top_n = get_int(body, "top_n", 1, 1 << 20);
    const bool return_text = get_bool(body, tei ? "return_text" : "return_documents").value_or(!tei);
    const bool raw = get_bool(body, "raw_scores").value_or(false);
    const bool truncate = get_bool(body, "truncate").value_or(tei);  // TEI truncates unless told not to
    std::shared_ptr<LoadedModel> held = state.model_for(body);
    LoadedModel& m = *held;
    if (m.model->n_cls_out() < 1)
        throw ApiError(400, "model '" + m.name + "' is not a reranker: it has no classification head (cls.output)", "model",
                       "model_not_supported");
    EmbedOptions o;
    o.pooling = Pooling::Rank;
    Embedder& e = embedder_for(state, m, o);
    std::vector<float> scores;
    int64_t tokens = 0;
    {
        std::lock_guard lock(m.embed_mutex);
        try {
            scores = e.rerank(*query, texts, truncate, &tokens);
        } catch (const Error& err) {
            if (err.kind() == ErrorKind::InvalidInput) throw ApiError(400, err.what(), list);
            throw;
        }
    }
    // A Qwen3 reranker's score is already P(yes): TEI's sigmoid is for raw logits.
    const bool probability = e.rank_is_probability();
    std::vector<size_t> order(texts.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
    if (top_n && static_cast<size_t>(*top_n) < order.size()) order.resize(static_cast<size_t>(*top_n));
    Json results = Json::array();
    for (size_t i : order) {
        if (tei) {
            Json r = {{"index", i}, {"score", raw || probability ? scores[i] : 1.0f / (1.0f + std::exp(-scores[i]))}};
            if (return_text) r["text"] = texts[i];
            results.push_back(std::move(r));
        } else {
            Json r = {{"index", i}, {"relevance_score", scores[i]}};
            if (return_text) r["document"] = {{"text", texts[i]}};
            results.push_back(std::move(r));
        }
    }
    if (tei) {
        res.set_content(json_text(results), "application/json");
        return;
    }
    res.set_content(json_text({{"model", m.name}, {"object", "list"}, {"results", std::move(results)},
                               {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}}),
                    "application/json");
}

void handle_ollama_embed(ServerState& state, const httplib::Request& req, httplib::Response& res) {
    const auto t0 = std::chrono::steady_clock::now();
    const Json body = parse_body(req.body);
    std::shared_ptr<LoadedModel> held = state.model_for(body);
    LoadedModel& m = *held;
    const EmbedOptions o = embed_options(state, body, true);
    Embedder& e = embedder_for(state, m, o);
    check_dimensions(e, o);
    if (e.pooling(o) == Pooling::None) throw ApiError(400, "'pooling': /api/embed gives one vector per input, not 'none'", "pooling");
    const Json* in = field(body, "input");
    std::vector<EmbedInput> inputs;
    if (in && in->is_string()) {
        inputs.push_back({e.tokenize(in->get<std::string>()), {}});
    } else if (in && in->is_array()) {
        if (in->size() > k_max_inputs)
            throw ApiError(400, "'input': " + std::to_string(in->size()) + " inputs, at most " + std::to_string(k_max_inputs), "input");
        for (size_t i = 0; i < in->size(); ++i) {
            if (!(*in)[i].is_string()) throw ApiError(400, "'input[" + std::to_string(i) + "]': expected a string", "input");
            inputs.push_back({e.tokenize((*in)[i].get<std::string>()), {}});
        }
    } else if (in) {
        throw ApiError(400, "'input': expected a string or an array of strings", "input");
    }
    Json embeddings = Json::array();
    int64_t tokens = 0;
    if (!inputs.empty())
        for (const Embedding& x : run(e, m, inputs, o)) {
            embeddings.push_back(x.values);
            tokens += x.n_tokens;
        }
    const int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
    res.set_content(json_text({{"model", m.name}, {"embeddings", std::move(embeddings)}, {"total_duration", ns},
                               {"load_duration", 0}, {"prompt_eval_count", tokens}}),
                    "application/json");
}

}  // namespace kiln::server
