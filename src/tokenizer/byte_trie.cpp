#include "tokenizer/byte_trie.h"

#include <algorithm>

namespace kiln::tok {

void ByteTrie::build(std::vector<std::pair<std::string_view, int32_t>> entries) {
    // Stable sort keeps equal keys in insertion order; the last one wins.
    std::stable_sort(entries.begin(), entries.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::pair<std::string_view, int32_t>> keys;
    keys.reserve(entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
        if (i + 1 < entries.size() && entries[i + 1].first == entries[i].first) continue;
        keys.push_back(entries[i]);
    }

    nodes_.assign(1, Node{});
    labels_.clear();
    targets_.clear();
    // Breadth first with an explicit queue: keys can be long, recursion could not.
    struct Work {
        uint32_t node;
        size_t lo, hi, depth;
    };
    std::vector<Work> queue{{0, 0, keys.size(), 0}};
    for (size_t q = 0; q < queue.size(); ++q) {
        Work w = queue[q];
        size_t lo = w.lo;
        if (lo < w.hi && keys[lo].first.size() == w.depth) {
            nodes_[w.node].value = keys[lo].second;
            ++lo;
        }
        nodes_[w.node].first = static_cast<uint32_t>(labels_.size());
        uint32_t count = 0;
        for (size_t i = lo; i < w.hi;) {
            const uint8_t label = static_cast<uint8_t>(keys[i].first[w.depth]);
            size_t j = i + 1;
            while (j < w.hi && static_cast<uint8_t>(keys[j].first[w.depth]) == label) ++j;
            const uint32_t child = static_cast<uint32_t>(nodes_.size());
            nodes_.push_back(Node{});
            labels_.push_back(label);
            targets_.push_back(static_cast<int32_t>(child));
            queue.push_back(Work{child, i, j, w.depth + 1});
            ++count;
            i = j;
        }
        nodes_[w.node].count = count;
    }
    root_children_.fill(-1);
    const Node& r = nodes_[0];
    for (uint32_t i = 0; i < r.count; ++i) root_children_[labels_[r.first + i]] = targets_[r.first + i];
}

}  // namespace kiln::tok
