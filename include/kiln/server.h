// kiln's HTTP server: the OpenAI, Anthropic and Ollama APIs over one or more
// models, each model's requests batched continuously on one Engine
// (kiln/engine.h) by its scheduler thread.
//
//   kiln::Server server({.model_paths = {"model.gguf"}, .port = 8080});
//   server.bind();                 // throws kiln::Error when the port is taken
//   std::thread stopper([&] { wait_for_signal(); server.shutdown(); });
//   server.run();                  // loads the model, serves until shutdown() drained
//
// Routes, fields and statuses: docs/server.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct ServerOptions {
    // The models requests may name; the first is the default.
    std::vector<std::string> model_paths;
    // Their names in /v1/models, /api/tags and requests (parallel to model_paths;
    // empty or missing: the file's stem). A model also answers to its stem and
    // file name.
    std::vector<std::string> model_names;
    // A request's model that is none of those names: the file it stands for (kiln
    // serve: the catalog's naming scheme, kiln/catalog.h); the model answers if
    // that file is one of model_paths. Null: names only.
    std::function<std::string(const std::string& name)> resolve_model;
    size_t max_models = 0;           // resident at once (least recently used unloaded first); 0: no limit
    uint64_t models_memory = 0;      // bytes of resident models (files + sequence memory), LRU unloaded past it; 0: no limit
    // A JSON object {"alias": "model name", ...}: more names for the models (empty: none).
    std::string aliases_file;
    std::string host = "127.0.0.1";
    int port = 8080;                 // 0: any free port (port() tells which)
    int parallel = 4;                // sequences generated at once (the Engine's slots)
    int n_ctx = 0;                   // one sequence's context; 0: the model's, at most 4096
    int n_threads = 0;               // 0: every thread of the executor
    uint64_t memory_budget = 0;      // bytes for the sequences' memory; 0: parallel x n_ctx positions
    // Bytes of each model's expert matrices repacked into memory (LoadOptions::
    // expert_memory_budget); unset: what the memory available at its load leaves.
    std::optional<uint64_t> experts_memory;
    bool flash_attn = false;         // ContextOptions::flash_attn for every model
    int n_batch = 0;                 // ContextOptions::n_batch for every model; 0: its default
    std::string kv_type;             // ContextOptions::kv_type for every model; empty: its default
    // Speculative decoding of every sequence (kiln/engine.h SpecMode): "auto",
    // "off", "ngram" or "draft", drafting draft_min..draft_max tokens a step.
    // draft_model: a GGUF with the default model's vocabulary (checked at load);
    // the other models use it where their vocabulary is the same.
    std::string spec = "auto";
    int draft_max = 8;
    int draft_min = 1;
    std::string draft_model;
    std::string api_key;             // empty: no key needed
    // Names this replica to a router (/props, the X-Kiln-Replica header); empty: the host name.
    std::string replica_id;
    std::optional<std::string> chat_template_source;  // overrides the model's template
    size_t max_queue = 512;          // requests waiting for a slot; past it 503
    // Responses (/v1/responses with store) kept in memory for previous_response_id and
    // GET /v1/responses/{id}; past it the least recently used is forgotten. 0: store none.
    size_t stored_responses = 1000;
    // Embeddings (/v1/embeddings, /api/embed): the pooling ("none", "mean", "cls",
    // "last", "rank"; empty: each file's own pooling type; set, it also lets a
    // generative model embed) and the normalization ("l2" as llama.cpp; "none",
    // "l1", "maxabs", "pN"), both overridable per request.
    std::string embd_pooling;
    std::string embd_normalize = "l2";
    size_t max_body_bytes = 8u << 20;
    int http_threads = 128;          // connections served at once (an idle keep-alive holds one)
    // Where the server reports what it does (one line each); null: silent.
    std::function<void(const std::string&)> log;
};

class Server {
public:
    explicit Server(ServerOptions options);
    ~Server();
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;

    // Binds the listening socket (so a caller learns a port-in-use error before
    // anything loads). Throws kiln::Error.
    void bind();
    int port() const;
    // Loads the default model (/health answers 503 meanwhile), then serves until
    // shutdown(): stops accepting, lets in-flight requests finish, returns.
    void run();
    // Thread-safe; safe to call from a signal-waiting thread.
    void shutdown();
    // Ends every request in flight now (a drain that took too long).
    void cancel_all();

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace kiln
