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

// Text bytes: a DFA over plain bytes and well-formed UTF-8 multi-byte sequences
// (no overlongs, no surrogates, at most U+10FFFF) — what a JSON string's content
// loops on, less escapes and DEL. State 0 is "between characters"; 1..7 are inside
// a sequence (1: one continuation byte left, 2: two, 3: after E0, 4: after ED,
// 5: three left, 6: after F0, 7: after F4). Returns k_text_reject for a byte the
// DFA does not take.
constexpr uint8_t k_text_states = 8;
constexpr uint8_t k_text_reject = 0xff;
constexpr uint8_t text_step(uint8_t q, uint8_t b) {
    const bool cont = b >= 0x80 && b <= 0xbf;
    switch (q) {
    case 0:
        if (is_plain_byte(b)) return 0;
        if (b >= 0xc2 && b <= 0xdf) return 1;
        if (b == 0xe0) return 3;
        if (b == 0xed) return 4;
        if (b >= 0xe1 && b <= 0xef) return 2;
        if (b == 0xf0) return 6;
        if (b >= 0xf1 && b <= 0xf3) return 5;
        if (b == 0xf4) return 7;
        return k_text_reject;
    case 1: return cont ? 0 : k_text_reject;
    case 2: return cont ? 1 : k_text_reject;
    case 3: return b >= 0xa0 && b <= 0xbf ? 1 : k_text_reject;
    case 4: return b >= 0x80 && b <= 0x9f ? 1 : k_text_reject;
    case 5: return cont ? 2 : k_text_reject;
    case 6: return b >= 0x90 && b <= 0xbf ? 2 : k_text_reject;
    case 7: return b >= 0x80 && b <= 0x8f ? 2 : k_text_reject;
    default: return k_text_reject;
    }
}

struct VocabTrie {
    std::vector<std::string> pieces;  // per id; empty: never allowed
    std::vector<TokenId> eog;         // ascending
    std::vector<char> is_eog;         // per id

    // Nodes in pre-order; node 0 is the root (the empty prefix).
    std::vector<uint8_t> byte;
    std::vector<uint32_t> depth;
    std::vector<uint32_t> subtree_end;
    std::vector<uint32_t> height;      // bytes on the longest path from node i down (node i's byte included); root: the longest piece
    std::vector<TokenId> token;        // a token ending here, or k_no_token
    // Every token in node pre-order: node i's tokens (several ids may share a
    // piece) are node_tokens[token_begin[i], token_begin[i + 1]), and its whole
    // subtree's are node_tokens[token_begin[i], token_begin[subtree_end[i]]), so a
    // subtree is allowed by one tight loop over ids.
    std::vector<TokenId> node_tokens;
    std::vector<uint32_t> token_begin;  // size() + 1 entries

    // Text (text_step) is what a string's content loops on in most grammars; a
    // walk from a state that reads text exactly as the DFA does (back to itself
    // after every character) allows a text subtree whole. text_subtree[i]: the
    // DFA, started between characters at node i, takes node i's byte and every
    // path below it; text_path[i]: it takes the path from the root to node i;
    // text_mask: every token whose whole piece it takes (it may end inside a
    // character: the state is then alive, waiting for the rest).
    std::vector<char> text_subtree;
    std::vector<char> text_path;
    TokenMask text_mask;

    size_t size() const { return byte.size(); }
};

}  // namespace kiln::constrain
