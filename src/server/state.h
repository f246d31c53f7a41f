// What every route handler shares: the options, the loaded model with its chat
// template and reply format, the scheduler, the counters behind /metrics.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "kiln/jinja.h"
#include "kiln/model.h"
#include "kiln/reply_format.h"
#include "kiln/server.h"
#include "request_fields.h"
#include "scheduler.h"

namespace kiln::server {

struct Metrics {
    std::atomic<uint64_t> requests{0};          // generation requests accepted
    std::atomic<uint64_t> requests_failed{0};   // answered with an error status
    std::atomic<uint64_t> prompt_tokens{0};     // evaluated (not served from the cache)
    std::atomic<uint64_t> cached_tokens{0};     // served from the cache
    std::atomic<uint64_t> generated_tokens{0};
    std::atomic<uint64_t> prefill_us{0};
    std::atomic<uint64_t> decode_us{0};
};

struct LoadedModel {
    std::shared_ptr<const Model> model;
    std::string name;           // the file's stem: what `model` fields name
    std::string file_name;      // also accepted
    int64_t created = 0;        // unix seconds of the load
    std::optional<std::string> template_source;  // none: chat routes answer 400
    std::string template_origin;
    std::optional<jinja::Template> chat_template;
    ChatFormat format;
    std::string bos_text, eos_text;
    std::unique_ptr<Scheduler> scheduler;
};

struct ServerState {
    ServerOptions options;
    std::atomic<bool> ready{false};
    std::atomic<bool> draining{false};  // shutting down: new requests get 503
    std::atomic<int> in_flight{0};      // generation requests not yet answered in full
    std::string load_error;          // set when loading failed
    std::unique_ptr<LoadedModel> model;
    Metrics metrics;

    // The model a request names (absent: the default); 404 naming the available ones.
    LoadedModel& model_for(const Json& body);
};

// The JSON text of a response: invalid UTF-8 (a token that ends mid-character)
// becomes U+FFFD instead of an exception.
inline std::string json_text(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string random_id(const std::string& prefix);
int64_t unix_now();

}  // namespace kiln::server
