// The vocabulary's byte pieces as a trie stored in pre-order: a node's subtree is
// the index range [node + 1, subtree_end), so a walk skips a failed prefix's whole
// subtree in one jump and never chases pointers.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/constraint.h"
#include "kiln/tokenizer.h"

namespace kiln::constrain {

// Printable ASCII except the quote and the backslash.
inline bool is_plain_byte(uint8_t b) { return b >= 0x20 && b <= 0x7e && b != '"' && b != '\\'; }

struct VocabTrie {
    std::vector<std::string> pieces;  // per id; empty: never allowed
    std::vector<TokenId> eog;         // ascending
    std::vector<char> is_eog;         // per id

    // Nodes in pre-order; node 0 is the root (the empty prefix).
    std::vector<uint8_t> byte;
    std::vector<uint32_t> depth;
    std::vector<uint32_t> subtree_end;
    std::vector<TokenId> token;        // the token ending here, or k_no_token
    std::vector<char> has_more;        // other tokens with the same piece, in `more`
    std::vector<std::pair<uint32_t, TokenId>> more;  // (node, id), by node

    // Plain string bytes (is_plain_byte) are what a string's content loops on in
    // most grammars; a walk from a state that stays itself on every one of them
    // allows a plain subtree whole. plain_subtree[i]: node i's byte and every byte
    // below it are plain; plain_path[i]: every byte from the root to node i is;
    // plain_mask: every token whose whole piece is plain.
    std::vector<char> plain_subtree;
    std::vector<char> plain_path;
    TokenMask plain_mask;

    size_t size() const { return byte.size(); }
};

}  // namespace kiln::constrain
