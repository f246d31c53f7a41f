#include "model_cache.h"

#include <filesystem>

namespace kiln::server {

ModelCache::ModelCache(const std::vector<std::string>& paths, size_t capacity, Loader loader)
    : capacity_(capacity), loader_(std::move(loader)) {
    if (paths.empty()) throw Error("no model given");
    for (const std::string& p : paths) {
        const std::string name = std::filesystem::path(p).stem().string();
        for (const Entry& e : entries_)
            if (e.name == name) throw Error("two models are named '" + name + "': " + e.path + " and " + p);
        entries_.push_back({name, p, nullptr, 0});
    }
}

ModelCache::Entry& ModelCache::find(const std::string& given) {
    if (given.empty()) return entries_.front();
    std::string name = given;
    if (name.size() > 7 && name.ends_with(":latest")) name.resize(name.size() - 7);
    for (Entry& e : entries_)
        if (e.name == name || std::filesystem::path(e.path).filename().string() == name) return e;
    std::string names;
    for (const Entry& e : entries_) names += (names.empty() ? "" : ", ") + e.name;
    throw ApiError(404, "model '" + given + "' not found; available: " + names, "model", "model_not_found");
}

std::shared_ptr<LoadedModel> ModelCache::get(const std::string& name) {
    std::lock_guard lock(mutex_);
    Entry& e = find(name);
    e.last_used = ++clock_;
    if (e.model) {
        ++hits_;
        return e.model;
    }
    e.model = loader_(e.name, e.path);
    ++loads_;
    evict_over_capacity(e);
    return e.model;
}

std::shared_ptr<LoadedModel> ModelCache::resident(const std::string& name) const {
    std::lock_guard lock(mutex_);
    return const_cast<ModelCache*>(this)->find(name).model;
}

// A model that a request holds (its shared_ptr is not the cache's alone) stays,
// so the cache may stay over capacity until those requests end.
void ModelCache::evict_over_capacity(const Entry& keep) {
    if (capacity_ == 0) return;
    for (;;) {
        size_t resident = 0;
        Entry* oldest = nullptr;
        for (Entry& e : entries_) {
            if (!e.model) continue;
            ++resident;
            if (&e != &keep && e.model.use_count() == 1 && (!oldest || e.last_used < oldest->last_used)) oldest = &e;
        }
        if (resident <= capacity_ || !oldest) return;
        oldest->model.reset();  // the scheduler's thread ends, memory and weights are released
        ++evictions_;
    }
}

bool ModelCache::unload(const std::string& name) {
    std::lock_guard lock(mutex_);
    Entry& e = find(name);
    if (!e.model) return false;
    if (e.model.use_count() > 1)
        throw ApiError(409, "model '" + e.name + "' has requests in flight; unload it when they have finished", "model",
                       "model_busy");
    e.model.reset();
    ++evictions_;
    return true;
}

bool ModelCache::unload_if_idle(const std::string& name) {
    std::lock_guard lock(mutex_);
    Entry& e = find(name);
    if (!e.model || e.model.use_count() > 1) return false;
    e.model.reset();
    ++evictions_;
    return true;
}

std::vector<ModelCache::Available> ModelCache::available() const {
    std::lock_guard lock(mutex_);
    std::vector<Available> out;
    for (const Entry& e : entries_) out.push_back({e.name, e.path, e.model != nullptr});
    return out;
}

std::vector<std::shared_ptr<LoadedModel>> ModelCache::loaded() const {
    std::lock_guard lock(mutex_);
    std::vector<std::shared_ptr<LoadedModel>> out;
    for (const Entry& e : entries_)
        if (e.model) out.push_back(e.model);
    return out;
}

ModelCacheStats ModelCache::stats() const {
    std::lock_guard lock(mutex_);
    ModelCacheStats s;
    s.capacity = capacity_;
    s.hits = hits_;
    s.loads = loads_;
    s.evictions = evictions_;
    for (const Entry& e : entries_) {
        if (!e.model) continue;
        ++s.resident;
        std::error_code ec;
        const auto file = std::filesystem::file_size(e.path, ec);
        s.bytes += (ec ? 0 : file) + e.model->scheduler->memory_bytes();
    }
    return s;
}

}  // namespace kiln::server
