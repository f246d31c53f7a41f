#include "response_store.h"

namespace kiln::server {

void ResponseStore::put(const std::string& id, StoredResponse r) {
    if (!enabled()) return;
    std::lock_guard lock(mutex_);
    if (auto it = entries_.find(id); it != entries_.end()) {
        order_.erase(it->second.where);
        entries_.erase(it);
    }
    order_.push_front(id);
    entries_.emplace(id, Entry{std::move(r), order_.begin()});
    while (entries_.size() > max_entries_) {
        entries_.erase(order_.back());
        order_.pop_back();
    }
}

std::optional<StoredResponse> ResponseStore::get(const std::string& id) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return std::nullopt;
    order_.splice(order_.begin(), order_, it->second.where);
    return it->second.value;
}

bool ResponseStore::erase(const std::string& id) {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(id);
    if (it == entries_.end()) return false;
    order_.erase(it->second.where);
    entries_.erase(it);
    return true;
}

size_t ResponseStore::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

}  // namespace kiln::server
