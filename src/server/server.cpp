// The HTTP front: httplib's server with a worker pool sized for many streams,
// the key check, the routes, errors in each API's shape, and the drain.
#include "kiln/server.h"

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include <unistd.h>

#include "kiln/chat_template.h"
#include "routes.h"
#include "static_assets.h"
#include "kiln/embedding.h"

namespace kiln::server {

std::string random_id(const std::string& prefix) {
    static const char k_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string id = prefix;
    for (int i = 0; i < 24; ++i) id += k_chars[rng() % (sizeof(k_chars) - 1)];
    return id;
}

int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::shared_ptr<LoadedModel> ServerState::model_for(const Json& body) {
    return models->get(get_string(body, "model").value_or(""));
}

std::shared_ptr<LoadedModel> ServerState::generating_model_for(const Json& body) {
    std::shared_ptr<LoadedModel> m = model_for(body);
    if (m->model->is_embedding_model())
        throw ApiError(400, "model '" + m->name + "' is an embedding model (architecture '" + m->model->architecture() +
                                "'" + (m->model->has_output_head() ? ", its file sets a pooling type" : ", an encoder") +
                                "): it computes embeddings (/v1/embeddings, /api/embed) and cannot generate text",
                       "model", "model_not_supported");
    return m;
}

}  // namespace kiln::server

namespace kiln {

using namespace kiln::server;

namespace {

// Equal strings, in a time that does not depend on where they differ.
bool same_key(std::string_view a, std::string_view b) {
    unsigned diff = static_cast<unsigned>(a.size() ^ b.size());
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
        const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
        diff |= static_cast<unsigned>(x ^ y);
    }
    return diff == 0;
}

// Tells model files apart for a router (/props): FNV-1a (64 bits) over the
// file's size, its first MiB (header, metadata, the start of the tensor table)
// and 16 samples of 4 KiB spread over the rest. Cheap on a multi-GB file; not a
// content hash (two files that differ only between the samples share it).
std::string model_fingerprint(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(path, ec);
    uint64_t h = 1469598103934665603ull;
    auto mix = [&](const char* p, size_t n) {
        for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 1099511628211ull;
    };
    mix(reinterpret_cast<const char*>(&size), sizeof size);
    std::vector<char> buf(1u << 20);
    auto sample = [&](uint64_t at, size_t n) {
        if (!in || ec || at >= size) return;
        in.seekg(static_cast<std::streamoff>(at));
        in.read(buf.data(), static_cast<std::streamsize>(std::min<uint64_t>(n, size - at)));
        mix(buf.data(), static_cast<size_t>(in.gcount()));
        in.clear();
    };
    sample(0, buf.size());
    for (uint64_t i = 1; i <= 16; ++i) sample(size / 17 * i, 4096);
    char out[17];
    std::snprintf(out, sizeof out, "%016llx", static_cast<unsigned long long>(h));
    return out;
}

// --spec and its lengths, checked before anything loads.
SpecOptions server_spec_options(const ServerOptions& o) {
    SpecOptions s;
    if (o.spec == "auto") s.mode = SpecMode::Auto;
    else if (o.spec == "off") s.mode = SpecMode::Off;
    else if (o.spec == "ngram") s.mode = SpecMode::Ngram;
    else if (o.spec == "draft") s.mode = SpecMode::Draft;
    else if (o.spec == "mtp") s.mode = SpecMode::Mtp;
    else throw Error("--spec must be auto, off, ngram, draft or mtp, found '" + o.spec + "'");
    if (s.mode == SpecMode::Draft && o.draft_model.empty()) throw Error("--spec draft needs --draft-model FILE");
    if (!o.draft_model.empty() && s.mode != SpecMode::Draft && s.mode != SpecMode::Auto)
        throw Error("--draft-model drafts only with --spec draft or auto (not --spec " + o.spec + ")");
    if (o.draft_max < 1 || o.draft_min < 1)
        throw Error("--draft-max and --draft-min must be at least 1, found " + std::to_string(o.draft_max) + " and " +
                    std::to_string(o.draft_min));
    s.draft_max = o.draft_max;
    s.draft_min = std::min(o.draft_min, o.draft_max);
    return s;
}

std::string host_name() {
    char name[256] = {};
    if (gethostname(name, sizeof name - 1) != 0 || !name[0]) return "kiln";
    return name;
}

// The aliases file: one JSON object of strings, alias -> model name.
std::map<std::string, std::string> read_aliases(const std::string& path) {
    std::map<std::string, std::string> out;
    if (path.empty()) return out;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot read the aliases file");
    std::stringstream ss;
    ss << in.rdbuf();
    Json j;
    try {
        j = Json::parse(ss.str());
    } catch (const std::exception& e) {
        throw Error(path + ": not JSON (" + e.what() + ")");
    }
    if (!j.is_object()) throw Error(path + ": expected a JSON object {\"alias\": \"model name\", ...}");
    for (const auto& [alias, target] : j.items()) {
        if (!target.is_string()) throw Error(path + ": alias '" + alias + "': expected a model name (a string)");
        out[alias] = target.get<std::string>();
    }
    return out;
}

// httplib's routes are regular expressions: a literal path, escaped.
std::string httplib_pattern(std::string_view path) {
    std::string out;
    for (char c : path) {
        if (std::strchr(".[]{}()*+?^$|\\", c)) out += '\\';
        out += c;
    }
    return out;
}

void send_error(const httplib::Request& req, httplib::Response& res, int status, const std::string& message,
                const std::string& param = {}, const std::string& code = {}) {
    res.status = status;
    res.set_content(json_text(error_body_for(req.path, status, message, param, code)), "application/json");
}

}  // namespace

struct Server::Impl {
    ServerState state;
    SpecOptions spec;  // every sequence's speculative decoding (--spec, --draft-max, --draft-min)
    // --draft-model, loaded with the first model that uses it, shared by every Engine.
    mutable std::shared_ptr<const Model> draft;
    mutable std::mutex draft_mutex;
    httplib::Server http;
    std::atomic<bool> stop_requested{false};
    std::thread drainer;  // waits for the requests in flight, then stops listening
    int port = 0;
    // Unloads models whose keep_alive ran out (ModelCache::unload_expired).
    std::thread sweeper;
    std::mutex sweeper_mutex;
    std::condition_variable sweeper_wake;
    bool sweeper_stop = false;
    ~Impl() {
        if (drainer.joinable()) drainer.join();
        stop_sweeper();
    }
    void start_sweeper() {
        sweeper = std::thread([this] {
            std::unique_lock lock(sweeper_mutex);
            while (!sweeper_stop) {
                sweeper_wake.wait_for(lock, std::chrono::milliseconds(250));
                if (sweeper_stop) break;
                lock.unlock();
                if (const size_t n = state.models->unload_expired(ModelCache::Clock::now()))
                    log(std::to_string(n) + " model(s) unloaded: keep_alive ran out");
                lock.lock();
            }
        });
    }
    void stop_sweeper() {
        {
            std::lock_guard lock(sweeper_mutex);
            sweeper_stop = true;
        }
        sweeper_wake.notify_all();
        if (sweeper.joinable()) sweeper.join();
    }

    void log(const std::string& line) const {
        if (state.options.log) state.options.log(line);
    }
    std::shared_ptr<LoadedModel> load_model(const std::string& name, const std::string& path) const;
    void add_routes();
    // httplib's stop() does nothing before listen has started: wait for it (briefly).
    void stop_listening() {
        stop_requested = true;
        for (int i = 0; i < 200 && !http.is_running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        http.stop();
    }
    using Route = void (*)(ServerState&, const httplib::Request&, httplib::Response&);
    httplib::Server::Handler wrap(Route route, bool needs_model);
};

httplib::Server::Handler Server::Impl::wrap(Route route, bool needs_model) {
    return [this, route, needs_model](const httplib::Request& req, httplib::Response& res) {
        try {
            if (needs_model && !state.ready)
                throw ApiError(503, state.load_error.empty() ? "the model is still loading" : state.load_error);
            route(state, req, res);
            return;
        } catch (const ApiError& e) {
            send_error(req, res, e.status(), e.what(), e.param(), e.code());
            if (e.status() == 503) res.set_header("Retry-After", "1");
        } catch (const Error& e) {
            const int status = status_of(e.kind());
            send_error(req, res, status, e.what());
            if (status == 503) res.set_header("Retry-After", "1");
        } catch (const std::bad_alloc&) {
            send_error(req, res, 503, "out of memory");
        } catch (const std::exception& e) {
            send_error(req, res, 500, std::string("internal error: ") + e.what());
        }
        state.metrics.requests_failed++;
    };
}

void Server::Impl::add_routes() {
    auto post = [&](const char* path, Route r) { http.Post(path, wrap(r, true)); };
    auto get = [&](const char* path, Route r, bool needs_model) { http.Get(path, wrap(r, needs_model)); };
    for (const char* p : {"/v1/chat/completions", "/chat/completions"}) post(p, handle_chat_completions);
    post("/v1/chat/completions/input_tokens", handle_chat_input_tokens);
    for (const char* p : {"/v1/completions", "/completions"}) post(p, handle_completions);
    for (const char* p : {"/v1/responses", "/responses"}) post(p, handle_responses);
    for (const char* p : {R"(/v1/responses/([A-Za-z0-9_]+))", R"(/responses/([A-Za-z0-9_]+))"}) {
        get(p, handle_response_get, false);
        http.Delete(p, wrap(handle_response_delete, false));
    }
    get(R"(/v1/responses/([A-Za-z0-9_]+)/input_items)", handle_response_input_items, false);
    for (const char* p : {"/v1/models", "/models"}) get(p, handle_models, false);
    post("/models/load", handle_models_load);
    post("/models/unload", handle_models_unload);
    get("/models/cache", handle_models_cache, true);
    get("/health", handle_health, false);
    get("/v1/health", handle_health, false);
    get("/props", handle_props, true);
    get("/metrics", handle_metrics, false);
    post("/tokenize", handle_tokenize);
    post("/detokenize", handle_detokenize);
    post("/apply-template", handle_apply_template);
    post("/v1/messages", handle_messages);
    post("/v1/messages/count_tokens", handle_count_tokens);
    post("/api/chat", handle_ollama_chat);
    post("/api/generate", handle_ollama_generate);
    get("/api/tags", handle_ollama_tags, true);
    get("/api/ps", handle_ollama_ps, true);
    post("/api/show", handle_ollama_show);
    get("/api/version", handle_ollama_version, false);
    // The web UI (docs/web.md): the embedded pages and the explorer's routes.
    for (const WebAsset& a : web_assets())
        http.Get(httplib_pattern(a.path), [&a](const httplib::Request& req, httplib::Response& res) { serve_web_asset(a, req, res); });
    get("/explore/models", handle_explore_models, false);
    get("/explore/cache", handle_explore_cache, true);
    post("/explore/open", handle_explore_open);
    post("/explore/array", handle_explore_array);
    post("/explore/tensor", handle_explore_tensor);
    post("/explore/vocab", handle_explore_vocab);
    post("/explore/live/start", handle_explore_live_start);
    post("/explore/live/step", handle_explore_live_step);
    post("/explore/live/close", handle_explore_live_close);
    for (const char* p : {"/v1/embeddings", "/embeddings"}) post(p, handle_embeddings);
    post("/api/embed", handle_ollama_embed);
    for (const char* p : {"/v1/rerank", "/rerank", "/v1/reranking", "/reranking"}) post(p, handle_rerank);
}

std::shared_ptr<LoadedModel> Server::Impl::load_model(const std::string& name, const std::string& path) const {
    const ServerOptions& o = state.options;
    LoadOptions lo;
    lo.expert_memory_budget = o.experts_memory;
    auto model = Model::load(path, lo);
    auto lm = std::make_shared<LoadedModel>();
    lm->model = model;
    lm->name = name;
    lm->file_name = std::filesystem::path(path).filename().string();
    lm->created = unix_now();
    lm->fingerprint = model_fingerprint(path);
    chat::ModelTemplate mt = chat::model_template(model->file());
    lm->bos_text = mt.bos_token;
    lm->eos_text = mt.eos_token;
    if (o.chat_template_source) {
        lm->template_source = o.chat_template_source;
        lm->template_origin = "--chat-template-file";
    } else if (mt.source) {
        lm->template_source = mt.source;
        lm->template_origin = "file";
    } else if (auto builtin = chat::builtin_template_for(model->tokenizer())) {
        lm->template_source = builtin->source;
        lm->template_origin = "built-in " + builtin->name + " (the file has no tokenizer.chat_template)";
    }
    if (lm->template_source) {
        lm->chat_template.emplace(*lm->template_source);
        const Tokenizer& tok = model->tokenizer();
        lm->format = detect_chat_format(*lm->template_source,
                                        [&](std::string_view t) { return tok.find_token(t) != k_no_token; });
    }
    ContextOptions co;
    co.n_ctx = o.n_ctx;
    co.n_seq_max = o.parallel;
    if (model->is_embedding_model()) {
        // Generation routes refuse it (generating_model_for): one small slot, and
        // -c (set for the chat models beside it) capped at its trained context.
        co.n_ctx = std::min(o.n_ctx, model->n_ctx_train());
        co.n_seq_max = 1;
    }
    co.memory_budget = o.memory_budget;
    co.n_threads = o.n_threads;
    co.flash_attn = o.flash_attn;
    if (o.n_batch > 0) co.n_batch = o.n_batch;
    if (!o.kv_type.empty()) co.kv_type = o.kv_type;
    std::shared_ptr<const Model> draft;
    std::string draft_note;
    if (!o.draft_model.empty() && !model->is_embedding_model()) {
        std::lock_guard lock(draft_mutex);
        if (!this->draft) this->draft = Model::load(o.draft_model);
        draft = this->draft;
        // The default model must take it (a load error otherwise); another model
        // whose vocabulary differs (or whose cache a Gemma 4 assistant cannot
        // read) generates without it, and the log says why.
        if (path != o.model_paths.front()) {
            try {
                check_draft_model(*model, *draft);
            } catch (const Error& e) {
                draft_note = std::string("; no draft model: ") + e.what();
                draft.reset();
            }
        }
    }
    lm->scheduler = std::make_unique<Scheduler>(model, co, o.max_queue, spec, draft);
    // --spec mtp: the default model must have an MTP head (a load error otherwise);
    // another model without one drafts by prompt lookup, and the log says so.
    if (spec.mode == SpecMode::Mtp && !lm->scheduler->has_mtp_head()) {
        if (!o.model_paths.empty() && path == o.model_paths.front())
            throw Error("--spec mtp: model '" + path + "' has no multi-token-prediction layers kiln drafts with", ErrorKind::InvalidInput);
        draft_note += "; no multi-token-prediction layers: prompt lookup instead";
    }
    log("model " + lm->name + " (" + model->architecture() + ") loaded in " + std::to_string(model->load_seconds()) +
        " s; context " + std::to_string(lm->scheduler->n_ctx()) + " tokens x " + std::to_string(o.parallel) +
        " sequences; chat template: " + (lm->template_source ? lm->template_origin : "none") + "; speculation " +
        std::string(spec_mode_name(spec.mode)) +
        (lm->scheduler->has_draft_model() ? " with draft model " + std::filesystem::path(o.draft_model).filename().string()
                                          : std::string()) +
        draft_note);
    return lm;
}

Server::Server(ServerOptions options) : impl_(std::make_unique<Impl>()) {
    if (options.parallel < 1) throw Error("--parallel must be at least 1, found " + std::to_string(options.parallel));
    // The embeddings' defaults, checked now rather than on the first request.
    if (!options.embd_pooling.empty()) parse_pooling(options.embd_pooling);
    float p_norm = 0;
    parse_normalization(options.embd_normalize, p_norm);
    impl_->spec = server_spec_options(options);
    impl_->state.options = std::move(options);
    Impl& im = *impl_;
    ModelCacheLimits limits;
    limits.capacity = im.state.options.max_models;
    limits.bytes_budget = im.state.options.models_memory;
    limits.aliases = read_aliases(im.state.options.aliases_file);
    if (!im.state.options.aliases_file.empty()) limits.aliases_origin = im.state.options.aliases_file;
    limits.names = im.state.options.model_names;
    limits.resolve = im.state.options.resolve_model;
    im.state.models = std::make_unique<ModelCache>(
        im.state.options.model_paths, std::move(limits),
        [&im](const std::string& name, const std::string& path) { return im.load_model(name, path); });
    im.state.responses = std::make_unique<ResponseStore>(im.state.options.stored_responses);
    const ServerOptions& o = im.state.options;
    const int threads = std::max(o.http_threads, 8);
    im.http.new_task_queue = [threads] { return new httplib::ThreadPool(static_cast<size_t>(threads)); };
    im.http.set_payload_max_length(o.max_body_bytes);
    im.http.set_keep_alive_timeout(5);
    if (im.state.options.replica_id.empty()) im.state.options.replica_id = host_name();
    im.http.set_default_headers({{"X-Kiln-Replica", im.state.options.replica_id}});
    im.http.set_pre_routing_handler([&im](const httplib::Request& req, httplib::Response& res) {
        if (im.state.draining) {
            send_error(req, res, 503, "the server is shutting down", {}, "shutting_down");
            res.set_header("Retry-After", "5");
            res.set_header("Connection", "close");
            return httplib::Server::HandlerResponse::Handled;
        }
        const std::string& key = im.state.options.api_key;
        if (key.empty() || req.path == "/health" || req.path == "/v1/health" || ((req.method == "GET" || req.method == "HEAD") && find_web_asset(req.path)))
            return httplib::Server::HandlerResponse::Unhandled;
        std::string given;
        const std::string auth = req.get_header_value("Authorization");
        if (auth.rfind("Bearer ", 0) == 0) given = auth.substr(7);
        else if (req.has_header("x-api-key")) given = req.get_header_value("x-api-key");
        if (given.empty() || !same_key(given, key)) {
            send_error(req, res, 401, given.empty() ? "an API key is required (Authorization: Bearer KEY or x-api-key)"
                                               : "invalid API key",
                       {}, "invalid_api_key");
            im.state.metrics.requests_failed++;
            return httplib::Server::HandlerResponse::Handled;
        }
        return httplib::Server::HandlerResponse::Unhandled;
    });
    im.http.set_error_handler(httplib::Server::HandlerWithResponse([&im](const httplib::Request& req, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        im.state.metrics.requests_failed++;
        if (res.status == 404)
            send_error(req, res, 404, "no route " + req.method + " " + req.path, {}, "unknown_route");
        else if (res.status == 413)
            send_error(req, res, 413, "the request body exceeds " + std::to_string(im.state.options.max_body_bytes) + " bytes",
                       {}, "body_too_large");
        else
            send_error(req, res, res.status, "HTTP status " + std::to_string(res.status));
        return httplib::Server::HandlerResponse::Handled;
    }));
    im.http.set_logger([&im](const httplib::Request& req, const httplib::Response& res) {
        im.log(req.method + " " + req.path + " " + std::to_string(res.status));
    });
    im.add_routes();
}

Server::~Server() = default;

void Server::bind() {
    Impl& im = *impl_;
    const ServerOptions& o = im.state.options;
    if (o.port == 0) {
        im.port = im.http.bind_to_any_port(o.host);
        if (im.port <= 0) throw Error("cannot listen on " + o.host + " (any port)", ErrorKind::ResourceExhausted);
    } else {
        if (!im.http.bind_to_port(o.host, o.port))
            throw Error("cannot listen on " + o.host + ":" + std::to_string(o.port) + " (in use, or not an address here)",
                        ErrorKind::ResourceExhausted);
        im.port = o.port;
    }
}

int Server::port() const { return impl_->port; }

void Server::run() {
    Impl& im = *impl_;
    // Requests are answered while the model loads: /health with 503, the rest too.
    std::thread loader([&im] {
        try {
            im.state.models->get("");  // the default model
            im.state.ready = true;
        } catch (const std::exception& e) {
            im.state.load_error = e.what();
            im.log(std::string("loading failed: ") + e.what());
            im.stop_listening();
        }
    });
    im.start_sweeper();
    if (!im.stop_requested) im.http.listen_after_bind();
    loader.join();
    im.stop_sweeper();
    if (im.drainer.joinable()) im.drainer.join();
    for (const auto& m : im.state.models->loaded()) m->scheduler->stop();
    if (!im.state.load_error.empty()) throw Error(im.state.load_error);  // it names the file
}

// httplib's stop() cuts the streams being written, so a shutdown first turns
// new requests away (503) and stops listening once the ones in flight are done.
void Server::shutdown() {
    Impl& im = *impl_;
    if (im.state.draining.exchange(true)) return;
    im.drainer = std::thread([&im] {
        while (im.state.in_flight > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
        im.stop_listening();
    });
}

void Server::cancel_all() {
    for (const auto& m : impl_->state.models->loaded()) m->scheduler->cancel_all();
}

}  // namespace kiln
