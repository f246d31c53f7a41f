#include "model_cache.h"

#include <filesystem>

namespace kiln::server {

namespace {

uint64_t file_bytes(const std::string& path) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    return ec ? 0 : size;
}

// A model answers to its name, its file's stem and its file name.
bool answers_to(const std::string& model_name, const std::string& path, const std::string& name) {
    const std::filesystem::path p(path);
    return model_name == name || p.stem().string() == name || p.filename().string() == name;
}

bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    return std::filesystem::equivalent(a, b, ec) && !ec;
}

std::string without_latest(const std::string& name) {
    return name.size() > 7 && name.ends_with(":latest") ? name.substr(0, name.size() - 7) : name;
}

}  // namespace

ModelCache::ModelCache(const std::vector<std::string>& paths, ModelCacheLimits limits, Loader loader)
    : limits_(std::move(limits)), loader_(std::move(loader)) {
    if (paths.empty()) throw Error("no model given");
    for (size_t i = 0; i < paths.size(); ++i) {
        const std::string& p = paths[i];
        const std::string name =
            i < limits_.names.size() && !limits_.names[i].empty() ? limits_.names[i] : std::filesystem::path(p).stem().string();
        for (const Entry& e : entries_)
            if (e.name == name) throw Error("two models are named '" + name + "': " + e.path + " and " + p);
        entries_.push_back({name, p, nullptr, 0, std::nullopt});
    }
    auto names_model = [&](const std::string& n) {
        for (const Entry& e : entries_)
            if (answers_to(e.name, e.path, n)) return &e;
        return static_cast<const Entry*>(nullptr);
    };
    std::map<std::string, std::string> resolved;
    for (const auto& [alias, target] : limits_.aliases) {
        if (alias.empty()) throw Error(limits_.aliases_origin + ": an alias is empty");
        if (names_model(without_latest(alias)))
            throw Error(limits_.aliases_origin + ": '" + alias + "' is already a model's name");
        const Entry* e = names_model(without_latest(target));
        if (!e) throw Error(limits_.aliases_origin + ": '" + alias + "' names '" + target + "', which is not one of the server's models");
        resolved[without_latest(alias)] = e->name;
    }
    limits_.aliases = std::move(resolved);
}

ModelCache::Entry& ModelCache::find(const std::string& given) {
    if (given.empty()) return entries_.front();
    std::string name = without_latest(given);
    if (auto a = limits_.aliases.find(name); a != limits_.aliases.end()) name = a->second;
    for (Entry& e : entries_)
        if (answers_to(e.name, e.path, name)) return e;
    std::string names;
    for (const Entry& e : entries_) names += (names.empty() ? "" : ", ") + e.name;
    for (const auto& [alias, target] : limits_.aliases) names += ", " + alias;
    // Another name of the same file (hf:..., an Ollama name, a config alias). The
    // reply never says which file a name stands for or where it was looked for:
    // clients must not learn this machine's paths.
    std::string why;
    if (limits_.resolve) {
        std::string path;
        try {
            path = limits_.resolve(given);
        } catch (const std::exception&) {
        }
        if (!path.empty()) {
            for (Entry& e : entries_)
                if (same_file(e.path, path)) return e;
            why = " (it names a file this server does not offer)";
        }
    }
    throw ApiError(404, "model '" + given + "' not found" + why + "; available: " + names, "model", "model_not_found");
}

uint64_t ModelCache::resident_bytes(const Entry& e) const {
    return e.model ? file_bytes(e.path) + e.model->scheduler->memory_bytes() : 0;
}

std::shared_ptr<LoadedModel> ModelCache::get(const std::string& name) {
    std::lock_guard lock(mutex_);
    Entry& e = find(name);
    e.last_used = ++clock_;
    if (e.model) {
        ++hits_;
        return e.model;
    }
    const uint64_t incoming = file_bytes(e.path);
    if (limits_.bytes_budget && incoming > limits_.bytes_budget)
        throw ApiError(503, "model '" + e.name + "' is " + std::to_string(incoming) +
                                " bytes, more than the models' memory budget of " +
                                std::to_string(limits_.bytes_budget) + " bytes",
                       "model", "model_too_large");
    // Room first (by the file's size), so two models never peak together when
    // one of them has to go anyway; then the new one's sequence memory counts too.
    evict_over_limits(e, incoming);
    e.model = loader_(e.name, e.path);
    ++loads_;
    evict_over_limits(e, 0);
    return e.model;
}

std::shared_ptr<LoadedModel> ModelCache::resident(const std::string& name) const {
    std::lock_guard lock(mutex_);
    return const_cast<ModelCache*>(this)->find(name).model;
}

void ModelCache::release(Entry& e) {
    e.model.reset();  // the scheduler's thread ends, memory and weights are released
    e.expires.reset();
}

// A model that a request holds (its shared_ptr is not the cache's alone) stays,
// so the cache may stay over its limits until those requests end.
void ModelCache::evict_over_limits(const Entry& keep, uint64_t incoming_bytes) {
    if (limits_.capacity == 0 && limits_.bytes_budget == 0) return;
    for (;;) {
        size_t resident = incoming_bytes ? 1 : 0;
        uint64_t bytes = incoming_bytes;
        Entry* oldest = nullptr;
        for (Entry& e : entries_) {
            if (!e.model) continue;
            ++resident;
            bytes += resident_bytes(e);
            if (&e != &keep && e.model.use_count() == 1 && (!oldest || e.last_used < oldest->last_used)) oldest = &e;
        }
        const bool over = (limits_.capacity && resident > limits_.capacity) ||
                          (limits_.bytes_budget && bytes > limits_.bytes_budget);
        if (!over || !oldest) return;
        release(*oldest);
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
    release(e);
    ++evictions_;
    return true;
}

bool ModelCache::unload_if_idle(const std::string& name) {
    std::lock_guard lock(mutex_);
    Entry& e = find(name);
    if (!e.model || e.model.use_count() > 1) return false;
    release(e);
    ++evictions_;
    return true;
}

void ModelCache::set_expiry(const std::string& name, std::optional<Clock::time_point> deadline) {
    std::lock_guard lock(mutex_);
    Entry& e = find(name);
    if (e.model) e.expires = deadline;
}

size_t ModelCache::unload_expired(Clock::time_point now) {
    std::lock_guard lock(mutex_);
    size_t n = 0;
    for (Entry& e : entries_) {
        if (!e.model || !e.expires || *e.expires > now || e.model.use_count() > 1) continue;
        release(e);
        ++expirations_;
        ++n;
    }
    return n;
}

std::vector<ModelCache::Available> ModelCache::available() const {
    std::lock_guard lock(mutex_);
    std::vector<Available> out;
    for (const Entry& e : entries_) {
        Available a{e.name, e.path, e.model != nullptr, {}, e.expires};
        for (const auto& [alias, target] : limits_.aliases)
            if (target == e.name) a.aliases.push_back(alias);
        out.push_back(std::move(a));
    }
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
    s.capacity = limits_.capacity;
    s.bytes_budget = limits_.bytes_budget;
    s.hits = hits_;
    s.loads = loads_;
    s.evictions = evictions_;
    s.expirations = expirations_;
    for (const Entry& e : entries_) {
        if (!e.model) continue;
        ++s.resident;
        s.bytes += resident_bytes(e);
    }
    return s;
}

}  // namespace kiln::server
