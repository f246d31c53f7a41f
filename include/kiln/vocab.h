// Looking into a vocabulary: tokens by text, and a token's nearest neighbours in
// the embedding matrix (token_embd.weight, cosine similarity). `kiln vocab` and
// the web explorer use these.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "kiln/gguf/file.h"
#include "kiln/tokenizer.h"

namespace kiln {

// Tokens whose piece (the text they decode to, specials shown) contains `text`,
// case-insensitively for ASCII: exact matches first, then those starting with
// it, then the rest; each group by id. At most `limit`.
std::vector<TokenId> find_tokens(const Tokenizer& tok, std::string_view text, size_t limit);

struct TokenNeighbor {
    TokenId id = 0;
    double similarity = 0;  // cosine of the two embedding rows
};

// The k tokens whose embedding rows are nearest to `token`'s (the token itself
// excluded; rows of zero norm skipped), most similar first, ties by lower id.
// Errors name the file when it has no token_embd.weight or the id is outside it.
std::vector<TokenNeighbor> token_neighbors(const gguf::File& file, TokenId token, size_t k);

}  // namespace kiln
