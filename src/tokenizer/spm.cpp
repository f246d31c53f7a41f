#include <queue>

#include "tokenizer/schemes.h"
#include "tokenizer/unicode.h"

namespace kiln::tok {

namespace {

struct Symbol {
    uint32_t start;
    uint32_t len;  // 0 once merged into its left neighbour
    int32_t prev;
    int32_t next;
};

struct Bigram {
    float score;
    int32_t left;
    int32_t right;
    uint32_t len;  // bytes of the pair when queued; a different length means it is stale
};

struct BigramOrder {
    // Highest score first; on equal scores the leftmost pair.
    bool operator()(const Bigram& a, const Bigram& b) const {
        return a.score < b.score || (a.score == b.score && a.left > b.left);
    }
};

}  // namespace

void spm_tokenize(const Vocab& vocab, std::string_view text, std::vector<TokenId>& out) {
    if (text.empty()) return;
    thread_local std::vector<Symbol> symbols;
    thread_local std::vector<Bigram> heap_storage;
    symbols.clear();
    for (uint32_t pos = 0; pos < text.size();) {
        uint32_t len = static_cast<uint32_t>(utf8_sequence_length(static_cast<uint8_t>(text[pos])));
        if (len > text.size() - pos) len = static_cast<uint32_t>(text.size() - pos);
        const int32_t index = static_cast<int32_t>(symbols.size());
        symbols.push_back(Symbol{pos, len, index - 1, pos + len == text.size() ? -1 : index + 1});
        pos += len;
    }

    heap_storage.clear();
    std::priority_queue<Bigram, std::vector<Bigram>, BigramOrder> queue(BigramOrder{}, std::move(heap_storage));
    auto try_add = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const Symbol& l = symbols[static_cast<size_t>(left)];
        const Symbol& r = symbols[static_cast<size_t>(right)];
        const uint32_t len = l.len + r.len;
        const TokenId id = vocab.find(text.substr(l.start, len));
        if (id < 0) return;
        queue.push(Bigram{vocab.scores[static_cast<size_t>(id)], left, right, len});
    };
    for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);

    while (!queue.empty()) {
        const Bigram b = queue.top();
        queue.pop();
        Symbol& l = symbols[static_cast<size_t>(b.left)];
        Symbol& r = symbols[static_cast<size_t>(b.right)];
        if (l.len == 0 || r.len == 0 || l.len + r.len != b.len) continue;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = b.left;
        try_add(l.prev, b.left);
        try_add(b.left, l.next);
    }

    for (int32_t i = 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
        const Symbol& s = symbols[static_cast<size_t>(i)];
        const TokenId id = vocab.find(text.substr(s.start, s.len));
        if (id >= 0) {
            out.push_back(id);
            continue;
        }
        // Not a token: its bytes, through the byte tokens (the unknown token if
        // the vocabulary has no way to spell a byte).
        for (uint32_t k = 0; k < s.len; ++k) {
            TokenId b = vocab.byte_token(static_cast<uint8_t>(text[s.start + k]));
            if (b < 0) b = vocab.special.unk;
            if (b >= 0) out.push_back(b);
        }
    }
}

}  // namespace kiln::tok
