// kiln serve [-m FILE ...] [--models DIR] [--host H] [--port P] [--parallel N] ...: the HTTP server
// (kiln/server.h; routes in docs/server.md). SIGINT / SIGTERM stop accepting and
// let requests in flight finish (for up to --drain-timeout seconds, then they are
// ended); a second signal exits at once.
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "commands.h"
#include "common.h"
#include "kiln/context.h"
#include "kiln/error.h"
#include "kiln/server.h"

namespace kiln::cli {

namespace {

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot read");
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

bool is_loopback(const std::string& host) { return host == "127.0.0.1" || host == "localhost" || host == "::1"; }

}  // namespace

int cmd_serve(int argc, char** argv) {
    CLI::App app{"HTTP server: the OpenAI, Anthropic and Ollama APIs over one model (docs/server.md)", "serve"};
    ServerOptions o;
    std::vector<std::string> models;
    std::string models_dir, key_file, template_file;
    double drain_timeout = 30;
    bool quiet = false, print_config = false;
    // Defaults from the config (environment > file > built-in); flags override them.
    const Config& cfg = config();
    o.host = cfg.get("server.host");
    o.port = cfg.get_int("server.port");
    o.parallel = cfg.get_int("server.parallel");
    o.n_ctx = cfg.get_int("server.ctx_size");
    o.n_threads = cfg.get_int("server.threads");
    // kiln autotune's settings for this CPU, where neither the config nor a flag sets them.
    const TunedSettings tuned = tuned_settings();
    if (cfg.origin("server.threads") == "built-in" && tuned.threads > 0) o.n_threads = tuned.threads;
    o.n_batch = tuned.batch_size;
    o.kv_type = tuned.kv_type;
    o.memory_budget = cfg.get_bytes("server.memory_budget");
    o.max_models = static_cast<size_t>(cfg.get_int("server.max_models"));
    models_dir = cfg.get("server.models_dir");
    app.add_option("-m,--model", models, "GGUF file, repeatable; the first is the default (default: the model setup installed)");
    app.add_option("--models", models_dir, "also offer every .gguf file in this folder (loaded on first use)");
    app.add_option("--max-models", o.max_models, "models resident at once, least recently used unloaded first (0: no limit)");
    app.add_option("--models-memory", o.models_memory,
                   "bytes the resident models may use together (files + sequence memory), e.g. 4GiB; least recently "
                   "used ones are unloaded past it (0: no limit)")
        ->transform(CLI::AsSizeValue(false));
    app.add_option("--aliases", o.aliases_file, "a JSON object {\"alias\": \"model name\", ...}: more names for the models");
    app.add_option("--host", o.host, "address to listen on (default 127.0.0.1: this machine only)");
    app.add_option("--port", o.port, "port (0: any free one, printed)")->check(CLI::Range(0, 65535));
    app.add_option("--parallel", o.parallel, "sequences generated at once (default 4)")->check(CLI::Range(1, 256));
    app.add_option("-c,--ctx-size", o.n_ctx, "context of one sequence (0: the model's, at most 4096)")->check(CLI::Range(0, 1 << 24));
    app.add_option("-t,--threads", o.n_threads, "threads (0: physical cores)")->check(CLI::Range(0, 1024));
    app.add_option("-b,--batch-size", o.n_batch, "prompt chunk size: most entries in one forward pass (default 256)")
        ->check(CLI::Range(1, 1 << 16));
    app.add_option("--kv-type", o.kv_type, "KV cache type: f16 (the default), f32 or q8_0")->check(CLI::IsMember({"f16", "f32", "q8_0"}));
    std::string flash_attn = "off";
    app.add_option("--flash-attn", flash_attn, "attention: off (the default: llama.cpp's -fa off order) or on (streaming: keys and values read once with an online softmax)")->check(CLI::IsMember({"on", "off"}));
    app.add_option("--memory-budget", o.memory_budget,
                   "bytes for the sequences' memory, e.g. 512MiB (0: parallel x context); a smaller budget shortens the context")
        ->transform(CLI::AsSizeValue(false));
    uint64_t experts_memory = k_bytes_unset;
    add_experts_memory_flag(app, experts_memory);
    auto* key_opt = app.add_option("--api-key", o.api_key, "require this key (Authorization: Bearer KEY or x-api-key)");
    app.add_option("--api-key-file", key_file, "read the key from the file's first line")->excludes(key_opt);
    app.add_option("--replica-id", o.replica_id, "this replica's name for a router: /props and the X-Kiln-Replica header (default: the host name)");
    app.add_option("--chat-template-file", template_file, "a Jinja chat template to use instead of the model's");
    app.add_option("--stored-responses", o.stored_responses,
                   "Responses API replies kept in memory for previous_response_id (default 1000; 0: none)");
    app.add_option("--max-queue", o.max_queue, "requests waiting for a slot before 503 (default 512)")->check(CLI::Range(1, 1 << 20));
    app.add_option("--drain-timeout", drain_timeout, "seconds a shutdown waits for requests in flight (default 30)")
        ->check(CLI::Range(0.0, 86400.0));
    app.add_option("--pooling", o.embd_pooling,
                   "embeddings' pooling: none | mean | cls | last | rank (default: each file's; lets a generative model embed)");
    app.add_option("--embd-normalize", o.embd_normalize, "embeddings' normalization: l2 (default) | l1 | maxabs | pN | none");
    app.add_option("--spec", o.spec,
                   "speculative decoding of every sequence (lossless): auto (the draft model if given, else prompt "
                   "lookup and the model's MTP head where it has one, while they pay), off, ngram, draft, mtp")
        ->check(CLI::IsMember({"auto", "off", "ngram", "draft", "mtp"}));
    app.add_option("--draft-max", o.draft_max, "most tokens drafted per step")->check(CLI::Range(1, 64));
    app.add_option("--draft-min", o.draft_min, "shortest draft worth verifying")->check(CLI::Range(1, 64));
    app.add_option("--draft-model", o.draft_model,
                   "draft model for --spec draft / auto: a GGUF with the default model's vocabulary (a path or catalog name)");
    app.add_flag("-q,--quiet", quiet, "no request log on stderr");
    app.add_flag("--print-config", print_config, "print the settings in effect and where each came from, then exit");
    int rc = 0;
    if (!parse_args(app, argc, argv, rc)) return rc;
    o.experts_memory = bytes_if_set(experts_memory);
    if (print_config) {
        Config shown = cfg;
        const std::pair<const char*, const char*> flag_keys[] = {
            {"--host", "server.host"},          {"--port", "server.port"},       {"--parallel", "server.parallel"},
            {"--ctx-size", "server.ctx_size"},  {"--threads", "server.threads"}, {"--memory-budget", "server.memory_budget"},
            {"--max-models", "server.max_models"}, {"--models", "server.models_dir"}};
        for (const auto& [flag, key] : flag_keys)
            if (app.count(flag)) shown.set_flag(key, app.get_option(flag)->as<std::string>());
        const char* tuned_origin = "kiln autotune, this CPU";
        for (const ConfigSetting& st : shown.settings()) {
            if (st.key.rfind("server.", 0) != 0) continue;
            const bool threads_tuned = st.key == "server.threads" && st.origin == "built-in" && tuned.threads > 0;
            std::printf("%s = %s (%s)\n", st.key.c_str(), threads_tuned ? std::to_string(o.n_threads).c_str() : st.value.c_str(),
                        threads_tuned ? tuned_origin : st.origin.c_str());
        }
        // Not config keys: a flag, else kiln autotune's tuned section, else the engine's default.
        const ContextOptions defaults;
        auto origin = [&](const char* flag, bool is_tuned) { return app.count(flag) ? "flag" : is_tuned ? tuned_origin : "built-in"; };
        std::printf("batch_size = %d (%s)\n", o.n_batch > 0 ? o.n_batch : defaults.n_batch, origin("--batch-size", o.n_batch > 0));
        std::printf("kv_type = %s (%s)\n", (o.kv_type.empty() ? defaults.kv_type : o.kv_type).c_str(),
                    origin("--kv-type", !o.kv_type.empty()));
        if (o.experts_memory)
            std::printf("experts_memory = %llu (flag)\n", static_cast<unsigned long long>(*o.experts_memory));
        else
            std::printf("experts_memory = what the available memory leaves at each load (built-in)\n");
        return 0;
    }
    // Names of the catalog (paths, aliases, presets, hf:, Ollama names) become
    // files; a model given by a name keeps that name in the lists, one given by
    // a path is named by its stem.
    std::vector<std::string> names;
    for (std::string& m : models) {
        std::error_code ec;
        names.push_back(std::filesystem::is_regular_file(m, ec) ? "" : m);
        m = resolve_model(m);
    }
    if (!o.draft_model.empty()) o.draft_model = resolve_model(o.draft_model);
    if (models.empty()) models.push_back(resolve_model(""));
    if (!models_dir.empty()) {
        std::error_code ec;
        std::vector<std::string> found;
        for (const auto& e : std::filesystem::directory_iterator(models_dir, ec))
            if (e.path().extension() == ".gguf") found.push_back(e.path().string());
        if (ec) throw Error(models_dir + ": cannot list (" + ec.message() + ")");
        std::sort(found.begin(), found.end());
        for (const auto& f : found)
            if (std::find(models.begin(), models.end(), f) == models.end()) models.push_back(f);
    }
    o.model_paths = models;
    o.model_names = names;
    o.flash_attn = flash_attn == "on";
    o.resolve_model = [](const std::string& name) { return resolve_model(name); };
    if (!key_file.empty()) {
        std::string k = read_file(key_file);
        k = k.substr(0, k.find('\n'));
        while (!k.empty() && (k.back() == '\r' || k.back() == ' ')) k.pop_back();
        if (k.empty()) throw Error(key_file + ": the first line is empty, expected the API key");
        o.api_key = k;
    }
    if (!template_file.empty()) o.chat_template_source = read_file(template_file);
    if (!is_loopback(o.host) && o.api_key.empty())
        std::fprintf(stderr, "warning: listening on %s without --api-key: anyone who can reach this address can use it\n",
                     o.host.c_str());
    o.log = [quiet](const std::string& line) {
        if (!quiet || line.rfind("model ", 0) == 0) std::fprintf(stderr, "%s\n", line.c_str());
    };

    // Signals go to one thread that waits for them (every thread made after
    // this inherits the mask), so shutting down runs outside a signal handler.
    sigset_t signals;
    sigemptyset(&signals);
    sigaddset(&signals, SIGINT);
    sigaddset(&signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &signals, nullptr);

    Server server(o);
    server.bind();
    std::fprintf(stderr, "kiln serve: listening on http://%s:%d\n", o.host.c_str(), server.port());
    std::fflush(stderr);
    std::atomic<bool> finished{false};
    std::thread waiter([&] {
        bool draining = false, cancelled = false;
        std::chrono::steady_clock::time_point since;
        const timespec tick{0, 200 * 1000 * 1000};
        while (!finished) {
            const int sig = sigtimedwait(&signals, nullptr, &tick);
            if (sig > 0) {
                if (draining) {
                    std::fprintf(stderr, "kiln serve: second signal, exiting now\n");
                    std::_Exit(130);
                }
                draining = true;
                since = std::chrono::steady_clock::now();
                std::fprintf(stderr, "kiln serve: stopping; finishing the requests in flight (a second signal exits now)\n");
                server.shutdown();
            }
            if (draining && !cancelled &&
                std::chrono::steady_clock::now() - since > std::chrono::duration<double>(drain_timeout)) {
                cancelled = true;
                server.cancel_all();
            }
        }
    });
    try {
        server.run();
    } catch (...) {
        finished = true;
        waiter.join();
        throw;
    }
    finished = true;
    waiter.join();
    std::fprintf(stderr, "kiln serve: stopped\n");
    return 0;
}

}  // namespace kiln::cli
