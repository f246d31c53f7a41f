// The models a server can answer with, by name (the file's stem, or an alias
// from the aliases file), and the ones resident in memory: a model is loaded on
// first use and, when more than `capacity` are resident or their bytes pass
// `bytes_budget`, the least recently used ones that no request holds are
// unloaded (their Engine, cache memory and weights released). A model may
// also carry an expiry (Ollama's keep_alive): once it passes and no request
// holds the model, `unload_expired` unloads it.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api_error.h"
#include "loaded_model.h"

namespace kiln::server {

struct ModelCacheStats {
    size_t resident = 0;
    size_t capacity = 0;       // 0: no limit
    uint64_t bytes = 0;        // resident models' files plus their sequences' memory
    uint64_t bytes_budget = 0; // 0: no limit
    uint64_t hits = 0, loads = 0, evictions = 0, expirations = 0;
};

struct ModelCacheLimits {
    size_t capacity = 0;        // models resident at once; 0: no limit
    uint64_t bytes_budget = 0;  // their files + sequence memory; 0: no limit
    // alias -> a model's name (stem or file name); checked when the cache is made.
    std::map<std::string, std::string> aliases;
    std::string aliases_origin = "model aliases";  // named in their errors (the aliases file)
    // Each model's name (parallel to the paths; empty or missing: its file stem).
    std::vector<std::string> names;
    // A requested name that is none of the models' names: the file it stands for
    // (the catalog's naming scheme); it answers if that is one of the models.
    std::function<std::string(const std::string&)> resolve;
};

class ModelCache {
public:
    using Clock = std::chrono::steady_clock;
    using Loader = std::function<std::shared_ptr<LoadedModel>(const std::string& name, const std::string& path)>;
    struct Available {
        std::string name, path;
        bool loaded = false;
        std::vector<std::string> aliases;
        std::optional<Clock::time_point> expires;  // resident with a keep_alive deadline
    };

    // `paths`: the first is the default model. Throws kiln::Error on two files
    // with the same stem, an alias naming no model, or an alias that is also a
    // model's name.
    ModelCache(const std::vector<std::string>& paths, ModelCacheLimits limits, Loader loader);

    // The model `name` refers to (its stem, its file name or an alias, either
    // with Ollama's ":latest"; empty: the default), loaded if it is not
    // resident. 404 naming the available ones; 503 when it alone is larger than
    // the bytes budget.
    std::shared_ptr<LoadedModel> get(const std::string& name);
    // The resident model, or null.
    std::shared_ptr<LoadedModel> resident(const std::string& name) const;
    // Unloads a model; 409 while requests use it, 404 for an unknown name.
    // Returns false when it was not resident.
    bool unload(const std::string& name);
    // Unloads it when no request holds it (Ollama's keep_alive 0); true if it did.
    bool unload_if_idle(const std::string& name);
    // Ollama's keep_alive: the resident model is unloaded once `deadline` has
    // passed and no request holds it; nullopt keeps it until evicted.
    void set_expiry(const std::string& name, std::optional<Clock::time_point> deadline);
    // Unloads every idle model whose deadline is at or before `now`; returns how many.
    size_t unload_expired(Clock::time_point now);

    const std::string& default_name() const { return entries_.front().name; }
    std::vector<Available> available() const;
    std::vector<std::shared_ptr<LoadedModel>> loaded() const;
    ModelCacheStats stats() const;

private:
    struct Entry {
        std::string name, path;
        std::shared_ptr<LoadedModel> model;
        uint64_t last_used = 0;
        std::optional<Clock::time_point> expires;
    };
    Entry& find(const std::string& name);
    uint64_t resident_bytes(const Entry& e) const;
    void evict_over_limits(const Entry& keep, uint64_t incoming_bytes);
    void release(Entry& e);

    std::vector<Entry> entries_;
    ModelCacheLimits limits_;
    Loader loader_;
    mutable std::mutex mutex_;  // held while a model loads: lookups wait for it
    uint64_t clock_ = 0, hits_ = 0, loads_ = 0, evictions_ = 0, expirations_ = 0;
};

}  // namespace kiln::server
