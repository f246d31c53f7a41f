#include "tokenizer/unicode.h"

#include <utf8proc.h>

#include <array>
#include <memory>
#include <unordered_map>
#include <algorithm>

namespace kiln::tok {

namespace {

uint16_t category_flags(utf8proc_category_t c) {
    switch (c) {
        case UTF8PROC_CATEGORY_CN: return cpt::k_undefined;
        case UTF8PROC_CATEGORY_LU:
        case UTF8PROC_CATEGORY_LL:
        case UTF8PROC_CATEGORY_LT:
        case UTF8PROC_CATEGORY_LM:
        case UTF8PROC_CATEGORY_LO: return cpt::k_letter;
        case UTF8PROC_CATEGORY_MN:
        case UTF8PROC_CATEGORY_MC:
        case UTF8PROC_CATEGORY_ME: return cpt::k_mark;
        case UTF8PROC_CATEGORY_ND:
        case UTF8PROC_CATEGORY_NL:
        case UTF8PROC_CATEGORY_NO: return cpt::k_number;
        case UTF8PROC_CATEGORY_PC:
        case UTF8PROC_CATEGORY_PD:
        case UTF8PROC_CATEGORY_PS:
        case UTF8PROC_CATEGORY_PE:
        case UTF8PROC_CATEGORY_PI:
        case UTF8PROC_CATEGORY_PF:
        case UTF8PROC_CATEGORY_PO: return cpt::k_punctuation;
        case UTF8PROC_CATEGORY_SM:
        case UTF8PROC_CATEGORY_SC:
        case UTF8PROC_CATEGORY_SK:
        case UTF8PROC_CATEGORY_SO: return cpt::k_symbol;
        case UTF8PROC_CATEGORY_ZS:
        case UTF8PROC_CATEGORY_ZL:
        case UTF8PROC_CATEGORY_ZP: return cpt::k_separator;
        case UTF8PROC_CATEGORY_CC:
        case UTF8PROC_CATEGORY_CF:
        case UTF8PROC_CATEGORY_CS:
        case UTF8PROC_CATEGORY_CO: return cpt::k_control;
    }
    return cpt::k_undefined;
}

// The White_Space property of PropList.txt (it is not a general category: tab and
// line feed are Cc, U+0085 is Cc, U+00A0 is Zs, ...).
bool white_space_property(uint32_t cp) {
    return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
           cp == 0x3000;
}

// Two-stage table: 4352 blocks of 256 codepoints, identical blocks stored once
// (about 60 distinct blocks), so the whole table stays in L2.
struct FlagTable {
    static constexpr uint32_t k_block = 256;
    std::vector<uint16_t> block_index;  // per block of 256 codepoints
    std::vector<uint16_t> blocks;       // distinct blocks, k_block flags each

    FlagTable() {
        const uint32_t n_blocks = (k_max_codepoint + 1) / k_block;
        block_index.resize(n_blocks);
        std::vector<uint16_t> cur(k_block);
        std::unordered_map<uint64_t, size_t> seen;
        for (uint32_t b = 0; b < n_blocks; ++b) {
            for (uint32_t i = 0; i < k_block; ++i) {
                uint32_t cp = b * k_block + i;
                uint16_t f = category_flags(utf8proc_category(static_cast<utf8proc_int32_t>(cp)));
                if (white_space_property(cp)) f |= cpt::k_whitespace;
                cur[i] = f;
            }
            // Most blocks repeat an earlier one (unassigned planes, CJK, Hangul).
            uint64_t h = 1469598103934665603ull;
            for (uint16_t f : cur) h = (h ^ f) * 1099511628211ull;
            size_t found = blocks.size() / k_block;
            auto [it, inserted] = seen.try_emplace(h, found);
            if (!inserted && std::equal(cur.begin(), cur.end(),
                                        blocks.begin() + static_cast<ptrdiff_t>(it->second * k_block))) {
                found = it->second;
            } else {
                blocks.insert(blocks.end(), cur.begin(), cur.end());
            }
            block_index[b] = static_cast<uint16_t>(found);
        }
    }
};

const FlagTable& flag_table() {
    static const FlagTable table;
    return table;
}

struct Gpt2Alphabet {
    std::array<uint32_t, 256> to_cp{};
    std::array<int16_t, 324> from_cp{};  // codepoints 0..323 cover the whole alphabet

    Gpt2Alphabet() {
        from_cp.fill(-1);
        uint32_t n = 0;
        for (uint32_t b = 0; b < 256; ++b) {
            bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
            to_cp[b] = printable ? b : 256 + n++;
            from_cp[to_cp[b]] = static_cast<int16_t>(b);
        }
    }
};

const Gpt2Alphabet& gpt2_alphabet() {
    static const Gpt2Alphabet a;
    return a;
}

}  // namespace

uint16_t codepoint_flags(uint32_t cp) {
    if (cp > k_max_codepoint) return 0;
    const FlagTable& t = flag_table();
    return t.blocks[static_cast<size_t>(t.block_index[cp / FlagTable::k_block]) * FlagTable::k_block +
                    cp % FlagTable::k_block];
}

uint32_t to_lower(uint32_t cp) {
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    if (cp > k_max_codepoint) return cp;
    return static_cast<uint32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(cp)));
}

uint32_t nfd_first(uint32_t cp) {
    if (cp < 0xC0 || cp > k_max_codepoint) return cp;
    utf8proc_int32_t buf[8];
    int last_boundclass = 0;
    utf8proc_ssize_t n = utf8proc_decompose_char(static_cast<utf8proc_int32_t>(cp), buf, 8,
                                                 UTF8PROC_DECOMPOSE, &last_boundclass);
    return n > 0 ? static_cast<uint32_t>(buf[0]) : cp;
}

bool is_han(uint32_t cp) {
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) || (cp >= 0x20000 && cp <= 0x2A6DF) ||
           (cp >= 0x2A700 && cp <= 0x2B73F) || (cp >= 0x2B740 && cp <= 0x2B81F) ||
           (cp >= 0x2B820 && cp <= 0x2CEAF) || (cp >= 0x2CEB0 && cp <= 0x2EBEF) || (cp >= 0xF900 && cp <= 0xFAFF) ||
           (cp >= 0x2F800 && cp <= 0x2FA1F);
}

uint32_t decode_utf8(std::string_view text, size_t& pos) {
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    const size_t n = text.size();
    const uint8_t b0 = s[pos];
    if (b0 < 0x80) {
        pos += 1;
        return b0;
    }
    auto cont = [&](size_t i) { return i < n && (s[i] & 0xC0) == 0x80; };
    if ((b0 & 0xE0) == 0xC0) {
        if (cont(pos + 1)) {
            uint32_t cp = ((b0 & 0x1Fu) << 6) | (s[pos + 1] & 0x3Fu);
            pos += 2;
            return cp;
        }
    } else if ((b0 & 0xF0) == 0xE0) {
        if (cont(pos + 1) && cont(pos + 2)) {
            uint32_t cp = ((b0 & 0x0Fu) << 12) | ((s[pos + 1] & 0x3Fu) << 6) | (s[pos + 2] & 0x3Fu);
            pos += 3;
            return cp;
        }
    } else if ((b0 & 0xF8) == 0xF0) {
        if (cont(pos + 1) && cont(pos + 2) && cont(pos + 3)) {
            uint32_t cp = ((b0 & 0x07u) << 18) | ((s[pos + 1] & 0x3Fu) << 12) | ((s[pos + 2] & 0x3Fu) << 6) |
                          (s[pos + 3] & 0x3Fu);
            if (cp <= k_max_codepoint) {
                pos += 4;
                return cp;
            }
        }
    }
    pos += 1;
    return k_replacement_char;
}

void decode_utf8(std::string_view text, std::vector<uint32_t>& out) {
    out.clear();
    out.reserve(text.size());
    size_t pos = 0;
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    while (pos < text.size()) {
        // ASCII runs are the common case.
        if (s[pos] < 0x80) {
            out.push_back(s[pos++]);
            continue;
        }
        out.push_back(decode_utf8(text, pos));
    }
}

void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

int utf8_sequence_status(std::string_view text, size_t pos) {
    const auto* s = reinterpret_cast<const uint8_t*>(text.data());
    const size_t n = text.size();
    const uint8_t b0 = s[pos];
    if (b0 < 0x80) return 1;
    size_t len;
    uint8_t lo = 0x80, hi = 0xBF;  // allowed range of the second byte (RFC 3629 table)
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        len = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        len = 3;
        if (b0 == 0xE0) lo = 0xA0;
        if (b0 == 0xED) hi = 0x9F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        len = 4;
        if (b0 == 0xF0) lo = 0x90;
        if (b0 == 0xF4) hi = 0x8F;
    } else {
        return -1;
    }
    for (size_t i = 1; i < len; ++i) {
        if (pos + i >= n) return 0;
        uint8_t b = s[pos + i];
        uint8_t l = i == 1 ? lo : 0x80, h = i == 1 ? hi : 0xBF;
        if (b < l || b > h) return -1;
    }
    return static_cast<int>(len);
}

bool is_valid_utf8(std::string_view text) {
    size_t pos = 0;
    while (pos < text.size()) {
        int r = utf8_sequence_status(text, pos);
        if (r <= 0) return false;
        pos += static_cast<size_t>(r);
    }
    return true;
}

uint32_t byte_to_gpt2_codepoint(uint8_t byte) { return gpt2_alphabet().to_cp[byte]; }

int gpt2_codepoint_to_byte(uint32_t cp) {
    const auto& a = gpt2_alphabet();
    return cp < a.from_cp.size() ? a.from_cp[cp] : -1;
}

}  // namespace kiln::tok
