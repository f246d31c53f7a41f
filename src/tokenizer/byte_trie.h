// A read-only trie over byte strings with an int32 value per key, stored flat
// (children of a node are a sorted run of labels), built once from (key, value)
// pairs. Walking it from a text position finds every key that starts there, in
// order of length, in time bounded by the longest key.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

namespace kiln::tok {

class ByteTrie {
public:
    static constexpr int32_t k_no_value = -1;

    ByteTrie() {
        nodes_.assign(1, Node{});
        root_children_.fill(-1);
    }

    // Later pairs with the same key replace earlier ones.
    void build(std::vector<std::pair<std::string_view, int32_t>> entries);
    bool empty() const { return nodes_.size() <= 1; }

    // Node handle: 0 is the root; -1 means "no such node".
    int32_t root() const { return 0; }
    int32_t child(int32_t node, uint8_t byte) const {
        if (node == 0) return root_children_[byte];
        const Node& n = nodes_[static_cast<size_t>(node)];
        const uint8_t* labels = labels_.data() + n.first;
        for (uint32_t i = 0; i < n.count; ++i) {
            if (labels[i] == byte) return targets_[n.first + i];
            if (labels[i] > byte) break;
        }
        return -1;
    }
    int32_t value(int32_t node) const { return nodes_[static_cast<size_t>(node)].value; }

    // Calls fn(length, value) for every key that is a prefix of text, shortest first.
    template <typename Fn>
    void for_each_prefix(std::string_view text, Fn&& fn) const {
        int32_t node = 0;
        for (size_t i = 0; i < text.size(); ++i) {
            node = child(node, static_cast<uint8_t>(text[i]));
            if (node < 0) return;
            int32_t v = nodes_[static_cast<size_t>(node)].value;
            if (v != k_no_value) fn(i + 1, v);
        }
    }
    // Longest key that is a prefix of text: {length, value}, or {0, k_no_value}.
    std::pair<size_t, int32_t> longest_prefix(std::string_view text) const {
        std::pair<size_t, int32_t> best{0, k_no_value};
        for_each_prefix(text, [&](size_t len, int32_t v) { best = {len, v}; });
        return best;
    }

    // Depth of the longest path of the trie that text starts with, whether or not
    // a key ends there (SentencePiece's user-defined matcher behaves this way).
    size_t longest_path(std::string_view text) const {
        int32_t node = 0;
        size_t i = 0;
        for (; i < text.size(); ++i) {
            node = child(node, static_cast<uint8_t>(text[i]));
            if (node < 0) break;
        }
        return i;
    }

private:
    struct Node {
        uint32_t first = 0;  // index of the first child label
        uint32_t count = 0;
        int32_t value = k_no_value;
    };
    std::vector<Node> nodes_;
    std::vector<uint8_t> labels_;
    std::vector<int32_t> targets_;
    std::array<int32_t, 256> root_children_{};
};

}  // namespace kiln::tok
