// The tokenization schemes, each applied to one raw-text fragment (special
// tokens already cut out). One file each: spm.cpp, bpe.cpp, wordpiece.cpp,
// unigram.cpp.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/byte_trie.h"
#include "tokenizer/hash_map.h"
#include "tokenizer/pretokenizer.h"
#include "tokenizer/vocab.h"

namespace kiln::tok {

// SentencePiece BPE ("llama"): the text (spaces already escaped to U+2581) is cut
// into UTF-8 characters, then adjacent pieces whose concatenation is a token
// merge, highest score first (leftmost on ties), until none can. A piece that is
// not a token comes out as its bytes' <0xHH> tokens.
void spm_tokenize(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out);

// Byte-level BPE ("gpt2", "gemma4").
class BpeModel {
public:
    void build(const Vocab& vocab);
    // One fragment: escape, pre-tokenize, merge each word.
    void tokenize(std::string_view text, std::vector<TokenId>& out) const;
    // One word as the merger sees it: raw bytes (byte_encode) or raw UTF-8.
    void tokenize_word(std::string_view word, std::vector<TokenId>& out) const;

    const PreTokenizer& pre_tokenizer() const { return *pre_; }

private:
    int32_t piece_id(std::string_view text);  // build time: vocab id, or an extra id past the vocabulary
    std::string_view piece_text(int32_t id) const;

    const Vocab* vocab_ = nullptr;
    std::unique_ptr<PreTokenizer> pre_;
    PairMap merges_;                   // (left piece << 32 | right piece) -> (rank, merged piece)
    StringMap extra_ids_;              // texts of merge operands / results that are not tokens
    std::deque<std::string> extra_texts_;
    std::array<int32_t, 256> byte_piece_{};    // byte_encode: piece of each byte's alphabet character
    std::array<TokenId, 256> single_byte_token_{};  // the token whose text is that one byte, or -1
    std::array<TokenId, 256> hex_byte_token_{};     // <0xHH>, or -1
    StringMap raw_word_ids_;           // ignore_merges: raw bytes of each token -> id
    std::deque<std::string> raw_word_texts_;
};

// WordPiece ("bert"): lowercase / strip accents as the metadata says, split at
// whitespace, punctuation and CJK ideographs, then longest-match pieces of
// "▁word" (the converter writes word starts with ▁ and drops "##").
class WordPieceModel {
public:
    void build(const Vocab& vocab);
    void tokenize(std::string_view text, std::vector<TokenId>& out) const;

private:
    const Vocab* vocab_ = nullptr;
    ByteTrie trie_;
};

// Unigram ("t5"): text normalized through the precompiled charsmap, then the
// Viterbi path of highest total score over the tokens' trie.
class UnigramModel {
public:
    void build(const Vocab& vocab);
    void tokenize(std::string_view text, std::vector<TokenId>& out) const;

private:
    void normalize(std::string_view input, std::string& out) const;
    // {replacement, consumed input bytes}
    std::pair<std::string_view, size_t> normalize_prefix(std::string_view input, size_t offset) const;

    const Vocab* vocab_ = nullptr;
    ByteTrie tokens_;        // normal, user-defined and unused tokens
    ByteTrie user_defined_;  // kept whole by the normalizer
    std::vector<uint32_t> xcda_;             // charsmap: XOR-compressed double array
    std::string_view replacements_;          // charsmap: NUL-terminated replacement strings
    float unknown_score_ = 0.0f;
};

}  // namespace kiln::tok
