// What every route handler shares: the options, the models (ModelCache), the
// counters behind /metrics.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "kiln/server.h"
#include "model_cache.h"
#include "response_store.h"
#include "request_fields.h"

namespace kiln::server {

struct Metrics {
    std::atomic<uint64_t> requests{0};          // generation requests accepted
    std::atomic<uint64_t> requests_failed{0};   // answered with an error status
    std::atomic<uint64_t> disconnects{0};       // clients that left before their reply ended
    std::atomic<uint64_t> prompt_tokens{0};     // evaluated (not served from the cache)
    std::atomic<uint64_t> cached_tokens{0};     // served from the cache
    std::atomic<uint64_t> generated_tokens{0};
    std::atomic<uint64_t> prefill_us{0};
    std::atomic<uint64_t> decode_us{0};
    std::atomic<uint64_t> drafted_tokens{0};   // speculative decoding: drafted and verified
    std::atomic<uint64_t> accepted_tokens{0};  // of those, kept
};

struct LiveSessions;  // explorer_live.cpp

struct ServerState {
    ServerOptions options;
    std::atomic<bool> ready{false};
    std::atomic<bool> draining{false};  // shutting down: new requests get 503
    std::atomic<int> in_flight{0};      // generation requests not yet answered in full
    std::string load_error;          // set when loading the default model failed
    std::unique_ptr<ModelCache> models;
    std::unique_ptr<ResponseStore> responses;  // /v1/responses with store
    Metrics metrics;
    std::shared_ptr<LiveSessions> live;  // the explorer's live-view probes (made on first use)
    std::mutex live_mutex;

    // The model a request names (absent: the default), loaded on first use; 404
    // naming the available ones. Holding it keeps it resident.
    std::shared_ptr<LoadedModel> model_for(const Json& body);
    // The same for a route that generates text: 400 for an embedding model.
    std::shared_ptr<LoadedModel> generating_model_for(const Json& body);
};

// The JSON text of a response: invalid UTF-8 (a token that ends mid-character)
// becomes U+FFFD instead of an exception.
inline std::string json_text(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

std::string random_id(const std::string& prefix);
int64_t unix_now();

}  // namespace kiln::server
