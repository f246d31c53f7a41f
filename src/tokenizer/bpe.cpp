#include <utf8proc.h>

#include <cstdlib>
#include <queue>

#include "tokenizer/schemes.h"
#include "tokenizer/unicode.h"

namespace kiln::tok {

namespace {

struct Symbol {
    uint32_t start;
    uint32_t len;    // 0 once merged into its left neighbour
    int32_t prev;
    int32_t next;
    int32_t piece;   // vocab id, extra id past the vocabulary, or -1 (in no merge)
};

struct Candidate {
    int32_t rank;
    int32_t left;
    int32_t right;
    int32_t left_piece;
    int32_t right_piece;
};

struct CandidateOrder {
    // Lowest rank first; on equal ranks the leftmost pair.
    bool operator()(const Candidate& a, const Candidate& b) const {
        return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
    }
};

uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

}  // namespace

int32_t BpeModel::piece_id(std::string_view text) {
    TokenId id = vocab_->find(text);
    if (id >= 0) return id;
    int32_t e = extra_ids_.get(text);
    if (e >= 0) return e;
    extra_texts_.emplace_back(text);
    e = static_cast<int32_t>(vocab_->size() + extra_texts_.size() - 1);
    extra_ids_.put(extra_texts_.back(), e);
    return e;
}

std::string_view BpeModel::piece_text(int32_t id) const {
    if (id < static_cast<int32_t>(vocab_->size())) return vocab_->texts[static_cast<size_t>(id)];
    return extra_texts_[static_cast<size_t>(id) - vocab_->size()];
}

void BpeModel::build(const Vocab& vocab) {
    vocab_ = &vocab;
    pre_ = std::make_unique<PreTokenizer>(*vocab.pre_spec, false, vocab.hugging_face);
    merges_.reserve(vocab.merges.size());
    std::string joined;
    for (size_t rank = 0; rank < vocab.merges.size(); ++rank) {
        std::string_view line = vocab.merges[rank];
        const size_t space = line.find(' ', 1);
        if (space == std::string_view::npos) continue;  // not "left right": can never apply
        std::string_view left = line.substr(0, space), right = line.substr(space + 1);
        joined.assign(left);
        joined.append(right);
        const int32_t l = piece_id(left), r = piece_id(right), m = piece_id(joined);
        merges_.insert_if_absent(pair_key(l, r), static_cast<int32_t>(rank), m);  // the first rank of a pair wins
    }
    std::string ch;
    for (int b = 0; b < 256; ++b) {
        ch.clear();
        append_utf8(ch, byte_to_gpt2_codepoint(static_cast<uint8_t>(b)));
        byte_piece_[b] = piece_id(ch);
        const char one = static_cast<char>(b);
        single_byte_token_[b] = vocab.find(std::string_view(&one, 1));
        static const char* hex = "0123456789ABCDEF";
        const char buf[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
        hex_byte_token_[b] = vocab.find(std::string_view(buf, 6));
    }
    if (vocab.ignore_merges && vocab.byte_encode) {
        // Whole-word lookups by raw bytes, so words are not re-encoded first.
        raw_word_ids_.reserve(vocab.size());
        std::string raw;
        for (size_t i = 0; i < vocab.size(); ++i) {
            const std::string& text = vocab.texts[i];
            if (vocab.find(text) != static_cast<TokenId>(i)) continue;
            raw.clear();
            bool ok = true;
            for (size_t pos = 0; pos < text.size() && ok;) {
                int b = gpt2_codepoint_to_byte(decode_utf8(text, pos));
                if (b < 0) ok = false;
                else raw.push_back(static_cast<char>(b));
            }
            if (!ok) continue;  // not in the byte alphabet: no encoded word can equal it
            raw_word_texts_.push_back(raw);
            raw_word_ids_.put(raw_word_texts_.back(), static_cast<int32_t>(i));
        }
    }
}

void BpeModel::tokenize(std::string_view text, std::vector<TokenId>& out) const {
    thread_local std::string escaped;
    thread_local std::vector<uint32_t> cps;
    thread_local std::vector<uint16_t> flags;
    thread_local std::vector<uint32_t> bounds;
    thread_local std::string word;
    if (vocab_->escape_whitespaces) {
        escaped.clear();
        for (char c : text) {
            if (c == ' ') escaped += "\xE2\x96\x81";
            else escaped.push_back(c);
        }
        text = escaped;
    }
    thread_local std::string composed;
    if (vocab_->nfc && is_valid_utf8(text)) {
        // NFC (Hugging Face mode, Qwen). Invalid UTF-8 has no Hugging Face counterpart.
        utf8proc_uint8_t* nfc = nullptr;
        utf8proc_ssize_t len = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                            static_cast<utf8proc_ssize_t>(text.size()), &nfc,
                                            static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
        if (len >= 0 && nfc) {
            composed.assign(reinterpret_cast<const char*>(nfc), static_cast<size_t>(len));
            text = composed;
        }
        std::free(nfc);
    }
    decode_utf8(text, cps);
    flags.resize(cps.size());
    for (size_t i = 0; i < cps.size(); ++i) flags[i] = codepoint_flags(cps[i]);
    pre_->split(cps, flags, bounds);
    uint32_t begin = 0;
    for (uint32_t end : bounds) {
        word.clear();
        for (uint32_t i = begin; i < end; ++i) append_utf8(word, cps[i]);
        tokenize_word(word, out);
        begin = end;
    }
}

void BpeModel::tokenize_word(std::string_view word, std::vector<TokenId>& out) const {
    if (word.empty()) return;
    const Vocab& v = *vocab_;
    if (v.ignore_merges) {
        const TokenId id = v.byte_encode ? raw_word_ids_.get(word) : v.find(word);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
    }
    if (std::string_view(v.pre_spec->family) == "gemma4" && word.find_first_not_of('\n') == std::string_view::npos) {
        // Gemma 4 keeps runs of newlines whole when the vocabulary has them.
        const TokenId id = v.find(word);
        if (id >= 0) {
            out.push_back(id);
            return;
        }
    }

    thread_local std::vector<Symbol> symbols;
    symbols.clear();
    const uint32_t n = static_cast<uint32_t>(word.size());
    if (v.byte_encode) {
        for (uint32_t i = 0; i < n; ++i) {
            const int32_t idx = static_cast<int32_t>(i);
            symbols.push_back(Symbol{i, 1, idx - 1, i + 1 == n ? -1 : idx + 1,
                                     byte_piece_[static_cast<uint8_t>(word[i])]});
        }
    } else {
        for (uint32_t pos = 0; pos < n;) {
            uint32_t len = static_cast<uint32_t>(utf8_sequence_length(static_cast<uint8_t>(word[pos])));
            if (len > n - pos) len = n - pos;
            std::string_view ch = word.substr(pos, len);
            int32_t piece = v.find(ch);
            if (piece < 0) piece = extra_ids_.get(ch);
            const int32_t idx = static_cast<int32_t>(symbols.size());
            symbols.push_back(Symbol{pos, len, idx - 1, pos + len == n ? -1 : idx + 1, piece});
            pos += len;
        }
    }

    std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
    auto try_add = [&](int32_t left, int32_t right) {
        if (left < 0 || right < 0) return;
        const Symbol& l = symbols[static_cast<size_t>(left)];
        const Symbol& r = symbols[static_cast<size_t>(right)];
        if (l.piece < 0 || r.piece < 0) return;
        const PairMap::Entry* e = merges_.find(pair_key(l.piece, r.piece));
        if (!e) return;
        queue.push(Candidate{e->a, left, right, l.piece, r.piece});
    };
    for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) try_add(i - 1, i);
    while (!queue.empty()) {
        const Candidate c = queue.top();
        queue.pop();
        Symbol& l = symbols[static_cast<size_t>(c.left)];
        Symbol& r = symbols[static_cast<size_t>(c.right)];
        if (l.len == 0 || r.len == 0 || l.piece != c.left_piece || r.piece != c.right_piece) continue;  // stale
        l.piece = merges_.find(pair_key(c.left_piece, c.right_piece))->b;
        l.len += r.len;
        r.len = 0;
        l.next = r.next;
        if (r.next >= 0) symbols[static_cast<size_t>(r.next)].prev = c.left;
        try_add(l.prev, c.left);
        try_add(c.left, l.next);
    }

    const int32_t n_vocab = static_cast<int32_t>(v.size());
    for (int32_t i = 0; i != -1; i = symbols[static_cast<size_t>(i)].next) {
        const Symbol& s = symbols[static_cast<size_t>(i)];
        if (s.piece >= 0 && s.piece < n_vocab) {
            out.push_back(s.piece);
            continue;
        }
        // Not a token: llama.cpp looks each byte of the piece's text up as a
        // one-byte token (byte-level) or as <0xHH> (raw UTF-8), dropping misses.
        for (uint32_t k = 0; k < s.len; ++k) {
            const uint8_t b = static_cast<uint8_t>(word[s.start + k]);
            if (!v.byte_encode) {
                if (hex_byte_token_[b] >= 0) out.push_back(hex_byte_token_[b]);
                continue;
            }
            std::string enc;
            append_utf8(enc, byte_to_gpt2_codepoint(b));
            for (unsigned char e : enc)
                if (single_byte_token_[e] >= 0) out.push_back(single_byte_token_[e]);
        }
    }
}

}  // namespace kiln::tok
