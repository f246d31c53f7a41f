#include "engine/stop_strings.h"

#include <algorithm>

namespace kiln {

StopStringFilter::StopStringFilter(std::vector<std::string> stops) : stops_(std::move(stops)) {
    stops_.erase(std::remove(stops_.begin(), stops_.end(), std::string()), stops_.end());
}

std::string StopStringFilter::push(const std::string& text) {
    if (stopped_) return "";
    held_ += text;
    // A complete stop string: emit what precedes the earliest one.
    size_t best = std::string::npos;
    for (const std::string& s : stops_) {
        size_t at = held_.find(s);
        if (at != std::string::npos && at < best) {
            best = at;
            matched_ = s;
        }
    }
    if (best != std::string::npos) {
        stopped_ = true;
        std::string out = held_.substr(0, best);
        held_.clear();
        return out;
    }
    // Hold the longest suffix that is a prefix of some stop string.
    size_t hold = 0;
    for (const std::string& s : stops_) {
        size_t max_len = std::min(s.size() - 1, held_.size());
        for (size_t len = max_len; len > hold; --len)
            if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
                hold = len;
                break;
            }
    }
    std::string out = held_.substr(0, held_.size() - hold);
    held_.erase(0, held_.size() - hold);
    return out;
}

std::string StopStringFilter::flush() {
    std::string out = stopped_ ? "" : held_;
    held_.clear();
    return out;
}

}  // namespace kiln
