// The state behind kiln::Tokenizer (internal; tests and benchmarks include it
// to reach the parts through TokenizerAccess).
#pragma once

#include "kiln/tokenizer.h"
#include "tokenizer/schemes.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/vocab.h"

namespace kiln {

struct Tokenizer::Impl {
    tok::Vocab vocab;
    tok::SpecialTokenSplitter special;
    tok::BpeModel bpe;
    tok::WordPieceModel wpm;
    tok::UnigramModel ugm;

    void encode(std::string_view text, std::vector<TokenId>& out, const EncodeOptions& options) const;
    std::string_view piece(TokenId id, bool show_special) const;
};

struct TokenizerAccess {
    static const Tokenizer::Impl& impl(const Tokenizer& t) { return *t.impl_; }
};

}  // namespace kiln
