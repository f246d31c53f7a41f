// The models a server can answer with, by name (the file's stem), and the ones
// resident in memory: a model is loaded on first use and, when more than
// `capacity` are resident, the least recently used one that no request holds
// is unloaded (its Engine, cache memory and weights released).
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api_error.h"
#include "loaded_model.h"

namespace kiln::server {

struct ModelCacheStats {
    size_t resident = 0;
    size_t capacity = 0;   // 0: no limit
    uint64_t bytes = 0;    // resident models' files plus their sequences' memory
    uint64_t hits = 0, loads = 0, evictions = 0;
};

class ModelCache {
public:
    using Loader = std::function<std::shared_ptr<LoadedModel>(const std::string& name, const std::string& path)>;
    struct Available {
        std::string name, path;
        bool loaded = false;
    };

    // `paths`: the first is the default model. Throws kiln::Error on two files
    // with the same stem.
    ModelCache(const std::vector<std::string>& paths, size_t capacity, Loader loader);

    // The model `name` refers to (its stem, its file name, either with
    // Ollama's ":latest"; empty: the default), loaded if it is not resident.
    // 404 naming the available ones.
    std::shared_ptr<LoadedModel> get(const std::string& name);
    // The resident model, or null.
    std::shared_ptr<LoadedModel> resident(const std::string& name) const;
    // Unloads a model; 409 while requests use it, 404 for an unknown name.
    // Returns false when it was not resident.
    bool unload(const std::string& name);
    // Unloads it when no request holds it (Ollama's keep_alive 0); true if it did.
    bool unload_if_idle(const std::string& name);

    const std::string& default_name() const { return entries_.front().name; }
    std::vector<Available> available() const;
    std::vector<std::shared_ptr<LoadedModel>> loaded() const;
    ModelCacheStats stats() const;

private:
    struct Entry {
        std::string name, path;
        std::shared_ptr<LoadedModel> model;
        uint64_t last_used = 0;
    };
    Entry& find(const std::string& name);
    void evict_over_capacity(const Entry& keep);

    std::vector<Entry> entries_;
    size_t capacity_;
    Loader loader_;
    mutable std::mutex mutex_;  // held while a model loads: lookups wait for it
    uint64_t clock_ = 0, hits_ = 0, loads_ = 0, evictions_ = 0;
};

}  // namespace kiln::server
