// Cutting special tokens (control, user-defined, unknown) out of the text
// before the scheme runs.
//
// The rule is llama.cpp's: tokens are taken longest text first (ties in the order
// of its sort); each token claims its occurrences left to right in the text not
// yet claimed. With parse_special off, control and unknown tokens are plain text
// but user-defined ones are still cut out (as Hugging Face does). A token marked
// lstrip / rstrip also removes the whitespace next to it.
//
// All occurrences are found in one pass with a trie (at each position, every
// special token starting there), then granted in priority order; a text whose
// occurrences would not fit in memory (megabytes of one repeated character that
// is itself a token, many times over) takes them token by token instead. Both
// are linear in the text for a given vocabulary.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "tokenizer/byte_trie.h"
#include "tokenizer/vocab.h"

namespace kiln::tok {

struct Fragment {
    uint32_t offset = 0;
    uint32_t length = 0;
    TokenId token = k_no_token;  // k_no_token: raw text [offset, offset + length)
};

class SpecialTokenSplitter {
public:
    void build(const Vocab& vocab);
    // Fragments of text in order: raw text runs and special tokens.
    void split(std::string_view text, bool parse_special, std::vector<Fragment>& out) const;

private:
    const Vocab* vocab_ = nullptr;
    ByteTrie trie_;                     // value: index into entries_
    struct Entry {
        int32_t rank_any;   // best priority among tokens with this text (-1: none)
        int32_t rank_user;  // best priority among those cut out with parse_special off
    };
    std::vector<Entry> entries_;
    std::vector<TokenId> order_;        // priority -> token id (vocab.special_order)
    std::vector<uint32_t> length_;      // priority -> text length
};

}  // namespace kiln::tok
