// The Responses API's stored responses (`store`, default true as OpenAI's):
// each completed response with the input items that led to it, so a later
// request can continue it by `previous_response_id`, and GET / DELETE
// /v1/responses/{id} can read or drop it. In memory, bounded: past the limit
// the least recently used response is forgotten (a later previous_response_id
// naming it is a 404 that says so). Shared by every request thread.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "request_fields.h"

namespace kiln::server {

struct StoredResponse {
    Json input_items;  // the whole conversation before the reply, as Responses input items
    Json response;     // the response object as it was returned (output items, usage ...)
};

class ResponseStore {
public:
    explicit ResponseStore(size_t max_entries) : max_entries_(max_entries) {}

    bool enabled() const { return max_entries_ > 0; }
    void put(const std::string& id, StoredResponse r);
    std::optional<StoredResponse> get(const std::string& id);  // marks it recently used
    bool erase(const std::string& id);
    size_t size() const;

private:
    using Order = std::list<std::string>;  // most recently used first
    struct Entry {
        StoredResponse value;
        Order::iterator where;
    };
    size_t max_entries_;
    mutable std::mutex mutex_;
    Order order_;
    std::unordered_map<std::string, Entry> entries_;
};

}  // namespace kiln::server
