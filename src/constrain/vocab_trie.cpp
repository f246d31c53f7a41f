// TokenVocabulary: the byte pieces of a vocabulary and their trie.
#include "constrain/vocab_trie.h"

#include <algorithm>
#include <numeric>

#include "kiln/constraint.h"
#include "kiln/error.h"

namespace kiln {

using constrain::VocabTrie;

namespace {

std::shared_ptr<const VocabTrie> build_trie(std::vector<std::string> pieces, std::span<const TokenId> eog) {
    auto t = std::make_shared<VocabTrie>();
    const size_t n = pieces.size();
    t->is_eog.assign(n, 0);
    for (TokenId id : eog) {
        if (id < 0 || static_cast<size_t>(id) >= n)
            throw Error("end-of-generation token " + std::to_string(id) + " is outside the vocabulary (" +
                        std::to_string(n) + " tokens)");
        if (!t->is_eog[static_cast<size_t>(id)]) t->eog.push_back(id);
        t->is_eog[static_cast<size_t>(id)] = 1;
        pieces[static_cast<size_t>(id)].clear();  // ends generation; its text is not output
    }
    std::sort(t->eog.begin(), t->eog.end());
    t->pieces = std::move(pieces);

    std::vector<TokenId> ids;
    for (size_t i = 0; i < n; ++i)
        if (!t->pieces[i].empty()) ids.push_back(static_cast<TokenId>(i));
    std::sort(ids.begin(), ids.end(), [&](TokenId a, TokenId b) {
        const std::string& pa = t->pieces[static_cast<size_t>(a)];
        const std::string& pb = t->pieces[static_cast<size_t>(b)];
        return pa != pb ? pa < pb : a < b;
    });

    auto add_node = [&](uint8_t b, uint32_t d) {
        t->byte.push_back(b);
        t->depth.push_back(d);
        t->subtree_end.push_back(0);
        t->token.push_back(k_no_token);
        return static_cast<uint32_t>(t->byte.size() - 1);
    };
    std::vector<uint32_t> path{add_node(0, 0)};
    std::string_view prev;
    for (TokenId id : ids) {
        const std::string& p = t->pieces[static_cast<size_t>(id)];
        size_t lcp = 0;
        while (lcp < p.size() && lcp < prev.size() && p[lcp] == prev[lcp]) ++lcp;
        while (path.size() > lcp + 1) {
            t->subtree_end[path.back()] = static_cast<uint32_t>(t->byte.size());
            path.pop_back();
        }
        for (size_t k = lcp; k < p.size(); ++k)
            path.push_back(add_node(static_cast<uint8_t>(p[k]), static_cast<uint32_t>(k + 1)));
        const uint32_t leaf = path.back();
        if (t->token[leaf] == k_no_token) t->token[leaf] = id;
        // ids come sorted by piece, so a node's ids are contiguous and nodes come in pre-order
        while (t->token_begin.size() <= leaf) t->token_begin.push_back(static_cast<uint32_t>(t->node_tokens.size()));
        t->node_tokens.push_back(id);
        prev = p;
    }
    while (!path.empty()) {
        t->subtree_end[path.back()] = static_cast<uint32_t>(t->byte.size());
        path.pop_back();
    }
    while (t->token_begin.size() <= t->size()) t->token_begin.push_back(static_cast<uint32_t>(t->node_tokens.size()));
    // The text DFA along every root path (q_path) and, for text_subtree, from
    // every node down its own subtree (stopping at the first byte it refuses):
    // the sum of the depths, a few million steps for 150k tokens, once per vocabulary.
    using constrain::k_text_reject;
    using constrain::text_step;
    const size_t n_nodes = t->size();
    t->text_path.assign(n_nodes, 0);
    t->text_subtree.assign(n_nodes, 0);
    std::vector<uint8_t> q_path(n_nodes, k_text_reject);
    std::vector<uint32_t> stack;  // ancestors of node k, by depth
    std::vector<uint32_t> parent(n_nodes, 0);
    for (size_t k = 1; k < n_nodes; ++k) {
        const uint32_t d = t->depth[k];
        stack.resize(d - 1);
        const uint8_t q_parent = d == 1 ? 0 : q_path[stack.back()];
        if (d > 1) parent[k] = stack.back();
        q_path[k] = q_parent == k_text_reject ? k_text_reject : text_step(q_parent, t->byte[k]);
        t->text_path[k] = q_path[k] != k_text_reject;
        stack.push_back(static_cast<uint32_t>(k));
    }
    // Heights bottom-up: children come after their parent in pre-order.
    t->height.assign(n_nodes, 0);
    for (size_t k = n_nodes; k-- > 1;) {
        t->height[k] = std::max<uint32_t>(t->height[k], 1);
        t->height[parent[k]] = std::max(t->height[parent[k]], t->height[k] + (parent[k] == 0 ? 0 : 1));
    }
    std::vector<uint8_t> q_rel;  // DFA state by depth below node k
    for (size_t k = 1; k < n_nodes; ++k) {
        const uint32_t d0 = t->depth[k];
        bool ok = text_step(0, t->byte[k]) != k_text_reject;
        q_rel.assign(1, text_step(0, t->byte[k]));
        for (uint32_t j = static_cast<uint32_t>(k) + 1; ok && j < t->subtree_end[k]; ++j) {
            const uint32_t rel = t->depth[j] - d0;  // >= 1
            q_rel.resize(rel);
            const uint8_t q = text_step(q_rel.back(), t->byte[j]);
            ok = q != k_text_reject;
            q_rel.push_back(q);
        }
        t->text_subtree[k] = ok;
    }
    t->text_mask.resize(n);
    for (size_t id = 0; id < n; ++id) {
        const std::string& p = t->pieces[id];
        uint8_t q = 0;
        for (size_t k = 0; k < p.size() && q != k_text_reject; ++k) q = text_step(q, static_cast<uint8_t>(p[k]));
        if (!p.empty() && q != k_text_reject) t->text_mask.allow(static_cast<TokenId>(id));
    }
    return t;
}

}  // namespace

TokenVocabulary TokenVocabulary::from_tokenizer(const Tokenizer& tokenizer) {
    return from_tokenizer(tokenizer, tokenizer.end_of_generation_ids());
}

TokenVocabulary TokenVocabulary::from_tokenizer(const Tokenizer& tokenizer, std::span<const TokenId> end_of_generation) {
    if (tokenizer.scheme() == TokenizerScheme::WordPiece)
        throw Error("constraint: WordPiece vocabularies are not supported (their pieces are not the generated bytes)");
    std::vector<std::string> pieces(tokenizer.n_vocab());
    for (size_t i = 0; i < pieces.size(); ++i) {
        const auto id = static_cast<TokenId>(i);
        // Control and unknown tokens have no piece; unused ones decode to nothing.
        if (tokenizer.is_control(id) || tokenizer.token_type(id) == TokenType::Unused) continue;
        pieces[i] = std::string(tokenizer.token_piece(id));
    }
    return TokenVocabulary(build_trie(std::move(pieces), end_of_generation));
}

TokenVocabulary TokenVocabulary::from_pieces(std::vector<std::string> pieces, std::span<const TokenId> end_of_generation) {
    return TokenVocabulary(build_trie(std::move(pieces), end_of_generation));
}

size_t TokenVocabulary::n_vocab() const { return impl_->pieces.size(); }

std::string_view TokenVocabulary::piece(TokenId id) const {
    if (id < 0 || static_cast<size_t>(id) >= impl_->pieces.size())
        throw Error("token id " + std::to_string(id) + " is outside the vocabulary");
    return impl_->pieces[static_cast<size_t>(id)];
}

std::span<const TokenId> TokenVocabulary::end_of_generation_ids() const { return impl_->eog; }

bool TokenVocabulary::is_end_of_generation(TokenId id) const {
    return id >= 0 && static_cast<size_t>(id) < impl_->is_eog.size() && impl_->is_eog[static_cast<size_t>(id)];
}

size_t TokenVocabulary::n_trie_nodes() const { return impl_->size(); }

}  // namespace kiln
