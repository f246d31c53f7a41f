#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace kiln::tok {

namespace {

// C isspace in the "C" locale, which is what decides lstrip / rstrip.
bool is_c_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

constexpr uint8_t k_free = 0, k_taken = 1;

}  // namespace

void SpecialTokenSplitter::build(const Vocab& vocab) {
    vocab_ = &vocab;
    order_ = vocab.special_order;
    length_.resize(order_.size());
    StringMap text_entry;
    text_entry.reserve(order_.size());
    std::vector<std::pair<std::string_view, int32_t>> keys;
    for (size_t r = 0; r < order_.size(); ++r) {
        const std::string& text = vocab.texts[static_cast<size_t>(order_[r])];
        length_[r] = static_cast<uint32_t>(text.size());
        const bool user = !vocab.has(attr::k_control | attr::k_unknown, order_[r]);
        int32_t e = text_entry.get(text);
        if (e < 0) {
            e = static_cast<int32_t>(entries_.size());
            entries_.push_back(Entry{-1, -1});
            text_entry.put(text, e);
            keys.emplace_back(text, e);
        }
        Entry& en = entries_[static_cast<size_t>(e)];
        if (en.rank_any < 0) en.rank_any = static_cast<int32_t>(r);
        if (user && en.rank_user < 0) en.rank_user = static_cast<int32_t>(r);
    }
    trie_.build(std::move(keys));
}

void SpecialTokenSplitter::split(std::string_view text, bool parse_special, std::vector<Fragment>& out) const {
    out.clear();
    const size_t n = text.size();
    if (n == 0) return;
    if (trie_.empty()) {
        out.push_back(Fragment{0, static_cast<uint32_t>(n), k_no_token});
        return;
    }

    // Every (priority, position) where a special token occurs, in position order.
    struct Occurrence {
        uint32_t rank;
        uint32_t pos;
    };
    std::vector<Occurrence> occ;
    const size_t limit = 4 * n + 4096;
    bool overflow = false;
    std::vector<uint8_t> seen_rank;
    for (size_t i = 0; i < n; ++i) {
        if (trie_.child(trie_.root(), static_cast<uint8_t>(text[i])) < 0) continue;
        trie_.for_each_prefix(text.substr(i), [&](size_t, int32_t e) {
            const Entry& en = entries_[static_cast<size_t>(e)];
            const int32_t r = parse_special ? en.rank_any : en.rank_user;
            if (r < 0) return;
            if (!overflow && occ.size() < limit) {
                occ.push_back(Occurrence{static_cast<uint32_t>(r), static_cast<uint32_t>(i)});
                return;
            }
            if (!overflow) {
                overflow = true;
                seen_rank.assign(order_.size(), 0);
                for (const Occurrence& o : occ) seen_rank[o.rank] = 1;
            }
            seen_rank[static_cast<size_t>(r)] = 1;
        });
    }
    if (!overflow && occ.empty()) {
        out.push_back(Fragment{0, static_cast<uint32_t>(n), k_no_token});
        return;
    }

    std::vector<uint8_t> state(n, k_free);
    struct Accepted {
        uint32_t pos;
        uint32_t rank;
    };
    std::vector<Accepted> accepted;
    auto try_accept = [&](uint32_t rank, size_t pos) -> bool {
        const size_t len = length_[rank];
        if (pos + len > n) return false;
        for (size_t k = pos; k < pos + len; ++k)
            if (state[k] != k_free) return false;
        for (size_t k = pos; k < pos + len; ++k) state[k] = k_taken;
        accepted.push_back(Accepted{static_cast<uint32_t>(pos), rank});
        const uint16_t a = vocab_->attrs[static_cast<size_t>(order_[rank])];
        if (a & attr::k_lstrip)
            for (size_t k = pos; k > 0 && state[k - 1] == k_free && is_c_space(text[k - 1]); --k) state[k - 1] = k_taken;
        if (a & attr::k_rstrip)
            for (size_t k = pos + len; k < n && state[k] == k_free && is_c_space(text[k]); ++k) state[k] = k_taken;
        return true;
    };

    if (!overflow) {
        std::stable_sort(occ.begin(), occ.end(),
                         [](const Occurrence& a, const Occurrence& b) { return a.rank < b.rank; });
        for (const Occurrence& o : occ) try_accept(o.rank, o.pos);
    } else {
        for (size_t r = 0; r < order_.size(); ++r) {
            if (!seen_rank[r]) continue;
            std::string_view t = vocab_->texts[static_cast<size_t>(order_[r])];
            for (size_t pos = 0; (pos = text.find(t, pos)) != std::string_view::npos;)
                pos += try_accept(static_cast<uint32_t>(r), pos) ? t.size() : 1;
        }
    }

    std::sort(accepted.begin(), accepted.end(), [](const Accepted& a, const Accepted& b) { return a.pos < b.pos; });
    auto emit_raw = [&](size_t from, size_t to) {
        // Free runs in [from, to); stripped whitespace is taken but belongs to no token.
        size_t k = from;
        while (k < to) {
            while (k < to && state[k] != k_free) ++k;
            size_t start = k;
            while (k < to && state[k] == k_free) ++k;
            if (k > start)
                out.push_back(Fragment{static_cast<uint32_t>(start), static_cast<uint32_t>(k - start), k_no_token});
        }
    };
    size_t cur = 0;
    for (const Accepted& a : accepted) {
        emit_raw(cur, a.pos);
        out.push_back(Fragment{a.pos, length_[a.rank], order_[a.rank]});
        cur = a.pos + length_[a.rank];
    }
    emit_raw(cur, n);
}

}  // namespace kiln::tok
