#include "tokenizer/schemes.h"
#include "tokenizer/unicode.h"

namespace kiln::tok {

namespace {

// CJK ideographs that BERT's basic tokenizer isolates (its table, including the
// extension range it starts at U+2B920 rather than U+2B820).
bool is_cjk_ideograph(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) ||
           (cp >= 0x2B920 && cp <= 0x2CEAF) || (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

}  // namespace

void WordPieceModel::build(const Vocab& vocab) {
    vocab_ = &vocab;
    std::vector<std::pair<std::string_view, int32_t>> keys;
    keys.reserve(vocab.size());
    for (size_t i = 0; i < vocab.size(); ++i) keys.emplace_back(vocab.texts[i], static_cast<int32_t>(i));
    trie_.build(std::move(keys));
}

void WordPieceModel::tokenize(std::string_view text, std::vector<TokenId>& out) const {
    const Vocab& v = *vocab_;
    thread_local std::vector<uint32_t> cps;
    thread_local std::vector<std::string> words;
    decode_utf8(text, cps);
    words.assign(1, std::string());
    for (uint32_t cp : cps) {
        if (v.strip_accents) cp = nfd_first(cp);
        const uint16_t fl = codepoint_flags(cp);
        if (fl & cpt::k_whitespace) {
            if (!words.back().empty()) words.emplace_back();
            continue;
        }
        if (cp == 0 || cp == k_replacement_char || (fl & cpt::k_control)) continue;
        if (v.strip_accents && (fl & cpt::k_mark)) continue;
        const uint32_t c = v.lowercase ? to_lower(cp) : cp;
        if ((fl & cpt::k_punctuation) || (cp < 0x7F && (fl & cpt::k_symbol)) || is_cjk_ideograph(cp)) {
            if (!words.back().empty()) words.emplace_back();
            append_utf8(words.back(), c);  // a word of its own
            words.emplace_back();
        } else {
            append_utf8(words.back(), c);
        }
    }

    std::string word;
    for (const std::string& w : words) {
        if (w.empty()) continue;
        word.assign("\xE2\x96\x81");  // word start, as the converter spells it
        word += w;
        const size_t before = out.size();
        for (size_t i = 0; i < word.size();) {
            auto [len, id] = trie_.longest_prefix(std::string_view(word).substr(i));
            if (len == 0) {
                out.resize(before);  // one piece missing: the whole word is unknown
                break;
            }
            out.push_back(id);
            i += len;
        }
        if (out.size() == before && v.special.unk >= 0) out.push_back(v.special.unk);
    }
}

}  // namespace kiln::tok
