// kiln — tokenizers built from a GGUF file's tokenizer.ggml.* metadata.
//
// Schemes (tokenizer.ggml.model): "llama" (SentencePiece BPE over scores, byte
// fallback), "gpt2" (byte-level BPE over ranked merges, with the pre-tokenizer
// named by tokenizer.ggml.pre), "gemma4" (BPE over raw UTF-8 with ▁ for spaces),
// "bert" (WordPiece) and "t5" (Unigram with the precompiled charsmap). The
// results equal llama.cpp's token for token; docs/tokenizer.md lists what was
// checked and the known gaps.
//
// A Tokenizer is immutable after loading and cheap to copy (shared state); every
// method is const and safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

namespace gguf {
class File;
}

using TokenId = int32_t;
constexpr TokenId k_no_token = -1;

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t {
    Undefined = 0,
    Normal = 1,
    Unknown = 2,
    Control = 3,
    UserDefined = 4,
    Unused = 5,
    Byte = 6,
};

enum class TokenizerScheme { SentencePiece, BytePairEncoding, WordPiece, Unigram };

// Whose results to reproduce where llama.cpp and Hugging Face `tokenizers` differ.
// LlamaCpp (the default) is llama.cpp token for token. HuggingFace follows the
// model's own tokenizer.json instead in the three places llama.cpp departs from
// it: the original pre-tokenizer expressions where llama.cpp runs a lossy
// rewrite (gpt-4o / o200k and Tekken: combining marks stay inside words), the
// NFC normalizer of the Qwen 2/3 tokenizers, and token types exactly as stored
// (llama.cpp promotes ordinary tokens such as Qwen's "</s>" to control tokens).
enum class TokenizerCompat { LlamaCpp, HuggingFace };

struct TokenizerLoadOptions {
    TokenizerCompat compat = TokenizerCompat::LlamaCpp;
    // Refuse a vocabulary without any end-of-generation token (what a generating
    // model needs); embedding models and `kiln tokenize` switch this off.
    bool require_end_of_generation = true;
};

struct EncodeOptions {
    bool add_special = true;    // BOS / EOS (CLS / SEP for WordPiece) as the metadata says
    bool parse_special = true;  // control tokens written in the text become their ids
};

struct DecodeOptions {
    bool show_special = false;    // render control and unknown tokens as their text
    bool remove_special = false;  // drop a leading BOS and a trailing EOS the model adds itself
    // llama.cpp's clean-up (" ," -> "," ...) where the vocabulary asks for it
    // (clean_up_tokenization_spaces); false gives the tokens' bytes exactly.
    bool clean_up_spaces = true;
};

// Special token ids; k_no_token where the vocabulary has none.
struct SpecialTokens {
    TokenId bos = k_no_token, eos = k_no_token, eot = k_no_token, eom = k_no_token;
    TokenId unk = k_no_token, sep = k_no_token, pad = k_no_token, mask = k_no_token;
    TokenId fim_pre = k_no_token, fim_suf = k_no_token, fim_mid = k_no_token;
    TokenId fim_pad = k_no_token, fim_rep = k_no_token, fim_sep = k_no_token;
};

class Tokenizer {
public:
    // Throws kiln::Error naming the file and key on anything missing or malformed,
    // `unsupported tokenizer model 'NAME'` / `unsupported pre-tokenizer 'NAME'`.
    static Tokenizer from_gguf(const gguf::File& file, const TokenizerLoadOptions& options = {});
    // Opens a GGUF file (a vocab-only one is enough) and builds its tokenizer.
    static Tokenizer load(const std::string& path, const TokenizerLoadOptions& options = {});

    // Token ids of UTF-8 text. Invalid UTF-8 is defined behaviour: such bytes
    // become U+FFFD (byte-level BPE, WordPiece) or byte tokens (SentencePiece).
    std::vector<TokenId> encode(std::string_view text, const EncodeOptions& options = {}) const;
    // Appends to `out` (reuses its capacity; the cheap path for a hot loop).
    void encode(std::string_view text, std::vector<TokenId>& out, const EncodeOptions& options = {}) const;

    // Text of ids as llama.cpp's llama_detokenize writes it (leading-space removal,
    // clean-up of spaces where the vocabulary asks for it). Throws kiln::Error on an
    // id outside the vocabulary.
    std::string decode(std::span<const TokenId> ids, const DecodeOptions& options = {}) const;
    // Bytes one token contributes (possibly part of a UTF-8 sequence); empty for
    // control / unknown tokens unless show_special.
    std::string_view token_piece(TokenId id, bool show_special = false) const;

    size_t n_vocab() const;
    std::string_view token_text(TokenId id) const;  // as stored in tokenizer.ggml.tokens
    float token_score(TokenId id) const;
    TokenType token_type(TokenId id) const;  // after the load-time fix-ups (control-looking tokens ...)
    bool is_control(TokenId id) const;       // control or unknown: hidden when decoding by default
    // Id of the token whose text is exactly `text`; k_no_token if none.
    TokenId find_token(std::string_view text) const;

    TokenizerScheme scheme() const;
    const std::string& model_name() const;  // tokenizer.ggml.model
    const std::string& pre_name() const;    // tokenizer.ggml.pre as used ("default" when absent)
    const SpecialTokens& special() const;
    bool add_bos() const;
    bool add_eos() const;

    // End of generation: the metadata's EOS / EOT / EOM plus the known
    // terminators present in the vocabulary (<|eot_id|>, <|im_end|>, <end_of_turn>, ...).
    bool is_end_of_generation(TokenId id) const;
    std::span<const TokenId> end_of_generation_ids() const;  // ascending

    struct Impl;

private:
    friend struct TokenizerAccess;  // internal: tests and benchmarks reach the parts
    explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
    std::shared_ptr<const Impl> impl_;
};

// Turns tokens into text as they are generated, never emitting part of a UTF-8
// sequence: bytes of an incomplete sequence are held until the next token
// completes it. Ill-formed bytes come out as U+FFFD, so the output is always
// valid UTF-8. The concatenated output equals decode() of the same ids with
// clean_up_spaces off (streamed text cannot take back a space already sent)
// wherever that text is valid UTF-8.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer, const DecodeOptions& options = {});

    // Text that became complete with this token (often the token's own text).
    std::string push(TokenId id);
    // The held bytes at the end of generation (an incomplete sequence becomes U+FFFD).
    std::string flush();
    void reset();

private:
    Tokenizer tokenizer_;
    DecodeOptions options_;
    std::string pending_;
    bool first_ = true;
};

}  // namespace kiln
