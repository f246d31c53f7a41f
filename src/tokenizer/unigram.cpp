#include <algorithm>
#include <cfloat>

#include "kiln/error.h"
#include "tokenizer/schemes.h"
#include "tokenizer/unicode.h"

namespace kiln::tok {

namespace {

// Score of an unknown codepoint: below every real piece, as SentencePiece does.
constexpr float k_unknown_penalty = 10.0f;

}  // namespace

void UnigramModel::build(const Vocab& vocab) {
    vocab_ = &vocab;
    const auto& cm = vocab.precompiled_charsmap;
    if (!cm.empty()) {
        // Layout (SentencePiece): u32 size of the trie blob, the trie (XOR-compressed
        // double array of u32 units), then NUL-terminated replacement strings.
        if (cm.size() < 4) throw Error(vocab.path + ": tokenizer.ggml.precompiled_charsmap is too small");
        const uint32_t blob = static_cast<uint32_t>(cm[0]) | (static_cast<uint32_t>(cm[1]) << 8) |
                              (static_cast<uint32_t>(cm[2]) << 16) | (static_cast<uint32_t>(cm[3]) << 24);
        if (static_cast<uint64_t>(blob) + 4 >= cm.size())
            throw Error(vocab.path + ": tokenizer.ggml.precompiled_charsmap: trie size " + std::to_string(blob) +
                        " exceeds the " + std::to_string(cm.size()) + " bytes of the array");
        xcda_.resize(blob / 4);
        for (size_t i = 0; i < xcda_.size(); ++i) {
            const uint8_t* p = cm.data() + 4 + 4 * i;
            xcda_[i] = static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                       (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
        }
        replacements_ = std::string_view(reinterpret_cast<const char*>(cm.data()) + 4 + blob, cm.size() - 4 - blob);
    }
    std::vector<std::pair<std::string_view, int32_t>> tokens, user;
    float min_score = FLT_MAX;
    for (size_t i = 0; i < vocab.size(); ++i) {
        const TokenId id = static_cast<TokenId>(i);
        if (vocab.has(attr::k_normal, id)) min_score = std::min(min_score, vocab.scores[i]);
        if (vocab.has(attr::k_normal | attr::k_user_defined | attr::k_unused, id))
            tokens.emplace_back(vocab.texts[i], id);
        if (vocab.has(attr::k_user_defined, id)) user.emplace_back(vocab.texts[i], id);
    }
    tokens_.build(std::move(tokens));
    user_defined_.build(std::move(user));
    unknown_score_ = min_score - k_unknown_penalty;
}

std::pair<std::string_view, size_t> UnigramModel::normalize_prefix(std::string_view input, size_t offset) const {
    if (offset == input.size()) return {std::string_view(), 0};
    // User-defined tokens pass through whole (so does any prefix of one: the
    // reference matcher stops at the longest path, not the longest key).
    if (size_t len = user_defined_.longest_path(input.substr(offset)); len > 0)
        return {input.substr(offset, len), len};

    size_t best_len = 0;
    uint32_t best_value = 0;
    if (!xcda_.empty()) {
        // Unit layout: BASE in bits 10-30 (shifted left by 8 when bit 9 is set),
        // LEAF in bit 8, LABEL in bits 0-7 (bit 31 kept so a value unit never
        // matches a label); a leaf's BASE unit holds the replacement offset.
        auto unit = [&](size_t i) -> uint32_t {
            if (i >= xcda_.size()) throw Error("tokenizer: precompiled charsmap trie index out of range");
            return xcda_[i];
        };
        auto base = [&](size_t i) { uint32_t u = unit(i); return (u >> 10) << ((u & (1u << 9)) >> 6); };
        size_t node = base(0);
        for (size_t p = offset; p < input.size(); ++p) {
            const uint8_t c = static_cast<uint8_t>(input[p]);
            if (c == 0) break;
            node ^= c;
            const uint32_t u = unit(node);
            if ((u & ((1u << 31) | 0xFFu)) != c) break;
            const bool leaf = (u >> 8) & 1;
            node ^= base(node);
            if (leaf) {
                best_len = p - offset + 1;
                best_value = unit(node) & ((1u << 31) - 1);
            }
        }
    }
    if (best_len > 0) {
        if (best_value >= replacements_.size())
            throw Error("tokenizer: precompiled charsmap replacement offset out of range");
        std::string_view rest = replacements_.substr(best_value);
        const size_t end = rest.find('\0');
        if (end == std::string_view::npos) throw Error("tokenizer: precompiled charsmap replacement is not terminated");
        return {rest.substr(0, end), best_len};
    }
    // Otherwise one codepoint as it is; a byte that starts no sequence becomes U+FFFD.
    size_t pos = offset;
    const uint32_t cp = decode_utf8(input, pos);
    if (cp == k_replacement_char && pos - offset == 1) return {"\xEF\xBF\xBD", 1};
    return {input.substr(offset, pos - offset), pos - offset};
}

void UnigramModel::normalize(std::string_view input, std::string& out) const {
    const Vocab& v = *vocab_;
    out.clear();
    out.reserve(input.size() * 3);
    const std::string_view space = v.escape_whitespaces ? "\xE2\x96\x81" : " ";
    const bool prepend = !v.treat_whitespace_as_suffix && v.add_space_prefix;
    const bool append = v.treat_whitespace_as_suffix && v.add_space_prefix;
    const bool merge = v.remove_extra_whitespaces;
    bool prepended = false, in_word = false;
    for (size_t offset = 0; offset < input.size();) {
        auto [repl, consumed] = normalize_prefix(input, offset);
        for (char c : repl) {
            if (c != ' ') {
                if (!in_word) {
                    in_word = true;
                    if ((prepend && !prepended) || merge) {
                        out.append(space);
                        prepended = true;
                    }
                }
                out.push_back(c);
            } else {
                in_word = false;
                if (!merge) out.append(space);
            }
        }
        offset += consumed;
    }
    if (append) out.append(space);
}

void UnigramModel::tokenize(std::string_view text, std::vector<TokenId>& out) const {
    const Vocab& v = *vocab_;
    thread_local std::string norm;
    normalize(text, norm);
    const size_t n = norm.size();
    if (n == 0) return;

    struct Best {
        TokenId id;
        size_t from;
        double score;  // double, as SentencePiece sums scores
    };
    thread_local std::vector<Best> best;
    best.assign(n + 1, Best{v.special.unk, 0, -DBL_MAX});
    best[0] = Best{v.special.unk, 0, 0.0};
    for (size_t pos = 0; pos < n;) {
        const size_t char_len = std::min(utf8_sequence_length(static_cast<uint8_t>(norm[pos])), n - pos);
        bool single_char_token = false;
        const double here = best[pos].score;
        tokens_.for_each_prefix(std::string_view(norm).substr(pos), [&](size_t len, int32_t id) {
            if (len == char_len) single_char_token = true;
            // User-defined pieces score 0 so they win over the log-probabilities.
            const double s = here + (v.has(attr::k_user_defined, id) ? 0.0 : v.scores[static_cast<size_t>(id)]);
            Best& b = best[pos + len];
            if (s > b.score) b = Best{id, pos, s};
        });
        if (!single_char_token) {
            const double s = here + unknown_score_;
            Best& b = best[pos + char_len];
            if (s > b.score) b = Best{v.special.unk, pos, s};
        }
        pos += char_len;
    }
    // Back from the end; consecutive unknowns collapse into one.
    const size_t start = out.size();
    bool prev_unknown = false;
    for (size_t at = n;;) {
        const Best& b = best[at];
        const bool unknown = b.id == v.special.unk;
        if (!(prev_unknown && unknown) && b.id >= 0) out.push_back(b.id);
        if (b.from == 0) break;
        prev_unknown = unknown;
        at = b.from;
    }
    std::reverse(out.begin() + static_cast<ptrdiff_t>(start), out.end());
}

}  // namespace kiln::tok
