// Holds back generated text that might be the start of a stop string, so stop
// strings never leak into the output, whole or in part.
#pragma once

#include <string>
#include <vector>

namespace kiln {

class StopStringFilter {
public:
    explicit StopStringFilter(std::vector<std::string> stops);

    // Adds text; returns what can be emitted now. Sets stopped() when a stop
    // string completes (the text before it is returned, the rest dropped).
    std::string push(const std::string& text);
    // End of generation: everything still held.
    std::string flush();
    bool stopped() const { return stopped_; }
    const std::string& matched() const { return matched_; }

private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
    std::string matched_;
};

}  // namespace kiln
