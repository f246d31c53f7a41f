// The vocabulary as read from tokenizer.ggml.*: token texts, scores, attributes,
// special ids and flags, with the load-time rules llama.cpp applies (default ids
// per scheme, control-looking tokens promoted to control, the end-of-generation
// set, token attribute fix-ups), so that everything downstream sees the same
// vocabulary llama.cpp sees.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/tokenizer.h"
#include "tokenizer/hash_map.h"
#include "tokenizer/pretokenizer.h"

namespace kiln::gguf {
class File;
}

namespace kiln::tok {

// Token attributes (bit set). GGUF stores one type per token; the rest comes from
// the fix-ups below.
namespace attr {
constexpr uint16_t k_unknown = 1 << 0;
constexpr uint16_t k_unused = 1 << 1;
constexpr uint16_t k_normal = 1 << 2;
constexpr uint16_t k_control = 1 << 3;
constexpr uint16_t k_user_defined = 1 << 4;
constexpr uint16_t k_byte = 1 << 5;
constexpr uint16_t k_lstrip = 1 << 6;  // a special token eats the whitespace before it
constexpr uint16_t k_rstrip = 1 << 7;  // ... and after it
}  // namespace attr

enum class Scheme { Spm, Bpe, Wpm, Ugm };

struct Vocab {
    std::string path;  // for error messages
    Scheme scheme = Scheme::Spm;
    std::string model;  // tokenizer.ggml.model
    std::string pre;    // tokenizer.ggml.pre ("default" when absent)
    const PreTokenizerSpec* pre_spec = nullptr;  // BPE only

    std::vector<std::string> texts;
    std::vector<float> scores;
    std::vector<uint16_t> attrs;
    StringMap text_to_id;  // the last id wins for duplicate texts, as in llama.cpp
    size_t max_token_len = 0;

    SpecialTokens special;
    bool add_bos = false;
    bool add_eos = false;
    bool add_sep = false;
    bool add_space_prefix = false;
    bool remove_extra_whitespaces = false;
    bool escape_whitespaces = true;
    bool treat_whitespace_as_suffix = false;
    bool clean_spaces = false;
    bool ignore_merges = false;
    bool byte_encode = true;
    bool hugging_face = false;  // TokenizerCompat::HuggingFace
    bool nfc = false;           // Hugging Face's NFC normalizer (Qwen), in that mode only
    bool lowercase = true;      // WordPiece normalizer
    bool strip_accents = true;  // WordPiece normalizer

    std::vector<std::string> merges;         // BPE: "left right", in rank order
    std::vector<uint8_t> precompiled_charsmap;  // Unigram

    std::vector<TokenId> eog_ids;        // sorted
    std::vector<TokenId> special_order;  // control / user-defined / unknown ids, longest text first
    std::vector<std::string> pieces;     // bytes each token decodes to (special ones shown)

    size_t size() const { return texts.size(); }
    TokenId find(std::string_view text) const { return text_to_id.get(text); }
    bool has(uint16_t bits, TokenId id) const { return attrs[static_cast<size_t>(id)] & bits; }
    // The byte token for b (<0xHH>, or the single-byte text as a fallback); -1 if none.
    TokenId byte_token(uint8_t b) const;
};

// Reads and checks tokenizer.ggml.*; errors name the file and key.
Vocab load_vocab(const gguf::File& file, TokenizerCompat compat = TokenizerCompat::LlamaCpp);

// TokenType of an attribute set (the inverse of the GGUF mapping, after fix-ups).
TokenType token_type_of(uint16_t attrs);

}  // namespace kiln::tok
